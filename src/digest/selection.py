"""The week's selection: the period's items as the store holds them, through the reader's
[[rules]]. What the notes stage sums up for the week and what compose lays out are the same
items (shared by both, below the stages)."""

from __future__ import annotations

from digest.config import Config
from digest.features import TEXT_CHARS
from digest.models import Item, Period
from digest.rules import RulesOutcome, apply_rules, needs_whole_text
from digest.store import Store


def ruled_week(store: Store, config: Config, period: Period) -> RulesOutcome:
    """The period's items through the reader's [[rules]]: the muted left out, pins and
    sections noted (the whole page is read only when a rule counts its words)."""
    return apply_rules(config.rules, week_items(store, config, period))


def week_items(store: Store, config: Config, period: Period) -> list[Item]:
    chars = None if needs_whole_text(config.rules) else TEXT_CHARS
    return store.items_saved_between(period.start, period.end, text_chars=chars)
