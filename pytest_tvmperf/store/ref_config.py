"""``--tvmperf-baselines-ref``: this run's tvmperf settings against the ref's own pytest
configuration, read from git (config/gate_settings.py decides what to name)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pytest_tvmperf.config.gate_settings import COLLECTION_KEYS, INI_FILES, differences, ini_values
from pytest_tvmperf.config.options import OPTIONS
from pytest_tvmperf.store.git_ref import RefBaselines, text_at


def _ref_ini(ref: RefBaselines, candidates: list[Path]) -> tuple[str | None, dict[str, str]]:
    """The ref's pytest configuration: the first candidate file there that holds one."""
    for path in candidates:
        text = text_at(ref, path)
        if text is None:
            continue
        values = ini_values(path.name, text)
        if values is not None:
            return os.path.relpath(path, ref.root), values
    return None, {}


def loosening_lines(config: Any, ref: RefBaselines) -> list[str]:
    """One line per tvmperf setting of this run's configuration file that differs from the ref's."""
    rootpath = Path(config.rootpath)
    inipath = Path(config.inipath) if getattr(config, "inipath", None) else None
    candidates = ([inipath] if inipath is not None else []) + [
        rootpath / n for n in INI_FILES if inipath is None or rootpath / n != inipath
    ]
    there_file, there = _ref_ini(ref, candidates)
    keys = [(opt.dest, opt.parse) for opt in OPTIONS if opt.ini]
    here = {key: config.getini(key) for key, _ in keys}
    here = {key: " ".join(v) if isinstance(v, list) else str(v or "") for key, v in here.items()}
    # pytest's own keys as the file writes them (getini gives their defaults where unset), read as the ref's are
    try:
        written = ini_values(inipath.name, inipath.read_text(encoding="utf-8")) if inipath is not None else None
    except (OSError, UnicodeDecodeError):
        written = None
    here |= {key: (written or {}).get(key, "") for key in COLLECTION_KEYS}
    here_file = os.path.relpath(inipath, rootpath) if inipath is not None else "this run (no pytest configuration file)"
    return [d.line(here_file, ref.ref, there_file) for d in differences(here, there, keys)]
