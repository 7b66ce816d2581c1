"""What became of a run's notes, in one line, and when to stop asking an unfit model (pure).

`notes: 13 by smollm2-135m-instruct, 7 offline (4 invented facts, 2 no words, 1 timeout)`.
A model whose first answers are mostly refused (BREAKER_REFUSED of the first BREAKER_ANSWERS)
is not asked again in that run: the base Gemma 3 270M has 14 to 17 of 20 answers refused.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from digest.notes.answers import INVENTED, NO_WORDS

BREAKER_ANSWERS = 8  # the first answers of a run that tell whether the model is fit
BREAKER_REFUSED = 6  # of them refused: no more asked this run
UNFIT = "unfit model"

# Why a model's answer was refused or its call failed, by what the error says.
_KINDS = (
    (INVENTED, "invented facts"),
    (NO_WORDS, "no words"),
    ("not about the text", "off topic"),
    ("echoed the prompt", "echoed the prompt"),
    ("same thing more than once", "repetition"),
    ("must be written in", "wrong language"),
    ("cut off", "cut off"),
    ("names a URL", "made-up link"),
    ("no summary", "no summary"),
    ("placeholder or refusal", "no summary"),
    ("no answer within", "timeout"),
    ("no usable answer", "unusable answer"),
)


def failure_kind(error: str) -> str:
    """A few words for why a note is not the model's: "invented facts", "timeout"…"""
    return next((kind for said, kind in _KINDS if said in error), "failed call")


@dataclass
class Outcomes:
    """The notes of one run: by the model, or offline and why; the first answers' verdicts."""

    by_model: int = 0
    offline: Counter[str] = field(default_factory=Counter)
    first: list[str | None] = field(default_factory=list)  # refusal kind, None: kept

    def kept(self, items: int) -> None:
        self.by_model += items
        self._answer(None)

    def failed(self, error: str, items: int, *, refused: bool) -> None:
        """`items` got the offline note because of `error`; `refused`: the model answered."""
        kind = failure_kind(error)
        self.offline[kind] += items
        if refused:
            self._answer(kind)

    def not_asked(self, why: str, items: int) -> None:
        self.offline[why] += items

    def _answer(self, kind: str | None) -> None:
        if len(self.first) < BREAKER_ANSWERS:
            self.first.append(kind)

    def unfit(self) -> bool:
        """Whether most of the run's first answers were refused."""
        return sum(kind is not None for kind in self.first) >= BREAKER_REFUSED

    def refusals(self) -> str:
        """The first answers' refusals by kind: "4 invented facts, 2 no words"."""
        kinds = Counter(kind for kind in self.first if kind is not None)
        return ", ".join(f"{count} {kind}" for kind, count in kinds.most_common())

    def line(self, model: str) -> str | None:
        """`notes: 13 by <model>, 7 offline (4 invented facts, 2 no words, 1 timeout)`;
        None when no note was asked of the model."""
        offline = sum(self.offline.values())
        if not self.by_model and not offline:
            return None
        line = f"notes: {self.by_model} by {model}"
        if offline:
            why = ", ".join(f"{count} {kind}" for kind, count in self.offline.most_common())
            line += f", {offline} offline ({why})"
        return line
