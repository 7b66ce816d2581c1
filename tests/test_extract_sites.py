"""Pages whose text is not an article: arXiv abstracts, GitHub READMEs, video pages (pure)."""

from __future__ import annotations

from pathlib import Path

from digest.extract import extract

PAGES = Path(__file__).parent / "fixtures" / "pages"
ABSTRACT = (
    "We measure the sound of forty keyboards in three open-plan offices and find that dampened"
    " switches cut perceived noise by half."
)


def page(name: str) -> bytes:
    return (PAGES / name).read_bytes()


def test_arxiv_abstract_page_gives_title_authors_and_abstract() -> None:
    result = extract(
        page("arxiv-abs.html"), url="https://arxiv.org/abs/2411.01234", content_type="text/html"
    )

    assert result.extractor == "arxiv"
    assert result.title == "Quiet Switches: Measuring Keyboard Noise in Shared Offices"
    assert result.author == "Lovelace, Ada; Babbage, Charles"
    assert result.published == "2024-11-05"
    assert result.text.splitlines()[0] == result.title
    assert "Authors: Lovelace, Ada; Babbage, Charles" in result.text
    assert ABSTRACT in result.text
    assert "View PDF" not in result.text and "Search" not in result.text
    assert result.quality is None


def test_arxiv_abstract_without_meta_tags_comes_from_the_blockquote() -> None:
    html = page("arxiv-abs.html").decode()
    bare = "\n".join(line for line in html.splitlines() if "citation_" not in line)

    result = extract(
        bare.encode(), url="https://arxiv.org/abs/2411.01234v2", content_type="text/html"
    )

    assert result.extractor == "arxiv"
    assert result.title == "Quiet Switches: Measuring Keyboard Noise in Shared Offices"
    assert ABSTRACT in result.text
    assert "Abstract:" not in result.text


def test_github_repository_page_gives_its_readme() -> None:
    result = extract(
        page("github-repo.html"),
        url="https://github.com/deskworks/hushboard",
        content_type="text/html; charset=utf-8",
    )

    assert result.extractor == "github-readme"
    assert result.title == "deskworks/hushboard"
    lines = result.text.splitlines()
    assert lines[0] == "Measure how loud your keyboard is."
    assert "hushboard listens to your typing through the laptop microphone" in result.text
    assert "pip install hushboard" in lines
    assert "Run hushboard calibrate once in a quiet room." in lines
    for chrome in ("Pricing", "3 Branches", "Add the A-weighting filter", "214 stars", "Terms"):
        assert chrome not in result.text
    assert "creating an account on GitHub" not in result.text


def test_github_page_below_a_repository_is_read_as_an_article() -> None:
    result = extract(
        page("github-repo.html"),
        url="https://github.com/deskworks/hushboard/issues/7",
        content_type="text/html",
    )

    assert result.extractor != "github-readme"


def test_youtube_page_gives_title_and_full_description_from_player_data() -> None:
    result = extract(
        page("youtube-watch.html"),
        url="https://www.youtube.com/watch?v=dQw4w9WgXcQ",
        content_type="text/html",
    )

    assert result.extractor == "video-metadata"
    assert result.title == "Five quiet keyboards, measured"
    assert result.author == "Desk Notes"
    assert result.published == "2024-03-05"
    assert result.text.startswith("Five quiet keyboards, measured\n\nWe put five keyboards")
    assert '1:12 The meter "setup"' in result.text  # JSON escapes decoded
    assert "5:40 Results: the café test" in result.text
    assert "The quietest board averaged 38 dB." in result.text  # past og:description's cut


def test_video_page_without_player_data_falls_back_to_og_description() -> None:
    html = page("youtube-watch.html").decode()
    without_player = html.split("<script>")[0] + "</body></html>"

    result = extract(
        without_player.encode(), url="https://youtu.be/dQw4w9WgXcQ", content_type="text/html"
    )

    assert result.extractor == "video-metadata"
    assert "We put five keyboards next to a decibel meter for a month. Chapters:" in result.text
