"""The one vocabulary of outcomes: every verdict the plugin reaches, as an enum.

Members are ``str`` too (``Verdict.REGRESSED == "regressed"``), so results files,
JUnit properties and messages show the plain word.

Several things get a verdict, each from its own part of the vocabulary (the
``Literal`` aliases below name those parts for type checkers): a time decision
(``TimeStatus``), one metric against its baseline (``MetricStatus``), a ratio against
its limit (``RatioStatus``) and a test as a whole (``TEST_VERDICTS``).
"""

from __future__ import annotations

from enum import Enum
from typing import Literal


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

    @classmethod
    def known(cls, word: str) -> "Verdict | str":
        """``word`` as a member when it is one, else unchanged (a word of another
        version of the plugin, read back from a file)."""
        try:
            return cls(word)
        except ValueError:
            return word


#: the verdicts that fail a test
FAILING = frozenset({Verdict.REGRESSED, Verdict.EXCEEDED, Verdict.WRONG, Verdict.ERROR, Verdict.NO_BASELINE,
                     Verdict.SLOWER_THAN_PEER})

#: a time decision from the samples (``timestats.decide``)
TimeStatus = Literal[Verdict.PASS, Verdict.REGRESSED, Verdict.IMPROVED, Verdict.INCONCLUSIVE]
#: one metric against its baseline (``compare.MetricVerdict``)
MetricStatus = Literal[Verdict.PASS, Verdict.REGRESSED, Verdict.IMPROVED, Verdict.INCONCLUSIVE, Verdict.NA,
                       Verdict.NOT_GATED]
#: a ratio against its limit (``compare.RatioVerdict``: a peer framework, an ``assert_ratio`` relation)
RatioStatus = Literal[Verdict.PASS, Verdict.EXCEEDED, Verdict.INCONCLUSIVE, Verdict.NOT_GATED]

#: the verdicts a test as a whole can get (the summary table's last column)
TEST_VERDICTS = (Verdict.PASS, Verdict.REGRESSED, Verdict.IMPROVED, Verdict.INCONCLUSIVE, Verdict.RECORDED,
                 Verdict.NO_BASELINE, Verdict.ERROR, Verdict.WRONG, Verdict.SLOWER_THAN_PEER)
