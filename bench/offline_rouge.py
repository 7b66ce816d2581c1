"""The offline summariser against lead-k, and long-text condensing against cutting, by ROUGE.

    python bench/offline_rouge.py ../shared/bench-data/summaries/bbc-dev.csv [--sentences 3]
    python bench/offline_rouge.py ../shared/bench-data/summaries/writers-dev.jsonl

A .jsonl file holds summaries written by people (writers-dev.jsonl: article, summaries):
the notes and lead-k are scored against every summary of an article (ROUGE-1/2/Lsum F,
sentences on lines for Lsum), on all articles and on two halves by the first hex digit of
article_id: the picker's swap margin and window were chosen on ids 0-7, so ids 8-f are held
out.

Part 1 scores the extractive note (the sentences the offline summariser picks, in reading
order, given the title) beside lead-k (the same number of sentences) and lead at equal length
(the note's number of words) against the reference summaries: ROUGE-1, ROUGE-2 and ROUGE-L F
(rouge-score, stemming on), on all articles and on each half (even and odd rows): the picker's
weights were chosen on the even rows, so the odd rows are held out. Then the same against a
human-written reference, the headline, with the picker NOT given the title (else it would
copy it): writers summarise what the lead says, and this shows whether the picker does.

Part 2 asks how much of the reference survives when a text must be condensed to half its
tokens before an LLM call: ROUGE-1/2 recall of the reference by the condensed text, for cutting
at the budget (what not to do), the central passages kept in reading order (what digest does),
and an extractive map-reduce stand-in (each chunk reduced to its best sentences).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

from rouge_score import rouge_scorer

from digest.notes.condense import condense
from digest.notes.offline import rank_sentences, segment, summary_sentences
from digest.notes.tokens import count_tokens
from digest.text import sentences

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


def lead(title: str | None, body: str, k: int) -> str:
    return " ".join(segment(body)[:k])


def extractive(title: str | None, body: str, k: int) -> str:
    return " ".join(summary_sentences(body, k, title))


def lead_equal_length(title: str | None, body: str, k: int) -> str:
    """The opening words of the article, as many as the note has."""
    length = len(extractive(title, body, k).split())
    return " ".join(" ".join(segment(body)).split()[:length])


def untitled(method: Callable[..., str]) -> Callable[..., str]:
    return lambda title, body, k: method(None, body, k)


def headline_scores(
    scorer: rouge_scorer.RougeScorer, articles: list[Article], method: Callable[..., str], k: int
) -> dict[str, float]:
    """Against the headline, the picker not given it."""
    as_headline = [(title, body, title) for title, body, _reference in articles]
    return f_scores(scorer, as_headline, untitled(method), k)


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


def writers(path: Path, k: int) -> None:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    metrics = ("rouge1", "rouge2", "rougeLsum")
    scorer = rouge_scorer.RougeScorer(list(metrics), use_stemmer=True)
    halves = {
        "all": rows,
        "ids 0-7": [r for r in rows if int(r["article_id"][0], 16) < 8],
        "ids 8-f": [r for r in rows if int(r["article_id"][0], 16) >= 8],
    }
    pickers = ((f"lead-{k}", lambda body: segment(body)[:k]),
               ("notes", lambda body: summary_sentences(body, k)))  # fmt: skip
    print(f"{len(rows)} articles, {k} sentences; against the writers' summaries, ROUGE F x100")
    print(f"  {'':10} {'':8} {'R1':>6} {'R2':>6} {'RLsum':>6} {'words':>6}")
    for name, subset in halves.items():
        for label, pick in pickers:
            totals: dict[str, list[float]] = {metric: [] for metric in metrics}
            lengths = []
            for row in subset:
                picked = pick(row["article"])
                lengths.append(sum(len(s.split()) for s in picked))
                for reference in row["summaries"]:
                    scores = scorer.score("\n".join(sentences(reference)), "\n".join(picked))
                    for metric in metrics:
                        totals[metric].append(100 * scores[metric].fmeasure)
            figures = " ".join(f"{statistics.fmean(totals[m]):6.2f}" for m in metrics)
            print(f"  {name:10} {label:8} {figures} {statistics.fmean(lengths):6.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path)
    parser.add_argument("--sentences", type=int, default=3)
    args = parser.parse_args()
    if args.csv.suffix == ".jsonl":
        writers(args.csv, args.sentences)
        return
    articles = load(args.csv)
    scorer = rouge_scorer.RougeScorer(list(METRICS), use_stemmer=True)
    k = args.sentences
    print(f"{len(articles)} articles, {k} sentences; ROUGE F x100 (R1 / R2 / RL)")
    halves = {"all": articles, "even rows": articles[0::2], "odd rows (held out)": articles[1::2]}
    methods = (
        (f"lead-{k}", lead),
        ("lead, equal length", lead_equal_length),
        ("notes", extractive),
    )
    for reference, score in (("extractive reference", f_scores), ("headline", headline_scores)):
        print(f"against the {reference}:")
        for name, subset in halves.items():
            for label, method in methods:
                scores = score(scorer, subset, method, k)
                figures = " / ".join(f"{scores[m]:5.2f}" for m in METRICS)
                print(f"  {name:20} {label:18} {figures}")
    print("condensed to half the tokens; reference recall x100:")
    for label, method in (
        ("cut at the budget", cut),
        ("central passages", lambda body, budget: condense(body, budget)),
        ("map-reduce (extractive)", map_reduce),
    ):
        print(f"  {label:24} {recall(scorer, articles, method)}")


if __name__ == "__main__":
    main()
