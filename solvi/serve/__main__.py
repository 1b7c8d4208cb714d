"""``python -m solvi.serve TARGET``: the ``solvi serve`` command on its own."""

from __future__ import annotations

from solvi.serve._command import main

if __name__ == "__main__":
    raise SystemExit(main())
