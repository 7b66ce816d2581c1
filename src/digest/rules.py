"""The reader's [[rules]] applied to a week's items before composing (pure).

A rule matches an item when every condition it gives holds (a list condition when any of its
values does); what it does: `mute` leaves the item out of the digest (it stays in the store and
in search), `skip_notes` keeps the model from being asked for its note, `pin` puts it first in
its section and in "Must read", `tag` adds tags to its note, `section` names its section.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from urllib.parse import urlsplit

from digest.config import RuleConfig
from digest.models import Item
from digest.patterns import pattern_found
from digest.reading_time import WORDS_PER_MINUTE


@dataclass(frozen=True)
class RulesOutcome:
    """The week after the rules: the items to compose and what the rules decided for them."""

    shown: list[Item]
    muted: list[Item] = field(default_factory=list)
    pinned: tuple[int, ...] = ()  # ids, in the order the rules and items came


def apply_rules(rules: Sequence[RuleConfig], items: Sequence[Item]) -> RulesOutcome:
    """Each item through every rule. A section a rule names becomes the item's topic (the first
    such rule wins), which the digest groups by before any other section."""
    shown, muted, pinned = [], [], []
    for item in items:
        matched = [rule for rule in rules if matches(rule, item)]
        if any(rule.mute for rule in matched):
            muted.append(item)
            continue
        if any(rule.pin for rule in matched):
            pinned.append(item.id)
        if named := next((rule.section for rule in matched if rule.section), None):
            item = replace(item, topic=named)
        shown.append(_tagged(item, [tag for rule in matched for tag in rule.tag]))
    return RulesOutcome(shown, muted, tuple(pinned))


def notes_skipped(rules: Sequence[RuleConfig], item: Item) -> bool:
    """No model call for this item's note: a rule skips its notes or mutes it."""
    return any((rule.skip_notes or rule.mute) and matches(rule, item) for rule in rules)


def needs_whole_text(rules: Sequence[RuleConfig]) -> bool:
    """A rule counts words: the whole page is needed, not its opening."""
    counted = ("min_words", "max_words", "min_minutes", "max_minutes")
    return any(getattr(rule, key) is not None for rule in rules for key in counted)


def matches(rule: RuleConfig, item: Item) -> bool:
    conditions = (
        not rule.host or _on_host(item, rule.host),
        not rule.source or bool(set(rule.source) & set(item.sources)),
        not rule.kind or _of_kind(item, rule.kind),
        not rule.tags or bool(_folded(rule.tags) & _folded(_tags_and_topic(item))),
        not rule.words or bool(_words_pattern(tuple(rule.words)).search(_text(item))),
        rule.regex is None or pattern_found(rule.regex, _text(item)),
        not rule.language or _in_language(item, rule.language),
        rule.min_words is None or word_count(item) >= rule.min_words,
        rule.max_words is None or word_count(item) <= rule.max_words,
        rule.min_minutes is None or word_count(item) / WORDS_PER_MINUTE >= rule.min_minutes,
        rule.max_minutes is None or word_count(item) / WORDS_PER_MINUTE <= rule.max_minutes,
    )
    return all(conditions)


def _of_kind(item: Item, kinds: Sequence[str]) -> bool:
    """Of one of `kinds`; "newsletter" takes in the stories a roundup brought, too."""
    return item.kind.value in kinds or ("newsletter" in kinds and bool(item.newsletters))


def word_count(item: Item) -> int:
    return len((item.text or item.context or item.title or "").split())


def _on_host(item: Item, hosts: Sequence[str]) -> bool:
    host = (urlsplit(item.url).hostname or "") if item.url else ""
    return any(host == h.lower() or host.endswith("." + h.lower()) for h in hosts)


def _in_language(item: Item, languages: Sequence[str]) -> bool:
    found = (item.language or "").lower().replace("_", "-")
    return any(found == code.lower() or found.startswith(code.lower() + "-") for code in languages)


def _tags_and_topic(item: Item) -> list[str]:
    return [*(item.note.tags if item.note else ()), item.topic or ""]


def _folded(names: Sequence[str]) -> set[str]:
    return {" ".join(name.split()).casefold() for name in names} - {""}


def _text(item: Item) -> str:
    return "\n".join(part for part in (item.display_title, item.text or item.context) if part)


@cache
def _words_pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(r"\s+".join(map(re.escape, word.split())) for word in words)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


def _tagged(item: Item, tags: Sequence[str]) -> Item:
    if not tags or item.note is None:
        return item
    added = tuple(tag for tag in tags if tag not in item.note.tags)
    return replace(item, note=replace(item.note, tags=(*added, *item.note.tags)))
