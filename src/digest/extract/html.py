"""HTML pages -> article text: trafilatura, checked against readability, then cleaned.

1. A site reader when the URL or page asks for one (arXiv, GitHub, video pages).
2. trafilatura with favor_precision (scored best in bench/extraction_quality.py), in its
   fast mode: its own second opinion (readability and justext on every page) costs a
   third of the extraction, and steps 3 to 5 ask another extractor only where it can help.
3. When that text is short beside the page's runs of plain text, precision may have
   pruned the article itself (it sometimes keeps nothing, or a caption): trafilatura's
   balanced mode reads the page again, and its text wins when it is much longer.
4. When the text holds well under the page's prose (an article split over sibling
   blocks trips trafilatura up), readability-lxml reads the page too; its text wins
   when it is much longer and holds trafilatura's.
5. Thin text falls back to readability, trafilatura's baseline extractor or the meta
   description, whichever is longest.
Reader comment sections are taken out of the page first (cleanup.drop_comment_sections).
6. The headline repeated at the top and whole boilerplate lines are dropped.
7. `quality.assess` marks walls and thin pages.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from functools import cached_property

import trafilatura
from lxml import etree
from lxml.etree import ParserError
from lxml.html import HtmlElement, fragment_fromstring
from readability import Document as ReadabilityDocument
from trafilatura.settings import Document

from digest.errors import ExtractError
from digest.extract import quality
from digest.extract.cleanup import (
    BOILERPLATE_RULES,
    block_text,
    clean,
    drop_comment_sections,
    share_contained,
    strip_site_furniture,
)
from digest.extract.metadata import PageMetadata, page_language, page_metadata
from digest.extract.sites import site_reader
from digest.extract.sniff import decode_html
from digest.models import Extracted

PROSE_PARAGRAPH_CHARS = 80  # a <p> this long with few links is article prose
MAX_LINK_SHARE = 0.3
# A run of plain text at least 40 characters long, outside links, scripts and controls.
_TEXT_RUNS = etree.XPath(
    "//text()[string-length(normalize-space(.)) >= 40][not(parent::script or parent::style"
    " or parent::noscript or parent::template or parent::a or parent::svg or parent::button"
    " or parent::select or parent::option or parent::textarea)]"
)


@dataclass(frozen=True)
class ChoiceSettings:
    """The tunable part of choosing a page's text; bench/extraction_quality.py cross-validates it.

    Defaults are what the benchmark's development pages select (see docs/benchmarks.md),
    but the recall check's pair: set on trafilatura's evaluation pages, a second page set,
    since the development pages hold a single page it changes.
    """

    favor_precision: bool = True  # trafilatura's mode for the first reading
    recall_below_share: float = 0.3  # text under this share of the page's text runs...
    recall_longer: float = 2.0  # ...gives way to balanced mode's text when that is this much longer
    rescue_below_share: float = 0.5  # trafilatura kept less of the prose: ask readability
    rescue_longer: float = 1.2  # readability's text must be this much longer...
    rescue_covers: float = 0.8  # ...and hold this share of trafilatura's
    thin_chars: int = 200  # shorter text is thin: try the fallbacks
    boilerplate_rules: frozenset[str] = frozenset(BOILERPLATE_RULES)
    drop_title: bool = True


class Candidates:
    """The texts a page offers, each read the first time it is asked for."""

    def __init__(self, tree: HtmlElement, url: str) -> None:
        self.tree, self.url = tree, url
        self._trafilatura: dict[bool, str] = {}

    def trafilatura(self, favor_precision: bool) -> str:
        if favor_precision not in self._trafilatura:
            document = _run_trafilatura(self.tree, self.url, favor_precision)
            self._trafilatura[favor_precision] = clean(document.text) if document else ""
        return self._trafilatura[favor_precision]

    @cached_property
    def readability(self) -> str:
        return _readability_text(self.tree)

    @cached_property
    def baseline(self) -> str:
        return _baseline_text(self.tree)

    @cached_property
    def meta_description(self) -> str:
        return _meta_description(self.tree)

    @cached_property
    def prose_chars(self) -> int:
        return _prose_chars(self.tree)

    @cached_property
    def run_chars(self) -> int:
        return _run_chars(self.tree)

    @cached_property
    def metadata(self) -> PageMetadata:
        return page_metadata(self.tree, self.url)


def extract_html(content: bytes, url: str, http_charset: str | None) -> Extracted:
    html = decode_html(content, http_charset)
    tree = trafilatura.load_html(html)
    if tree is None:
        raise ExtractError("not parseable as HTML", url=url)
    drop_comment_sections(tree)
    reader = site_reader(url)
    found = reader(tree, url, html) if reader is not None else None
    if found is None:
        found = _article(Candidates(tree, url))
    return _with_quality(found, tree, html, url)


def choose_text(page: Candidates, settings: ChoiceSettings) -> tuple[str, str]:
    """The page's article text, cleaned, and the name of the extractor it came from."""
    text, extractor = _trafilatura_text(page, settings)
    if len(text) < settings.rescue_below_share * page.prose_chars:
        text, extractor = _readability_rescue(page, text, extractor, settings)
    if len(text) < settings.thin_chars:
        text, extractor = _fallback_text(page, text, extractor)
    title = page.metadata.title if settings.drop_title else None
    return strip_site_furniture(text, title, settings.boilerplate_rules), extractor


