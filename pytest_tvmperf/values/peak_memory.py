"""Peak memory of one call of the entry, the pure parts (the isolation child is sandbox/peak.py).

``peak_bytes``: the host's peak resident growth over one call: the child resets the
high-water mark (``/proc/self/clear_refs``), reads its resident size, makes one call and
reads ``VmHWM``; the VM's pool is emptied before each call, and the allocator returns every
block of 64 KiB or more when freed (``MALLOC_MMAP_THRESHOLD_``), so what a call allocates
shows as growth. ``device_peak_bytes``: a GPU's free memory before and after one call from
an emptied pool (which keeps what the call allocated: the most the call held)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

#: a growth of at most this many bytes over the baseline's passes whatever the relative
#: limit: the page-level noise of an idle and of a loaded machine (docs/gate.md, "Peak
#: memory": 0 to 69,632 B between fresh processes for the same program, benchmarks/peak_noise.py)
PEAK_FLOOR_BYTES = 256 * 1024
#: calls measured, each from an emptied pool, after the crash check's call in the same child
#: (or one made first where there was none: thread pools, lazy loads)
PEAK_REPEATS = 3
#: the child's allocator hands blocks of at least this many bytes to mmap, so they come
#: back to the system when freed (glibc; a fixed threshold also stops it from adapting)
MMAP_THRESHOLD = 65536

#: n/a reasons (never 0)
NO_CLEAR_REFS = (
    "/proc/self/clear_refs cannot be written here (not Linux, or a kernel without it), so one "
    "call's peak cannot be told from the process's"
)
NOT_EXPORTED = "the build was not exported to run in the isolation child, where peak memory is read"
REMOTE = "an RPC device runs the program in its own process, whose memory is not read"
ON_HOST = "the target runs on the host: its memory is peak_bytes"
NOT_RUN = "the program does not run on this machine, so its peak memory cannot be read"
NO_FREE_MEMORY = "the device does not report its free memory (available_global_memory), so its peak cannot be read"


@dataclass(frozen=True)
class PeakReading:
    """The bytes each measured call added at its peak (growths, in the order measured)."""

    samples: tuple[int, ...]

    @property
    def total(self) -> int:
        """What the gate compares: the median (the lower one of an even count, a whole
        number of bytes); never negative."""
        return max(0, int(statistics.median_low(self.samples))) if self.samples else 0

    @classmethod
    def from_reply(cls, reply: object) -> "PeakReading | str":
        """The child's reply (``{"samples": [...]}`` or ``{"na": why}``) read back; a
        reply of another shape is n/a with what it was."""
        if isinstance(reply, dict):
            samples = reply.get("samples")
            if isinstance(samples, list) and samples and all(isinstance(s, int) for s in samples):
                return cls(tuple(samples))
            why = reply.get("na") or reply.get("error")
            if isinstance(why, str) and why:
                return why[:500]
        return f"the isolation child gave no reading ({str(reply)[:200]})"


def allowed_peak(baseline: float, relative: float | None, absolute: float | None = None) -> float:
    """The most a peak may be against ``baseline``: the limit's, or the baseline plus the
    noise floor where that is more."""
    limit = baseline * (1.0 + relative) if relative is not None else baseline + (absolute or 0)
    return max(limit, baseline + PEAK_FLOOR_BYTES)


def floor_text() -> str:
    """``growth up to 256 KiB passes``: what the limit of a peak adds to its description."""
    return f"growth up to {PEAK_FLOOR_BYTES // 1024} KiB passes"
