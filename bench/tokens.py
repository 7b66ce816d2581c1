"""digest's approximate token count against cl100k_base's exact one, text by text.

    python bench/tokens.py ../shared/bench-data path/to/cl100k_base.tiktoken

The second argument is OpenAI's cl100k_base.tiktoken (checked against its published
sha256); it needs `tiktoken` (the bench extra). Prints, per set, the ratio approximate /
exact over its texts: median, 5th and 95th percentile, lowest and highest. The costs in
digest.notes.tokens were chosen looking at the first four sets (tuned); the last two were
not looked at before the figures were frozen (held out).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import json
import statistics
from collections.abc import Iterator
from pathlib import Path

import tiktoken
from tiktoken.load import load_tiktoken_bpe

from digest.notes.tokens import count_tokens

CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)


def cl100k(path: Path) -> tiktoken.Encoding:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != CL100K_SHA256:
        raise SystemExit(f"{path} is not cl100k_base.tiktoken (sha256 {digest})")
    ranks = load_tiktoken_bpe(str(path), expected_hash=CL100K_SHA256)
    return tiktoken.Encoding(
        "cl100k_base", pat_str=CL100K_PATTERN, mergeable_ranks=ranks, special_tokens={}
    )


def sets(data: Path) -> Iterator[tuple[str, list[str]]]:
    truth = json.loads((data / "extraction/ground-truth.json").read_text())
    yield "tuned: extraction articles", [page["articleBody"] for page in truth.values()]
    with (data / "summaries/writers-dev.jsonl").open() as lines:
        yield "tuned: writers articles", [json.loads(line)["article"] for line in lines]
    with (data / "summaries/bbc-dev.csv").open() as rows:
        yield "tuned: bbc articles", [row["document"] for row in csv.DictReader(rows)]
    pages = sorted((data / "extraction/html").glob("*.html.gz"))
    yield (
        "tuned: raw html (20k chars)",
        [gzip.decompress(p.read_bytes()).decode(errors="replace")[:20_000] for p in pages],
    )
    with (data / "topics/agnews-dev.csv").open() as rows:
        news = [f"{row['title']}\n{row['description']}" for row in csv.DictReader(rows)]
    yield "held out: agnews title + description", news
    feeds = sorted((data / "feeds").rglob("*.xml"))
    yield (
        "held out: feed files (xml)",
        [p.read_bytes().decode(errors="replace")[:20_000] for p in feeds],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="the bench-data folder")
    parser.add_argument("cl100k", type=Path, help="cl100k_base.tiktoken")
    args = parser.parse_args()
    encoding = cl100k(args.cl100k)
    for name, texts in sets(args.data):
        ratios = sorted(
            count_tokens(text) / len(encoding.encode_ordinary(text))
            for text in texts
            if text.strip()
        )
        tail = max(1, len(ratios) // 20)
        print(
            f"{name:38} {len(ratios):5} texts: median {statistics.median(ratios):.2f},"
            f" 5-95 % {ratios[tail - 1]:.2f}-{ratios[-tail]:.2f},"
            f" range {ratios[0]:.2f}-{ratios[-1]:.2f}"
        )


if __name__ == "__main__":
    main()