def _article(page: Candidates) -> Extracted:
    text, extractor = choose_text(page, ChoiceSettings())
    metadata = page.metadata
    return Extracted(
        text=text,
        title=metadata.title,
        author=metadata.author,
        published=metadata.published,
        language=page_language(page.tree),
        extractor=extractor,
    )


def _with_quality(found: Extracted, tree: HtmlElement, html: str, url: str) -> Extracted:
    verdict = quality.assess(tree, html, found.text, url=url)
    return replace(found, quality=verdict) if verdict else found


def _trafilatura_text(page: Candidates, settings: ChoiceSettings) -> tuple[str, str]:
    """trafilatura's text in the chosen mode; balanced mode's when precision pruned the article."""
    text = page.trafilatura(settings.favor_precision)
    if settings.favor_precision and len(text) < settings.recall_below_share * page.run_chars:
        balanced = page.trafilatura(False)
        if len(balanced) >= settings.recall_longer * len(text):
            return balanced, "trafilatura-balanced"
    return text, "trafilatura"


def _run_trafilatura(tree: HtmlElement, url: str, favor_precision: bool) -> Document | None:
    """Main text, comments left out (metadata.py reads the metadata, for less).

    Deduplication stays off since its cache is global state.
    """
    document = trafilatura.bare_extraction(
        tree,  # copied by trafilatura, so the tree stays intact for the fallbacks
        url=url,
        fast=True,
        favor_precision=favor_precision,
        include_comments=False,
        include_tables=True,
        deduplicate=False,
    )
    return document if isinstance(document, Document) else None


def _prose_chars(tree: HtmlElement) -> int:
    """Characters in the page's paragraphs that read as prose (long, mostly not links)."""
    total = 0
    for paragraph in tree.iter("p"):
        text = paragraph.text_content()
        if len(text) < PROSE_PARAGRAPH_CHARS:
            continue
        linked = sum(len(link.text_content()) for link in paragraph.iter("a"))
        if linked < MAX_LINK_SHARE * len(text):
            total += len(" ".join(text.split()))
    return total


def _run_chars(tree: HtmlElement) -> int:
    """Characters in the page's long runs of plain text: what a reader sees as its text.

    Unlike prose paragraphs, this counts text set in `<div>`s and `<br>`-separated runs too.
    """
    return sum(len(" ".join(str(run).split())) for run in _TEXT_RUNS(tree))


def _readability_rescue(
    page: Candidates, text: str, extractor: str, settings: ChoiceSettings
) -> tuple[str, str]:
    """readability's text when it is much longer than `text` and contains it."""
    rescued = page.readability
    if len(rescued) >= settings.rescue_longer * len(text) and (
        not text or share_contained(text, rescued) >= settings.rescue_covers
    ):
        return rescued, "readability"
    return text, extractor


def _readability_text(tree: HtmlElement) -> str:
    summary = ReadabilityDocument(copy.deepcopy(tree)).summary(html_partial=True)
    try:
        return block_text(fragment_fromstring(summary)) if summary.strip() else ""
    except ParserError:
        return ""


def _fallback_text(page: Candidates, text: str, extractor: str) -> tuple[str, str]:
    """The longest of the thin text, readability's, trafilatura's baseline extractor's and
    the meta description."""
    candidates = [
        (text, extractor),
        (page.readability, "readability"),
        (page.baseline, "trafilatura-baseline"),
        (page.meta_description, "meta-description"),
    ]
    return max(candidates, key=lambda candidate: len(candidate[0]))


def _baseline_text(tree: HtmlElement) -> str:
    """Text from JSON-LD, `<article>` or paragraphs; "" when baseline fell back to the whole page.

    That last resort is navigation and footer as much as content, so it is not an article.
    """
    _, text, _ = trafilatura.baseline(tree)  # both copy the tree they are given
    whole_page = trafilatura.html2txt(tree)
    if "".join(text.split()) == "".join(whole_page.split()):
        return ""
    return clean(text)


def _meta_description(tree: HtmlElement) -> str:
    for query in (
        "//meta[@property='og:description']/@content",
        "//meta[translate(@name, 'DESCRIPTION', 'description')='description']/@content",
        "//meta[@name='twitter:description']/@content",
    ):
        values = [clean(str(value)) for value in tree.xpath(query)]
        if best := max(values, key=len, default=""):
            return best
    return ""
