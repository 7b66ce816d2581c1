"""`digest rules test`: what each [[rules]] entry matches in a week, and the digest without it.

The digests compared are composed offline (no model call, the week summary left out), from
the store as it is: what the rules change, not what a run would write.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Sequence

from digest.compose.digest import Backlog, render_digest
from digest.compose.footer import Provenance
from digest.compose.ranking import History
from digest.compose.rules import apply_rules, matches
from digest.compose.week import reader_history, week_context, week_items
from digest.config import Config, RuleConfig
from digest.models import Item, Period, WeekSummary
from digest.store import open_store

SHOWN_MATCHES = 20


def rules_report(config: Config, period: Period) -> Iterator[str]:
    """Per rule: what it does, the items of `period` it matches, then the digest's lines that
    change without it (a unified diff), or that nothing changes."""
    if not config.rules:
        yield f"no [[rules]] in {config.path or 'the config'}"
        return
    with open_store(config.db_path) as store:
        items = week_items(store, config, period)
        history = reader_history(store)
    whole = _digest(config, period, config.rules, items, history)
    for rule in config.rules:
        matched = [item for item in items if matches(rule, item)]
        things = "item" if len(matched) == 1 else "items"
        yield f"rule {rule.name!r} ({_actions(rule)}): {len(matched)} {things} in {period.label}"
        yield from (f"  {item.id:>6}  {item.display_title}" for item in matched[:SHOWN_MATCHES])
        if len(matched) > SHOWN_MATCHES:
            yield f"  … and {len(matched) - SHOWN_MATCHES} more"
        others = [other for other in config.rules if other is not rule]
        yield from _changes(whole, _digest(config, period, others, items, history))


def _digest(
    config: Config,
    period: Period,
    rules: Sequence[RuleConfig],
    items: Sequence[Item],
    history: History,
) -> str:
    week = apply_rules(rules, items)
    provenance = Provenance(muted=len(week.muted))
    context = week_context(config, period, week, WeekSummary(()), history, Backlog(), provenance)
    return render_digest(context, config.output.templates_dir).text


def _changes(whole: str, without: str) -> Iterator[str]:
    diff = difflib.unified_diff(
        whole.splitlines(), without.splitlines(), "with it", "without it", lineterm="", n=1
    )
    lines = list(diff)
    if not lines:
        yield "  without it, the digest is the same"
        return
    yield "  without it, the digest changes:"
    yield from (f"    {line}" for line in lines)


def _actions(rule: RuleConfig) -> str:
    done = [action for action in ("mute", "skip_notes", "pin") if getattr(rule, action)]
    if rule.tag:
        done.append(f"tag {', '.join(rule.tag)}")
    if rule.section:
        done.append(f"section {rule.section!r}")
    return "; ".join(done)
