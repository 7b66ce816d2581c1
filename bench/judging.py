"""How often the note judge (notes/judging.py and notes/faithful.py, through
answers.parse_note_answer) refuses or trims notes that people wrote: every human summary of
writers-dev.jsonl, and every reference summary of bbc-dev.csv, judged as a model's answer
about its own article (title included), with the other articles of the file as the run's
other articles (goal: under 3 % refused).

Refused: parse_note_answer raises. Trimmed: the faithfulness check drops a sentence for a
number or name the article does not hold. The faithfulness rule was tuned on the articles
of even index ("tune"); the odd ones ("held out") were looked at only to report.

    python bench/judging.py ../shared/bench-data/summaries/writers-dev.jsonl ../shared/bench-data/summaries/bbc-dev.csv
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

from digest.notes.answers import AnswerContext, describe_invalid, parse_note_answer
from digest.notes.faithful import check, known_facts
from digest.notes.judging import stems
from digest.text import sentences

SPLITS = ("tune", "held out")  # articles of even index, of odd index


def cases(path: Path) -> list[tuple[str, list[str]]]:
    """(title and article, summaries) pairs from a writers-dev JSONL or a bbc-dev CSV."""
    if path.suffix == ".jsonl":
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        return [(row["article"], row["summaries"]) for row in rows]
    from offline_rouge import load

    # bbc-dev.csv joins its sentences without a space after the period ("2.5" stays whole)
    return [
        (f"{title}\n{body}", [re.sub(r"\.(?=[^\s\d])", ". ", summary)])
        for title, body, summary in load(path)
    ]


def judge(path: Path) -> None:
    pairs = cases(path)
    own = [stems(article) for article, _ in pairs]
    refused: Counter[str] = Counter()
    totals, refusals, trims = Counter[str](), Counter[str](), Counter[str]()
    for index, (article, summaries) in enumerate(pairs):
        split = SPLITS[index % 2]
        others = tuple(found for n, found in enumerate(own) if n != index)
        title = article.partition("\n")[0] if path.suffix == ".csv" else ""
        context = AnswerContext(source=article, title=title, others=others, language="English")
        for summary in summaries:
            totals[split] += 1
            trims[split] += bool(check(sentences(summary), known_facts(article)).dropped)
            try:
                parse_note_answer(json.dumps({"summary": summary}), context)
            except ValueError as exc:
                refusals[split] += 1
                refused[f"{split}: {describe_invalid(exc)[:100]}"] += 1
    for split in SPLITS:
        total = totals[split]
        print(
            f"{path.name} {split}: {total} summaries, {refusals[split]} refused"
            f" ({100 * refusals[split] / total:.1f} %), {trims[split]} trimmed"
            f" ({100 * trims[split] / total:.1f} %)"
        )
    for why, count in refused.most_common():
        print(f"  {count}: {why}")


if __name__ == "__main__":
    for name in sys.argv[1:]:
        judge(Path(name))
