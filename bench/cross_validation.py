"""Site-grouped, repeated cross-validation of the choice of a page's text (`ChoiceSettings`).

Every tuned choice of the extractor is made again inside each fold, from the training
sites' pages only:

1. the grid point with the best training F1 (every boilerplate rule on): trafilatura's
   mode, the readability rescue's thresholds, the thin-text threshold, dropping the
   headline (the balanced-mode recall check keeps its shipped thresholds: they were set
   on another set of pages, trafilatura's own evaluation pages, not on these);
2. each boilerplate rule is kept when it matches lines on the pages of at least two
   training sites (a phrase read off one site, maybe the held one, is no evidence) and
   dropping it does not raise training F1.

Folds are split by site (host): the pages of one site are never on both sides. The
sites are shuffled into FOLDS folds, REPEATS times with different seeds. Each page is
scored once per repeat, with what was chosen without its site (out-of-fold), so every
repeat gives a figure over all pages, comparable with the development figure (the
shipped `ChoiceSettings()` on all pages): the gap between the two is how much tuning on
the pages flatters them. Beside them: each held fold's F1, and the spread a resampling
of sites gives (how far a figure from this few sites can be trusted).
"""

from __future__ import annotations

import functools
import itertools
import random
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import trafilatura

from digest.extract.cleanup import BOILERPLATE_RULES, is_boilerplate_line
from digest.extract.html import Candidates, ChoiceSettings, choose_text
from digest.extract.sniff import decode_html

MIN_RULE_SITES = 2
BOOTSTRAP_ROUNDS = 1000
NO_RULES = frozenset[str]()
GRID = [
    ChoiceSettings(
        favor_precision=precision,
        rescue_below_share=below,
        rescue_longer=longer,
        rescue_covers=covers,
        thin_chars=thin,
        drop_title=drop_title,
    )
    for precision, (recall_below, recall_longer), below, longer, covers, thin, drop_title in (
        itertools.product(
            (True, False),
            ((0.0, 2.0), (0.3, 1.5), (0.3, 2.0), (0.5, 1.5), (0.5, 2.0)),
            (0.0, 0.5, 0.7),
            (1.2, 1.5),
            (0.8, 0.9),
            (200, 400),
            (True, False),
        )
    )
    if precision
    or recall_below == 0.0  # the recall check reads balanced mode: moot without precision
]

Counts = tuple[float, float, float]  # the metric's true positives, false positives, false negatives


@dataclass(frozen=True)
class Split:
    repeat: int
    fold: int
    held: list[str]
    chosen: ChoiceSettings


def cross_validate(
    pages: dict[str, bytes], truth: dict[str, Any], score: ModuleType, folds: int, repeats: int
) -> list[list[str]]:
    """Print the cross-validated figures beside the development figure; return repeat 0's folds."""
    candidates = {
        page_id: _read_once(html, truth[page_id]["url"]) for page_id, html in pages.items()
    }
    counts = _counter(candidates, truth, score)
    hosts = {page_id: urlsplit(truth[page_id]["url"]).hostname or "" for page_id in pages}
    everything = sorted(pages)
    dev = _f1(counts(ChoiceSettings(), page) for page in everything)
    print(f"development figure (ChoiceSettings() on all {len(pages)} pages): f1={dev:.4f}")
    splits = [
        Split(repeat, k, held, choose_settings(_rest(everything, held), counts, candidates, hosts))
        for repeat in range(repeats)
        for k, held in enumerate(_folds_by_site(hosts, folds, seed=repeat))
    ]
    out_of_fold = _out_of_fold(splits, counts, repeats)
    for split in splits:
        held_f1 = _f1(counts(split.chosen, page) for page in split.held)
        print(
            f"  repeat {split.repeat} fold {split.fold} ({len(split.held)} pages):"
            f" held f1={held_f1:.3f}  {_show(split.chosen)}"
        )
    _report(dev, out_of_fold, splits, counts, hosts)
    on_all = choose_settings(everything, counts, candidates, hosts)
    print(f"  chosen on all pages: {_show(on_all)}")
    print(f"  ChoiceSettings():    {_show(ChoiceSettings())}")
    return [split.held for split in splits if split.repeat == 0]


def choose_settings(
    train: list[str],
    counts: Callable[[ChoiceSettings, str], Counts],
    candidates: dict[str, Candidates],
    hosts: dict[str, str],
) -> ChoiceSettings:
    def f1(settings: ChoiceSettings) -> float:
        return _f1(counts(settings, page) for page in train)

    best = max(GRID, key=f1)
    kept = set(best.boilerplate_rules)
    for rule in sorted(best.boilerplate_rules):
        sites = _sites_matched(rule, train, best, candidates, hosts)
        with_rule = f1(replace(best, boilerplate_rules=frozenset(kept)))
        without = f1(replace(best, boilerplate_rules=frozenset(kept - {rule})))
        if len(sites) < MIN_RULE_SITES or without > with_rule:
            kept.discard(rule)
    return replace(best, boilerplate_rules=frozenset(kept))


