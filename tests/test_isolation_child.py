"""The isolation child (sandbox/child.py) starts without torch: tvm_ffi imports torch when
it is installed, two thirds of the child's start, and nothing the child runs uses it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: the child as the session starts it (``python -m``), saying at its end what it imported
CHILD = """
import runpy, sys
runpy.run_module("pytest_tvmperf.sandbox.child", run_name="__main__")
print("tvm" in sys.modules, sys.modules.get("torch") is not None, file=sys.stderr)
"""


def test_the_isolation_child_imports_tvm_without_torch():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TVMPERF_ALLOW_TORCH", None)
    done = subprocess.run(
        [sys.executable, "-c", CHILD],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=True,
    )
    assert json.loads(done.stdout.splitlines()[0]) == {"ready": True}  # started and served (no request)
    assert done.stderr.splitlines()[-1] == "True False"  # TVM imported, torch not
