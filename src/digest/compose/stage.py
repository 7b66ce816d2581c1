"""The compose stage: the week's digest from the store as it stands and the week the notes
stage summed up (its items after the reader's rules, and its summary): the markdown, and
what the channels need of it. Compose reads; it writes nothing out (deliver does)."""

from __future__ import annotations

from dataclasses import dataclass, field

from digest.collect.stage import without_sources
from digest.compose.backlog import backlog_for
from digest.compose.digest import Backlog, reader_view, render_digest
from digest.compose.entries import Topic
from digest.compose.footer import Provenance
from digest.compose.week import archive_before, featured, reader_history, week_context
from digest.models import Item, Period, Usage
from digest.notes.stage import SummedWeek
from digest.runtime.context import RunContext, StageOutcome
from digest.urls import for_display


@dataclass(frozen=True)
class Composed:
    """A period's digest as the store stands: its markdown, its items and backlog, and a
    hash of what a reader sees in it (compose.digest.reader_view)."""

    markdown: str
    items: list[Item]
    backlog: Backlog
    reader_view: str
    topics: list[Topic]  # its sections as listed, for the audio edition
    brief: str  # the week in brief, markdown
    problems: list[str] = field(default_factory=list)  # a template of yours that failed


@dataclass(frozen=True)
class ComposeStage:
    """Compose `period` from the week the notes stage summed up (SummedWeek). Makes the
    Composed digest."""

    period: Period

    async def run(self, run: RunContext) -> StageOutcome:
        return StageOutcome([], (compose_digest(run, self.period, run.made(SummedWeek)),))


def compose_digest(run: RunContext, period: Period, summed: SummedWeek) -> Composed:
    """The period's markdown as the store stands, with its items and backlog."""
    store, config = run.store, run.config
    week = featured(store, summed.week)
    items = week.shown
    muted = [item.id for item in week.muted]
    totals = store.llm_usage_of_items(period.start, period.end)
    provenance = Provenance(
        tuple(store.note_usage_between(period.start, period.end, leaving_out=muted)),
        summed.made.usage,
        Usage(totals.tokens_in, totals.tokens_out, totals.cost_usd),  # failed calls too
        muted=len(muted),
        offline_at=store.last_fetch_offline(),
        no_sources=without_sources(config, store),
    )
    backlog = backlog_for(store, config, period, items)
    history = reader_history(store)
    archive = archive_before(store, config, period)
    context = week_context(
        config, period, week, summed.made.summary, history, backlog, provenance, archive
    )
    rendered = render_digest(context, config.output.templates_dir)
    markdown = for_display(rendered.text)  # the digest goes everywhere: no secrets
    problems = [rendered.problem] if rendered.problem else []
    return Composed(
        markdown,
        items,
        backlog,
        reader_view(context),
        context["topics"],
        context["week_summary"],
        [*problems, *summed.problems],  # the week summary's prompt file
    )
