"""The one vocabulary of outcomes: every verdict the plugin reaches, as an enum.

Members are ``str`` too (``Verdict.REGRESSED == "regressed"``), so results files,
JUnit properties and messages show the plain word.

Several things get a verdict, each from its own part of the vocabulary (the
``Literal`` aliases below name those parts for type checkers): a time decision
(``TimeStatus``), one metric against its baseline (``MetricStatus``), a ratio against
its limit (``RatioStatus``) and a test as a whole (``TEST_VERDICTS``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

from pytest_tvmperf.values.json_fields import Fields, SchemaProblem


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
    # a pull request's re-recorded baseline entry (--tvmperf-baselines-ref): not approved, or
    # approved and not what this code measures (result/baseline_change.py)
    UNAPPROVED_CHANGE = "unapproved change"
    UNVERIFIED_CHANGE = "unverified change"

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
    def known(cls, word: str) -> Verdict | str:
        """``word`` as a member when it is one, else unchanged (a word of another
        version of the plugin, read back from a file)."""
        try:
            return cls(word)
        except ValueError:
            return word


#: the verdicts that fail a test
FAILING = frozenset(
    {
        Verdict.REGRESSED,
        Verdict.EXCEEDED,
        Verdict.WRONG,
        Verdict.ERROR,
        Verdict.NO_BASELINE,
        Verdict.SLOWER_THAN_PEER,
        Verdict.UNAPPROVED_CHANGE,
        Verdict.UNVERIFIED_CHANGE,
    }
)

#: a time decision from the samples (``timestats.decide``)
TimeStatus = Literal[Verdict.PASS, Verdict.REGRESSED, Verdict.IMPROVED, Verdict.INCONCLUSIVE]
#: one metric against its baseline (``compare.MetricVerdict``)
MetricStatus = Literal[
    Verdict.PASS, Verdict.REGRESSED, Verdict.IMPROVED, Verdict.INCONCLUSIVE, Verdict.NA, Verdict.NOT_GATED
]
#: a ratio against its limit (``ratios.RatioVerdict``: a peer framework, an ``assert_ratio`` relation)
RatioStatus = Literal[Verdict.PASS, Verdict.EXCEEDED, Verdict.INCONCLUSIVE, Verdict.NOT_GATED]

#: the verdicts a test as a whole can get (the summary table's last column)
TEST_VERDICTS = (
    Verdict.PASS,
    Verdict.REGRESSED,
    Verdict.IMPROVED,
    Verdict.INCONCLUSIVE,
    Verdict.RECORDED,
    Verdict.NO_BASELINE,
    Verdict.ERROR,
    Verdict.WRONG,
    Verdict.SLOWER_THAN_PEER,
    Verdict.UNAPPROVED_CHANGE,
    Verdict.UNVERIFIED_CHANGE,
)


def read_verdict(fields: Fields, key: str) -> Verdict | str:
    """A verdict field: a member, or (lenient) the word as written; strict, a word that
    is no verdict is a SchemaProblem."""
    word = fields.text(key, required=True)
    verdict = Verdict.known(word)
    if fields.strict and not isinstance(verdict, Verdict):
        raise SchemaProblem(
            fields.path(key), f"expected a verdict ({', '.join(v.value for v in Verdict)}), got {word!r}"
        )
    return verdict


@dataclass(frozen=True)
class PeerCell:
    """A time ratio measured side by side, with its interval and verdict: TVM over a peer
    framework (``SummaryRow.peers``, the results' ``peers``), or one side of an
    ``assert_ratio`` relation over the other (the results' ``relation``)."""

    name: str
    ratio: float
    low: float
    high: float
    status: Verdict  # a RatioStatus
    #: the most the ratio may be; None: shown, not gated
    limit: float | None = None
    #: the medians it is the ratio of
    numerator_s: float | None = None
    denominator_s: float | None = None

    @classmethod
    def of(cls, v: Any) -> PeerCell:
        """The cell of a ``ratios.RatioVerdict``."""
        return cls(v.name, v.ratio, v.low, v.high, v.status, v.limit, v.numerator_s, v.denominator_s)

    def to_dict(self) -> dict[str, Any]:
        """Builtin types only (JSON, the xdist hand-over)."""
        return {
            "name": self.name,
            "ratio": self.ratio,
            "low": self.low,
            "high": self.high,
            "limit": self.limit,
            "status": str(self.status),
            "numerator_s": self.numerator_s,
            "denominator_s": self.denominator_s,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str = "peer", strict: bool = True) -> PeerCell:
        """Read back :meth:`to_dict`'s output; raises SchemaProblem naming the field
        (lenient, ``strict=False``: what is missing or wrong reads as nothing)."""
        f = data if isinstance(data, Fields) else Fields(data, where, strict)
        return cls(
            name=f.text("name", required=True),
            ratio=f.number("ratio", required=True),
            low=f.number("low", required=True),
            high=f.number("high", required=True),
            status=read_verdict(f, "status"),
            limit=f.number("limit"),
            numerator_s=f.number("numerator_s"),
            denominator_s=f.number("denominator_s"),
        )


def peer_failures(peers: Any) -> str:
    """The gated peers past their limit, in words (``slower than peer torch 3.10x > 1.5``),
    "" when none: what fails a test whose baseline was recorded all the same."""
    over = [p for p in peers if p.status == Verdict.EXCEEDED and p.limit is not None]
    return "; ".join(f"{Verdict.SLOWER_THAN_PEER} {p.name} {p.ratio:.2f}x > {p.limit:g}" for p in over)
