"""The other TVM version's environment (``--tvmperf-against-tvm=VERSION``): a venv
``<cache>/tvm-<version>-<key>/`` (``<cache>``: store/user_cache.py; ``<key>`` hashes the
version, the Python version and the requirements: a change of any makes a new one) with
``apache-tvm==VERSION``, NumPy and this plugin's own dependencies. Made with ``venv`` and
``pip``, not ``uv``: both come with every CPython, pip honours the user's pip
configuration (index, certificates, constraints), and it is built once per version and
machine, so uv's speed would rarely matter. The plugin itself is not installed there: the
child runs this process's package (a link on its ``PYTHONPATH``), so editing it never
reinstalls TVM. Built in a temporary directory beside its place and renamed into it when
complete, under a file lock (two runs at once build it once).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pytest_tvmperf.store.user_cache import cache_root  # the plugin's one cache directory

#: the file that marks a complete environment (written last, before the rename)
MARKER = "tvmperf-env.json"
#: this plugin's own run-time dependencies, installed at today's versions (so the child's
#: pytest behaves as this one), TVM and NumPy aside
PLUGIN_DEPS = ("pytest", "pytest-benchmark", "hypothesis", "tqdm", "cloudpickle", "psutil", "threadpoolctl", "filelock")


class EnvError(Exception):
    """The other version's environment cannot be made: a usage error at the start."""


@dataclass(frozen=True)
class OtherEnv:
    """A complete environment of another TVM version."""

    path: Path
    version: str  #: as asked for (``0.26.0``)
    tvm_version: str  #: as ``tvm.__version__`` says there

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"


def requirements(version: str, packages: tuple[str, ...] = ()) -> list[str]:
    """What pip installs: that TVM, NumPy, the plugin's dependencies and ``packages``,
    each at today's version where it is installed here."""
    from importlib.metadata import PackageNotFoundError, version as installed

    reqs = [f"apache-tvm=={version}", "numpy"]
    for name in (*PLUGIN_DEPS, *packages):
        try:
            have = installed(name) if "==" not in name else None
        except PackageNotFoundError:
            have = None
        reqs.append(f"{name}=={have}" if have else name)
    return reqs


def env_dir(version: str, root: Path | None = None, reqs: list[str] | None = None) -> Path:
    reqs = requirements(version) if reqs is None else reqs
    python = ".".join(map(str, sys.version_info[:3]))
    key = hashlib.sha256(json.dumps([version, python, sys.platform, sorted(reqs)]).encode()).hexdigest()[:12]
    return (root or cache_root()) / f"tvm-{version}-{key}"


def _read(path: Path) -> OtherEnv | None:
    try:
        data = json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return None
    if not (path / "bin" / "python").exists():
        return None
    return OtherEnv(path, str(data.get("version")), str(data.get("tvm_version")))


def _tail(text: str, lines: int = 8) -> str:
    kept = [line for line in text.splitlines() if line.strip() and not line.startswith("WARNING: Location")]
    return "\n".join(f"    {line[:300]}" for line in kept[-lines:])


def _run(cmd: list[str], what: str, timeout: float) -> str:
    environ = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    try:
        done = subprocess.run(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, env=environ
        )
    except subprocess.TimeoutExpired:
        raise EnvError(f"{what}: no result within {timeout:g} s") from None
    except OSError as exc:
        raise EnvError(f"{what}: {exc}") from None
    if done.returncode != 0:
        raise EnvError(f"{what} failed (exit status {done.returncode}); its last lines:\n{_tail(done.stdout)}")
    return done.stdout


