"""Screenshots of a sample week as a subscriber sees it, and the HTML size of a 100-item week.

    python bench/render.py OUT_FOLDER

Runs a real offline week (tests/sampleweek.py: a journal with headings and pages that could
not be read, a feed with categories, a learning list with topic lines and pasted posts, through collect, fetch from a loopback server, offline notes
and compose; nothing written by hand), renders the HTML mail and the markdown as a CommonMark
renderer shows it, and writes full-page PNG screenshots at 390 px (a phone) and 800 px (a laptop) wide with
Debian's headless chromium (selenium; `apt-get install chromium chromium-driver`). Then
prints the size of the HTML mail part of a 100-item week, against Gmail's ~102 KB clipping.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from markdown_it import MarkdownIt

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from browser import available, chromium, viewport  # noqa: E402
from digest.compose.digest import compose  # noqa: E402
from digest.deliver.html import markdown_to_html  # noqa: E402
from digest.deliver.message import MAX_HTML_PART_BYTES  # noqa: E402
from digest.models import (  # noqa: E402
    Item,
    ItemKind,
    ItemState,
    Note,
    NoteBasis,
    Statement,
    WeekSummary,
)
from digest.periods import parse_week  # noqa: E402
from loopback import serving  # noqa: E402
from sampleweek import run_week  # noqa: E402

ZONE = ZoneInfo("Europe/Berlin")
PERIOD = parse_week("2026-W47", ZONE)
FIRST = (
    "The regulator opened an inquiry into the office-sharing company's statements to investors"
    " before its listing, examining losses, lease obligations and the valuation it presented."
)
STORY = " ".join([FIRST] * 4)


def item(item_id: int, url: str | None, title: str, note: Note | None, **extra: Any) -> Item:
    values: dict[str, Any] = dict(
        id=item_id, key=url or f"note:{item_id}", url=url, title=title, kind=ItemKind.LINK,
        saved_at=PERIOD.start + timedelta(hours=3 * item_id), topic=None, context=None,
        state=ItemState.NOTED, attempts=0, error=None, next_attempt_at=None, text=None, note=note,
    )  # fmt: skip
    return Item(**(values | extra))


def sample_week() -> list[Item]:
    serving = "LLM serving"
    return [
        item(
            1,
            "https://blog.vllm.ai/2026/11/16/disagg.html",
            "Disaggregated prefill and decode, in production",
            Note(
                "Splitting prefill from decode onto separate GPU pools cut time to first token"
                " by 40% at the same cost. The team explains how KV caches move between pools"
                " and when the split stops paying off.",
                key_points=(
                    "Prefill is compute bound; decode is memory bound.",
                    "KV transfer over NVLink costs under 2 ms per request.",
                ),
                prompt_version="extractive-3",
            ),
            topic=serving,
        ),
        item(
            2,
            "https://arxiv.org/abs/2611.01234",
            "Speculative decoding without a draft model",
            Note(
                "The authors predict several tokens with extra heads on the main model and"
                " verify them in one pass, doubling decode speed on chat workloads.",
                prompt_version="extractive-3",
            ),
            topic=serving,
        ),
        item(
            3,
            "https://paywalled.example.com/queueing",
            "What queueing theory says about GPU batch sizes",
            None,
            topic=serving,
            state=ItemState.FAILED,
            error="fetch failed: 'https://paywalled.example.com/queueing': HTTP 402",
            next_attempt_at=PERIOD.end,
            context="interesting take on Little's law for inference servers",
        ),
        item(
            4,
            "https://news.example.com/wework-inquiry",
            "WeWork faces an inquiry over its listing",
            Note(FIRST, prompt_version="extractive-3"),
            topic="Business",
            text=STORY,
        ),
        item(
            5,
            "https://www.financepaper.example/markets/wework",
            "Regulator examines WeWork statements",
            Note(FIRST, prompt_version="extractive-3"),
            topic="Business",
            text=STORY + " Shares were not traded.",
        ),
        item(
            6,
            None,
            "In 1986 MIT filmed a lecture series on Structure and Interpretation of Computer"
            " Programs",
            Note(
                "In 1986 MIT filmed a lecture series on Structure and Interpretation of"
                " Computer Programs. Forty years on it is still the clearest introduction to"
                " what a program is.",
                basis=NoteBasis.POST_TEXT,
                prompt_version="extractive-3",
            ),
            kind=ItemKind.POST,
            topic="Learning",
            context="In 1986 MIT filmed a lecture series … " * 20,
        ),
    ]


def week_summary() -> WeekSummary:
    return WeekSummary(
        (
            Statement("Serving got cheaper by splitting the work across GPUs", (1, 2)),
            Statement("One regulatory story about WeWork, from two sites", (4,)),
        ),
        must_read=(1,),
        model="example",
    )


def html_pages(items: list[Item]) -> dict[str, str]:
    markdown = compose(PERIOD, items, week_summary(), zone=ZONE)
    urls = [i.url for i in items if i.url]
    return pages(markdown, markdown_to_html(markdown, title="Your digest", allowed_urls=urls))


def pages(markdown: str, mail: str) -> dict[str, str]:
    plain = MarkdownIt("commonmark", {"html": False}).render(markdown)
    return {
        "mail": mail,
        "markdown": '<!DOCTYPE html><html><head><meta charset="utf-8"><meta name="viewport"'
        ' content="width=device-width, initial-scale=1"></head><body>' + plain + "</body></html>",
    }


def offline_week() -> dict[str, str]:
    """The sample week's markdown and mail from a real offline run."""
    with tempfile.TemporaryDirectory() as folder, serving() as server:
        week = run_week(Path(folder), server, ("journal", "feed", "list", "posts"))
        return pages(week.markdown, week.mail)


def screenshots(folder: Path) -> list[Path]:
    written = []
    for name, page in offline_week().items():
        source = folder / f"digest-{name}.html"
        source.write_text(page, encoding="utf-8")
        for width in (390, 800):
            with chromium() as driver:
                viewport(driver, width)
                driver.get(source.as_uri())
                height = driver.execute_script("return document.documentElement.scrollHeight")
                driver.execute_cdp_cmd(
                    "Emulation.setDeviceMetricsOverride",
                    {
                        "width": width,
                        "height": height,
                        "deviceScaleFactor": 1,
                        "mobile": width < 600,
                    },
                )
                target = folder / f"digest-{name}-{width}.png"
                driver.save_screenshot(str(target))
                written.append(target)
    return written


def hundred_items() -> list[Item]:
    week = sample_week()
    return [
        item(
            n,
            f"https://site{n % 17}.example/post/{n}",
            f"{week[n % 2].title} ({n})",
            week[n % 2].note,
            topic=["LLM serving", "Data", "Rust", "Learning"][n % 4],
        )
        for n in range(1, 101)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    folder = parser.parse_args().folder
    folder.mkdir(parents=True, exist_ok=True)
    if available():
        for path in screenshots(folder):
            print(f"wrote {path}")
    else:
        print("chromium or chromium-driver missing: no screenshots")
    page = html_pages(hundred_items())["mail"]
    size = len(page.encode("utf-8"))
    print(f"100-item week: HTML mail {size:,} bytes ({size / MAX_HTML_PART_BYTES:.0%} of the cut)")


if __name__ == "__main__":
    main()
