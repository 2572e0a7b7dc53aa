"""The run's settings: every option of the table (options.py), each from the closest
place that sets it (command line > environment > ini > default), a test's marker in
between where it may set one."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from pytest_tvmperf.config.options import (
    DEFAULT_CHILD_TIMEOUT_S,
    DEFAULT_EXAMPLES,
    DEFAULT_LOCK_TIMEOUT_S,
    DEFAULT_MIN_REPEAT_MS,
    DEFAULT_REPEAT,
    DEFAULT_RPC_TIMEOUT_S,
    DEFAULT_TIME_BUDGET_S,
    OPTIONS,
    Option,
)
from pytest_tvmperf.config.parsing import DEFAULT_ALPHA, DEFAULT_EXECUTORS, DEFAULT_NOISE
from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS, Limit
from pytest_tvmperf.config.time_policy import TimePolicy, time_policy


@dataclass(frozen=True)
class Settings:
    """The run's options, each from the closest place that sets it (see :data:`OPTIONS`)."""

    executors: tuple[str, ...] = DEFAULT_EXECUTORS
    targets: tuple[str, ...] = ("llvm",)
    update: bool = False
    baseline_dir: Path = Path("baselines")
    cli_thresholds: Mapping[str, Limit] = field(default_factory=dict)
    ini_thresholds: Mapping[str, Limit] = field(default_factory=dict)
    repeat: int = DEFAULT_REPEAT
    min_repeat_ms: int = DEFAULT_MIN_REPEAT_MS
    hypothesis_examples: int = DEFAULT_EXAMPLES
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
    tuning_db: Path = Path("baselines/tuning")
    tune_trials: int | None = None
    tune_budget_s: float | None = None
    tuned: str = "any"
    peers: tuple[str, ...] = ()
    #: --tvmperf-simulate and ini tvmperf_simulate ("on"/"off"; None: unset); a test's marker
    #: simulate= goes in between (check/pipeline.py puts it in place of the ini's)
    cli_simulate: str | None = None
    ini_simulate: str | None = None
    #: --tvmperf-time-budget and ini tvmperf_time_budget in seconds (None: unset); a test's
    #: marker time_budget= goes in between (:meth:`time_budget_s`)
    cli_time_budget: float | None = None
    ini_time_budget: float | None = None
    rpc: tuple[str, int] | None = None
    rpc_timeout: int = DEFAULT_RPC_TIMEOUT_S
    baseline_program: str = "ir"
    #: --tvmperf-baseline-weights and ini tvmperf_baseline_weights (None: unset); a test's
    #: marker baseline_weights= goes in between (:meth:`baseline_weights`)
    cli_baseline_weights: str | None = None
    ini_baseline_weights: str | None = None
    cli_timing: bool | None = None
    ini_timing: bool | None = None
    benchmark_json_path: Path | None = None
    #: --tvmperf-llvm-target: the host llvm target, None for the one resolved from the CPU
    llvm_target: Mapping[str, Any] | None = None
    child_timeout: int = DEFAULT_CHILD_TIMEOUT_S
    #: --tvmperf-lock-timeout: the longest wait for the machine's timing lock
    lock_timeout: int = DEFAULT_LOCK_TIMEOUT_S
    #: --tvmperf-against-tvm: the other apache-tvm version a test is compared with (None: off)
    against_tvm: str | None = None
    #: --tvmperf-against-tvm-report-only: report that comparison without failing
    against_tvm_report_only: bool = False
    #: --tvmperf-against-tvm-packages: more packages for the other version's environment
    against_tvm_packages: tuple[str, ...] = ()
    #: --tvmperf-trust-artifacts: load old-form compiled baseline artifacts (.so)
    trust_artifacts: bool = False
    #: --tvmperf-baselines-ref: the git revision the baselines are read from (None: the work tree)
    baselines_ref: str | None = None
    #: --tvmperf-approved-change: a maintainer approved the pull request's baseline changes
    approved_change: bool = False
    #: --tvmperf-changes-md: the Markdown of the pull request's baseline changes
    changes_md_path: Path | None = None
    #: --tvmperf-layers: the per-layer table against each peer on every timed test (measure/peer_layers.py)
    layers: bool = False
    #: --tvmperf-same-program: "skip" (an unchanged program is not timed against its baseline) or "time"
    same_program: str = "skip"
    #: --tvmperf-resources and ini tvmperf_resources (None: unset, all measured); a test's
    #: marker resources= goes in between (:meth:`resources_on`)
    cli_resources: tuple[str, ...] | None = None
    ini_resources: tuple[str, ...] | None = None

    def resources_on(self, marker: tuple[str, ...] | None = None) -> tuple[str, ...]:
        """The resource metrics one test measures: command line > the test's marker > ini > all."""
        from pytest_tvmperf.config.parsing import RESOURCE_METRICS

        for value in (self.cli_resources, marker, self.ini_resources):
            if value is not None:
                return tuple(value)
        return RESOURCE_METRICS

    def timing_on(self, marker: bool | None = None) -> bool:
        """Is one test timed: command line > the test's marker (``timing=False``) > ini > on."""
        for value in (self.cli_timing, marker, self.ini_timing):
            if value is not None:
                return bool(value)
        return True

    def time_budget_s(self, marker: float | None = None) -> float:
        """One test's time budget in seconds: command line > the test's marker > ini > default."""
        for value in (self.cli_time_budget, marker, self.ini_time_budget):
            if value is not None:
                return float(value)
        return DEFAULT_TIME_BUDGET_S

    def baseline_weights(self, marker: str | None = None) -> str:
        """What an update stores of one test's weights (``seeded`` or ``exact``): command
        line > the test's marker > ini > seeded."""
        for value in (self.cli_baseline_weights, marker, self.ini_baseline_weights):
            if value is not None:
                return str(value)
        return "seeded"

    def thresholds(self, marker: Mapping[str, Limit] | None = None) -> dict[str, Limit]:
        """Effective thresholds of one test, per metric from the closest place that sets it:
        command line > the test's marker > ini > default."""
        merged = dict(DEFAULT_THRESHOLDS)
        merged.update(self.ini_thresholds)
        merged.update(marker or {})
        merged.update(self.cli_thresholds)
        return merged

    def time_policy(self, comparisons: int = 1) -> TimePolicy:
        """The time verdict's policy of this run with ``comparisons`` timed comparisons."""
        return time_policy(self.alpha, self.noise, self.other_machine, comparisons)

    @classmethod
    def from_config(cls, config) -> "Settings":
        """Build from the command line and the ini, row by row of :data:`OPTIONS`; a bad
        ini value raises ValueError naming the key."""
        values: dict[str, Any] = {}
        for opt in OPTIONS:
            cli, ini = opt.from_cli(config), opt.from_ini(config)
            if cli is None:
                cli = opt.from_env()
            if opt.marker_role == "sets":  # the marker goes in between: keep both layers
                unset = {} if isinstance(opt.default, Mapping) else None
                values[f"cli_{opt.field}"] = cli if cli is not None else unset
                values[f"ini_{opt.field}"] = ini if ini is not None else unset
                continue
            value = cli if cli is not None else ini if ini is not None else opt.default
            values[opt.field] = _anchored(opt, dict(value) if isinstance(value, Mapping) else value, config, values)
        return cls(**values)


def _anchored(opt: Option, value: Any, config, values: Mapping[str, Any]) -> Any:
    """A path option's value as a Path (None for an unset one, or "off")."""
    if not opt.anchor or value is None:
        return value
    if opt.may_be_off and str(value).strip().lower() == "off":
        return None
    base = {
        "rootdir": lambda: config.rootpath,
        "baselines": lambda: values["baseline_dir"],
        "invocation": lambda: config.invocation_params.dir,
    }[opt.anchor]()
    return Path(base, value)
