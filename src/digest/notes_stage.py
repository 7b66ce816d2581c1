"""The notes stage: which items need a note, one note each (cached), the week summary, what it
all cost, and the estimate of a run that is not made (`digest now --dry-run`).

The LLM is stopped for the rest of a run by LLMUnavailable (quota, auth, unknown model, no
server) or BudgetReached: the items it did not reach stay pending for the next run.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from digest.clock import Clock
from digest.compose import ModelUsage
from digest.config import Config
from digest.errors import BudgetReached, LLMUnavailable, SummarizeError
from digest.models import (
    Item,
    ItemKind,
    ItemState,
    Period,
    StageReport,
    Statement,
    Usage,
    WeekSummary,
)
from digest.store import Store
from digest.summarize import (
    CallRecord,
    NoteRequest,
    Summarizer,
    make_summarizer,
    note_cache_key,
)
from digest.summarize.costs import call_cost

log = logging.getLogger("digest")

RequestFor = Callable[[Item, Sequence[str]], NoteRequest]
KNOWN_TAGS = 50  # the most used tags offered to the model for reuse


@dataclass(frozen=True)
class Estimate:
    """What a run would do with the LLM: calls, tokens and the most they could cost."""

    provider: str
    notes_due: int
    notes_cached: int
    calls: int
    tokens_in: int
    max_tokens_out: int
    max_cost_usd: float
    not_fetched: int  # links that would be fetched first; their notes are not counted

    def lines(self) -> list[str]:
        """The estimate for people: what would be called, and the most it could cost."""
        if self.provider == "offline":
            lines = [f"{self.notes_due} notes to write with the offline summariser: no LLM calls."]
        else:
            lines = [
                f"{self.notes_due} notes to write ({self.notes_cached} more come from the cache);"
                f" {self.calls} LLM calls, the week summary included.",
                f"About {self.tokens_in:,} tokens in, at most {self.max_tokens_out:,} out:"
                f" at most ${self.max_cost_usd:.4f} (a repair would add a call).",
            ]
        lines.append("(From what the store holds now: `digest collect` brings in new saves.)")
        if self.not_fetched:
            lines.append(
                f"{self.not_fetched} links are not fetched yet; their notes are not counted."
            )
        return lines


@dataclass
class NotesStage:
    store: Store
    config: Config
    clock: Clock
    request_for: RequestFor
    stopped: str | None = None  # why the LLM was stopped for the rest of this run
    unreachable: str | None = None  # stopped because the model could not be reached
    week_usage: ModelUsage | None = None  # the week summary composed this run
    _usage: dict[int | None, Usage] = field(default_factory=dict)  # by item; None: the week

    # -- notes -------------------------------------------------------------

    def due(self, summarizer: Summarizer, period: Period | None) -> list[Item]:
        """Items with no note or a stand-in, items whose text changed, and, among the items of
        `period`, those noted by another model or prompt version (re-noted lazily: only when
        a digest needs them)."""
        due = {
            item.id: item
            for item in self.store.note_candidates()
            if item.state is not ItemState.NEW or item.kind is not ItemKind.LINK
        }
        if period is not None:
            current = (summarizer.model, summarizer.prompt_version)
            for item in self.store.items_saved_between(period.start, period.end):
                if item.note and (item.note.model, item.note.prompt_version) != current:
                    due.setdefault(item.id, item)
        return sorted(due.values(), key=lambda item: item.id)

    def known_tags(self) -> tuple[str, ...]:
        return tuple(self.store.known_tags()[:KNOWN_TAGS])

    def by_text(
        self, summarizer: Summarizer, due: Sequence[Item], known_tags: Sequence[str]
    ) -> list[list[Item]]:
        """The due items grouped by note cache key: items with the same text share one call."""
        groups: dict[str, list[Item]] = {}
        for item in due:
            key = note_cache_key(self.request_for(item, known_tags).text, summarizer)
            groups.setdefault(key, []).append(item)
        return list(groups.values())

    async def note_same_text(
        self,
        summarizer: Summarizer,
        items: Sequence[Item],
        known_tags: Sequence[str],
        report: StageReport,
    ) -> None:
        """Note items with the same text in turn: the first one's note (and its cost, recorded
        once) reaches the others through the cache."""
        for item in items:
            await self.note_one(summarizer, item, known_tags, report)

    async def note_one(
        self, summarizer: Summarizer, item: Item, known_tags: Sequence[str], report: StageReport
    ) -> None:
        """Note one item from the cache or the model; an extractive stand-in if the model fails
        on it; nothing (the item stays pending) once the LLM is stopped for this run."""
        if self.stopped:
            return
        request = self.request_for(item, known_tags)
        key = note_cache_key(request.text, summarizer)
        note, final = self.store.cached_note(key), True
        if note is None:
            try:
                note = await summarizer.note(request)
            except LLMUnavailable as exc:
                self.stopped = self.stopped or str(exc)
                self._note_unreachable(exc)
                return
            except SummarizeError as exc:
                report.failures.append(f"{exc}; an extractive note stands in until the next run")
                fallback = self.offline_summarizer()
                note = await fallback.note(request)
                key, final = note_cache_key(request.text, fallback), False
            finally:
                usage = self._usage.pop(item.id, Usage())
        else:
            usage = Usage()
        self.store.attach_note(item.id, key, note, self.clock(), final=final, usage=usage)
        report.done += 1

    def _note_unreachable(self, exc: LLMUnavailable) -> None:
        if not isinstance(exc, BudgetReached):  # the budget stops the model on purpose
            self.unreachable = self.unreachable or str(exc)

    def finish(self, report: StageReport) -> None:
        if self.stopped:
            report.failures.append(f"{self.stopped}; items not noted stay pending for the next run")

    # -- the week summary ----------------------------------------------------

    async def week_summary(
        self, period: Period, items: Sequence[Item], summarizer: Summarizer
    ) -> WeekSummary:
        """One summary over the notes of the week's items, cached: a rerun on the same notes
        makes no call. The offline one stands in when the model fails or is stopped."""
        noted = [(item.id, item.display_title, item.note) for item in items if item.note]
        if not noted:
            return WeekSummary(())
        basis = json.dumps([(i, title, note.summary, note.tags) for i, title, note in noted])
        text = f"week {period.label}\n{basis}"
        key = note_cache_key(text, summarizer, model=summarizer.summary_model)
        if (cached := self._cached_week(key)) is not None:
            return cached
        try:
            if self.stopped:
                raise LLMUnavailable(self.stopped)
            summary = await summarizer.week_summary(period.label, noted)
        except SummarizeError as exc:
            if isinstance(exc, LLMUnavailable) and not self.stopped:  # else raised just above
                self.stopped = str(exc)
                self._note_unreachable(exc)
            log.warning("%s; the week summary falls back to the extractive one", exc)
            self.week_usage = ModelUsage("offline", "", 1, Usage())
            return await self.offline_summarizer().week_summary(period.label, noted)
        finally:
            usage = self._usage.pop(None, Usage())
        saved = week_to_json(summary, summarizer.prompt_version)
        self.store.save_week_summary(
            key, period.label, saved, self.clock(), model=summary.model, usage=usage
        )
        self.week_usage = ModelUsage(summary.model, summarizer.prompt_version, 1, usage)
        return summary

    def _cached_week(self, key: str) -> WeekSummary | None:
        if (cached := self.store.cached_week_summary(key)) is None:
            return None
        text, usage = cached
        try:
            summary, prompt_version = week_from_json(text)
        except (ValueError, KeyError, TypeError):
            return None  # saved by an older version: made again
        self.week_usage = ModelUsage(summary.model, prompt_version, 1, usage)
        return summary

    # -- summarisers, calls, provenance ----------------------------------------

    def summarizer(self, on_call: Callable[[CallRecord], None]) -> Summarizer:
        return make_summarizer(self.config.llm, on_call=on_call)

    def offline_summarizer(self) -> Summarizer:
        """Stands in when the configured model fails on one item or on the week summary."""
        return make_summarizer(self.config.llm.model_copy(update={"provider": "offline"}))

    def record_call(self, call: CallRecord, run_id: int | None) -> None:
        self.store.record_llm_call(
            run_id=run_id,
            model=call.model,
            purpose=call.purpose,
            tokens_in=call.tokens_in,
            tokens_out=call.tokens_out,
            cost_usd=call.cost_usd,
            duration_s=call.duration_s,
            ok=call.ok,
            now=self.clock(),
            item_id=call.item_id,
        )
        used = Usage(call.tokens_in, call.tokens_out, call.cost_usd)
        self._usage[call.item_id] = self._usage.get(call.item_id, Usage()) + used

    def notes_usage(self, period: Period) -> tuple[ModelUsage, ...]:
        """What the notes of the period's items cost when they were made, by model and prompt."""
        return tuple(
            ModelUsage(
                row["model"],
                row["prompt_version"],
                row["notes"],
                Usage(row["tokens_in"], row["tokens_out"], row["cost_usd"]),
            )
            for row in self.store.note_usage_between(period.start, period.end)
        )

    # -- the estimate of a run ---------------------------------------------------

    def estimate(self, summarizer: Summarizer, period: Period) -> Estimate:
        """The calls, tokens and worst-case cost of noting what is pending now, and of the week
        summary; from the store alone: nothing is collected, fetched, called or written."""
        llm = self.config.llm
        known_tags = self.known_tags()
        requests = [self.request_for(item, known_tags) for item in self.due(summarizer, period)]
        missing = [
            request
            for request in requests
            if self.store.cached_note(note_cache_key(request.text, summarizer)) is None
        ]
        planned = [t for t in map(summarizer.planned_tokens, missing) if t is not None]
        week_items = len(self.store.items_saved_between(period.start, period.end))
        week = summarizer.planned_week_tokens(week_items) if week_items else None
        week_out = llm.summary_max_output_tokens if week is not None else 0
        notes_out = len(planned) * llm.max_output_tokens
        cost = call_cost(llm, summarizer.model, sum(planned), notes_out)
        cost += call_cost(llm, summarizer.summary_model, week or 0, week_out)
        fetch_candidates = self.store.fetch_candidates()
        return Estimate(
            provider=llm.provider,
            notes_due=len(missing),
            notes_cached=len(requests) - len(missing),
            calls=len(planned) + (week is not None),
            tokens_in=sum(planned) + (week or 0),
            max_tokens_out=notes_out + week_out,
            max_cost_usd=cost,
            not_fetched=sum(1 for item in fetch_candidates if item.state is ItemState.NEW),
        )


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
