"""One story, one entry: a syndicated copy and a rewrite of the same news are shown once,
also when a run fetches them from a feed."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC
from email.utils import format_datetime
from pathlib import Path
from zoneinfo import ZoneInfo

from click.testing import CliRunner

from digest.cli import cli
from digest.compose.digest import compose
from digest.compose.stories import same_stories
from digest.models import Item, Note, WeekSummary
from digest.periods import parse_week
from loopback import LoopbackServer, Response
from weekitems import week_item

ZONE = ZoneInfo("UTC")
PERIOD = parse_week("2026-W47", ZONE)

ORIGINAL = (
    "WeWork is under investigation by the New York attorney general, who is examining whether "
    "the office-sharing company misled investors about its finances before its failed public "
    "offering. The inquiry, opened last month, focuses on statements made by former chief "
    "executive Adam Neumann and the board about losses, lease obligations and the valuation of "
    "the company. WeWork said it was cooperating fully with the investigation and declined to "
    "comment further. The company lost more than two billion dollars last year and cut "
    "thousands of jobs after its listing collapsed."
)
REWRITE = (
    "New York's attorney general has opened an investigation into WeWork, examining whether the "
    "office-sharing firm misled investors about its finances ahead of the public offering that "
    "failed. Investigators are looking at what former chief executive Adam Neumann and the board "
    "told investors about the company's losses, lease obligations and valuation. WeWork says it "
    "is cooperating fully with the investigation. The firm lost over two billion dollars last "
    "year and has cut thousands of jobs since the listing collapsed."
)
SYNDICATED = (
    "Subscribe to our newsletter for the latest business news. " + ORIGINAL + " Related: "
    "markets close higher on Friday. Share this article. Advertisement."
)
OTHER_STORY = (
    "Regus, the office-space provider, reported higher profits this quarter as companies signed "
    "longer leases for flexible offices in London, Paris and Berlin. The company said demand "
    "from small businesses grew and that it would open forty new centres next year, mostly in "
    "suburban towns where commuters now prefer to work closer to home. Its shares rose five "
    "percent after the results, while analysts warned that rising interest rates could slow "
    "the expansion and raise the cost of the buildings it rents from landlords."
)


def article(id: int, url: str, title: str, text: str) -> Item:
    note = Note(text.split(". ")[0] + ".")
    return week_item(id, PERIOD.start, url=url, title=title, text=text, note=note)


WEEK = [
    article(1, "https://news.example/wework", "WeWork faces inquiry", ORIGINAL),
    article(2, "https://aggregator.example/x/1", "WeWork under investigation", SYNDICATED),
    article(3, "https://www.paper.example/wework-ag", "NY AG investigates WeWork", REWRITE),
    article(4, "https://biz.example/regus", "Regus profits rise", OTHER_STORY),
]


def test_a_syndicated_copy_and_a_rewrite_are_one_story_and_another_story_is_not() -> None:
    assert same_stories(WEEK) == [[0, 1, 2], [3]]


def test_one_story_is_shown_once_with_every_source_linked() -> None:
    markdown = compose(PERIOD, WEEK, WeekSummary(()), zone=ZONE)
    assert markdown.count("WeWork is under investigation by the New York") == 1
    assert "[WeWork faces inquiry](https://news.example/wework)" in markdown
    assert (
        "*also in: [aggregator.example](https://aggregator.example/x/1),"
        " [paper.example](https://www.paper.example/wework-ag)*"
    ) in markdown
    assert "[Regus profits rise](https://biz.example/regus)" in markdown


def test_short_texts_on_one_subject_are_not_merged() -> None:
    short = [
        replace(WEEK[0], text="WeWork inquiry.", note=None),
        replace(WEEK[2], text="WeWork inquiry.", note=None),
    ]
    assert same_stories(short) == [[0], [1]]


def page(title: str, text: str) -> str:
    paragraphs = "".join(f"<p>{sentence}.</p>" for sentence in text.rstrip(".").split(". "))
    return (
        f"<html><head><title>{title}</title></head><body><nav>Home | Business</nav>"
        f"<article><h1>{title}</h1>{paragraphs}</article><footer>Contact us</footer></body></html>"
    )


def test_a_run_shows_a_copy_and_a_rewrite_fetched_from_a_feed_as_one_entry(
    server: LoopbackServer, tmp_path: Path
) -> None:
    entries = "".join(
        f"<item><title>{item.title}</title><link>{server.url(f'/{n}')}</link>"
        f"<pubDate>{format_datetime(item.saved_at.astimezone(UTC), usegmt=True)}</pubDate></item>"
        for n, item in enumerate(WEEK)
    )
    server.routes["/feed.xml"] = Response(
        200,
        f'<?xml version="1.0"?><rss version="2.0"><channel><title>News</title>{entries}'
        "</channel></rss>",
        content_type="application/rss+xml",
    )
    for n, item in enumerate(WEEK):
        server.routes[f"/{n}"] = Response(200, page(item.title or "", item.text or ""))
    config = tmp_path / "digest.toml"
    config.write_text(
        f'[digest]\ndata_dir = "data"\ntimezone = "UTC"\n\n[[sources]]\nname = "news"\n'
        f'kind = "feed"\nurl = "{server.url("/feed.xml")}"\n\n[fetch]\n'
        'allow_private_addresses = ["127.0.0.1/32"]\nper_host_delay_s = 0\n'
    )

    result = CliRunner().invoke(cli, ["now", "--week", PERIOD.label, "--config", str(config)])

    assert result.exit_code == 0, result.output
    markdown = (tmp_path / "data" / "digests" / f"{PERIOD.label}.md").read_text()
    (also,) = [line for line in markdown.splitlines() if line.lstrip().startswith("*also in:")]
    assert f"[WeWork faces inquiry]({server.url('/0')})" in markdown
    assert f"({server.url('/1')})" in also and f"({server.url('/2')})" in also
    assert "- **[WeWork under investigation](" not in markdown
    assert "- **[NY AG investigates WeWork](" not in markdown
    assert f"[Regus profits rise]({server.url('/3')})" in markdown


def test_a_merged_story_counts_once_in_the_brief_and_its_site_is_named_without_escapes() -> None:
    week = [
        WEEK[0],
        replace(WEEK[1], url="http://127.0.0.1:8080/x/1", key="http://127.0.0.1:8080/x/1"),
        *WEEK[2:],
    ]
    markdown = compose(PERIOD, week, WeekSummary(()), zone=ZONE, sections={})
    assert "*also in: [127.0.0.1](http://127.0.0.1:8080/x/1)," in markdown
    assert "(2 items)" in markdown.split("\n## ")[1]  # the story and Regus, not four
