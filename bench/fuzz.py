"""Fuzz every parser far beyond what CI runs: 10,000 inputs per target by default.

    python bench/fuzz.py [--examples 10000] [--target NAME ...]

The targets, their inputs and their checks are tests/fuzzing.py's (tests/test_fuzz.py
runs the same ones CI-sized). Each input is checked and any exception or broken property
counted instead of stopping the run; prints, per target, the inputs tried, the crashes
and, for each kind of crash, one input that causes it. The goal is 0 crashes.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fuzzing import targets  # noqa: E402


def fuzz(name: str, examples: int) -> int:
    strategy, check = targets()[name]
    tried = 0
    crashes: Counter[str] = Counter()
    example: dict[str, str] = {}

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def run(value: Any) -> None:
        nonlocal tried
        tried += 1
        try:
            check(value)
        except Exception as exc:  # every crash is counted, none stops the run
            kind = f"{type(exc).__name__}: {str(exc)[:120]}"
            crashes[kind] += 1
            example.setdefault(kind, repr(value)[:300])

    started = time.perf_counter()
    run()
    elapsed = time.perf_counter() - started
    total = sum(crashes.values())
    print(f"{name}: {tried} inputs tried, {total} crashes, {elapsed:.1f} s", flush=True)
    for kind, count in crashes.most_common():
        print(f"  {count} x {kind}\n    e.g. {example[kind]}")
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--target", action="append", choices=sorted(targets()))
    args = parser.parse_args()
    total = sum(fuzz(name, args.examples) for name in args.target or sorted(targets()))
    print(f"total crashes: {total}")
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
