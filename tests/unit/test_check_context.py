"""check/context.py (nothing compiled): the ``tvmperf`` fixture is a thin object over the test's
frozen ``CheckContext``, which is all a mode (and ``--tvmperf-against-tvm``'s side) reads."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_tvmperf.check.context import CheckContext, for_test
from pytest_tvmperf.check.fixture import Tvmperf
from pytest_tvmperf.combos import Combo
from pytest_tvmperf.config.per_test import settings_for_test
from pytest_tvmperf.config.settings import Settings
from pytest_tvmperf.judge.verdict import Verdict
from pytest_tvmperf.result.outcome import Outcome
from pytest_tvmperf.session import TvmperfSession
from pytest_tvmperf.workload import Workload

NODEID = "tests/t.py::test_a[llvm-vm-bytecode]"
TEST_ID = "test_a[llvm-vm-bytecode]"


def context(tmp_path: Path, properties: list | None = None, **settings) -> CheckContext:
    session = TvmperfSession(Settings(baseline_dir=tmp_path / "baselines", **settings), rootpath=tmp_path)
    return for_test(
        session,
        Combo("llvm", "vm-bytecode"),
        NODEID,
        TEST_ID,
        tmp_path / "baselines" / "tests" / "t.json",
        settings_for_test(session.settings),
        timer=None,
        location=("tests/t.py", 7),
        user_properties=properties,
    )


def test_the_fixture_has_only_what_users_call(tmp_path):
    tv = Tvmperf(context(tmp_path))
    public = {name for name in dir(tv) if not name.startswith("_")}
    assert public == {"check", "assert_ratio", "variant", "executor", "target", "test_id"}
    assert (tv.executor, tv.target, tv.test_id) == ("vm-bytecode", "llvm", TEST_ID)
    with pytest.raises(AttributeError):
        tv.target = "cuda"  # read-only


def test_the_context_is_frozen(tmp_path):
    ctx = context(tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.timing = False  # type: ignore[misc]
    assert (ctx.nodeid, ctx.test_id, ctx.executor, ctx.target) == (NODEID, TEST_ID, "vm-bytecode", "llvm")
    assert ctx.identity.shown_file == "baselines/tests/t.json"


def test_fail_keeps_the_outcome_with_its_place_then_fails(tmp_path):
    properties: list = []
    ctx = context(tmp_path, properties)
    with pytest.raises(pytest.fail.Exception, match="broken"):
        ctx.failing_as(f"{TEST_ID} ratio")("error", "tvmperf: broken")
    (kept,) = ctx.session.report.outcomes.values()
    assert (kept.test_id, kept.verdict, kept.location) == (f"{TEST_ID} ratio", Verdict.ERROR, ("tests/t.py", 7))
    assert ("tvmperf_verdict", "error") in properties


def test_a_test_notes_go_to_the_run_report_one_way_with_its_outcome_or_by_note(tmp_path, monkeypatch):
    from pytest_tvmperf.check import context as context_module
    from pytest_tvmperf.values.run_notes import Note

    monkeypatch.setattr(context_module, "junit_properties", lambda outcome: [])  # the stand-in below has no figures
    ctx = context(tmp_path)
    ctx.note("peer torch not timed: no torch")

    class Held:  # a comparison that held a metric back for its measuring setup
        def held_setups(self) -> tuple[str, ...]:
            return ("simulated cost held: another setup",)

    ctx.add_outcome(Outcome(NODEID, TEST_ID, "vm-bytecode", "llvm", "pass", comparison=Held()))
    report = ctx.session.report
    assert report.notes(Note.NOT_MEASURED) == ("peer torch not timed: no torch", "simulated cost held: another setup")
    assert [o.test_id for o in report.outcomes.values()] == [TEST_ID]


class _Prepared:
    """What a preparer hands on (a stand-in: nothing is compiled)."""


class _Preparer:
    def __init__(self) -> None:
        self.asked: list[tuple[str, str, str]] = []

    def prepare(self, workload: Workload, executor: str, where: str) -> _Prepared:
        self.asked.append((workload.name, executor, where))
        return _Prepared()


class _Against:
    """``--tvmperf-against-tvm``'s side: takes the test over after compiling, given the context."""

    def __init__(self) -> None:
        self.got: list[tuple[CheckContext, object]] = []

    def check(self, ctx: CheckContext, prep) -> Outcome:
        self.got.append((ctx, prep))
        return Outcome(ctx.nodeid, ctx.test_id, ctx.executor, ctx.target, "recorded")


def test_the_against_side_is_handed_the_context_after_compiling(tmp_path):
    preparer = _Preparer()
    ctx = dataclasses.replace(context(tmp_path), preparer=preparer)
    against = _Against()
    from tvm import te

    a = te.placeholder((4,), name="A")
    program = te.create_prim_func([a, te.compute((4,), lambda i: a[i] * 2.0, name="B")])
    workload = Workload("mlp", program=program, make_inputs=lambda rng, dims: (), reference=lambda x: x)
    outcome = Tvmperf(ctx, against).check(workload)
    assert preparer.asked == [("mlp", "vm-bytecode", "mlp on llvm/vm-bytecode")]
    ((given, prep),) = against.got
    assert given is ctx and isinstance(prep, _Prepared)
    assert outcome.verdict == "recorded"
