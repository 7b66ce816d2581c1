"""The notes stage: which items need a note, one note each (cached), the week summary, what it
all cost, and the estimate of a run that is not made (`digest now --dry-run`).

A note attempt that fails is recorded on the item (requests sent, failures in a row, the error,
the next attempt with backoff); the same text, model and prompt version is sent at most
llm.max_attempts times over all runs (a retry after a timeout or a 5xx is a send too), then the extractive note stands until one of them
changes or `digest summarize --retry`. Each note is committed as its answer arrives.
The LLM is stopped for the rest of a run by LLMUnavailable (quota, auth, unknown model, no
server) or BudgetReached: the items it did not reach stay pending for the next run.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from digest import lifecycle
from digest.clock import Clock, Progress, no_progress
from digest.config import Config
from digest.errors import BudgetReached, LLMUnavailable, SummarizeError, UnusableAnswer
from digest.models import (
    OFFLINE_MODEL,
    Item,
    ItemState,
    ModelUsage,
    Note,
    Period,
    Stage,
    StageReport,
    Statement,
    Usage,
    WeekSummary,
)
from digest.notes import (
    CallRecord,
    NoteRequest,
    Options,
    Summarizer,
    make_summarizer,
    note_cache_key,
)
from digest.notes.costs import call_cost
from digest.notes.judging import stems
from digest.notes.outcomes import UNFIT, Outcomes
from digest.notes.prompts import week_prompt_mark
from digest.notes.requests import note_request
from digest.runtime.context import RunContext
from digest.runtime.tasks import isolated, run_together
from digest.store import Store

log = logging.getLogger("digest")

KNOWN_TAGS = 50  # the most used tags offered to the model for reuse
OPENAI_BASE_URL = "https://api.openai.com/v1"


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
    prompt_problems: tuple[str, ...] = ()  # prompt files a run would replace by the built-in

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
        lines.extend(f"! {problem}" for problem in self.prompt_problems)
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
    offline_only: Callable[[Item], bool] = lambda item: False  # [[rules]]: no model call
    progress: Progress = no_progress
    stopped: str | None = None  # why the LLM was stopped for the rest of this run
    unreachable: str | None = None  # stopped because the model could not be reached
    week_usage: ModelUsage | None = None  # the week summary composed this run
    # by item (None: the week summary): the requests sent in this exchange, their cost
    _calls: dict[int | None, tuple[int, Usage]] = field(default_factory=dict)
    # by note cache key: the content stems of each text due in this run (judging.off_topic)
    _run_stems: dict[str, frozenset[str]] = field(default_factory=dict)
    asked: int = 0  # texts the model was asked about in this run
    budget_spent: bool = False  # llm.budget_usd stopped the model for the run, on purpose
    by_model: int = 0  # of them, noted by the model
    outcomes: Outcomes = field(default_factory=Outcomes)  # the run's notes, by whom and why
    unfit: str | None = None  # why the model is asked no more this run: its answers were refused
    _deadline: float | None = None  # the event loop's time when the stage stops calling
    _writer: Summarizer | None = None  # the run's summariser, made when first needed
    prompt_problems: list[str] = field(default_factory=list)  # prompt files that failed
    # texts asked about at once: a text waiting for its turn learns of the breaker's verdict
    _turns: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(1))

    def start(self) -> None:
        """The stage begins: its deadline (llm.stage_timeout_s) runs from now."""
        self._deadline = asyncio.get_running_loop().time() + self.config.llm.stage_timeout_s
        self._turns = asyncio.Semaphore(self.config.llm.concurrency)

    # -- notes -------------------------------------------------------------

    def due(
        self,
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
        due = {
            item.id: item for item in self.store.note_candidates() if lifecycle.due_for_note(item)
        }
        if period is not None:
            model, prompt_version = summarizer.model, summarizer.prompt_version
            for item in self.store.items_saved_between(period.start, period.end):
                if lifecycle.renote_for_model(item, model, prompt_version, refresh=refresh):
                    due.setdefault(item.id, item)
            if only_period:
                due = {i: item for i, item in due.items() if lifecycle.in_week(item, period)}
        return sorted(due.values(), key=lambda item: item.id)

    def known_tags(self) -> tuple[str, ...]:
        return tuple(self.store.known_tags()[:KNOWN_TAGS])

    def by_text(
        self, summarizer: Summarizer, due: Sequence[Item], known_tags: Sequence[str]
    ) -> list[list[Item]]:
        """The due items grouped by note cache key: items with the same text share one call."""
        groups: dict[str, list[Item]] = {}
        for item in due:
            text = note_request(item, known_tags).text
            key = note_cache_key(text, summarizer)
            if key not in groups:
                self._run_stems[key] = stems(text)
            groups.setdefault(key, []).append(item)
        return list(groups.values())

    def _others(self, key: str) -> tuple[frozenset[str], ...]:
        return tuple(found for other, found in self._run_stems.items() if other != key)

    def calls_left(self, key: str, now: datetime) -> int:
        """How many requests a note for `key` may still send now: none while a failed
        attempt waits out its backoff, none once llm.max_attempts were sent for it."""
        attempts = self.store.note_attempts(key)
        return lifecycle.note_calls_left(attempts, self.config.llm.max_attempts, now)

    async def note_same_text(
        self,
        summarizer: Summarizer,
        items: Sequence[Item],
        known_tags: Sequence[str],
        report: StageReport,
    ) -> None:
        """One note for items with the same text, from the cache or one exchange with the
        model (its cost recorded once, on the first); an extractive stand-in where the model
        fails, may not be asked or is unfit; nothing (they stay pending) once the LLM is
        stopped otherwise."""
        async with self._turns:
            await self._note_same_text(summarizer, items, known_tags, report)

    async def _note_same_text(
        self,
        summarizer: Summarizer,
        items: Sequence[Item],
        known_tags: Sequence[str],
        report: StageReport,
    ) -> None:
        request = note_request(items[0], known_tags)
        if self.stopped:
            if self.unfit:  # the model answers, badly: the offline notes stand this run
                self.outcomes.not_asked(UNFIT, len(items))
                await self._stand_in([item for item in items if item.note is None], request, report)
            return
        key = note_cache_key(request.text, summarizer)
        if (cached := self.store.cached_note(key)) is not None:
            self._attach(items, key, cached, report)
            return
        calls = self.calls_left(key, self.clock())
        if calls == 0:
            self.outcomes.not_asked("attempts used up", len(items))
            await self._stand_in([item for item in items if item.note is None], request, report)
            return
        self.asked += 1
        try:
            async with asyncio.timeout_at(self._deadline):
                note = await summarizer.note(replace(request, others=self._others(key)),
                                             calls_allowed=calls)  # fmt: skip
        except TimeoutError:  # the stage's deadline: the calls' own timeouts are SummarizeErrors
            limit = self.config.llm.stage_timeout_s
            self.stopped = (
                self.stopped or f"the notes stage reached llm.stage_timeout_s ({limit:g} s)"
            )
            self._record_sends(items, key, self.stopped)
            return
        except LLMUnavailable as exc:
            self.stopped = self.stopped or str(exc)
            self._note_unreachable(exc)
            self._record_sends(items, key, str(exc))
            return
        except SummarizeError as exc:
            sends = self._record_failure(items, key, str(exc))
            report.failures.append(f"{exc}; {self._what_stands_in(sends)}")
            refused = isinstance(exc, UnusableAnswer)
            self.outcomes.failed(str(exc), len(items), refused=refused)
            self._check_fit(summarizer.model)
            await self._stand_in(
                [item for item in items if item.note is None or item.note.extractive],
                request,
                report,
            )
            return
        finally:
            _sends, usage = self._calls.pop(items[0].id, (0, Usage()))
        self._attach(items, key, note, report, usage)
        self.by_model += note.by_model
        if note.by_model:
            self.outcomes.kept(len(items))
        else:
            self.outcomes.not_asked("your rules", len(items))

    def _check_fit(self, model: str) -> None:
        """After a refused answer: stop asking a model most of whose first answers were."""
        if self.stopped or not self.outcomes.unfit():
            return
        first = self.outcomes.first
        refused = sum(kind is not None for kind in first)
        self.unfit = self.unreachable = (
            f"the model {model!r} is unfit for notes: {refused} of its first {len(first)} answers"
            f" were refused ({self.outcomes.refusals()}); no more asked this run, the offline"
            " notes stand; the next run asks again"
        )
        self.stopped = self.unfit

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
            intent = lifecycle.note_attached(item, key, note, self.clock(), final=True, usage=cost)
            self.store.attach_note(intent)
            report.done += 1

    async def _stand_in(
        self, bare: Sequence[Item], request: NoteRequest, report: StageReport
    ) -> None:
        """The extractive note for `bare` items (a model's note made with another prompt
        version is better than a stand-in, and is kept)."""
        if not bare:
            return
        fallback = self.offline_summarizer()
        try:
            note = await fallback.note(request)
        except SummarizeError as exc:  # nothing to summarise: that item's outcome, not the run's
            if (line := f"{exc}; no note") not in report.failures:
                report.failures.append(line)
            return
        key = note_cache_key(request.text, fallback)
        for item in bare:
            self.store.attach_note(
                lifecycle.note_attached(item, key, note, self.clock(), final=False)
            )
            report.done += 1

    def _record_failure(self, items: Sequence[Item], key: str, error: str) -> int:
        """Record the failed attempt on the items, with the requests it sent (each may have
        been paid for); the requests sent for `key` so far."""
        intent = lifecycle.note_failed(
            [item.id for item in items],
            key,
            self.store.note_attempts(key),
            self._calls.get(items[0].id, (0, Usage()))[0],
            error,
            self.clock(),
            self.config.llm.max_attempts,
        )
        self.store.record_note_failure(intent)
        return intent.sends

    def _record_sends(self, items: Sequence[Item], key: str, error: str) -> None:
        """An attempt cut short (the model stopped for the run): what it sent counts."""
        if self._calls.get(items[0].id, (0, Usage()))[0]:
            self._record_failure(items, key, error)

    def _what_stands_in(self, sends: int) -> str:
        if sends >= self.config.llm.max_attempts:
            return (
                f"the extractive note stands ({sends} requests sent, llm.max_attempts);"
                " `digest summarize --retry` asks again"
            )
        return "an extractive note stands in until the next attempt"

    def _note_unreachable(self, exc: LLMUnavailable) -> None:
        if isinstance(exc, BudgetReached):  # the budget stops the model on purpose
            self.budget_spent = True
        else:
            self.unreachable = self.unreachable or str(exc)

    def finish(self, report: StageReport) -> None:
        self.took_problems(report.failures)
        llm = self.config.llm
        if llm.provider != "offline" and (line := self.outcomes.line(llm.model)):
            report.info.append(line)
        if self.unfit:
            report.failures.append(self.unfit)
        elif self.stopped:
            report.failures.append(f"{self.stopped}; items not noted stay pending for the next run")
        if llm.provider == "offline" or self.by_model or self.unreachable or self.budget_spent:
            return
        if self.asked:
            self.unreachable = (
                f"no note of this run came from the model {llm.model!r} ({self.asked} asked):"
                " the offline notes stand; see `digest status` for why"
            )
            report.failures.append(self.unreachable)

    async def make_notes(
        self,
        summarizer: Summarizer,
        period: Period | None = None,
        *,
        only_period: bool = False,
        refresh: bool = False,
    ) -> StageReport:
        """Notes for the items that need one (see `due`), made concurrently."""
        report = StageReport(Stage.NOTES)
        due = self.due(summarizer, period, only_period=only_period, refresh=refresh)
        known_tags = self.known_tags()
        finished = [0]
        self.start()
        skipped = {item.id for item in due if self.offline_only(item)}
        writers = {False: summarizer, True: self.offline_summarizer()}  # no model call
        groups = [
            (writer, group)
            for offline, writer in writers.items()
            for group in self.by_text(
                writer, [item for item in due if (item.id in skipped) == offline], known_tags
            )
        ]
        await run_together(
            self._counted(
                len(due),
                finished,
                len(group),
                isolated(  # a bug on one text: those items stay pending, the others go on
                    self.note_same_text(writer, group, known_tags, report),
                    f"item {group[0].id}",
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
        text = f"week {period.label}{week_prompt_mark(self.config.llm)}\n{basis}"
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
            log.warning("%s; the week summary falls back to the offline one", exc)
            _sends, spent = self._calls.pop(None, (0, Usage()))  # the refused answer was paid for
            self.week_usage = ModelUsage(OFFLINE_MODEL, "", 1, spent)
            offline = await self.offline_summarizer().week_summary(period.label, noted)
            if isinstance(exc, UnusableAnswer):  # asked once for these notes: not again
                saved = week_to_json(offline, "")
                self.store.save_week_summary(
                    key, period.label, saved, self.clock(), model=offline.model, usage=spent
                )
            return offline
        finally:
            _sends, usage = self._calls.pop(None, (0, Usage()))
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

    def summarizer(
        self, on_call: Callable[[CallRecord], None], *, need_key: bool = True
    ) -> Summarizer:
        """The configured summariser, told which response format its server takes (found in
        earlier runs) and remembering the ones it finds."""
        base_url = self.config.llm.effective_base_url or OPENAI_BASE_URL

        def remember(model: str, response_format: str) -> None:
            self.store.save_response_format(base_url, model, response_format, self.clock())

        options = Options(
            on_call=on_call,
            known_formats=self.store.response_formats(base_url),
            on_format=remember,
            need_key=need_key,
        )
        return make_summarizer(self.config.llm, options=options)

    def writer(self, run: RunContext) -> Summarizer:
        """The run's summariser, its calls recorded against the run; made on first use (a
        run that collects and fetches only needs no model, nor its key)."""
        if self._writer is None:
            self._writer = self.summarizer(
                on_call=functools.partial(self.record_call, run_id=run.run_id)
            )
        return self._writer

    def took_problems(self, failures: list[str]) -> None:
        """The prompt files that failed since last asked, added to `failures` and to
        `prompt_problems` (the built-in prompt stood in: the run needs attention)."""
        if self._writer is not None:
            problems = self._writer.take_problems()
            self.prompt_problems += problems
            failures.extend(problems)

    async def aclose(self) -> None:
        if self._writer is not None:
            await self._writer.aclose()

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
        sends, usage = self._calls.get(call.item_id, (0, Usage()))
        self._calls[call.item_id] = (sends + call.sent, usage + used)

    def notes_usage(
        self, period: Period, leaving_out: Sequence[int] = ()
    ) -> tuple[ModelUsage, ...]:
        """What the notes of the period's items (but those `leaving_out`: muted) cost when
        they were made, by model and prompt."""
        usage = self.store.note_usage_between(period.start, period.end, leaving_out=leaving_out)
        return tuple(usage)

    def note_calls(self, period: Period) -> Usage:
        """What every call for the notes of the period's items cost, failed ones included."""
        totals = self.store.llm_usage_of_items(period.start, period.end)
        return Usage(totals.tokens_in, totals.tokens_out, totals.cost_usd)

    # -- the estimate of a run ---------------------------------------------------

    def estimate(
        self,
        summarizer: Summarizer,
        period: Period,
        *,
        only_period: bool = False,
        refresh: bool = False,
    ) -> Estimate:
        """The calls, tokens and worst-case cost of noting what is pending now (the items of
        `period` alone with `only_period`), and of the week summary; from the store alone:
        nothing is collected, fetched, called or written."""
        llm = self.config.llm
        known_tags = self.known_tags()
        due = self.due(summarizer, period, only_period=only_period, refresh=refresh)
        due = [item for item in due if not self.offline_only(item)]
        cached, missing = 0, []
        for items in self.by_text(summarizer, due, known_tags):
            request = note_request(items[0], known_tags)
            key = note_cache_key(request.text, summarizer)
            if self.store.cached_note(key) is not None:
                cached += len(items)
            elif self.calls_left(key, self.clock()):
                missing.append(request)
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
            notes_cached=cached,
            calls=len(planned) + (week is not None),
            tokens_in=sum(planned) + (week or 0),
            max_tokens_out=notes_out + week_out,
            max_cost_usd=cost,
            not_fetched=sum(1 for item in fetch_candidates if item.state is ItemState.NEW),
            prompt_problems=tuple(summarizer.take_problems()),
        )


@dataclass(frozen=True)
class NotesScope:
    """Which notes a run writes: `only_period`: those of the period's items alone (`digest
    now`); `retry`: items whose note attempts ran out are asked for again."""

    only_period: bool = False
    retry: bool = False
    refresh: bool = False  # renew the period's notes made with another prompt file


@dataclass(frozen=True)
class WriteNotes:
    """The notes stage as a run makes it, over `notes` (the run's, which compose reads too)."""

    notes: NotesStage
    period: Period
    scope: NotesScope = NotesScope()

    async def run(self, run: RunContext) -> list[StageReport]:
        summarizer = self.notes.writer(run)  # first: a model it cannot use changes nothing
        if self.scope.retry:
            run.store.retry_notes()
        scope = self.scope
        report = await self.notes.make_notes(
            summarizer, self.period, only_period=scope.only_period, refresh=scope.refresh
        )
        return [report]


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
