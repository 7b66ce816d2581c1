"""A week of bare links no run could read (no network): every item readable without its
page, and the footer and `digest status` account for every one (real pipeline and store;
only the name lookups fail, as they do offline)."""

from __future__ import annotations

import asyncio
import json
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from digest.cli import cli
from digest.clock import Waits
from digest.commands.status import gather_status
from digest.compose.linktitles import link_title
from digest.config import load_config
from digest.models import Stage
from digest.periods import parse_week
from digest.pipeline import run
from digest.store import open_store

PASTED_POSTS = Path(__file__).parent / "fixtures" / "posts" / "pasted.txt"
NOW = datetime(2025, 11, 16, 20, 0, tzinfo=UTC)
JOURNAL = """---
title: "Today I Learned"
---

## 2025-11-12
### Rust Shenanigans
- https://fasterthanli.me/articles/pin-and-suffering
https://fasterthanli.me/articles/i-want-off-mr-golangs-wild-ride

## 2025-11-13
- [Inside vLLM](https://www.aleksagordic.com/blog/vllm)
- https://www.youtube.com/watch?v=33y9FMIvcWY
- https://habr.com/ru/articles/452520/
DST Book
"""


async def no_such_name(host: str, port: int) -> list[tuple[Any, ...]]:
    await asyncio.sleep(0.01)
    raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")


@pytest.mark.parametrize(
    ("url", "title"),
    [
        ("https://fasterthanli.me/articles/i-want-off-mr-golangs-wild-ride", "I want off Mr Golang's wild ride"),
        ("https://michaelnielsen.org/reinventing_explanation/index.html", "Reinventing explanation"),
        ("https://worrydream.com/MediaForThinkingTheUnthinkable/", "Media for thinking the unthinkable"),
        ("https://apaz.dev/blog/A_Treatise_On_ML_Data_Infrastructure.html", "A treatise on ML data infrastructure"),
        ("https://gonzoml.substack.com/p/jax-things-to-watch-for-in-2025", "JAX things to watch for in 2025"),
        ("https://a.example/posts/why-i-dont-use-llms", "Why I don't use LLMs"),
        ("https://habr.com/ru/articles/452520/", "habr.com/ru/articles/452520"),
        ("https://www.youtube.com/watch?v=33y9FMIvcWY", "YouTube video"),
        ("https://tomasz.janczuk.org/2023/11/letsgo.html", "tomasz.janczuk.org/2023/11/letsgo.html"),
        ("https://brianmcfee.net/dstbook-site/content/intro.html", "brianmcfee.net/dstbook-site/content/intro.html"),
        ("https://worrydream.com/", "worrydream.com"),
        ("https://accelerated-computing.academy/fall25/lectures/", "Fall25 lectures"),
        ("https://course.example/cs149/schedule", "CS149 schedule"),
        ("https://docs.example/en/stable/features/lora.html", "docs.example/en/stable/features/lora.html"),
        ("https://docs.example/en/install", "docs.example/en/install"),
    ],
)  # fmt: skip
def test_a_link_nobody_named_is_titled_by_its_slug_else_its_host_and_path(
    url: str, title: str
) -> None:
    assert link_title(url) == title


@pytest.mark.parametrize(
    ("url", "title"),
    [
        ("https://arxiv.org/abs/1910.05446", "arXiv 1910.05446"),
        ("https://arxiv.org/pdf/1811.03600v3.pdf", "arXiv 1811.03600"),
        ("https://x.com/FireworksAI_HQ/status/2045366426819768794", "Post by @FireworksAI_HQ on X"),
        ("https://twitter.com/karpathy/status/1?s=20", "Post by @karpathy on X"),
        ("https://x.com/i/status/2045366426819768794", "x.com/i/status/2045366426819768794"),
        ("https://m.youtube.com/watch?t=30&v=33y9FMIvcWY", "YouTube video"),
        ("https://youtu.be/33y9FMIvcWY", "YouTube video"),
        ("https://www.youtube.com/playlist?list=PLx", "YouTube playlist"),
        ("https://www.youtube.com/@GPUMODE/videos", "YouTube channel @GPUMODE"),
        ("https://github.com/deepseek-ai/DeepGEMM/tree/main/csrc", "GitHub: deepseek-ai/DeepGEMM"),
        ("https://github.com/topics/cuda-kernels", "CUDA kernels"),
        ("https://gist.github.com/karpathy/8627fe009c40f57531cb18360106ce95", "Gist by karpathy"),
        ("https://news.ycombinator.com/item?id=42", "Hacker News discussion"),
        ("https://bsky.app/profile/jay.bsky.social/post/3kz", "Post by @jay.bsky.social on Bluesky"),
        ("https://huggingface.co/papers/2401.01234", "Hugging Face paper 2401.01234"),
        ("https://huggingface.co/datasets/HuggingFaceFW/fineweb", "Hugging Face dataset HuggingFaceFW/fineweb"),
        ("https://huggingface.co/Qwen/Qwen3-8B", "Hugging Face model Qwen/Qwen3-8B"),
        ("https://huggingface.co/blog/mixture-of-experts", "Mixture of experts"),
        ("https://old.reddit.com/r/LocalLLaMA/comments/1abc/", "Post in r/LocalLLaMA"),
        ("https://reddit.com/r/rust/comments/1abc/why_rust_is_slow_to_compile/", "Why rust is slow to compile"),
        ("https://openreview.net/forum?id=rJl-b3RcF7", "OpenReview paper rJl-b3RcF7"),
    ],
)  # fmt: skip
def test_a_link_of_a_well_known_shape_is_titled_by_what_it_holds(url: str, title: str) -> None:
    assert link_title(url) == title


