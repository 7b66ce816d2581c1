"""The week summary: one summary over the notes of the week's items as the reader's rules
leave them, cached (a rerun on the same notes makes no call); the offline one stands in when
the model fails or is stopped for the run."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from digest.errors import LLMUnavailable, SummarizeError, UnusableAnswer
from digest.models import OFFLINE_MODEL, Item, ModelUsage, Period, Statement, WeekSummary
from digest.notes import note_cache_key
from digest.notes.budget import RunBudget
from digest.notes.prompts import week_prompt_mark
from digest.store import Store

log = logging.getLogger("digest")


@dataclass(frozen=True)
class SummaryMade:
    """The week summary and what making it cost (None: no summary, no item has a note)."""

    summary: WeekSummary
    usage: ModelUsage | None = None


async def week_summary(budget: RunBudget, period: Period, items: Sequence[Item]) -> SummaryMade:
    """One summary over the notes of `items` (the week's, after the rules), cached."""
    summarizer = budget.writer()
    noted = [(item.id, item.display_title, item.note) for item in items if item.note]
    if not noted:
        return SummaryMade(WeekSummary(()))
    basis = json.dumps([(i, title, note.summary, note.tags) for i, title, note in noted])
    text = f"week {period.label}{week_prompt_mark(budget.config.llm)}\n{basis}"
    key = note_cache_key(text, summarizer, model=summarizer.summary_model)
    if (cached := _cached_week(budget.store, key)) is not None:
        return cached
    try:
        if budget.stopped:
            raise LLMUnavailable(budget.stopped)
        summary = await summarizer.week_summary(period.label, noted)
    except SummarizeError as exc:
        if isinstance(exc, LLMUnavailable) and not budget.stopped:  # else raised just above
            budget.stop(exc)
        log.warning("%s; the week summary falls back to the offline one", exc)
        spent = budget.spent(None)  # the refused answer was paid for
        offline = await budget.offline_summarizer().week_summary(period.label, noted)
        if isinstance(exc, UnusableAnswer):  # asked once for these notes: not again
            saved = week_to_json(offline, "")
            budget.store.save_week_summary(
                key, period.label, saved, budget.clock(), model=offline.model, usage=spent
            )
        return SummaryMade(offline, ModelUsage(OFFLINE_MODEL, "", 1, spent))
    usage = budget.spent(None)
    saved = week_to_json(summary, summarizer.prompt_version)
    budget.store.save_week_summary(
        key, period.label, saved, budget.clock(), model=summary.model, usage=usage
    )
    return SummaryMade(summary, ModelUsage(summary.model, summarizer.prompt_version, 1, usage))


def _cached_week(store: Store, key: str) -> SummaryMade | None:
    if (cached := store.cached_week_summary(key)) is None:
        return None
    text, usage = cached
    try:
        summary, prompt_version = week_from_json(text)
    except (ValueError, KeyError, TypeError):
        return None  # saved by an older version: made again
    return SummaryMade(summary, ModelUsage(summary.model, prompt_version, 1, usage))


def week_to_json(summary: WeekSummary, prompt_version: str) -> str:
    return json.dumps(
        {
            "statements": [[s.text, list(s.cites)] for s in summary.statements],
            "must_read": list(summary.must_read),
            "model": summary.model,
            "prompt_version": prompt_version,
        }
    )


def week_from_json(text: str) -> tuple[WeekSummary, str]:
    """The summary saved by week_to_json, and the prompt version it was made with."""
    data = json.loads(text)
    statements = tuple(
        Statement(str(text), tuple(int(i) for i in ids)) for text, ids in data["statements"]
    )
    must_read = tuple(int(i) for i in data["must_read"])
    return WeekSummary(statements, must_read, str(data["model"])), str(data["prompt_version"])
