"""The plugin's options, declared once in :data:`OPTIONS`: each row generates its
``--tvmperf-*`` flag (:func:`addoption`), its ``tvmperf_*`` ini key and its
:class:`~pytest_tvmperf.config.settings.Settings` field (which source wins: config/per_test.py;
a marker's role: :attr:`Option.marker_role`). The value parsers live in parsing.py and limits.py."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Literal

from pytest_tvmperf.config import parsing
from pytest_tvmperf.values.remote_names import parse_rpc_address
from pytest_tvmperf.values.resources import RESOURCE_ALIASES
from pytest_tvmperf.config.limits import DEFAULT_THRESHOLDS, THRESHOLD_HELP, parse_thresholds
from pytest_tvmperf.config.time_policy import DecideBudget, parse_decide_budget


def parse_llvm_target(text: Any) -> dict[str, Any]:
    """``--tvmperf-llvm-target``: an llvm target as JSON (``{"mcpu": "x86-64-v3"}``, kind
    llvm), or only its mcpu (``x86-64-v3``)."""
    text = str(text).strip()
    if not text:
        raise ValueError(
            "give an mcpu such as x86-64-v3, or an llvm target as JSON such as "
            '\'{"kind": "llvm", "mcpu": "x86-64-v3"}\''
        )
    if not text.startswith("{"):
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", text):
            raise ValueError(
                f"{text!r} is neither an mcpu name (such as x86-64-v3 or haswell) nor a JSON object; "
                "flags such as -mcpu=... are gone from TVM targets: write "
                '\'{"kind": "llvm", "mcpu": "...", "mattr": ["-avx512f"]}\''
            )
        return {"kind": "llvm", "mcpu": text}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(value, dict):
        raise ValueError('give a JSON object such as \'{"kind": "llvm", "mcpu": "x86-64-v3"}\'')
    kind = value.setdefault("kind", "llvm")
    if kind != "llvm":
        raise ValueError(f"kind {kind!r}: this option sets the host CPU's llvm target; the kind must be llvm")
    return value


def parse_git_ref(text: Any) -> str:
    """``--tvmperf-baselines-ref``: a git revision such as ``origin/main`` (checked to
    exist when the run starts)."""
    text = str(text).strip()
    if not text:
        raise ValueError("give a git revision such as origin/main")
    if text.startswith("-") or not re.fullmatch(r"[A-Za-z0-9._/@{}~^+-]+", text) or ".." in text:
        raise ValueError(f"{text!r} is not a git revision (such as origin/main, HEAD~1 or a commit hash)")
    return text


OPT_EXECUTORS = "tvmperf_executors"
OPT_TARGETS = "tvmperf_targets"
OPT_UPDATE = "tvmperf_update"
OPT_BASELINES = "tvmperf_baselines"
OPT_THRESHOLD = "tvmperf_threshold"
OPT_REPEAT = "tvmperf_repeat"
OPT_MIN_REPEAT_MS = "tvmperf_min_repeat_ms"
OPT_EXAMPLES = "tvmperf_hypothesis_examples"
OPT_ALPHA = "tvmperf_alpha"
OPT_INCONCLUSIVE = "tvmperf_inconclusive"
OPT_OTHER_MACHINE = "tvmperf_other_machine"
OPT_CONFIRM = "tvmperf_confirm"
OPT_NOISE = "tvmperf_noise"
OPT_ARTIFACTS = "tvmperf_artifacts"
OPT_JSON = "tvmperf_json"
OPT_HTML = "tvmperf_html"
OPT_HISTORY = "tvmperf_history"
OPT_PRUNE = "tvmperf_prune"
OPT_RETIME = "tvmperf_retime"
OPT_TUNING_DB = "tvmperf_tuning_db"
OPT_TUNE = "tvmperf_tune"
OPT_TUNE_BUDGET = "tvmperf_tune_budget"
OPT_TUNED = "tvmperf_tuned"
OPT_PEERS = "tvmperf_peers"
OPT_SIMULATE = "tvmperf_simulate"
OPT_TIME_BUDGET = "tvmperf_time_budget"
OPT_DECIDE_BUDGET = "tvmperf_decide_budget"
OPT_RPC = "tvmperf_rpc"
OPT_RPC_TIMEOUT = "tvmperf_rpc_timeout"
OPT_BASELINE_PROGRAM = "tvmperf_baseline_program"
OPT_BASELINE_WEIGHTS = "tvmperf_baseline_weights"
OPT_TIMING = "tvmperf_timing"
OPT_BENCHMARK_JSON = "tvmperf_benchmark_json"
OPT_LLVM_TARGET = "tvmperf_llvm_target"
OPT_CHILD_TIMEOUT = "tvmperf_child_timeout"
OPT_LOCK_TIMEOUT = "tvmperf_lock_timeout"
OPT_AGAINST_TVM = "tvmperf_against_tvm"
OPT_AGAINST_TVM_REPORT_ONLY = "tvmperf_against_tvm_report_only"
OPT_AGAINST_TVM_PACKAGES = "tvmperf_against_tvm_packages"
OPT_TRUST_ARTIFACTS = "tvmperf_trust_artifacts"
OPT_LAYERS = "tvmperf_layers"
OPT_BASELINES_REF = "tvmperf_baselines_ref"
OPT_SAME_PROGRAM = "tvmperf_same_program"
OPT_RESOURCES = "tvmperf_resources"
OPT_APPROVED_CHANGE = "tvmperf_approved_change"
OPT_CHANGES_MD = "tvmperf_changes_md"
#: environment variables of options (approved change: the CI job's, never the project's configuration)
ENV_APPROVED_CHANGE = "TVMPERF_APPROVED_CHANGE"
ENV_TRUST_ARTIFACTS = "TVMPERF_TRUST_ARTIFACTS"
ENV_BASELINES_REF = "TVMPERF_BASELINES_REF"
ENV_SAME_PROGRAM = "TVMPERF_SAME_PROGRAM"
ENV_LLVM_TARGET = "TVMPERF_LLVM_TARGET"  #: a runner's own setting

DEFAULT_TUNING_DB = "tuning"
#: seconds one call to an RPC device may take before the device counts as hung
DEFAULT_RPC_TIMEOUT_S = 300
#: seconds the child process may take to run a compiled kernel once before it counts as hung
DEFAULT_CHILD_TIMEOUT_S = 600
#: seconds a test waits for the machine's timing lock (held by another run) before it fails,
#: and an update for the baselines lock: 15 minutes, within a CI job's time
DEFAULT_LOCK_TIMEOUT_S = 900
DEFAULT_REPEAT = 15
DEFAULT_MIN_REPEAT_MS = 20
#: seconds one test's time measurement may take (before a confirmation): a network whose
#: run takes seconds is timed in fewer rounds (measure/budget.py)
DEFAULT_TIME_BUDGET_S = 60.0
DEFAULT_EXAMPLES = 8


@dataclass(frozen=True)
class Option:
    """One option: its flag ``--tvmperf-x-y`` and ini key ``tvmperf_x_y`` (both from ``dest``),
    the :class:`Settings` field it fills, and how its text becomes that field's value."""

    dest: str  #: ``tvmperf_repeat``: the ini key, and where pytest stores the flag's value
    field: str  #: the Settings field
    help: str
    default: Any = None  #: the value when neither the command line nor the ini sets one
    parse: Callable[[Any], Any] | None = None  #: text -> value, raising ValueError; None: the text as it is
    ini: bool = True  #: also an ini key (else command line only)
    switch: bool = False  #: a flag without a value (command line only)
    metavar: str | None = None
    #: a path, relative to the rootdir, to the baseline directory or to the directory pytest was started in
    anchor: Literal["", "rootdir", "baselines", "invocation"] = ""
    may_be_off: bool = False  #: the path may be "off" (the field is then None)
    #: keywords of ``@pytest.mark.tvmperf`` for this option: "sets": they override the ini for
    #: one test (the command line still wins); "narrows": they say which values the test
    #: supports; "adds": they add to the run's selection for one test
    marker_keys: tuple[str, ...] = ()
    marker_role: Literal["", "sets", "narrows", "adds"] = ""
    passthrough: bool = False  #: an accept command repeats it (it decides which tests exist, where baselines go)
    #: an environment variable that sets it too (command line > environment > ini)
    env: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.dest.replace("_", "-")

    def from_cli(self, config) -> Any:
        value = config.getoption(self.dest)
        return None if value in (None, "") or (self.switch and not value) else value

    def from_env(self) -> Any:
        """The parsed value of :attr:`env` (None where unset); a bad value raises ValueError naming it."""
        raw = os.environ.get(self.env, "").strip() if self.env else ""
        return self._parsed(raw, f"environment variable {self.env}=") if raw else None

    def from_ini(self, config) -> Any:
        """The parsed ini value (None where unset); a bad value raises ValueError naming the key."""
        raw = config.getini(self.dest) if self.ini else None
        return None if raw in ("", None, []) else self._parsed(raw, f"ini option {self.dest} = ")

    def _parsed(self, raw: Any, where: str) -> Any:
        try:
            return self.parse(raw) if self.parse is not None else raw
        except ValueError as exc:
            raise ValueError(f"{where}{raw!r}: {exc}") from None