def test_a_week_without_network_reads_well_and_says_what_to_run(tmp_path: Path) -> None:
    (tmp_path / "inbox").mkdir()
    (tmp_path / "inbox" / "til.md").write_text(JOURNAL, encoding="utf-8")
    (tmp_path / "digest.toml").write_text(
        '[digest]\ndata_dir = "data"\n\n[[sources]]\nname = "inbox"\nkind = "file"\n'
        'path = "inbox"\n',
        encoding="utf-8",
    )
    config = load_config(tmp_path / "digest.toml")
    week = parse_week("2025-W46", config.digest.zone)

    result = run(config, "now", period=week, clock=lambda: NOW, waits=Waits(lookup=no_such_name))

    assert result.path is not None
    digest = result.path.read_text(encoding="utf-8")
    golang = "https://fasterthanli.me/articles/i-want-off-mr-golangs-wild-ride"
    assert f"- **[I want off Mr Golang's wild ride]({golang})** · fasterthanli.me\n" in digest
    assert "- **[Pin and suffering](https://fasterthanli.me/articles/pin-and-suffering)**" in digest
    assert (
        "- **[Inside vLLM](https://www.aleksagordic.com/blog/vllm)** · aleksagordic.com" in digest
    )
    assert "[YouTube video](https://www.youtube.com/watch?v=33y9FMIvcWY)" in digest
    assert "· youtube.com" not in digest  # the title names the site already
    assert digest.count("*(page not fetched)*") == 5
    assert "## The week" not in digest  # no note to quote: it would only repeat the body
    assert "*6 items: 1 shown as written, 5 pages not fetched.*" in digest
    assert "*No network at the last run (16 Nov 20:00 UTC): 5 pages of this week not fetched;" in (
        digest
    )
    assert "once online, run digest now --retry to fetch them.*" in digest

    with open_store(config.db_path) as store:
        network = gather_status(store)["network"]
    assert network == {
        "offline_at": NOW.isoformat(),
        "pages_not_fetched": 5,
        "posts_links_not_followed": 0,
        "not_fetched": "5 pages not fetched yet",
        "what_to_do": "`digest now --retry` fetches them once you are online",
    }


def test_a_run_without_network_and_status_count_the_same_pages_and_posts(tmp_path: Path) -> None:
    # the posts' links are pages no run has fetched too: the run and `status` count them
    # alike, and a page not tried for want of a network is left for later, not failed
    (tmp_path / "inbox").mkdir()
    (tmp_path / "inbox" / "til.md").write_text(JOURNAL, encoding="utf-8")
    (tmp_path / "inbox" / "posts.txt").write_text(PASTED_POSTS.read_text(), encoding="utf-8")
    config_path = tmp_path / "digest.toml"
    config_path.write_text(
        '[digest]\ndata_dir = "data"\n\n[[sources]]\nname = "inbox"\nkind = "file"\n'
        'path = "inbox"\n',
        encoding="utf-8",
    )
    config = load_config(config_path)
    week = parse_week("2025-W46", config.digest.zone)

    result = run(config, "now", period=week, clock=lambda: NOW, waits=Waits(lookup=no_such_name))

    [fetch] = [report for report in result.reports if report.stage is Stage.FETCH]
    assert fetch.counts == "0 done, 0 failed, 9 left for later (offline)"
    waiting = "5 pages and the links of 4 posts not fetched yet"
    [line] = fetch.failures
    assert line.endswith(f": {waiting}; `digest now --retry` fetches them once you are online")
    with open_store(config.db_path) as store:
        assert {item.attempts for item in store.all_items()} == {0}
    shown = CliRunner().invoke(cli, ["--config", str(config_path), "status"])
    said = " ".join(shown.output.split())  # as a terminal of any width wraps it
    assert f"No network at the last fetch (2025-11-16 20:00): {waiting};" in said
    as_json = CliRunner().invoke(cli, ["--config", str(config_path), "status", "--json"])
    network = json.loads(as_json.output)["network"]
    assert (network["pages_not_fetched"], network["posts_links_not_followed"]) == (5, 4)
    assert network["not_fetched"] == waiting
