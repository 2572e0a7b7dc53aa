"""Configuration is code: the tvmperf settings of a change that can loosen its own gate,
named in the run's summary (pure: text in, lines out). With ``--tvmperf-baselines-ref``
the pull request's pytest configuration is part of the change (``tvmperf_artifacts =
off``, a larger threshold...): :func:`differences` names every tvmperf ini key, and every
pytest key that decides which tests run (``addopts``, ``testpaths``, ``python_files``...), whose
value differs from the ref's, but those that cannot loosen a verdict. Without a ref, :func:`ab_off_line` says when the configuration
switched a/b timing off for tests that then had no time gate at all.
"""

from __future__ import annotations

import configparser
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

#: where pytest reads its ini, in the order it looks in one directory
INI_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
#: ini keys that change no verdict (how long to wait, what is shown): never reported
NEVER_LOOSENS = frozenset(
    "tvmperf_layers tvmperf_rpc_timeout tvmperf_child_timeout tvmperf_lock_timeout tvmperf_rpc "
    "tvmperf_against_tvm tvmperf_against_tvm_packages".split()
)


#: pytest's own ini keys that decide which tests run (or pass options that can): any difference from
#: the ref's is named, whatever it holds (issue 66: only an addopts holding "tvmperf" was, so
#: ``addopts = --deselect test_perf.py::test_b`` hid a regressed test without a line)
COLLECTION_KEYS = ("addopts", "testpaths", "python_files", "python_classes", "python_functions", "norecursedirs")


@dataclass(frozen=True)
class Difference:
    """One setting of this run that differs from the ref's."""

    key: str
    here: str  #: "" where unset (its default)
    there: str

    def line(self, here_file: str, ref: str, there_file: str | None) -> str:
        def said(value: str, where: str) -> str:
            return f"{where} sets {self.key} = {value!r}" if value else f"{where} leaves {self.key} unset (its default)"

        there_where = f"{there_file} at {ref}" if there_file else f"{ref} (no pytest configuration)"
        return (
            f"{said(self.here, here_file)}, {said(self.there, there_where)}: a setting of this change that can "
            f"loosen the gate; configuration is code, review it as such"
        )


def ini_values(name: str, text: str) -> dict[str, str] | None:
    """The pytest ini keys of one configuration file (its name says its form), as text;
    None when the file holds no pytest configuration (pytest would look further)."""
    if name.endswith(".toml"):
        import tomllib

        try:
            data = tomllib.loads(text)
        except (tomllib.TOMLDecodeError, ValueError):
            return None
        section = data.get("tool", {}).get("pytest", {}).get("ini_options")
        if not isinstance(section, dict):
            return None
        return {str(k): _as_text(v) for k, v in section.items()}
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    section = "tool:pytest" if name.endswith("setup.cfg") else "pytest"
    if not parser.has_section(section):
        return {} if name.endswith("pytest.ini") else None  # a pytest.ini counts even without the section
    return {k: v for k, v in parser.items(section)}


def _as_text(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(str(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _same(here: str, there: str, parse: Callable[[Any], Any] | None) -> bool:
    if here == there or parse is None or not (here and there):
        return here == there
    try:
        return parse(here) == parse(there)
    except (ValueError, TypeError):
        return False


def differences(
    here: Mapping[str, str], there: Mapping[str, str], keys: Sequence[tuple[str, Callable[[Any], Any] | None]]
) -> list[Difference]:
    """The ``keys`` (ini key, its parser) whose value here differs from the ref's, and the
    :data:`COLLECTION_KEYS` that differ."""
    found = []
    for key, parse in keys:
        if key in NEVER_LOOSENS:
            continue
        a, b = str(here.get(key, "") or "").strip(), str(there.get(key, "") or "").strip()
        if not _same(a, b, parse):
            found.append(Difference(key, a, b))
    for key in COLLECTION_KEYS:  # what runs at all: a --deselect in addopts hides a regressed test
        a, b = str(here.get(key, "") or "").strip(), str(there.get(key, "") or "").strip()
        if a != b:
            found.append(Difference(key, a, b))
    return found


def ab_off_line(where: str, not_gated: int) -> str:
    """The configuration switched a/b timing off and ``not_gated`` tests had no time
    baseline of this machine: their time was shown, never gated."""
    return (
        f"a/b timing is off ({where}): {not_gated} test(s) with no time baseline for this machine were shown, not "
        f"gated; the configuration weakens the time gate (a/b timing is the only time gate on a machine "
        f"that recorded no baseline, as on hosted CI)"
    )