#: a command-line switch (no value, no ini key)
_SWITCH: dict[str, Any] = dict(default=False, ini=False, switch=True)
#: a report file to write: command line only, relative to the directory pytest was started in
_REPORT_FILE: dict[str, Any] = dict(ini=False, metavar="PATH", anchor="invocation")

OPTIONS: tuple[Option, ...] = (
    Option(
        OPT_EXECUTORS,
        "executors",
        f"comma-separated executors to run each tvmperf test under ({', '.join(parsing.EXECUTORS)}); default: {', '.join(parsing.DEFAULT_EXECUTORS)}",
        parsing.DEFAULT_EXECUTORS,
        parsing.parse_executors,
        marker_keys=("executors",),
        marker_role="narrows",
        passthrough=True,
    ),
    Option(
        OPT_TARGETS,
        "targets",
        f"comma-separated targets ({', '.join(parsing.TARGETS)}, or llvm@rpc:KEY: a device of the "
        "--tvmperf-rpc tracker); default: llvm (the host CPU)",
        ("llvm",),
        parsing.parse_targets,
        marker_keys=("targets",),
        marker_role="narrows",
        passthrough=True,
    ),
    Option(OPT_UPDATE, "update", "write or rewrite the baselines of the tests that ran (and only those)", **_SWITCH),
    Option(
        OPT_BASELINES,
        "baseline_dir",
        "directory of baseline JSON files, relative to the rootdir (default: baselines)",
        "baselines",
        metavar="DIR",
        anchor="rootdir",
        passthrough=True,
    ),
    Option(
        OPT_THRESHOLD,
        "thresholds",
        THRESHOLD_HELP,
        DEFAULT_THRESHOLDS,
        parse_thresholds,
        metavar="EXPR",
        marker_keys=(*parsing.METRICS, *RESOURCE_ALIASES),
        marker_role="sets",
    ),
    Option(
        OPT_REPEAT, "repeat", f"time samples per test (default {DEFAULT_REPEAT})", DEFAULT_REPEAT, parsing.positive_int
    ),
    Option(
        OPT_MIN_REPEAT_MS,
        "min_repeat_ms",
        f"minimum duration of one time sample in ms (default {DEFAULT_MIN_REPEAT_MS})",
        DEFAULT_MIN_REPEAT_MS,
        parsing.parse_min_repeat_ms,
    ),
    Option(
        OPT_EXAMPLES,
        "hypothesis_examples",
        f"Hypothesis examples for workloads with symbolic dims (default {DEFAULT_EXAMPLES})",
        DEFAULT_EXAMPLES,
        parsing.positive_int,
    ),
    Option(
        OPT_ALPHA,
        "alpha",
        "false-alarm rate of the whole run's time verdicts, split over its timed tests "
        f"(default {parsing.DEFAULT_ALPHA})",
        parsing.DEFAULT_ALPHA,
        parsing.parse_alpha,
    ),
    Option(
        OPT_INCONCLUSIVE,
        "inconclusive",
        "what an inconclusive time verdict (noise larger than the threshold) does: fail, warn or pass (default warn)",
        "warn",
        parsing.parse_inconclusive,
    ),
    Option(
        OPT_OTHER_MACHINE,
        "other_machine",
        "with no time baseline of this machine: compare another machine's in normalized form, or skip (default skip)",
        "skip",
        parsing.parse_other_machine,
    ),
    Option(
        OPT_CONFIRM,
        "confirm",
        "re-measure a suspected regression before failing (default true)",
        True,
        parsing.parse_switch,
    ),
    Option(
        OPT_NOISE,
        "noise",
        "process-to-process noise the samples cannot show, per mode, e.g. "
        "'ab=2%,normalized=10%,raw=15%,ratio=7%' (the defaults; ratio: peers and assert_ratio)",
        parsing.DEFAULT_NOISE,
        parsing.parse_noise,
    ),
    Option(
        OPT_ARTIFACTS,
        "artifact_dir",
        "where --tvmperf-update saves compiled artifacts for a/b timing, relative to the "
        "baseline directory (default artifacts), or off",
        "artifacts",
        metavar="DIR|off",
        anchor="baselines",
        may_be_off=True,
        passthrough=True,
    ),
    Option(OPT_JSON, "json_path", "write every test's metrics, baseline and verdict as JSON", **_REPORT_FILE),
    Option(OPT_HTML, "html_path", "write a self-contained HTML report with plots", **_REPORT_FILE),
    Option(
        OPT_HISTORY,
        "history_path",
        "append this run to a history file (one JSON line per run); the HTML report plots the trend",
        **_REPORT_FILE,
    ),
    Option(OPT_PRUNE, "prune", "with --tvmperf-update in a full run: remove baselines that no test used", **_SWITCH),
    Option(
        OPT_RETIME,
        "retime",
        "with --tvmperf-update: rewrite the entry of every test that ran, its measurements too (default: "
        "an entry whose program and metrics are unchanged is kept byte for byte)",
        **_SWITCH,
    ),
    Option(
        OPT_TUNING_DB,
        "tuning_db",
        "MetaSchedule tuning database for workloads with pipeline='tuned', relative to the "
        f"baseline directory (default {DEFAULT_TUNING_DB})",
        DEFAULT_TUNING_DB,
        metavar="DIR",
        anchor="baselines",
        passthrough=True,
    ),
    Option(
        OPT_TUNE,
        "tune_trials",
        "tune the kernels of the tests' pipeline='tuned' workloads with this many MetaSchedule "
        "trials per workload, adding the records to the tuning database, before measuring them",
        parse=parsing.positive_int,
        ini=False,
        metavar="TRIALS",
    ),
    Option(
        OPT_TUNE_BUDGET,
        "tune_budget_s",
        "wall-clock time to tune each pipeline='tuned' workload, spread over its "
        "kernels by their share of its run time, e.g. 30m (forms: 90s, 30m, 1.5h, 1h30m); alone it tunes "
        "until the budget is spent, with --tvmperf-tune it also stops at TRIALS",
        parse=parsing.parse_duration,
        ini=False,
        metavar="DURATION",
    ),
    Option(
        OPT_TUNED,
        "tuned",
        "which tuning records a pipeline='tuned' build takes: any (default: this target's "
        "own, else another CPU's or GPU's of the same kind where its schedule applies here) or exact (this "
        "target's own only; a test whose kernels have none fails, or skips when other CPUs have some)",
        "any",
        parsing.parse_tuned,
        metavar="any|exact",
        passthrough=True,
    ),
    Option(
        OPT_PEERS,
        "peers",
        f"peer frameworks to time side by side with TVM where a workload has them ({', '.join(parsing.PEERS)}, "
        "all or none; default none; a peer gated by a vs_<peer> marker keyword is always timed)",
        (),
        parsing.parse_peers,
        marker_keys=tuple(parsing.PEER_MARKER_KEYS),
        marker_role="adds",
    ),
    Option(
        OPT_SIMULATE,
        "simulate",
        "count each kernel's instructions and simulated cache misses under valgrind (cpu_instructions, est_cycles; "
        "built for llvm -mcpu=haswell): on or off (default: on where valgrind is installed on an x86-64 host)",
        parse=parsing.parse_simulate,
        metavar="on|off",
        marker_keys=("simulate",),
        marker_role="sets",
    ),
    Option(
        OPT_RPC,
        "rpc",
        "HOST:PORT of a TVM RPC tracker whose devices run the targets named llvm@rpc:KEY (see --tvmperf-targets)",
        parse=parse_rpc_address,
        metavar="HOST:PORT",
        passthrough=True,
    ),
    Option(
        OPT_RPC_TIMEOUT,
        "rpc_timeout",
        "seconds one call to an RPC device (an upload, a run, a timing round) may "
        f"take before the device counts as hung and its test fails naming it (default {DEFAULT_RPC_TIMEOUT_S})",
        DEFAULT_RPC_TIMEOUT_S,
        parsing.parse_rpc_timeout,
        metavar="SECONDS",
    ),
    Option(
        OPT_BASELINE_PROGRAM,
        "baseline_program",
        "what --tvmperf-update stores of each test's program for a/b timing: ir (the lowered IR, rebuilt on the "
        "machine that gates; default) or so (the compiled library, usable on the recording machine only)",
        "ir",
        parsing.parse_baseline_program,
        metavar="ir|so",
    ),
    Option(
        OPT_BASELINE_WEIGHTS,
        "baseline_weights",
        "what --tvmperf-update stores of a program's bound weights: seeded (default: each floating-point weight's "
        "dtype, shape and sha256 only; the gate rebuilds the baseline's program with seeded values of those shapes, "
        "since kernel timing does not depend on finite, normal values, and reports a changed weight by its digest) "
        "or exact (their values, bit for bit, for programs whose time depends on them: data-dependent control flow, "
        "zero-skipping, value-dependent shapes); marker baseline_weights=",
        "seeded",
        parsing.parse_baseline_weights,
        metavar="seeded|exact",
        marker_keys=("baseline_weights",),
        marker_role="sets",
    ),
    Option(
        OPT_TIMING,
        "timing",
        "on (default) or off: off checks correctness and the exact metrics only, with no "
        "timing and no time verdict (the fast inner loop, like --benchmark-disable); marker timing=False",
        True,
        parsing.parse_switch,
        metavar="on|off",
        marker_keys=("timing",),
        marker_role="sets",
    ),
    Option(
        OPT_TIME_BUDGET,
        "time_budget",
        f"the time one test's measurement may take, e.g. 60s or 2m (default {DEFAULT_TIME_BUDGET_S:g}s): a program "
        "whose rounds would take longer (a network running for seconds) is timed in fewer rounds (at least 6; a "
        "confirmation takes twice as many) and its report states the precision reached; marker time_budget=",
        DEFAULT_TIME_BUDGET_S,
        parsing.parse_duration,
        metavar="DURATION",
        marker_keys=("time_budget",),
        marker_role="sets",
    ),
    Option(
        OPT_DECIDE_BUDGET,
        "decide_budget",
        "what measuring a borderline time verdict until it is decided may add to one test: a wall-clock "
        "duration and, after a comma, a number of rounds, whichever is spent first (default 60s,1000; off: "
        "inconclusive after the confirmation). An a/b interval that straddles its limit after the confirmation "
        "gets more rounds, each batch with both programs loaded anew, until it lies wholly on one side; a clear "
        "pass or failure spends none; marker decide_budget=",
        DecideBudget(),
        parse_decide_budget,
        metavar="DURATION[,ROUNDS]|off",
        marker_keys=("decide_budget",),
        marker_role="sets",
    ),
    Option(
        OPT_BENCHMARK_JSON,
        "benchmark_json_path",
        "also write the timings in pytest-benchmark's JSON format "
        "(read by pytest-benchmark compare/list and CI tools that read it)",
        **_REPORT_FILE,
    ),
    Option(
        OPT_LLVM_TARGET,
        "llvm_target",
        "the llvm target every build for this machine's CPU uses: an mcpu "
        '(x86-64-v3) or a JSON object (\'{"mcpu": "znver4", "mattr": ["-avx512f"]}\'); default: the '
        f"CPU model LLVM names, less the features the OS does not enable (also ${ENV_LLVM_TARGET})",
        parse=parse_llvm_target,
        metavar="MCPU|JSON",
        passthrough=True,
        env=ENV_LLVM_TARGET,
    ),
    Option(
        OPT_CHILD_TIMEOUT,
        "child_timeout",
        "seconds a compiled kernel may take to run once in the child process that runs it before the session "
        f"does; past it the kernel counts as hung and its test fails (default {DEFAULT_CHILD_TIMEOUT_S})",
        DEFAULT_CHILD_TIMEOUT_S,
        parsing.parse_rpc_timeout,
        metavar="SECONDS",
    ),
    Option(
        OPT_LOCK_TIMEOUT,
        "lock_timeout",
        "seconds a test waits for the machine's timing lock while another "
        "run of this project (or of the same RPC device) holds it, and an update for the baselines lock; a "
        "line names the holder (process id and command) as soon as the wait begins, and past the bound the "
        f"test fails (the update writes nothing) naming the holder (default {DEFAULT_LOCK_TIMEOUT_S}: 15 minutes)",
        DEFAULT_LOCK_TIMEOUT_S,
        parsing.parse_rpc_timeout,
        metavar="SECONDS",
    ),
    Option(
        OPT_AGAINST_TVM,
        "against_tvm",
        "is the TVM upgrade safe? build every selected test with today's TVM and "
        "with apache-tvm VERSION (installed once into a venv under the user's cache directory, or "
        "$TVMPERF_CACHE_DIR), time both builds side by side, compare every exact and simulated metric and fail "
        "a test that today's TVM makes worse past the thresholds (llvm targets; no baseline is read or written)",
        parse=parsing.parse_version,
        metavar="VERSION",
    ),
    Option(
        OPT_AGAINST_TVM_REPORT_ONLY,
        "against_tvm_report_only",
        "with --tvmperf-against-tvm: report the upgrade's verdicts without failing a test for them",
        **_SWITCH,
    ),
    Option(
        OPT_AGAINST_TVM_PACKAGES,
        "against_tvm_packages",
        "with --tvmperf-against-tvm: more packages the other "
        "version's environment needs to build the tests' workloads, e.g. onnx,onnxruntime,torch (each at today's "
        "installed version unless given as NAME==VERSION; default none)",
        (),
        parsing.parse_packages,
        metavar="PKG,...",
    ),
    Option(
        OPT_TRUST_ARTIFACTS,
        "trust_artifacts",
        "on: load the compiled libraries (.so) that baselines of the old "
        "form name (--tvmperf-baseline-program=so) for a/b timing. They are native code that runs in this process, "
        "so a change to the baseline directory alone could run code: only for baselines you trust. Default off: "
        f"such baselines are compared without a/b timing (also ${ENV_TRUST_ARTIFACTS})",
        False,
        parsing.parse_switch,
        metavar="on|off",
        env=ENV_TRUST_ARTIFACTS,
    ),
    Option(
        OPT_BASELINES_REF,
        "baselines_ref",
        "read the baseline directory (JSON, IR and tuning database files) as it is at this git "
        "revision, e.g. origin/main, so that a pull request is judged against the base branch's baselines and "
        "cannot change them; not with --tvmperf-update (also $" + ENV_BASELINES_REF + ")",
        parse=parse_git_ref,
        metavar="REF",
        env=ENV_BASELINES_REF,
    ),
    Option(
        OPT_LAYERS,
        "layers",
        "on: time each layer of TVM (its kernel calls, vm-bytecode) and of each peer "
        "framework timed (torch leaf modules, onnxruntime nodes), match them and show where TVM loses time, "
        "also on a passing test; off (default): only when a vs_<peer> limit fails",
        False,
        parsing.parse_switch,
        metavar="on|off",
    ),
    Option(
        OPT_SAME_PROGRAM,
        "same_program",
        "skip (default): a build whose program (lowered IR and weights) is byte for byte the baseline's, under "
        "the TVM version that recorded it, passes the time gate without being timed against it: the same code "
        "timed twice in one process can differ by where it lands in memory (measured 1.24x), which is no "
        f"regression; time: time it side by side all the same (also ${ENV_SAME_PROGRAM})",
        "skip",
        parsing.parse_same_program,
        metavar="skip|time",
        env=ENV_SAME_PROGRAM,
    ),
    Option(
        OPT_RESOURCES,
        "resources",
        "the resources measured and gated beside time and counts: alloc_bytes "
        "(bytes the VM allocates at run time in one call, vm-bytecode), code_bytes (the compiled code's size "
        "by kernel), peak_bytes and device_peak_bytes (the peak memory of one call on the host and on a GPU, "
        "read in the isolation child) and compile_s (the baseline's IR and today's built side by side, where the program or TVM "
        "changed); a comma-separated list, all (default) or none; a metric left out is n/a; marker resources=",
        parsing.RESOURCE_METRICS,
        parsing.parse_resources,
        metavar="LIST|all|none",
        marker_keys=("resources",),
        marker_role="sets",
    ),
    Option(
        OPT_APPROVED_CHANGE,
        "approved_change",
        "with --tvmperf-baselines-ref: a maintainer approved the baselines "
        "this pull request re-recorded (in CI: a PR label only maintainers can set). Each entry of the work tree's "
        "baselines that differs from the ref's is then verified here, by the gate against it (exact metrics as "
        "measured, times within their noise), and passes only where it is what this code measures; without it "
        "such an entry fails, showing the change. Command line or $" + ENV_APPROVED_CHANGE + " only: the "
        "project's own configuration, part of the pull request, cannot approve it",
        False,
        parsing.parse_switch,
        metavar="on|off",
        ini=False,
        env=ENV_APPROVED_CHANGE,
    ),
    Option(
        OPT_CHANGES_MD,
        "changes_md_path",
        "with --tvmperf-baselines-ref: write the baseline changes of this pull "
        "request (each changed entry, metric old -> new, whether approved and verified) as Markdown, ready for a "
        "PR comment; also in the GitHub step summary",
        **_REPORT_FILE,
    ),
)


def addoption(parser) -> None:
    """Register every option of :data:`OPTIONS` on the command line and, where it has one, in the ini."""
    group = parser.getgroup("tvmperf", "TVM performance gate (pytest-tvmperf)")
    for opt in OPTIONS:
        help_text = opt.help.replace("%", "%%")  # argparse formats help with %
        if opt.switch:
            group.addoption(opt.flag, dest=opt.dest, action="store_true", default=False, help=help_text)
        else:
            convert = None if opt.parse is None else parsing.argparse_type(opt.parse)
            group.addoption(opt.flag, dest=opt.dest, default=None, metavar=opt.metavar, help=help_text, type=convert)
        if opt.ini:
            parser.addini(opt.dest, opt.help, default="")


PASSTHROUGH: tuple[str, ...] = tuple(opt.flag for opt in OPTIONS if opt.passthrough)


def passthrough_args(argv: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The PASSTHROUGH options of a command line, each as one ``--option=value``."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        name, eq, value = str(arg).partition("=")
        if name in PASSTHROUGH:
            if eq:
                out.append(f"{name}={value}")
            elif i + 1 < len(argv):
                out.append(f"{name}={argv[i + 1]}")
    return tuple(out)