def ensure_env(
    version: str,
    root: Path | None = None,
    log: Callable[[str], None] = lambda s: None,
    timeout: float = 1800,
    packages: tuple[str, ...] = (),
    lock_timeout_s: float | None = None,
) -> OtherEnv:
    """The environment of apache-tvm ``version`` (with ``packages``): the cached one, or
    made now. Raises EnvError naming the version and pip's last lines when it cannot be made.
    Another run building it is waited for at most ``lock_timeout_s`` (default: its build's
    bound), with a line through ``log`` naming it."""
    reqs = requirements(version, packages)
    final = env_dir(version, root, reqs)
    if (found := _read(final)) is not None:
        return found
    from pytest_tvmperf.store.locks import LockError, file_lock

    final.parent.mkdir(parents=True, exist_ok=True)
    lock, what = Path(str(final) + ".lock"), f"lock of the apache-tvm {version} environment"
    held = contextlib.ExitStack()  # only taking the lock is an EnvError, not what is done under it
    try:
        wait_s = timeout + 900 if lock_timeout_s is None else lock_timeout_s
        held.enter_context(file_lock(lock, wait_s, what, log, option="the bound of another run's build of it"))
    except LockError as exc:
        raise EnvError(f"the environment of apache-tvm {version} ({final}) cannot be made: {exc}") from None
    with held:
        if (found := _read(final)) is not None:  # another run made it while this one waited
            return found
        temp = final.parent / f".tmp-{final.name}-{os.getpid()}"
        shutil.rmtree(temp, ignore_errors=True)
        shutil.rmtree(final, ignore_errors=True)  # an incomplete one (no marker), if any: made again
        log(f"tvmperf: making the environment of apache-tvm {version} in {final} (once per machine)")
        try:
            _run([sys.executable, "-m", "venv", str(temp)], f"python -m venv {temp}", 300)
            python = str(temp / "bin" / "python")
            pip_install = [python, "-m", "pip", "install", "--disable-pip-version-check"]
            import_tvm = [python, "-c", "import tvm; print('TVM', tvm.__version__)"]
            _run([*pip_install, *reqs], f"pip install apache-tvm=={version}", timeout)
            try:
                out = _run(import_tvm, f"import tvm (apache-tvm {version})", 300)
            except EnvError as exc:
                floor = _ffi_floor(python) if "undefined symbol" in str(exc) else None
                if floor is None:
                    raise
                # a release built against an older tvm-ffi than pip picks (0.25.0 declares
                # apache-tvm-ffi>=0.1.12 and does not load with 0.1.15): the floor it declares
                log(
                    f"tvmperf: apache-tvm {version} does not load with the newest apache-tvm-ffi; "
                    f"installing apache-tvm-ffi=={floor}, the oldest it declares"
                )
                _run([*pip_install, f"apache-tvm-ffi=={floor}"], f"pip install apache-tvm-ffi=={floor}", timeout)
                reqs = [*reqs, f"apache-tvm-ffi=={floor}"]
                out = _run(import_tvm, f"import tvm (apache-tvm {version}, apache-tvm-ffi {floor})", 300)
            tvm_version = next((line.split()[1] for line in out.splitlines() if line.startswith("TVM ")), version)
            meta = {"version": version, "tvm_version": tvm_version, "requirements": reqs}
            (temp / MARKER).write_text(json.dumps({**meta, "python": sys.version.split()[0]}, indent=1) + "\n")
            os.replace(temp, final)
        except BaseException:
            shutil.rmtree(temp, ignore_errors=True)
            raise
    return OtherEnv(final, version, tvm_version)


def _ffi_floor(python: str) -> str | None:
    """The lowest apache-tvm-ffi the installed apache-tvm declares (``>=0.1.12``), if any."""
    code = (
        "import re\nfrom importlib.metadata import requires\n"
        "for r in requires('apache-tvm') or []:\n"
        "    m = re.match(r'apache[-_]tvm[-_]ffi\\s*\\(?>=\\s*([0-9][^,;)\\s]*)', r)\n"
        "    if m: print(m.group(1))\n"
    )
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120).stdout.split()
    except (subprocess.TimeoutExpired, OSError):
        return None
    return out[0] if out else None


def index_has(version: str, timeout: float = 60) -> str | None:
    """None when pip's index lists apache-tvm ``version`` (checked with ``pip index
    versions``), else why not (no network, not on the index)."""
    cmd = [sys.executable, "-m", "pip", "index", "versions", "apache-tvm"]
    try:
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    except (subprocess.TimeoutExpired, OSError) as exc:
        return f"pip index versions apache-tvm: {exc}"
    if done.returncode != 0:
        return f"pip index versions apache-tvm failed:\n{_tail(done.stdout, 3)}"
    listed = re.search(r"Available versions:(.*)", done.stdout)
    if listed is None or version not in [v.strip() for v in listed.group(1).split(",")]:
        return f"apache-tvm {version} is not on the package index pip uses"
    return None
