"""Pure: the confirmation rule, written once.

A time-like verdict (a time comparison, a peer ratio, an ``assert_ratio`` relation)
that suspects a failure, or cannot tell, is measured again with twice the rounds; the
pooled samples decide, and a failure stands only when each measurement on its own was
past the limit too, so one disturbed measurement cannot fail a test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Generic, Mapping, Protocol, TypeVar

from .measure import TimeSamples
from .verdict import Verdict


class Judged(Protocol):
    @property
    def status(self) -> str: ...

    @property
    def past_limit(self) -> bool:
        """This measurement alone is past the limit."""

    def held(self) -> "Judged":
        """The same evidence, held at ``inconclusive``."""


J = TypeVar("J", bound=Judged)


@dataclass(frozen=True)
class Confirmed(Generic[J]):
    """The verdicts by name after confirmation, with the evidence of each step."""

    samples: TimeSamples  # pooled when re-measured
    first: Mapping[str, J]
    second: Mapping[str, J] | None  # the re-measure alone; None when not re-measured
    verdicts: Mapping[str, J]
    #: names whose pooled samples fail but whose two measurements disagree (held at inconclusive)
    disagreed: frozenset[str] = frozenset()


def confirm(samples: TimeSamples, judge: Callable[[TimeSamples], Mapping[str, J]],
            remeasure: Callable[[], TimeSamples], enabled: bool = True) -> Confirmed[J]:
    """Judge ``samples``; when any verdict is unsure (and confirmation is ``enabled``),
    re-measure, judge the re-measure alone and the pooled samples, and hold at
    inconclusive each pooled failure that either measurement alone does not bear out."""
    first = judge(samples)
    if not enabled or not any(Verdict(v.status).unsure for v in first.values()):
        return Confirmed(samples, first, None, first)
    again = remeasure()
    second = judge(again)
    pooled = samples + again
    final = dict(judge(pooled))
    disagreed = frozenset(
        name for name, v in final.items()
        if Verdict(v.status).fails and not (first[name].past_limit and name in second and second[name].past_limit))
    for name in disagreed:
        final[name] = final[name].held()
    return Confirmed(pooled, first, second, final, disagreed)
