"""How the time verdict weighs its evidence: the policy the options set and judge/compare.py
applies (config's, so that the options build it without importing the judge)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from pytest_tvmperf.config.parsing import DEFAULT_ALPHA, DEFAULT_NOISE


@dataclass(frozen=True)
class TimePolicy:
    """How the time verdict weighs its evidence. alpha: two-sided false-alarm probability of
    one comparison (the run's rate divided by the number of timed tests); noise_*: standard
    deviation of the log ratio that the samples cannot show, per mode (a/b against the
    baseline's artifact timed side by side; normalized by the reference kernel; raw);
    other_machine: "normalized" compares with another machine's baseline in normalized form
    (noise doubled), "skip" shows the time without gating it."""

    alpha: float = DEFAULT_ALPHA
    noise_ab: float = DEFAULT_NOISE["ab"]
    noise_normalized: float = DEFAULT_NOISE["normalized"]
    noise_raw: float = DEFAULT_NOISE["raw"]
    other_machine: str = "normalized"
    noise_ratio: float = DEFAULT_NOISE["ratio"]


def time_policy(alpha: float, noise: Mapping[str, float], other_machine: str, comparisons: int = 1) -> TimePolicy:
    """The one constructor of the time verdict's policy: the false-alarm rate ``alpha`` is
    split evenly over the ``comparisons`` (Bonferroni), so a suite of many cases does not
    fail by chance; ``noise`` per mode as :func:`parse_noise` gives it."""
    noises = {f"noise_{mode}": noise[mode] for mode in ("ab", "normalized", "raw", "ratio")}
    return TimePolicy(alpha=alpha / max(1, comparisons), other_machine=other_machine, **noises)