def _report(
    dev: float,
    out_of_fold: list[dict[str, Counts]],
    splits: list[Split],
    counts: Callable[[ChoiceSettings, str], Counts],
    hosts: dict[str, str],
) -> None:
    per_repeat = [_f1(found.values()) for found in out_of_fold]
    held = [_f1(counts(split.chosen, page) for page in split.held) for split in splits]
    mean = statistics.mean(per_repeat)
    print(
        f"digest cross-validated (out-of-fold, all pages): f1={mean:.4f}"
        f" (repeats {min(per_repeat):.4f}..{max(per_repeat):.4f})"
        f"  held folds: mean {statistics.mean(held):.4f}, sd {statistics.stdev(held):.4f},"
        f" {min(held):.3f}..{max(held):.3f}"
    )
    low, high = _site_bootstrap(out_of_fold[0], hosts)
    print(
        f"  development - cross-validated = {dev - mean:+.4f};"
        f" resampling sites, repeat 0's figure spans {low:.4f}..{high:.4f} (90%)"
    )


def _out_of_fold(
    splits: list[Split], counts: Callable[[ChoiceSettings, str], Counts], repeats: int
) -> list[dict[str, Counts]]:
    found: list[dict[str, Counts]] = [{} for _ in range(repeats)]
    for split in splits:
        for page in split.held:
            found[split.repeat][page] = counts(split.chosen, page)
    return found


def _site_bootstrap(found: dict[str, Counts], hosts: dict[str, str]) -> tuple[float, float]:
    by_site: dict[str, list[str]] = {}
    for page in sorted(found):
        by_site.setdefault(hosts[page], []).append(page)
    sites = sorted(by_site)
    draw = random.Random(0)
    figures = sorted(
        _f1(found[page] for site in draw.choices(sites, k=len(sites)) for page in by_site[site])
        for _ in range(BOOTSTRAP_ROUNDS)
    )
    return figures[BOOTSTRAP_ROUNDS // 20], figures[BOOTSTRAP_ROUNDS * 19 // 20]


def _f1(page_counts: Iterable[Counts]) -> float:
    """The benchmark's metric (score.py): precision and recall averaged over pages, then F1."""
    precisions, recalls = [], []
    for tp, fp, fn in page_counts:
        if tp + fp > 0:
            precisions.append(1.0 if fp == fn == 0 else tp / (tp + fp))
        if tp + fn > 0:
            recalls.append(1.0 if fp == fn == 0 else tp / (tp + fn))
    precision, recall = statistics.mean(precisions), statistics.mean(recalls)
    return 2 * precision * recall / (precision + recall)


def _read_once(html: bytes, url: str) -> Candidates:
    tree = trafilatura.load_html(decode_html(html, None))
    page = Candidates(tree, url)
    for favor_precision in (True, False):
        page.trafilatura(favor_precision)
    for name in ("readability", "baseline", "meta_description", "prose_chars", "run_chars"):
        getattr(page, name)
    page.metadata  # noqa: B018 - read now, so every later choice is cheap
    return page


def _counter(
    candidates: dict[str, Candidates], truth: dict[str, Any], score: ModuleType
) -> Callable[[ChoiceSettings, str], Counts]:
    page_counts = functools.lru_cache(maxsize=None)(score.page_counts)
    found: dict[tuple[str, ChoiceSettings], Counts] = {}

    def counts(settings: ChoiceSettings, page_id: str) -> Counts:
        key = (page_id, settings)
        if key not in found:
            text = choose_text(candidates[page_id], settings)[0]
            found[key] = page_counts(truth[page_id].get("articleBody", ""), text)
        return found[key]

    return counts


def _rest(page_ids: list[str], held: list[str]) -> list[str]:
    left_out = set(held)
    return [page for page in page_ids if page not in left_out]


def _folds_by_site(hosts: dict[str, str], folds: int, seed: int) -> list[list[str]]:
    """Sites shuffled, then dealt largest first into the fold with fewest pages."""
    by_site: dict[str, list[str]] = {}
    for page_id in sorted(hosts):
        by_site.setdefault(hosts[page_id], []).append(page_id)
    sites = sorted(by_site)
    random.Random(seed).shuffle(sites)
    dealt: list[list[str]] = [[] for _ in range(folds)]
    for site in sorted(sites, key=lambda site: -len(by_site[site])):  # stable: shuffled ties
        min(dealt, key=len).extend(by_site[site])
    return dealt


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


def _show(settings: ChoiceSettings) -> str:
    dropped = sorted(set(BOILERPLATE_RULES) - settings.boilerplate_rules)
    return (
        f"precision={settings.favor_precision} recall_below={settings.recall_below_share}"
        f" rescue below={settings.rescue_below_share} longer={settings.rescue_longer}"
        f" covers={settings.rescue_covers} thin={settings.thin_chars}"
        f" drop_title={settings.drop_title} rules dropped={dropped}"
    )
