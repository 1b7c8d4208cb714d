"""Database machinery shared by the journal and the store: the writer thread, exact values."""
