"""The run's settings: every option of the table (options.py), each from the closest
place that sets it (command line > environment > ini > default), merged once when the run
is configured. A test's marker goes in between for the options it may set: config/per_test.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from pytest_tvmperf.config import options
from pytest_tvmperf.config.parsing import DEFAULT_ALPHA, DEFAULT_EXECUTORS, DEFAULT_NOISE, RESOURCE_METRICS
from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS, Limit
from pytest_tvmperf.config.time_policy import DecideBudget, TimePolicy, time_policy


@dataclass(frozen=True)
class Settings:
    """The run's options (module doc); a test's marker may set those of ``marker_role="sets"``
    for itself: :func:`~pytest_tvmperf.config.per_test.settings_for_test` reads :attr:`pinned`."""

    executors: tuple[str, ...] = DEFAULT_EXECUTORS
    targets: tuple[str, ...] = ("llvm",)
    update: bool = False
    baseline_dir: Path = Path("baselines")
    #: every metric's limit, each from the closest place: command line > ini > default
    thresholds: Mapping[str, Limit] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))
    repeat: int = options.DEFAULT_REPEAT
    min_repeat_ms: int = options.DEFAULT_MIN_REPEAT_MS
    hypothesis_examples: int = options.DEFAULT_EXAMPLES
    alpha: float = DEFAULT_ALPHA
    inconclusive: str = "warn"
    other_machine: str = "skip"
    confirm: bool = True
    noise: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_NOISE))
    artifact_dir: Path | None = Path("baselines/artifacts")
    json_path: Path | None = None
    html_path: Path | None = None
    history_path: Path | None = None
    prune: bool = False
    retime: bool = False
    tuning_db: Path = Path("baselines/tuning")
    tune_trials: int | None = None
    tune_budget_s: float | None = None
    tuned: str = "any"
    peers: tuple[str, ...] = ()
    #: "on" or "off" (None: unset, on where valgrind is installed)
    simulate: str | None = None
    #: seconds one test's time measurement may take
    time_budget: float = options.DEFAULT_TIME_BUDGET_S
    decide_budget: DecideBudget = DecideBudget()
    rpc: tuple[str, int] | None = None
    rpc_timeout: int = options.DEFAULT_RPC_TIMEOUT_S
    baseline_program: str = "ir"
    baseline_weights: str = "seeded"
    timing: bool = True
    benchmark_json_path: Path | None = None
    #: --tvmperf-llvm-target: the host llvm target, None for the one resolved from the CPU
    llvm_target: Mapping[str, Any] | None = None
    child_timeout: int = options.DEFAULT_CHILD_TIMEOUT_S
    lock_timeout: int = options.DEFAULT_LOCK_TIMEOUT_S
    #: --tvmperf-against-tvm: the other apache-tvm version a test is compared with (None: off)
    against_tvm: str | None = None
    against_tvm_report_only: bool = False
    against_tvm_packages: tuple[str, ...] = ()
    trust_artifacts: bool = False
    #: --tvmperf-baselines-ref: the git revision the baselines are read from (None: the work tree)
    baselines_ref: str | None = None
    approved_change: bool = False
    changes_md_path: Path | None = None
    #: --tvmperf-layers: the per-layer table against each peer on every timed test (measure/peer_layers.py)
    layers: bool = False
    #: --tvmperf-same-program: "skip" (an unchanged program is not timed against its baseline) or "time"
    same_program: str = "skip"
    resources: tuple[str, ...] = RESOURCE_METRICS
    #: the fields a marker may set that the command line (or the environment) set: they hold
    #: for every test, whatever its marker says (``simulate``, ``timing``, ...)
    pinned: frozenset[str] = frozenset()
    #: the metrics whose threshold the command line set: a marker sets the others
    pinned_thresholds: frozenset[str] = frozenset()

    def time_policy(self, comparisons: int = 1) -> TimePolicy:
        """The time verdict's policy of this run with ``comparisons`` timed comparisons."""
        return time_policy(self.alpha, self.noise, self.other_machine, comparisons)

    @classmethod
    def from_config(cls, config) -> "Settings":
        """Build from the command line (or the environment) and the ini, row by row of
        :data:`options.OPTIONS`, each field from the closest place that sets it (thresholds metric
        by metric); a bad ini value raises ValueError naming the key."""
        values: dict[str, Any] = {}
        pinned: set[str] = set()
        for opt in options.OPTIONS:
            cli, ini = opt.from_cli(config), opt.from_ini(config)
            if cli is None:
                cli = opt.from_env()
            if opt.marker_role == "sets" and cli is not None:
                pinned.add(opt.field)
            if opt.marker_role == "sets" and isinstance(opt.default, Mapping):  # thresholds: metric by metric
                values["pinned_thresholds"] = frozenset(cli or ())
                value = {**opt.default, **(ini or {}), **(cli or {})}
            else:
                value = cli if cli is not None else ini if ini is not None else opt.default
            values[opt.field] = _anchored(opt, dict(value) if isinstance(value, Mapping) else value, config, values)
        return cls(**values, pinned=frozenset(pinned))


def _anchored(opt: options.Option, value: Any, config, values: Mapping[str, Any]) -> Any:
    """A path option's value as a Path (None for an unset one, or "off")."""
    if not opt.anchor or value is None:
        return value
    if opt.may_be_off and str(value).strip().lower() == "off":
        return None
    if opt.anchor == "baselines":
        return Path(values["baseline_dir"], value)
    return Path(config.rootpath if opt.anchor == "rootdir" else config.invocation_params.dir, value)
