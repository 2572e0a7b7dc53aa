"""The run's start, :func:`configure` (called once by ``pytest_configure``): its settings
read and every check that can stop a run before its first test. A bad setting is a usage
error (exit 4) saying which option, what is wrong and how to fix it; a history file with a
torn last line is a warning."""

from __future__ import annotations

import dataclasses
import os

import pytest

from pytest_tvmperf.config.settings import Settings
from pytest_tvmperf.values.node_ids import RefView
from pytest_tvmperf.values.remote_names import is_remote, split_remote


@dataclasses.dataclass(frozen=True)
class RunSetup:
    """What ``pytest_configure`` read and checked: the session is made from it."""

    settings: Settings
    history: list
    ref_baselines: object = None
    #: --tvmperf-baselines-ref: how the files of its temporary copies are named
    ref_view: RefView | None = None


def configure(config: pytest.Config) -> "RunSetup":
    """The run's settings, read and checked (module doc); raises pytest.UsageError."""
    try:
        settings = Settings.from_config(config)
        history, history_warning = _check_outputs(settings)
        _check_directories(config, settings)
        _check_approval(config, settings)
        ref_baselines = ref_view = None
        if settings.baselines_ref is not None:
            settings, ref_baselines, ref_view = _baselines_at_ref(config, settings)
    except ValueError as exc:
        raise pytest.UsageError(f"pytest-tvmperf: {exc}") from None
    problem = _run_problem(config, settings)
    if problem is not None:
        raise pytest.UsageError(f"pytest-tvmperf: {problem}")
    if history_warning is not None:  # stacklevel: shown at plugin.py's pytest_configure, which calls this
        config.issue_config_time_warning(pytest.PytestWarning(f"pytest-tvmperf: {history_warning}"), stacklevel=3)
    return RunSetup(settings, history, ref_baselines, ref_view)


def _check_directories(config: pytest.Config, settings: Settings) -> None:
    """The baseline directory, size variables, user cache, artifact directory and
    ``--tvmperf-llvm-target`` are sound: a ValueError saying why not."""
    from pytest_tvmperf.store.inflate import check_size_variables
    from pytest_tvmperf.store.links import symlink_problem
    from pytest_tvmperf.store.user_cache import cache_problem

    linked = symlink_problem(settings.baseline_dir)  # before the artifact check: it resolves links
    if linked is not None:
        raise ValueError(linked)
    check_size_variables()
    unsafe_cache = cache_problem()  # another user's, or writable by others: never used (as ssh)
    if unsafe_cache is not None:
        raise ValueError(unsafe_cache)
    if settings.artifact_dir is not None and not _inside(settings.artifact_dir, settings.baseline_dir):
        raise ValueError(
            f"--tvmperf-artifacts={config.getoption('tvmperf_artifacts') or config.getini('tvmperf_artifacts')}: "
            f"the artifact directory must be inside the baseline directory {settings.baseline_dir} "
            f"(baseline entries name their files relative to it): give a relative path such as "
            f"'artifacts', or 'off'"
        )
    if settings.llvm_target is not None:
        from pytest_tvmperf.builder.host_cpu import llvm_target_problem

        problem = llvm_target_problem(settings.llvm_target)
        if problem is not None:
            raise ValueError(f"--tvmperf-llvm-target: {problem}")


def _run_problem(config: pytest.Config, settings: Settings) -> str | None:
    """Why these options cannot run together, or on this machine or device farm (None: they can)."""
    if settings.update and "timing" in settings.pinned and not settings.timing:
        return (
            "--tvmperf-update records time baselines: drop --tvmperf-timing=off "
            "(or set timing=False on the tests that must not be timed)"
        )
    if "simulate" in settings.pinned and settings.simulate == "on":  # asked for on the command line
        from pytest_tvmperf.measure.simulate import host_problem

        problem = host_problem()  # a machine that cannot simulate is a usage error
        if problem is not None:
            return (
                f"--tvmperf-simulate=on: {problem}; leave the option out to "
                "simulate where valgrind is installed, or pass --tvmperf-simulate=off"
            )
    remote_keys = [split_remote(t).key for t in settings.targets if is_remote(t)]
    if remote_keys and not hasattr(config, "workerinput"):  # the controller checks once, before any test
        from pytest_tvmperf.farm.remote import check_farm

        problem = check_farm(settings.rpc, remote_keys)
        if problem:
            return problem
    if settings.prune and not settings.update:
        return "--tvmperf-prune removes baselines while updating: use it with --tvmperf-update"
    if settings.retime and not settings.update:
        return "--tvmperf-retime re-records the measurements of unchanged programs: use it with --tvmperf-update"
    return None


def _check_outputs(settings: Settings) -> tuple[list, str | None]:
    """The report files can be written; the history read (a ValueError saying why not),
    with a warning when its torn last line is left out."""
    paths = (
        (settings.json_path, "--tvmperf-json"),
        (settings.html_path, "--tvmperf-html"),
        (settings.history_path, "--tvmperf-history"),
        (settings.benchmark_json_path, "--tvmperf-benchmark-json"),
    )
    if all(path is None for path, _ in paths):
        return [], None
    from pytest_tvmperf.report import outputs
    from pytest_tvmperf.result.entry import ResultsError

    try:
        for path, option in paths:
            if path is not None:
                outputs.check_writable(path, option)
        if settings.history_path is None:
            return [], None
        return outputs.read_history_warned(settings.history_path)
    except ResultsError as exc:
        raise ValueError(str(exc)) from None


