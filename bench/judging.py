"""How often the note judge (notes/judging.py, through answers.parse_note_answer) refuses notes
that people wrote: every human summary of writers-dev.jsonl, and every reference summary of
bbc-dev.csv, judged as a model's answer about its own article, with the other articles of
the file as the run's other articles (goal: none refused).

    python bench/judging.py ../shared/bench-data/summaries/writers-dev.jsonl ../shared/bench-data/summaries/bbc-dev.csv
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from digest.notes.answers import AnswerContext, describe_invalid, parse_note_answer
from digest.notes.judging import stems


def cases(path: Path) -> list[tuple[str, list[str]]]:
    """(article, summaries) pairs from a writers-dev JSONL or a bbc-dev CSV."""
    if path.suffix == ".jsonl":
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        return [(row["article"], row["summaries"]) for row in rows]
    from offline_rouge import load

    return [(body, [summary.replace(".", ". ")]) for _title, body, summary in load(path)]


def judge(path: Path) -> None:
    pairs = cases(path)
    own = [stems(article) for article, _ in pairs]
    refused: Counter[str] = Counter()
    total = 0
    for index, (article, summaries) in enumerate(pairs):
        others = tuple(found for n, found in enumerate(own) if n != index)
        context = AnswerContext(source=article, others=others, language="English")
        for summary in summaries:
            total += 1
            try:
                parse_note_answer(json.dumps({"summary": summary}), context)
            except ValueError as exc:
                refused[describe_invalid(exc)[:100]] += 1
    print(f"{path.name}: {sum(refused.values())} of {total} human summaries refused")
    for why, count in refused.most_common():
        print(f"  {count}: {why}")


if __name__ == "__main__":
    for name in sys.argv[1:]:
        judge(Path(name))
