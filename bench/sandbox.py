"""What the bounds on users' templates, prompts and rules cost, and how fast hostile ones end.

    python bench/sandbox.py [--items 1000] [--repeat 5]

1. The digest of a week of ITEMS noted items rendered by the built-in template (plain Jinja)
   and by the same template as a user's (`digest templates export`: digest.sandbox, every
   loop turn, call and filter counted); the median of REPEAT renders each.
2. The audit's hostile templates: seconds until each ends with its one line.
3. The audit's stalling rules on RE2 (digest.patterns): seconds per search.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from digest import sandbox
from digest.commands.starters import export_starters
from digest.compose.digest import digest_context, render_digest
from digest.compose.usertemplates import BUILT_IN
from digest.models import Item, ItemKind, ItemState, Note, WeekSummary
from digest.patterns import pattern_found
from digest.periods import parse_week

ZONE = ZoneInfo("UTC")
PERIOD = parse_week("2026-W47", ZONE)
HOSTILE = {
    "range(10**12)": "{% for i in range(10**12) %}x{% endfor %}",
    "nested loops": "{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}",
    "exponential macro": "{% macro d(n) %}{% if n %}{{ d(n-1) }}{{ d(n-1) }}{% endif %}{% endmacro %}{{ d(60) }}",
    "cycler globals": "{{ cycler.__init__.__globals__.os.environ }}",
    "a 10 GB string": "{{ 'a' * 10**10 }}",
}
RULES = {
    "(?i)(\\w+\\s?)+sponsored on 17 words": ("(?i)(\\w+\\s?)+sponsored", " ".join(["word"] * 17)),
    "(a+)+$ on 200,000 a's and !": ("(a+)+$", "a" * 199_999 + "!"),
}


def week(count: int) -> list[Item]:
    text = "Paged attention keeps the cache in blocks. " * 20
    return [
        Item(
            id=n,
            key=f"https://site{n % 40}.example/{n}",
            url=f"https://site{n % 40}.example/{n}",
            title=f"Item {n} on serving models",
            kind=ItemKind.LINK,
            saved_at=PERIOD.start + timedelta(minutes=5 * n),
            topic=f"Topic {n % 12}",
            context=None,
            state=ItemState.NOTED,
            attempts=0,
            error=None,
            next_attempt_at=None,
            text=text,
            note=Note(f"Note {n}: what it says and why it matters.", ("a", "b"), ("ml",)),
        )  # fmt: skip
        for n in range(1, count + 1)
    ]


def timed(render: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        render()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    context = digest_context(PERIOD, week(args.items), WeekSummary(()), zone=ZONE)
    with tempfile.TemporaryDirectory() as folder:
        mine = Path(folder)
        list(export_starters("digest.compose", "templates", BUILT_IN, mine))
        plain = timed(lambda: render_digest(context), args.repeat)
        bounded = timed(lambda: render_digest(context, mine), args.repeat)
        same = render_digest(context).text == render_digest(context, mine).text
    print(f"digest of {args.items} items: built-in {plain:.3f} s, as a user's template (sandboxed)"
          f" {bounded:.3f} s ({bounded / plain:.2f}x); same text: {same}")  # fmt: skip
    env = sandbox.environment()
    for name, text in HOSTILE.items():
        started = time.perf_counter()
        try:
            sandbox.render(sandbox.from_text(env, text, Path("t.j2")), {})
            line = "rendered"
        except Exception as exc:
            line = sandbox.problem(exc, Path("t.j2"))
        print(f"hostile template, {name}: {time.perf_counter() - started:.3f} s: {line[:90]}")
    for name, (pattern, text) in RULES.items():
        started = time.perf_counter()
        found = pattern_found(pattern, text)
        print(f"rule {name}: {time.perf_counter() - started:.4f} s (found: {found})")


if __name__ == "__main__":
    main()
