"""The A/A suite through a TVM RPC tracker on loopback: suite wall time with 1 and 2
servers, and false alarms when the same code is judged through RPC.

Starts a tracker and servers on 127.0.0.1 (tests/rpc_fixtures.py: free ports, own process
groups, bounded lifetimes), records the A/A suite of false_alarms.py (mlp under
vm-bytecode and vm-compiled, rgb2yuv default and parallel: 4 tests) once on a device of
key `bench`, then:

- wall time of one gated run of the suite with 1 server (a plain run) and with 2 servers
  under `pytest -n 2` (each worker holds one device from the tracker's queue);
- N fresh gated processes through RPC (`--processes`), verdicts tallied: goal 0 `regressed`.

    python benchmarks/rpc_suite.py --processes 4
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from _harness import ROOT, run_pytest, tally, verdicts
from false_alarms import AA_TEST

sys.path.insert(0, str(ROOT / "tests"))
from rpc_fixtures import RpcFarm  # noqa: E402

KEY = "bench"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=4, help="fresh gated processes for the false-alarm count")
    args = parser.parse_args()
    start = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        (cwd / "test_aa.py").write_text(AA_TEST)
        (cwd / "pytest.ini").write_text("[pytest]\n")
        farm = RpcFarm(python=sys.executable, lifetime_s=3600)
        try:
            farm.start()
            farm.add_server(KEY)
            remote = [f"--tvmperf-rpc={farm.address}", f"--tvmperf-targets=llvm@rpc:{KEY}"]
            out = run_pytest([*remote, "--tvmperf-update"], cwd=cwd)
            assert "4 passed" in out, out[-3000:]
            walls: dict[str, float] = {}
            t0 = time.time()
            out = run_pytest([*remote, "--tvmperf-inconclusive=pass"], cwd=cwd)
            walls["1 server, one process"] = time.time() - t0
            runs = [verdicts(out)]
            farm.add_server(KEY)
            t0 = time.time()
            out = run_pytest([*remote, "--tvmperf-inconclusive=pass", "-n", "2"], cwd=cwd)
            walls["2 servers, pytest -n 2"] = time.time() - t0
            two = verdicts(out)
            assert len(two) == 4, out[-3000:]
            for i in range(args.processes):
                runs.append(verdicts(run_pytest([*remote, "--tvmperf-inconclusive=pass"], cwd=cwd)))
                print(
                    f"process {i + 1}/{args.processes} done at {time.time() - start:.0f} s", file=sys.stderr, flush=True
                )
        finally:
            farm.stop()
    print(f"A/A suite (4 tests) through an RPC tracker on loopback, {(time.time() - start) / 60:.1f} min in all")
    for name, wall in walls.items():
        print(f"  suite wall time, {name}: {wall:.1f} s")
    print(f"  verdicts of the -n 2 run: {dict(sorted(tally([two]).items()))}")
    c = tally(runs)
    print(
        f"  {sum(c.values())} verdicts from {len(runs)} fresh gated processes (1 server): pass {c['pass']}, "
        f"inconclusive {c['inconclusive']}, improved {c['improved']}, regressed {c['regressed']}"
    )


if __name__ == "__main__":
    main()
