"""The ``tvmperf`` fixture object (``check``, ``assert_ratio``, ``variant``): it only checks its
arguments and dispatches to the test's mode with its frozen ``CheckContext``; nothing calls back into it."""

from __future__ import annotations

from pytest_tvmperf.builder.executor_choice import get_executor
from pytest_tvmperf.check import ratio, timed, untimed
from pytest_tvmperf.check.context import AgainstSide, CheckContext
from pytest_tvmperf.combos import Variant
from pytest_tvmperf.judge.ratios import RatioVerdict
from pytest_tvmperf.measure.plan import plan_for
from pytest_tvmperf.result.outcome import Outcome
from pytest_tvmperf.workload import Workload


class Tvmperf:
    """The ``tvmperf`` fixture: ``tvmperf.check(workload)`` once per test."""

    def __init__(self, context: CheckContext, against: AgainstSide | None = None) -> None:
        self._context = context
        #: ``--tvmperf-against-tvm``: the side that takes over after compiling (None: the test's own mode)
        self._against = against
        self._checked = False
        self._ratios = 0  # the assert_ratio calls so far (each outcome is named by its number)

    @property
    def executor(self) -> str:
        """The test's executor (``vm-bytecode``, ``vm-compiled``, ``primfunc``, ...)."""
        return self._context.executor

    @property
    def target(self) -> str:
        """The test's target (``llvm``, ``cuda``, ``llvm@rpc:KEY``, ...)."""
        return self._context.target

    @property
    def test_id(self) -> str:
        """The test's id: its baseline entry's key (``test_mlp[llvm-vm-bytecode]``)."""
        return self._context.test_id

    def check(self, workload: Workload) -> Outcome:
        """Compile ``workload`` for this test's executor and target, check its output
        against the NumPy reference, measure it and gate it against the baseline.

        Fails the test on a compile error, a wrong or non-finite output, a missing
        baseline or a regression; skips it when the combination cannot run here."""
        __tracebackhide__ = True
        if self._checked:
            raise RuntimeError(
                "tvmperf.check() was already called in this test: use one check per test (one baseline entry per test id)"
            )
        self._checked = True
        if not isinstance(workload, Workload):
            raise TypeError(f"tvmperf.check() takes a pytest_tvmperf.Workload, got {type(workload).__name__}")
        ctx = self._context
        where = f"{workload.name} on {ctx.target}/{ctx.executor}"
        prep = ctx.preparer.prepare(workload, ctx.executor, where)
        if self._against is not None:  # --tvmperf-against-tvm: another TVM version's build in the baseline's place
            return self._against.check(ctx, prep)
        plan = plan_for(prep.target.runnable, prep.target.not_run, ctx.settings.timing)
        if not plan.time:  # timing off, or a target built but not run here (cuda without a GPU)
            return untimed.check(ctx, prep, plan)
        return timed.check(ctx, prep, where)

    def assert_ratio(
        self, numerator: "Workload | Variant", denominator: "Workload | Variant", at_most: float
    ) -> RatioVerdict:
        """Assert that ``numerator`` takes at most ``at_most`` times the time of
        ``denominator``, both compiled, checked and timed side by side in this process
        (e.g. dynamic batch vs static batch, compiled vs bytecode, bound vs run-time
        weights). Needs no baseline. Fails when the whole confidence interval of the
        ratio lies above ``at_most``; an interval across it is inconclusive
        (``--tvmperf-inconclusive``)."""
        __tracebackhide__ = True
        if not (isinstance(at_most, (int, float)) and 0 < at_most < float("inf")):
            raise ValueError(
                f"assert_ratio(at_most={at_most!r}): give the largest allowed time ratio, e.g. at_most=1.5"
            )
        sides = [v if isinstance(v, Variant) else Variant(v) for v in (numerator, denominator)]
        self._ratios += 1  # the summary names it by test id; the message and JSON by its sides
        return ratio.assert_ratio(self._context, sides, float(at_most), self._ratios)

    def variant(self, workload: Workload, executor: str | None = None, label: str | None = None) -> Variant:
        """``workload`` under another executor, for :meth:`assert_ratio`."""
        if executor is not None:
            get_executor(executor)  # an unknown name is an error here, not at timing
        return Variant(workload, executor, label)
