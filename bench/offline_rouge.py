"""The offline summariser against lead-k, and long-text condensing against cutting, by ROUGE.

    python bench/offline_rouge.py ../shared/bench-data/summaries/bbc-dev.csv [--sentences 3]

Part 1 scores the extractive note (the sentences the offline summariser picks, in reading
order) and lead-k at the same number of sentences against the reference summaries: ROUGE-1,
ROUGE-2 and ROUGE-L F (rouge-score, stemming on), on all articles and on each half (even and
odd rows) so that a method tuned on one half can be checked on the other.

Part 2 asks how much of the reference survives when a text must be condensed to half its
tokens before an LLM call: ROUGE-1/2 recall of the reference by the condensed text, for cutting
at the budget (what not to do), the central passages kept in reading order (what digest does),
and an extractive map-reduce stand-in (each chunk reduced to its best sentences).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

from rouge_score import rouge_scorer

from digest.summarize.condense import condense
from digest.summarize.offline import rank_sentences, summary_sentences
from digest.summarize.text import sentences
from digest.summarize.tokens import count_tokens

Article = tuple[str, str, str]  # title, body, reference
METRICS = ("rouge1", "rouge2", "rougeL")


def load(path: Path) -> list[Article]:
    csv.field_size_limit(sys.maxsize)
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    articles = []
    for row in rows:
        title, _, body = row["document"].strip().partition("\n")
        articles.append((title.strip(), body.strip(), row["summary"]))
    return articles


def lead(title: str, body: str, k: int) -> str:
    return " ".join(sentences(body)[:k])


def extractive(title: str, body: str, k: int) -> str:
    return " ".join(summary_sentences(body, k))


def f_scores(
    scorer: rouge_scorer.RougeScorer, articles: list[Article], method: Callable[..., str], k: int
) -> dict[str, float]:
    totals: dict[str, list[float]] = {metric: [] for metric in METRICS}
    for title, body, reference in articles:
        scores = scorer.score(reference, method(title, body, k))
        for metric in METRICS:
            totals[metric].append(scores[metric].fmeasure)
    return {metric: 100 * statistics.fmean(values) for metric, values in totals.items()}


def cut(body: str, budget: int) -> str:
    kept, used = [], 0
    for sentence in sentences(body):
        used += count_tokens(sentence) + 1
        if used > budget:
            break
        kept.append(sentence)
    return " ".join(kept)


def map_reduce(body: str, budget: int) -> str:
    """Chunks of about a quarter of the budget, each reduced to its most central sentences."""
    found = sentences(body)
    chunks: list[list[str]] = [[]]
    for sentence in found:
        if sum(count_tokens(s) for s in chunks[-1]) > budget // 2 and chunks[-1]:
            chunks.append([])
        chunks[-1].append(sentence)
    share = budget // len(chunks)
    kept = []
    for chunk in chunks:
        picked = sorted(rank_sentences(chunk))
        kept.extend(cut(" ".join(chunk[i] for i in picked), share).split("\n"))
    return " ".join(kept)


def recall(
    scorer: rouge_scorer.RougeScorer, articles: list[Article], method: Callable[[str, int], str]
) -> str:
    r1, r2 = [], []
    for _title, body, reference in articles:
        budget = count_tokens(body) // 2
        scores = scorer.score(reference, method(body, budget))
        r1.append(100 * scores["rouge1"].recall)
        r2.append(100 * scores["rouge2"].recall)
    return f"R1 recall {statistics.fmean(r1):5.1f}  R2 recall {statistics.fmean(r2):5.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path)
    parser.add_argument("--sentences", type=int, default=3)
    args = parser.parse_args()
    articles = load(args.csv)
    scorer = rouge_scorer.RougeScorer(list(METRICS), use_stemmer=True)
    k = args.sentences
    print(f"{len(articles)} articles, {k} sentences; ROUGE F x100 (R1 / R2 / RL)")
    halves = {"all": articles, "even rows": articles[0::2], "odd rows": articles[1::2]}
    for name, subset in halves.items():
        for label, method in (("lead", lead), ("extractive", extractive)):
            scores = f_scores(scorer, subset, method, k)
            figures = " / ".join(f"{scores[m]:5.2f}" for m in METRICS)
            print(
                f"  {name:10} {label}-{k:<3} {figures}"
                if label == "lead"
                else f"  {name:10} {label:8} {figures}"
            )
    print("condensed to half the tokens; reference recall x100:")
    for label, method in (
        ("cut at the budget", cut),
        ("central passages", lambda body, budget: condense(body, budget)),
        ("map-reduce (extractive)", map_reduce),
    ):
        print(f"  {label:24} {recall(scorer, articles, method)}")


if __name__ == "__main__":
    main()
