"""Running a compiled flow: the scheduler, how each step is called, and the two drivers.

`scheduler` is the state of one request and the order of its drives (phases, early
exit, the learned order), with no I/O; `steps` fixes how each step is called when the
flow is compiled; `sync` and `async_` drive the scheduler, in a thread or on anyio.
"""
