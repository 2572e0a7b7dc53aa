"""The isolation child's side of peak memory (values/peak_memory.py): one call of the
entry measured a few times, on the host from ``/proc/self``, on a GPU from its free
memory, each from an emptied VM memory pool after one unmeasured call (the runtime's
thread pool and lazy loads are not the program's). The readers are arguments (tests)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pytest_tvmperf.values.peak_memory import NO_CLEAR_REFS, NO_FREE_MEMORY, PEAK_REPEATS


@dataclass(frozen=True)
class ProcMemory:
    """``VmRSS`` and ``VmHWM`` of this process's status; the high-water mark reset via ``clear_refs``."""

    status: Path = Path("/proc/self/status")
    clear_refs: Path = Path("/proc/self/clear_refs")

    def reset_peak(self) -> bool:
        """Reset the high-water mark to the resident size now; False where that cannot be done."""
        try:
            with open(self.clear_refs, "w") as f:
                f.write("5")
        except OSError:
            return False
        return True

    def read(self, key: str) -> int | None:
        """``VmRSS`` or ``VmHWM`` in bytes; None where the status does not say."""
        try:
            with open(self.status) as f:
                for line in f:
                    name, _, value = line.partition(":")
                    if name == key:
                        return int(value.split()[0]) * 1024  # "1740 kB"
        except (OSError, ValueError, IndexError):
            return None
        return None


def host_peaks(
    call: Callable[[], Any],
    empty_pool: Callable[[], None],
    proc: ProcMemory,
    repeats: int = PEAK_REPEATS,
    warm: bool = True,
) -> dict[str, Any]:
    """``{"samples": [bytes, ...]}``: each measured call's peak resident growth, or ``{"na":
    why}``. ``empty_pool`` gives the VM's pooled memory back; ``warm``: make one call first
    (not where this process ran the program already: the crash check)."""
    if warm:
        call()  # its result dropped: thread pools, lazy loads
    if not proc.reset_peak():
        return {"na": NO_CLEAR_REFS}
    samples = []
    for _ in range(repeats):
        empty_pool()
        proc.reset_peak()
        before = proc.read("VmRSS")
        result = call()
        peak = proc.read("VmHWM")
        del result
        if before is None or peak is None:
            return {"na": f"{proc.status} reports no VmRSS/VmHWM, so one call's peak cannot be read"}
        samples.append(max(0, peak - before))
    return {"samples": samples}


def device_peaks(
    call: Callable[[], Any],
    empty_pool: Callable[[], None],
    sync: Callable[[], None],
    free_memory: Callable[[], int | None],
    repeats: int = PEAK_REPEATS,
    warm: bool = True,
) -> dict[str, Any]:
    """``{"samples": [bytes, ...]}``: the device memory each call took from an emptied pool
    (free memory before less after: the pool holds the call's allocations), or ``{"na": why}``."""
    if warm:
        call()
    sync()
    if free_memory() is None:
        return {"na": NO_FREE_MEMORY}
    samples = []
    for _ in range(repeats):
        empty_pool()
        sync()
        before = free_memory()
        result = call()
        sync()
        after = free_memory()
        del result
        if before is None or after is None:
            return {"na": NO_FREE_MEMORY}
        samples.append(max(0, before - after))
    return {"samples": samples}


def measure(compiled: Any, args: Any, out_specs: Any, dev: Any, device_type: str, warm: bool = True) -> dict[str, Any]:
    """The child's reply to a ``peak`` request: ``{"host": ..., "device": ...}`` (``device``
    only off the host, measured after the host's calls, so without a warm call of its own)."""
    import tvm

    call = compiled.caller(args, out_specs)
    clear = tvm.get_global_func("vm.builtin.memory_manager.clear", allow_missing=True)
    empty_pool = clear if clear is not None else (lambda: None)
    reply: dict[str, Any] = {"host": host_peaks(call, empty_pool, ProcMemory(), warm=warm)}
    if device_type != "cpu":

        def free() -> int | None:
            value = dev.available_global_memory
            return None if value is None else int(value)

        reply["device"] = device_peaks(call, empty_pool, dev.sync, free, warm=False)
    return reply
