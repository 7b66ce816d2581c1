"""The note writer: which items need a note, and one note each (cached).

A note attempt that fails is recorded on the item (requests sent, failures in a row, the error,
the next attempt with backoff); the same text, model and prompt version is sent at most
llm.max_attempts times over all runs (a retry after a timeout or a 5xx is a send too), then the
extractive note stands until one of them changes or `digest summarize --retry`. Each note is
committed as its answer arrives. The LLM is stopped for the rest of a run by LLMUnavailable
(quota, auth, unknown model, no server) or BudgetReached (notes.budget): the items it did not
reach stay pending for the next run.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from digest import lifecycle
from digest.clock import Progress, no_progress
from digest.errors import LLMUnavailable, SummarizeError, UnusableAnswer
from digest.models import Item, Note, Period, Stage, StageReport, Usage
from digest.notes import NoteRequest, Summarizer, note_cache_key
from digest.notes.budget import RunBudget
from digest.notes.judging import stems
from digest.notes.outcomes import UNFIT
from digest.notes.requests import note_request
from digest.runtime.tasks import isolated, run_together
from digest.store import Store

KNOWN_TAGS = 50  # the most used tags offered to the model for reuse


def due_notes(
    store: Store,
    summarizer: Summarizer,
    period: Period | None,
    *,
    only_period: bool = False,
    refresh: bool = False,
) -> list[Item]:
    """Items with no note or a stand-in, items whose text changed, and, among the items of
    `period`, those noted by another model or prompt version (re-noted lazily: only when
    a digest needs them; with `refresh`, a changed prompt file counts too). With
    `only_period`, only the items of `period`."""
    due = {item.id: item for item in store.note_candidates() if lifecycle.due_for_note(item)}
    if period is not None:
        model, prompt_version = summarizer.model, summarizer.prompt_version
        for item in store.items_saved_between(period.start, period.end):
            if lifecycle.renote_for_model(item, model, prompt_version, refresh=refresh):
                due.setdefault(item.id, item)
        if only_period:
            due = {i: item for i, item in due.items() if lifecycle.in_week(item, period)}
    return sorted(due.values(), key=lambda item: item.id)


def known_tags(store: Store) -> tuple[str, ...]:
    return tuple(store.known_tags()[:KNOWN_TAGS])


@dataclass(frozen=True)
class SameText:
    """Due items whose note request is the same text: one call for all of them."""

    key: str  # the note cache key
    text: str
    items: list[Item]


def by_text(summarizer: Summarizer, due: Sequence[Item], tags: Sequence[str]) -> list[SameText]:
    """The due items grouped by note cache key: items with the same text share one call."""
    groups: dict[str, SameText] = {}
    for item in due:
        text = note_request(item, tags).text
        key = note_cache_key(text, summarizer)
        groups.setdefault(key, SameText(key, text, [])).items.append(item)
    return list(groups.values())


def calls_left(store: Store, max_attempts: int, key: str, now: datetime) -> int:
    """How many requests a note for `key` may still send now: none while a failed attempt
    waits out its backoff, none once llm.max_attempts were sent for it."""
    return lifecycle.note_calls_left(store.note_attempts(key), max_attempts, now)


@dataclass
class NoteWriter:
    """The notes of one run, within its budget (the breaker, the deadline, the costs)."""

    budget: RunBudget
    offline_only: Callable[[Item], bool] = lambda item: False  # [[rules]]: no model call
    progress: Progress = no_progress
    # by note cache key: the content stems of each text due in this run (judging.off_topic)
    _run_stems: dict[str, frozenset[str]] = field(default_factory=dict)

    @property
    def store(self) -> Store:
        return self.budget.store

    async def make_notes(
        self,
        summarizer: Summarizer,
        period: Period | None = None,
        *,
        only_period: bool = False,
        refresh: bool = False,
    ) -> StageReport:
        """Notes for the items that need one (see `due_notes`), made concurrently."""
        report = StageReport(Stage.NOTES)
        due = due_notes(self.store, summarizer, period, only_period=only_period, refresh=refresh)
        tags = known_tags(self.store)
        finished = [0]
        self.budget.start()
        skipped = {item.id for item in due if self.offline_only(item)}
        writers = {False: summarizer, True: self.budget.offline_summarizer()}  # no model call
        groups = [
            (writer, group)
            for offline, writer in writers.items()
            for group in by_text(
                writer, [item for item in due if (item.id in skipped) == offline], tags
            )
        ]
        self._run_stems.update((group.key, stems(group.text)) for _, group in groups)
        await run_together(
            self._counted(
                len(due),
                finished,
                len(group.items),
                isolated(  # a bug on one text: those items stay pending, the others go on
                    self._in_turn(
                        functools.partial(self.note_same_text, writer, group.items, tags, report)
                    ),
                    f"item {group.items[0].id}",
                    report.failures,
                ),
            )
            for writer, group in groups
        )
        self.finish(report)
        return report

    async def _counted(
        self, total: int, finished: list[int], items: int, work: Awaitable[None]
    ) -> None:
        """Await the work on `items` items, then report the stage's progress (`finished`:
        the count so far, shared by the stage's works)."""
        await work
        finished[0] = min(finished[0] + items, total)
        self.progress(Stage.NOTES, finished[0], total)

    async def _in_turn(self, work: Callable[[], Awaitable[None]]) -> None:
        """Do `work` when the budget's turns let it (llm.concurrency at once)."""
        async with self.budget.turns:
            await work()

    async def note_same_text(
        self,
        summarizer: Summarizer,
        items: Sequence[Item],
        tags: Sequence[str],
        report: StageReport,
    ) -> None:
        """One note for items with the same text, from the cache or one exchange with the
        model (its cost recorded once, on the first); an extractive stand-in where the model
        fails, may not be asked or is unfit; nothing (they stay pending) once the LLM is
        stopped otherwise."""
        budget = self.budget
        request = note_request(items[0], tags)
        if budget.stopped:
            if budget.unfit:  # the model answers, badly: the offline notes stand this run
                budget.outcomes.not_asked(UNFIT, len(items))
                await self._stand_in([item for item in items if item.note is None], request, report)
            return
        key = note_cache_key(request.text, summarizer)
        if (cached := self.store.cached_note(key)) is not None:
            self._attach(items, key, cached, report)
            return
        calls = calls_left(self.store, budget.config.llm.max_attempts, key, budget.clock())
        if calls == 0:
            budget.outcomes.not_asked("attempts used up", len(items))
            await self._stand_in([item for item in items if item.note is None], request, report)
            return
        await self._ask(summarizer, items, key, request, calls, report)

    async def _ask(
        self,
        summarizer: Summarizer,
        items: Sequence[Item],
        key: str,
        request: NoteRequest,
        calls: int,
        report: StageReport,
    ) -> None:
        """One exchange with the model for the items' text, within the stage's deadline."""
        budget = self.budget
        budget.asked += 1
        try:
            async with asyncio.timeout_at(budget.deadline):
                note = await summarizer.note(replace(request, others=self._others(key)),
                                             calls_allowed=calls)  # fmt: skip
        except TimeoutError:  # the stage's deadline: the calls' own timeouts are SummarizeErrors
            limit = budget.config.llm.stage_timeout_s
            budget.stopped = (
                budget.stopped or f"the notes stage reached llm.stage_timeout_s ({limit:g} s)"
            )
            self._record_sends(items, key, budget.stopped)
            return
        except LLMUnavailable as exc:
            budget.stop(exc)
            self._record_sends(items, key, str(exc))
            return
        except SummarizeError as exc:
            await self._failed(summarizer, items, key, request, exc, report)
            return
        finally:
            usage = budget.spent(items[0].id)
        self._attach(items, key, note, report, usage)
        budget.by_model += note.by_model
        if note.by_model:
            budget.outcomes.kept(len(items))
        else:
            budget.outcomes.not_asked("your rules", len(items))

    def _others(self, key: str) -> tuple[frozenset[str], ...]:
        return tuple(found for other, found in self._run_stems.items() if other != key)

    async def _failed(
        self,
        summarizer: Summarizer,
        items: Sequence[Item],
        key: str,
        request: NoteRequest,
        exc: SummarizeError,
        report: StageReport,
    ) -> None:
        """The model failed on this text: the failure recorded, the extractive note stands in."""
        sends = self._record_failure(items, key, str(exc))
        report.failures.append(f"{exc}; {self._what_stands_in(sends)}")
        refused = isinstance(exc, UnusableAnswer)
        self.budget.outcomes.failed(str(exc), len(items), refused=refused)
        self.budget.check_fit(summarizer.model)
        await self._stand_in(
            [item for item in items if item.note is None or item.note.extractive],
            request,
            report,
        )

    def _attach(
        self,
        items: Sequence[Item],
        key: str,
        note: Note,
        report: StageReport,
        usage: Usage | None = None,
    ) -> None:
        for index, item in enumerate(items):
            cost = usage if index == 0 else None
            intent = lifecycle.note_attached(
                item, key, note, self.budget.clock(), final=True, usage=cost
            )
            self.store.attach_note(intent)
            report.done += 1

    async def _stand_in(
        self, bare: Sequence[Item], request: NoteRequest, report: StageReport
    ) -> None:
        """The extractive note for `bare` items (a model's note made with another prompt
        version is better than a stand-in, and is kept)."""
        if not bare:
            return
        fallback = self.budget.offline_summarizer()
        try:
            note = await fallback.note(request)
        except SummarizeError as exc:  # nothing to summarise: that item's outcome, not the run's
            if (line := f"{exc}; no note") not in report.failures:
                report.failures.append(line)
            return
        key = note_cache_key(request.text, fallback)
        for item in bare:
            self.store.attach_note(
                lifecycle.note_attached(item, key, note, self.budget.clock(), final=False)
            )
            report.done += 1

    def _record_failure(self, items: Sequence[Item], key: str, error: str) -> int:
        """Record the failed attempt on the items, with the requests it sent (each may have
        been paid for); the requests sent for `key` so far."""
        config = self.budget.config
        intent = lifecycle.note_failed(
            [item.id for item in items],
            key,
            self.store.note_attempts(key),
            self.budget.sends(items[0].id),
            error,
            self.budget.clock(),
            config.llm.max_attempts,
        )
        self.store.record_note_failure(intent)
        return intent.sends

    def _record_sends(self, items: Sequence[Item], key: str, error: str) -> None:
        """An attempt cut short (the model stopped for the run): what it sent counts."""
        if self.budget.sends(items[0].id):
            self._record_failure(items, key, error)

    def _what_stands_in(self, sends: int) -> str:
        if sends >= self.budget.config.llm.max_attempts:
            return (
                f"the extractive note stands ({sends} requests sent, llm.max_attempts);"
                " `digest summarize --retry` asks again"
            )
        return "an extractive note stands in until the next attempt"

    def finish(self, report: StageReport) -> None:
        budget = self.budget
        report.failures.extend(budget.take_problems())
        llm = budget.config.llm
        if llm.provider != "offline" and (line := budget.outcomes.line(llm.model)):
            report.info.append(line)
        if budget.unfit:
            report.failures.append(budget.unfit)
        elif budget.stopped:
            report.failures.append(
                f"{budget.stopped}; items not noted stay pending for the next run"
            )
        if (
            llm.provider == "offline"
            or budget.by_model
            or budget.unreachable
            or budget.budget_spent
        ):
            return
        if budget.asked:
            budget.unreachable = (
                f"no note of this run came from the model {llm.model!r} ({budget.asked} asked):"
                " the offline notes stand; see `digest status` for why"
            )
            report.failures.append(budget.unreachable)