def _check_approval(config: pytest.Config, settings: Settings) -> None:
    """``--tvmperf-approved-change`` and ``--tvmperf-changes-md`` belong to a pull request's
    gate (``--tvmperf-baselines-ref``), and the approval comes from the CI job (its
    command line or environment), never from the project's configuration (``addopts``),
    which the pull request itself can change. A ValueError says why not."""
    addopts = config.getini("addopts")
    addopts = " ".join(addopts) if isinstance(addopts, list) else str(addopts or "")
    if "--tvmperf-approved-change" in addopts:
        where = config.inipath.name if config.inipath is not None else "the pytest configuration"
        raise ValueError(
            f"addopts in {where} passes --tvmperf-approved-change: the approval of a pull request's "
            "baselines comes from the CI job (a label only maintainers can set, turned into the option "
            "by the workflow), never from the project's configuration, which the pull request can "
            "change; remove it from addopts"
        )
    if settings.approved_change and not hasattr(config, "workerinput") and not _approval_from_the_job(config):
        raise ValueError(
            "--tvmperf-approved-change=on reached this run through pytest's configuration (addopts, or an "
            "argument file @FILE, whose contents the pull request can change), not from the CI job's own "
            "command line, $PYTEST_ADDOPTS or $TVMPERF_APPROVED_CHANGE: a pull request cannot approve itself; "
            "pass it on the command line of the job that reads the maintainers' label"
        )
    if settings.baselines_ref is None:
        for flag, given in (
            ("--tvmperf-approved-change", settings.approved_change),
            ("--tvmperf-changes-md", settings.changes_md_path is not None),
        ):
            if given:
                raise ValueError(
                    f"{flag} is for a pull request's gate against its base branch: give "
                    "--tvmperf-baselines-ref=origin/<base> too"
                )


def _approval_from_the_job(config: pytest.Config) -> bool:
    """Whether ``--tvmperf-approved-change`` came from the CI job itself: written out on pytest's own
    command line (not inside an argument file, ``@FILE``, which pytest expands from a file the pull
    request may hold), in ``$PYTEST_ADDOPTS``, or as ``$TVMPERF_APPROVED_CHANGE`` (issue 66: decided
    from where pytest read it, never from a text match on the configuration)."""
    import shlex

    from pytest_tvmperf.config.parsing import SWITCH_ON

    if os.environ.get("TVMPERF_APPROVED_CHANGE", "").strip().lower() in SWITCH_ON:
        return True
    try:
        from_env = shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    except ValueError:
        from_env = []
    given = [*map(str, config.invocation_params.args), *from_env]
    return any(a == "--tvmperf-approved-change" or a.startswith("--tvmperf-approved-change=") for a in given)


def _baselines_at_ref(config: pytest.Config, settings: Settings):
    """``--tvmperf-baselines-ref``: the settings with the baseline (and artifact) directory
    replaced by a copy of it at that git revision, removed when the run ends."""
    from pytest_tvmperf.store.git_ref import read_baselines

    if settings.update:
        raise ValueError(
            f"--tvmperf-baselines-ref={settings.baselines_ref} reads the baselines from git and "
            "--tvmperf-update writes them in the work tree: use one or the other"
        )
    ref = read_baselines(settings.baselines_ref, settings.baseline_dir)
    config.add_cleanup(ref.remove)
    if not ref.found and not settings.approved_change:
        ref.remove()
        raise ValueError(
            f"--tvmperf-baselines-ref={settings.baselines_ref}: {ref.inside}/ does not exist at "
            f"{settings.baselines_ref} (commit {ref.commit[:12]}), so there is nothing to judge this "
            f"change against: check that the ref is the base branch and the baseline directory "
            f"(--tvmperf-baselines) is where it keeps them; if this change adds the first baselines, a "
            f"maintainer approves them with --tvmperf-approved-change=on (the workflow's "
            f"perf-change-approved label) and the gate verifies them here"
        )

    def in_copy(path):  # the same path in the ref's copy of the baseline directory
        return ref.directory / os.path.relpath(os.path.realpath(path), os.path.realpath(settings.baseline_dir))

    artifact_dir = in_copy(settings.artifact_dir) if settings.artifact_dir is not None else None
    # only the baseline side comes from the ref (its stored IR was built with the ref's tuning records): today's
    # build uses the work tree's tuning database, so a change to it is a program change, timed a/b and listed
    # (issue 66: under the ref's database a pull request that deleted it passed, an honest re-tune failed)
    view = RefView(settings.baselines_ref, ((ref.directory, ref.inside),), worktree=settings.baseline_dir)
    settings = dataclasses.replace(settings, baseline_dir=ref.directory, artifact_dir=artifact_dir)
    return settings, ref, view


def _inside(path, directory) -> bool:
    """Is ``path`` ``directory`` or below it (``..`` and links resolved)?"""
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)
