"""What a tvmperf test is parametrized over and compares: an executor x target
combination, a workload under another executor (one side of ``assert_ratio``), and the
warning of an open verdict."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from pytest_tvmperf.workload import Workload

#: the fixture (and parameter) of a tvmperf test
FIXTURE = "tvmperf"


@dataclass(frozen=True)
class Combo:
    """One executor x target combination: a test id suffix like ``llvm-vm-bytecode``."""

    target: str
    executor: str

    @property
    def id(self) -> str:
        from pytest_tvmperf.values.remote_names import shown_target

        return f"{shown_target(self.target)}-{self.executor}"


def combo_of(item: Any) -> Combo | None:
    """The executor x target a collected test runs under: None for an item that is no
    tvmperf test (or one whose test has no combination left: its skipped ``none``)."""
    param = getattr(getattr(item, "callspec", None), "params", {}).get(FIXTURE)
    return param if isinstance(param, Combo) else None


@dataclass(frozen=True)
class Variant:
    """One side of ``tvmperf.assert_ratio``: a workload, under another executor than
    the test's when ``executor`` is given (e.g. ``vm-compiled`` against ``vm-bytecode``)."""

    workload: Workload
    executor: str | None = None
    label: str | None = None

    def describe(self, default_executor: str) -> str:
        if self.label:
            return self.label
        other = self.executor and self.executor != default_executor
        return f"{self.workload.name} [{self.executor}]" if other else f"{self.workload.name}"


class TvmperfInconclusive(UserWarning):
    """A time verdict that the noise left open (see --tvmperf-inconclusive)."""
