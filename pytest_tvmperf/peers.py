"""The old name of ``threads.py`` (thread counts of peer frameworks): runner.py still
imports it from here. Remove this module with that import."""

from .threads import same_threads, tvm_thread_count, tvm_threads  # noqa: F401
