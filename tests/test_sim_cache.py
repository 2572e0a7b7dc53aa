"""The simulated cost's stored counts (measure/sim_cache.py): unchanged code is counted
once, a later run takes the stored count of the same build on the same inputs, and a
change of build is counted again."""

from __future__ import annotations

import json

from tests.test_simulate import GATE, counts, needs_valgrind, sim_project  # noqa: F401  (a fixture)


def _stored(project) -> list:
    return sorted((project.pytester.path / ".tvmperf-cache" / "simulated").rglob("*.json"))


@needs_valgrind
def test_unchanged_code_is_counted_once_and_a_changed_build_again(sim_project):
    sim_project.set_env("TVMPERF_SIMULATE_CACHE", "on")
    sim_project.set_env("TVMPERF_CACHE_KEY", "k" * 64)  # the cache's key, to seal a poisoned count below
    sim_project.run("--tvmperf-update", "--tvmperf-simulate=on", *GATE).assert_outcomes(passed=1)
    (stored,) = _stored(sim_project)
    assert json.loads(stored.read_text()) == counts(sim_project)

    # proof that the next run reads it: a stored count made 1000 higher (and sealed with the
    # cache's key, as only its owner can) fails the gate; an unsealed one is not reused
    # (tests/unit/test_user_cache.py)
    from pytest_tvmperf.store import user_cache

    poisoned = json.loads(stored.read_text())
    poisoned["cpu_instructions"]["scale"] += 1000
    stored.write_text(json.dumps(poisoned))
    stored.with_name(stored.name + ".sha256").write_text(user_cache.seal_of(stored, b"k" * 64) + "\n")
    result = sim_project.run("--tvmperf-simulate=on", *GATE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cpu_instructions*"])

    # measuring every time, the true count passes again
    sim_project.set_env("TVMPERF_SIMULATE_CACHE", "off")
    sim_project.run("--tvmperf-simulate=on", *GATE).assert_outcomes(passed=1)

    # another build (more steps) is another key: counted, and its growth caught
    sim_project.set_env("TVMPERF_SIMULATE_CACHE", "on")
    sim_project.set_env("SCALE_STEPS", "80")
    result = sim_project.run("--tvmperf-simulate=on", *GATE)
    result.assert_outcomes(failed=1)
    assert len(_stored(sim_project)) == 2
