"""The files of the ``tvmperf`` command: reading a baseline or results file (told apart
by content), and finding the test module a baseline file records."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from pytest_tvmperf.command.cli_match import CliError, Loaded, results_records
from pytest_tvmperf.result.text import update_command
from pytest_tvmperf.result.entry import RESULTS_KIND, parse_results
from pytest_tvmperf.store.files import parse_baselines, read_regular_text
from pytest_tvmperf.values.json_fields import dotted, find_long_int, loads, long_int_problem

#: the "kind" of pytest-tvmperf's other JSON files (results, history lines), found even in a truncated one
_TVMPERF_KIND_RE = re.compile(r'"kind"\s*:\s*"(pytest-tvmperf-[A-Za-z0-9_-]*)"')
#: a baseline file starts with its "schema_version" key (sorted keys), so even a truncated one shows it
_BASELINE_RE = re.compile(r'"(schema_version|tests)"\s*:')


def _neither(path: Path, what: str = "") -> CliError:
    return CliError(
        f"{path} {what}is neither a pytest-tvmperf baseline file (a JSON object with 'schema_version' and 'tests', "
        f'written by `pytest --tvmperf-update` under baselines/) nor a results file ("kind": "{RESULTS_KIND}", '
        f"written by `pytest --tvmperf-json=FILE`); give one of those"
    )


def load_file(path: str | Path) -> Loaded:
    """Read a baseline or a results file, telling them apart by content; raise CliError,
    BaselineError or ResultsError (one line naming the file and the fix)."""
    path = Path(path)
    if not path.exists():
        raise CliError(
            f"{path} does not exist; give a baseline file (baselines/<module path>.json, written by "
            f"`pytest --tvmperf-update`) or a results file (written by `pytest --tvmperf-json={path}`)"
        )
    try:
        text = read_regular_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"{path} cannot be read ({exc}); give a baseline file or a results file") from None
    try:
        data = loads(text)
    except json.JSONDecodeError:
        # truncated or not JSON: report it in the words of the kind of file it was meant to be
        kinds = set(_TVMPERF_KIND_RE.findall(text))
        if RESULTS_KIND in kinds:
            parse_results(text, path)  # raises ResultsError: not valid JSON, may be truncated
        if not kinds and _BASELINE_RE.search(text):
            parse_baselines(text, path)  # raises BaselineError: not valid JSON, how to re-record
        raise _neither(path, "is not JSON and ") from None  # not JSON, and nothing says it was meant to be one of ours
    except RecursionError:
        raise _neither(path, "is nested too deeply and ") from None
    if isinstance(data, dict) and "kind" not in data and ("schema_version" in data or "tests" in data):
        return Loaded(path, "baseline", parse_baselines(text, path))  # names a too long number's entry and field
    found = find_long_int(data)
    if found is not None:
        where, long_int = found
        raise CliError(
            f"{path}: field {dotted(where) or '(the whole file)'}: {long_int_problem(long_int)}; "
            f"give a file that pytest-tvmperf wrote (or re-create it)"
        )
    if isinstance(data, dict) and data.get("kind") == RESULTS_KIND:
        entries = parse_results(text, path)
        return Loaded(path, "results", results_records(entries, path), entries)
    raise _neither(path)


def module_of_baseline(path: Path) -> tuple[Path | None, tuple[str, ...]]:
    """The test module a baseline file records, and the ``--tvmperf-baselines`` option a
    pytest run needs to use that file: the first directory above the file whose
    mirrored module exists (``<root>/<dir>/tests/x.json`` -> ``<root>/tests/x.py``),
    else the mirror under a directory named ``baselines``; None when neither is found."""
    resolved = path.resolve()
    for directory in resolved.parents:
        if directory == directory.parent:
            break
        candidate = directory.parent / resolved.relative_to(directory).with_suffix(".py")
        if candidate.is_file():
            return candidate, (() if directory.name == "baselines" else (f"--tvmperf-baselines={directory.name}",))
    for directory in resolved.parents:
        if directory.name == "baselines":
            return directory.parent / resolved.relative_to(directory).with_suffix(".py"), ()
    return None, ()


def accept_command(key: str, baseline_file: Path | None, nodeid: str | None) -> str:
    """``pytest --tvmperf-update 'tests/x.py::test_x[...]'`` for a compared test: its node
    id from a results file, else its module found from the baseline file's path."""
    if nodeid is not None or baseline_file is None:
        return update_command(nodeid or key)
    module, options = module_of_baseline(baseline_file)
    shown = os.path.relpath(module) if module is not None else baseline_file.with_suffix(".py").name
    return update_command(f"{shown}::{key}", options)
