"""Third-party logging kept out of a tvmperf test's failure output: ``torch.export`` and TVM's
importers log hundreds of DEBUG records while a workload is built, burying the plugin's message;
pytest's capture leaves out their records below WARNING, unless the user asked for a log level."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Iterator

#: the loggers (and their children) kept quiet below WARNING
THIRD_PARTY = ("torch", "tvm", "tvm_ffi", "onnx", "onnxruntime", "onnxscript")


class ThirdPartyFilter(logging.Filter):
    """Lets a record through unless it comes from a :data:`THIRD_PARTY` logger below WARNING."""

    def filter(self, record: logging.LogRecord) -> bool:
        name = record.name
        return record.levelno >= logging.WARNING or not any(name == p or name.startswith(p + ".") for p in THIRD_PARTY)


def user_asked_for_logs(config) -> bool:
    """The user set pytest's log level (``--log-level``, ``log_level``); False without its plugin."""
    if config.getoption("log_level", None):
        return True
    try:
        return bool(config.getini("log_level"))
    except ValueError:  # the ini key is unknown without the logging plugin
        return False


@contextmanager
def quiet_third_party(logger: logging.Logger | None = None) -> Iterator[None]:
    """Filter third-party records out of pytest's capture handlers on ``logger`` (the root)."""
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
