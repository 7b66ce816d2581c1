"""The week as the reader sees it: the period's items through the reader's rules, the reading
history that ranks them, and the context the digest's template renders. Read from the store
here, decided in compose's pure modules (rules, ranking, topics, digest)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from digest.compose.digest import Backlog, digest_context
from digest.compose.footer import Provenance
from digest.compose.ranking import HISTORY, History, rank_items
from digest.compose.related import ARCHIVE_ITEMS, related_lines
from digest.compose.rules import RulesOutcome, apply_rules, needs_whole_text
from digest.compose.topics import offline_sections
from digest.config import Config
from digest.features import TEXT_CHARS, feature_text, text_features, text_hash
from digest.models import Item, Period, TextFeatures, WeekSummary
from digest.store import Store


def ruled_week(store: Store, config: Config, period: Period) -> RulesOutcome:
    """The period's items through the reader's [[rules]]: the muted left out, pins and
    sections noted (the whole page is read only when a rule counts its words)."""
    return apply_rules(config.rules, week_items(store, config, period))


def week_items(store: Store, config: Config, period: Period) -> list[Item]:
    chars = None if needs_whole_text(config.rules) else TEXT_CHARS
    return with_features(
        store, store.items_saved_between(period.start, period.end, text_chars=chars)
    )


def reader_history(store: Store) -> History:
    return History(
        with_features(store, store.starred_items(HISTORY, text_chars=TEXT_CHARS)),
        with_features(store, store.read_items(HISTORY, text_chars=TEXT_CHARS)),
    )


def archive_before(store: Store, config: Config, period: Period) -> list[Item]:
    """The earlier saves an item's "follow-up"/"related" line may name (none when off)."""
    return store.last_saved_before(period.start, ARCHIVE_ITEMS) if config.digest.related else []


def with_features(store: Store, items: list[Item]) -> list[Item]:
    """The items with what sections, stories and the ranking read of them: as stored when
    they are of the item's text as it is now (the fetch stage stores them with the page),
    else computed here and kept in memory only (items saved before features were, a post's
    own text, a note attached since): compose writes nothing to the store."""
    stored = store.features_of([item.id for item in items])
    return [replace(item, features=_current(stored.get(item.id), item)) for item in items]


def _current(stored: TextFeatures | None, item: Item) -> TextFeatures:
    text = feature_text(item)
    if stored is None or stored.text_hash != text_hash(text):
        return text_features(text)
    return stored


def week_context(
    config: Config,
    period: Period,
    week: RulesOutcome,
    week_summary: WeekSummary,
    history: History,
    backlog: Backlog,
    provenance: Provenance | None,
    archive: list[Item] | None = None,
) -> dict[str, Any]:
    """What the digest's template renders: its sections (offline ones without a model), each
    ordered by the reader's interests and history (compose.ranking)."""
    feeds = {source.name for source in config.sources if source.kind == "feed"}
    offline = config.llm.provider == "offline"
    sections = offline_sections(week.shown, feeds) if offline else None
    ranking = rank_items(week.shown, config.interests, history, week.pinned)
    zone = config.digest.zone
    related = related_lines(week.shown, archive, zone) if archive and config.digest.related else {}
    return digest_context(
        period,
        week.shown,
        week_summary,
        zone=zone,
        backlog=backlog,
        provenance=provenance,
        sections=sections,
        ranking=ranking,
        related=related,
    )
