"""Third-party logging (torch, TVM, ONNX) kept out of a tvmperf test's failure output.

``torch.export`` and TVM's importers log hundreds of DEBUG records (``DEBUG torch.__trace``)
while a workload is built; pytest's log capture shows them all under a failure, burying the
plugin's message. During the setup, call and teardown of a test that uses ``tvmperf``, the
capture leaves out their records below WARNING. A user who asks for log output (pytest's
``--log-level``, or ``log_level`` in the ini) gets every record, as pytest gives it.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Iterator, Sequence

#: the loggers (and their children) kept quiet below WARNING
THIRD_PARTY = ("torch", "tvm", "tvm_ffi", "onnx", "onnxruntime", "onnxscript")


class ThirdPartyFilter(logging.Filter):
    """Lets a record through unless it comes from a :data:`THIRD_PARTY` logger below ``level``."""

    def __init__(self, level: int = logging.WARNING, prefixes: Sequence[str] = THIRD_PARTY) -> None:
        super().__init__()
        self.level = level
        self.prefixes = tuple(prefixes)

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= self.level:
            return True
        name = record.name
        return not any(name == p or name.startswith(p + ".") for p in self.prefixes)


def user_asked_for_logs(config) -> bool:
    """The user set pytest's log level (``--log-level`` or ``log_level`` in the ini); False
    when pytest's logging plugin is off (``-p no:logging``: neither exists then)."""
    if config.getoption("log_level", None):
        return True
    try:
        return bool(config.getini("log_level"))
    except ValueError:  # the ini key is unknown without the logging plugin
        return False


@contextmanager
def quiet_third_party(logger: logging.Logger | None = None) -> Iterator[None]:
    """Filter the third-party records out of pytest's capture handlers on ``logger`` (the
    root) for the ``with`` block; other handlers are left alone."""
    root = logger or logging.getLogger()
    quiet = ThirdPartyFilter()
    handlers = [h for h in root.handlers if type(h).__module__.startswith("_pytest")]
    for handler in handlers:
        handler.addFilter(quiet)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(quiet)
