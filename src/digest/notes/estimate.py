"""The estimate of a run that is not made (`digest now --dry-run`): the LLM calls, tokens and
the most they could cost, from the store alone: nothing is collected, fetched, called or
written."""

from __future__ import annotations

from dataclasses import dataclass

from digest.clock import Clock
from digest.config import Config
from digest.models import ItemState, Period
from digest.notes.budget import configured_summarizer
from digest.notes.costs import call_cost
from digest.notes.requests import note_request
from digest.notes.writer import by_text, calls_left, due_notes, known_tags
from digest.rules import notes_skipped
from digest.store import Store


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


def estimate(
    store: Store,
    config: Config,
    clock: Clock,
    period: Period,
    *,
    only_period: bool = False,
    refresh: bool = False,
) -> Estimate:
    """The calls, tokens and worst-case cost of noting what is pending now (the items of
    `period` alone with `only_period`), and of the week summary (no API key needed)."""
    llm = config.llm
    summarizer = configured_summarizer(store, config, clock, lambda call: None, need_key=False)
    tags = known_tags(store)
    due = due_notes(store, summarizer, period, only_period=only_period, refresh=refresh)
    due = [item for item in due if not notes_skipped(config.rules, item)]
    cached, missing = 0, []
    for group in by_text(summarizer, due, tags):
        if store.cached_note(group.key) is not None:
            cached += len(group.items)
        elif calls_left(store, llm.max_attempts, group.key, clock()):
            missing.append(note_request(group.items[0], tags))
    planned = [t for t in map(summarizer.planned_tokens, missing) if t is not None]
    week_items = len(store.items_saved_between(period.start, period.end))
    week = summarizer.planned_week_tokens(week_items) if week_items else None
    week_out = llm.summary_max_output_tokens if week is not None else 0
    notes_out = len(planned) * llm.max_output_tokens
    cost = call_cost(llm, summarizer.model, sum(planned), notes_out)
    cost += call_cost(llm, summarizer.summary_model, week or 0, week_out)
    fetch_candidates = store.fetch_candidates()
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
