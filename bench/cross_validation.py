"""4-fold cross-validation of the choice of a page's text (`ChoiceSettings`).

Each page's candidate texts (trafilatura, readability, baseline, meta description) and
features (prose characters, title) are read once; every setting is then a cheap choice
over them. Per fold, on the three training folds:

1. the thresholds (rescue share, length ratio, containment; dropping the headline) are
   the grid point with the best F1, every boilerplate rule on;
2. each boilerplate rule is kept when it matches lines on the pages of at least two
   training sites (a phrase read off one site, maybe the held one, is no evidence) and
   dropping it does not raise F1.

The held fold is scored with what was chosen. Folds are split by site (host), so the
pages of one site are never on both sides. The mean over held folds is the figure;
beside it the same procedure with no boilerplate rules at all, and what it chooses on
all pages (which is what `ChoiceSettings()` should hold, less rules that match no page
here: those cannot change a figure).
"""

from __future__ import annotations

import functools
import itertools
import statistics
from collections.abc import Callable, Iterable
from dataclasses import replace
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import trafilatura

from digest.extract.cleanup import BOILERPLATE_RULES, is_boilerplate_line
from digest.extract.html import Candidates, ChoiceSettings, choose_text
from digest.extract.sniff import decode_html

FOLDS = 4
MIN_RULE_SITES = 2
NO_RULES = frozenset[str]()
GRID = [
    ChoiceSettings(
        rescue_below_share=below,
        rescue_longer=longer,
        rescue_covers=covers,
        drop_title=drop_title,
    )
    for below, longer, covers, drop_title in itertools.product(
        (0.0, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0), (1.2, 1.5, 2.0), (0.8, 0.9, 0.95), (True, False)
    )
]

Scorer = Callable[[ChoiceSettings, list[str]], float]


def cross_validate(
    pages: dict[str, bytes], truth: dict[str, Any], score: ModuleType
) -> list[list[str]]:
    """Print the cross-validated figures; return the folds (page ids)."""
    candidates = {
        page_id: _read_once(html, truth[page_id]["url"]) for page_id, html in pages.items()
    }
    f1 = _scorer(candidates, truth, score)
    hosts = {page_id: urlsplit(truth[page_id]["url"]).hostname or "" for page_id in pages}
    folds = _folds_by_site(hosts)
    for label, rules in (("all rules", frozenset(BOILERPLATE_RULES)), ("no rules", NO_RULES)):
        held = []
        for k, fold in enumerate(folds):
            train = [page_id for other in folds if other is not fold for page_id in other]
            chosen = choose_settings(train, rules, f1, candidates, hosts)
            held.append(f1(chosen, fold))
            print(
                f"  fold {k} ({len(fold)} pages, {label}): held f1={held[-1]:.3f}  {_show(chosen)}"
            )
        print(
            f"digest cross-validated, {label:9} f1={statistics.mean(held):.4f}"
            f" (held folds {min(held):.3f}..{max(held):.3f})"
        )
    on_all = choose_settings(sorted(pages), frozenset(BOILERPLATE_RULES), f1, candidates, hosts)
    print(f"  chosen on all pages: {_show(on_all)}")
    defaults = ChoiceSettings()
    same = on_all == replace(defaults, boilerplate_rules=on_all.boilerplate_rules)
    print(f"  ChoiceSettings() holds those thresholds: {same}")
    print(f"  rules in ChoiceSettings() chosen on no page: {_show_rules(defaults, on_all)}")
    return folds


def choose_settings(
    train: list[str],
    rules: frozenset[str],
    f1: Scorer,
    candidates: dict[str, Candidates],
    hosts: dict[str, str],
) -> ChoiceSettings:
    best = max(GRID, key=lambda settings: f1(replace(settings, boilerplate_rules=rules), train))
    kept = set(rules)
    for rule in sorted(rules):
        sites = _sites_matched(rule, train, best, candidates, hosts)
        with_rule = f1(replace(best, boilerplate_rules=frozenset(kept)), train)
        without = f1(replace(best, boilerplate_rules=frozenset(kept - {rule})), train)
        if len(sites) < MIN_RULE_SITES or without > with_rule:
            kept.discard(rule)
    return replace(best, boilerplate_rules=frozenset(kept))


def _read_once(html: bytes, url: str) -> Candidates:
    tree = trafilatura.load_html(decode_html(html, None))
    page = Candidates(tree, url)
    for name in ("trafilatura", "readability", "baseline", "meta_description", "prose_chars"):
        getattr(page, name)
    page.metadata  # noqa: B018 - read now, so every later choice is cheap
    return page


def _scorer(candidates: dict[str, Candidates], truth: dict[str, Any], score: ModuleType) -> Scorer:
    page_counts = functools.lru_cache(maxsize=None)(score.page_counts)
    texts: dict[tuple[str, ChoiceSettings], str] = {}

    def f1(settings: ChoiceSettings, page_ids: list[str]) -> float:
        precisions, recalls = [], []
        for page_id in page_ids:
            key = (page_id, settings)
            if key not in texts:
                texts[key] = choose_text(candidates[page_id], settings)[0]
            tp, fp, fn = page_counts(truth[page_id].get("articleBody", ""), texts[key])
            if tp + fp > 0:
                precisions.append(1.0 if fp == fn == 0 else tp / (tp + fp))
            if tp + fn > 0:
                recalls.append(1.0 if fp == fn == 0 else tp / (tp + fn))
        precision, recall = statistics.mean(precisions), statistics.mean(recalls)
        return 2 * precision * recall / (precision + recall)

    return f1


def _folds_by_site(hosts: dict[str, str]) -> list[list[str]]:
    """Sites dealt round-robin into folds, largest first, so folds are near equal in pages."""
    by_site: dict[str, list[str]] = {}
    for page_id in sorted(hosts):
        by_site.setdefault(hosts[page_id], []).append(page_id)
    folds: list[list[str]] = [[] for _ in range(FOLDS)]
    for site in sorted(by_site, key=lambda site: (-len(by_site[site]), site)):
        min(folds, key=len).extend(by_site[site])
    return folds


def _sites_matched(
    rule: str,
    page_ids: Iterable[str],
    settings: ChoiceSettings,
    candidates: dict[str, Candidates],
    hosts: dict[str, str],
) -> set[str]:
    unstripped = replace(settings, boilerplate_rules=NO_RULES)
    pattern = [BOILERPLATE_RULES[rule]]
    return {
        hosts[page_id]
        for page_id in page_ids
        if any(
            is_boilerplate_line(line, pattern)
            for line in choose_text(candidates[page_id], unstripped)[0].split("\n")
        )
    }


def _show_rules(defaults: ChoiceSettings, chosen: ChoiceSettings) -> list[str]:
    return sorted(defaults.boilerplate_rules - chosen.boilerplate_rules)


def _show(settings: ChoiceSettings) -> str:
    dropped = sorted(set(BOILERPLATE_RULES) - settings.boilerplate_rules)
    return (
        f"below={settings.rescue_below_share} longer={settings.rescue_longer}"
        f" covers={settings.rescue_covers} drop_title={settings.drop_title}"
        f" rules dropped={dropped}"
    )
