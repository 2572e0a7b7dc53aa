"""The one vocabulary of outcomes: every verdict the plugin reaches, as an enum.

Members are ``str`` too (``Verdict.REGRESSED == "regressed"``), so results files,
JUnit properties and messages show the plain word.
"""

from __future__ import annotations

from enum import Enum


class Verdict(str, Enum):
    # a metric against its baseline
    PASS = "pass"
    REGRESSED = "regressed"
    IMPROVED = "improved"
    INCONCLUSIVE = "inconclusive"
    NOT_GATED = "not gated"
    NA = "n/a"
    # a ratio against its limit (a peer framework, an assert_ratio relation)
    EXCEEDED = "exceeded"
    # a test as a whole
    RECORDED = "recorded"
    NO_BASELINE = "no baseline"
    ERROR = "error"
    WRONG = "wrong"
    SLOWER_THAN_PEER = "slower than peer"

    __str__ = str.__str__
    __format__ = str.__format__

    @property
    def fails(self) -> bool:
        """Does a test with this verdict fail?"""
        return self in FAILING

    @property
    def unsure(self) -> bool:
        """Worth re-measuring before it stands (a suspected failure, or no clear answer)."""
        return self in (Verdict.REGRESSED, Verdict.EXCEEDED, Verdict.INCONCLUSIVE)


#: the verdicts that fail a test
FAILING = frozenset({Verdict.REGRESSED, Verdict.EXCEEDED, Verdict.WRONG, Verdict.ERROR, Verdict.NO_BASELINE,
                     Verdict.SLOWER_THAN_PEER})
