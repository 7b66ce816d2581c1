"""Fuzz targets: what each parser must hold whatever it is given, and inputs shaped like
the real thing (and mutations of it) to give it.

Shared by the hypothesis tests (tests/test_fuzz.py, CI-sized) and bench/fuzz.py (10,000
inputs per target). A target's check raises on a crash or a broken property; the errors a
parser documents for bad input (ImportFormatError, SourceError, ConfigError) are answers,
not crashes.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
from hypothesis import strategies as st

from digest.collect.feed_entries import parse_feed
from digest.collect.filetext import decode
from digest.collect.formats import REGISTRY, ImportResult
from digest.collect.highlights import HIGHLIGHT_FORMATS, read_highlights
from digest.collect.importers import supported_formats
from digest.collect.importers.common import storable
from digest.collect.importers.journal import _MAX_JOINED_LINES as _JOINED_LINES
from digest.collect.mail.roundup import read_body
from digest.collect.transcripts import transcript_text
from digest.compose.digest import compose
from digest.config import parse_config
from digest.deliver.atom import xml_text
from digest.deliver.html import html_fragment
from digest.errors import ConfigError, ExtractError, ImportFormatError, SourceError
from digest.fetch.client import FetchResult
from digest.models import Item, Note, WeekSummary
from digest.periods import parse_week
from digest.urls import WebURL, parse_url
from importing import find_importer
from letters import read_letter
from weekitems import week_item

UTC = ZoneInfo("UTC")
FIXTURES = Path(__file__).parent / "fixtures"
_URL_TOKEN = re.compile(r"https?://\S", re.IGNORECASE)

# -- URLs as people paste them ---------------------------------------------------------

HOSTILE_URLS = [
    "http://[::1]:8080/",
    "http://[::1",
    "https://[fe80::1%25eth0]/x",
    "http://[::ffff:127.0.0.1]/",
    "http://[v1.x]/",
    "http://[::1]junk/",
    "http://example.org:99999/",
    "http://example.org:-1/",
    "http://example.org:8o/",
    "https://☃.net/",
    "https://xn--zz.example/",
    "https://a..b/",
    "http://exa mple.org/",
    "http://example.org/a\tb",
    "http://example.org/\x00",
    "http://user:secret@example.org/",
    "http://@/",
    "http:///path",
    "https://",
    "javascript:alert(1)",
    "file:///etc/passwd",
    "data:text/html,<script>",
    "ftp://example.org/",
    "https://example.org/" + "a" * 20_000,
    "http://" + "[" * 3000,
    "http://999.1.1.1/",
    "HTTPS://Example.ORG:443/Path?utm_source=x&b=1#frag",
    "https://bücher.example/straße",
    "https://example.org/\ud800",
]
_schemes = st.sampled_from(["http", "https", "HTTP", "javascript", "file", "ftp", "", "h"])
_hosts = st.one_of(
    st.sampled_from(
        ["example.org", "[::1]", "[::1", "::1", "[fe80::1%eth0]", "a..b", "☃", "127.0.0.1", ""]
    ),
    st.text(max_size=12),
)
_ports = st.sampled_from(["", ":80", ":0", ":65536", ":99999", ":x", ":", ":08"])
urls = st.one_of(
    st.sampled_from(HOSTILE_URLS),
    st.builds(
        lambda scheme, host, port, rest: f"{scheme}://{host}{port}{rest}",
        _schemes,
        _hosts,
        _ports,
        st.text(max_size=30),
    ),
    st.text(max_size=40),
)


def check_url(text: str) -> None:
    """parse_url never raises; what it takes is http(s), httpx takes, and parses to itself."""
    parsed = parse_url(text)
    if not isinstance(parsed, WebURL):
        return
    again = parse_url(parsed.url)
    assert isinstance(again, WebURL) and again.canonical == parsed.canonical
    canonical = parse_url(parsed.canonical)
    assert isinstance(canonical, WebURL) and canonical.canonical == parsed.canonical
    assert httpx.URL(parsed.canonical).scheme in ("http", "https")


# -- files of saved links ------------------------------------------------------------

_words = st.text(st.characters(exclude_categories=["Cs"]), max_size=25)
_prose = st.text(max_size=60)
_LINE_SHAPES: dict[str, Callable[[str, str], str]] = {
    "journal heading": lambda _url, word: f"## 2026-01-{len(word) % 28 + 1}",
    "journal topic": lambda _url, word: f"### {word}",
    "markdown link": lambda url, word: f"- [{word}]({url})",
    "list url": lambda url, _word: f"- {url}",
    "bare url": lambda url, _word: url,
    "titled url": lambda url, word: f"- {word} - {url}",
    "note": lambda _url, word: f"- {word}",
    "topic": lambda _url, word: word,
    "comment": lambda _url, word: f"# {word}",
    "bookmark": lambda url, word: f'<DT><A HREF="{url}" ADD_DATE="{len(word)}">{word}</A>',
    "csv row": lambda url, word: f'"{word}",{url},1700000000,tag,unread',
    "post line": lambda url, word: f"{word} {url}",
}
_lines = st.builds(
    lambda shape, url, word: _LINE_SHAPES[shape](url, word),
    st.sampled_from(sorted(_LINE_SHAPES)),
    urls,
    _words,
)
_HEADS = [
    "",
    "<!DOCTYPE NETSCAPE-Bookmark-file-1>\n<DL><p>\n",
    "title,url,time_added,tags,status\n",
]
shaped_texts = st.builds(
    lambda head, lines, newline: head + newline.join(lines),
    st.sampled_from(_HEADS),
    st.lists(_lines, max_size=25),
    st.sampled_from(["\n", "\r\n", "\r"]),
)


def _export_documents() -> list[Any]:
    """The JSON export fixtures, parsed (a twitter .js without its `window…=` wrapper)."""
    import json

    documents = []
    for path in sorted((FIXTURES / "exports").glob("*.js*")):
        text = path.read_text(encoding="utf-8")
        documents.append(
            json.loads(text[min(i for i in (text.find("["), text.find("{")) if i >= 0) :])
        )
    return documents


def _with_leaves(document: Any, replacements: list[Any]) -> Any:
    """`document` with its string and number leaves replaced in order by `replacements`
    (cycled); a replacement of ... keeps the leaf. Records keep the keys real exports have."""
    leaves = iter(replacements * 50)

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: walk(inner) for key, inner in value.items()}
        if isinstance(value, list):
            return [walk(inner) for inner in value]
        new = next(leaves, ...)
        return value if new is ... else new

    return walk(document)


_values = st.one_of(urls, _words, st.integers(), st.none(), st.booleans(), st.just(...))
_records = st.dictionaries(
    st.sampled_from(["href", "url", "uri", "html_url", "full_name", "title", "description",
                     "time", "created_at", "starred_at", "tags", "content", "acct", "repo",
                     "account", "id"]),
    st.one_of(
        urls,
        _words,
        st.integers(),
        st.none(),
        st.lists(_words, max_size=3),
        st.dictionaries(st.sampled_from(["html_url", "acct", "url"]), urls, max_size=2),
    ),
    max_size=8,
)  # fmt: skip
export_like = st.builds(
    lambda document, replacements: _json(_with_leaves(document, replacements)),
    st.sampled_from(_export_documents()),
    st.lists(_values, min_size=1, max_size=12),
)
json_texts = st.one_of(
    export_like,  # each export format's own records, their values hostile
    st.lists(_records, max_size=8).map(lambda records: _json(records)),
    st.lists(st.lists(_records, max_size=4), max_size=3).map(
        lambda pages: "".join(_json(page) for page in pages)  # gh api --paginate
    ),
)


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=bool(len(str(value)) % 2))


def fixture_texts() -> list[str]:
    """The test fixtures of every import format, to be mutated."""
    folders = [FIXTURES / "imports", FIXTURES / "exports", FIXTURES / "posts"]
    return [
        path.read_text(encoding="utf-8") for folder in folders for path in sorted(folder.iterdir())
    ]


@dataclass(frozen=True)
class Mutation:
    at: float  # where, as a fraction of the text
    kind: str
    text: str

    def apply(self, source: str) -> str:
        cut = int(self.at * len(source))
        if self.kind == "insert":
            return source[:cut] + self.text + source[cut:]
        if self.kind == "delete":
            return source[:cut] + source[cut + len(self.text) + 1 :]
        if self.kind == "truncate":
            return source[:cut]
        return source[:cut] + source[cut:].replace("\n", "\n" + self.text, 1)  # a new line


_mutations = st.builds(
    Mutation,
    st.floats(0, 1),
    st.sampled_from(["insert", "delete", "truncate", "line"]),
    st.one_of(st.sampled_from(HOSTILE_URLS), _words, st.sampled_from(['"', "<", "]", "{", "\x00"])),
)


def mutated(sources: list[str]) -> st.SearchStrategy[str]:
    def apply_all(source: str, mutations: list[Mutation]) -> str:
        for mutation in mutations:
            source = mutation.apply(source)
        return source

    return st.builds(apply_all, st.sampled_from(sources), st.lists(_mutations, max_size=4))


def import_inputs(sources: list[str]) -> st.SearchStrategy[bytes]:
    texts = st.one_of(shaped_texts, json_texts, mutated(sources), st.text(max_size=200))
    encoded = st.builds(
        lambda text, codec: text.encode(codec, errors="replace"),
        texts,
        st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "latin-1", "cp1252"]),
    )
    return st.one_of(encoded, st.binary(max_size=300))


def check_import(data: bytes) -> None:
    """Decoded, recognised and parsed, a file gives valid items or a documented error."""
    try:
        text = decode(data, Path("fuzz.txt"))
        result = find_importer(text).parse(text, zone=UTC)
    except ImportFormatError:
        return
    _check_items(result)


def check_import_lines(text: str) -> None:
    """In the line formats, every line holding a URL is imported, reported or skipped."""
    supported_formats()
    for name in ("urls", "list", "journal"):
        result = REGISTRY[name].parse(text, zone=UTC)
        _check_items(result)
        accounted = {item.line for item in result.items}
        accounted |= {entry.line for entry in [*result.rejected, *result.skipped]}
        # a journal joins a link whose title spans lines: it is counted on its first line
        joined = _JOINED_LINES if name == "journal" else 0
        for number, line in enumerate(
            text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), 1
        ):
            if _URL_TOKEN.search(line) and not line.lstrip().startswith("#"):
                lines = range(number - joined, number + 1)
                assert accounted.intersection(lines), f"{name}: line {number} lost: {line[:80]!r}"


def _check_items(result: ImportResult) -> None:
    for item in result.items:
        for url in ([item.url] if item.url else []) + list(item.links):
            assert isinstance(parse_url(url), WebURL), f"invalid URL kept: {url[:80]!r}"
        kept = storable(item)
        for field in (kept.title, kept.context, kept.topic, kept.url):
            if field:
                field.encode("utf-8")  # what the store writes


# -- feeds -------------------------------------------------------------------------------

_ENTITY_TRICKS = [
    '<!DOCTYPE rss [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>',
    '<!DOCTYPE rss SYSTEM "file:///etc/passwd">',
    '<!DOCTYPE rss [<!ENTITY x SYSTEM "http://127.0.0.1/">]>',
    "<!DOCTYPE rss [",
    "",
]
_feed_text = st.text(max_size=40).map(lambda text: text.replace("]]>", ""))


def _rss(doctype: str, encoding: str, items: list[tuple[str, str, str]]) -> str:
    body = "".join(
        f"<item><title>{title}</title><link>{link}</link><guid>{guid}</guid>"
        f'<enclosure url="{link}"/><description><![CDATA[{title}]]></description></item>'
        for title, link, guid in items
    )
    return (
        f'<?xml version="1.0" encoding="{encoding}"?>{doctype}'
        f'<rss version="2.0"><channel><title>t</title>{body}</channel></rss>'
    )


def _atom(items: list[tuple[str, str, str]]) -> str:
    body = "".join(
        f'<entry><title type="html">{title}</title><link href="{link}"/><id>{guid}</id></entry>'
        for title, link, guid in items
    )
    return f'<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>{body}</feed>'


_feed_items = st.lists(st.tuples(_feed_text, urls, _feed_text), max_size=6)
feed_inputs = st.one_of(
    st.builds(
        lambda doctype, declared, items, actual: _rss(doctype, declared, items).encode(
            actual, errors="replace"
        ),
        st.sampled_from(_ENTITY_TRICKS),
        st.sampled_from(["utf-8", "ISO-8859-1", "utf-16", "bogus", "windows-1252"]),
        _feed_items,
        st.sampled_from(["utf-8", "latin-1", "utf-16"]),
    ),
    st.builds(lambda items: _atom(items).encode(errors="replace"), _feed_items),
    st.builds(
        lambda items: _json({"version": "https://jsonfeed.org/version/1.1", "items": items}).encode(
            errors="surrogatepass"
        ),
        st.lists(
            st.dictionaries(
                st.sampled_from(["id", "url", "title", "attachments"]),
                st.one_of(urls, st.integers(), st.none()),
                max_size=4,
            ),
            max_size=5,
        ),
    ),
    st.binary(max_size=300),
)


def check_feed(body: bytes) -> None:
    """A feed body gives entries with valid links, or SourceError naming the feed."""
    result = FetchResult(
        "https://feed.example/rss",
        "https://feed.example/rss",
        200,
        {"content-type": "application/rss+xml"},
        body,
        None,
    )
    try:
        entries = parse_feed(result)
    except SourceError:
        return
    for item in entries.items:
        assert item.url is not None and isinstance(parse_url(item.url), WebURL)


# -- the config --------------------------------------------------------------------------

_TOML_KEYS = [
    "[digest]",
    "data_dir",
    "timezone",
    "week_start",
    "[[sources]]",
    "name",
    "kind",
    "url",
    "path",
    "format",
    "[fetch]",
    "concurrency",
    "timeout_s",
    "allow_private_addresses",
    "[llm]",
    "provider",
    "base_url",
    "budget_usd",
    "[email]",
    "port",
    "to",
    "from",
    "[output]",
    "public_url",
    "notes_dir",
    "[schedule]",
    "collect",
    "digest",
    "[bogus]",
]
_toml_values = st.one_of(
    st.sampled_from(
        [
            '"feed"',
            '"file"',
            "true",
            "-1",
            "1e999",
            '""',
            "[]",
            '"Europe/Berlin"',
            '"../../etc"',
            '"0 * * * *"',
            '"*/0 * * * *"',
        ]
    ),
    urls.map(lambda url: '"' + url.replace("\\", "\\\\").replace('"', '\\"') + '"'),
    st.integers().map(str),
    st.text(max_size=15),
)
config_texts = st.lists(
    st.builds(
        lambda key, value: key if key.startswith("[") else f"{key} = {value}",
        st.sampled_from(_TOML_KEYS),
        _toml_values,
    ),
    max_size=15,
).map("\n".join)


def check_config(text: str) -> None:
    """Any config text is a Config or a ConfigError naming the problem."""
    try:
        parse_config(text, Path("/fuzz/digest.toml"))
    except ConfigError:
        return


# -- the digest, in markdown and HTML ---------------------------------------------------------

PERIOD = parse_week("2026-W47", UTC)
_ALLOWED_TAGS = {
    "h1",
    "h2",
    "h3",
    "p",
    "ul",
    "ol",
    "li",
    "a",
    "em",
    "strong",
    "code",
    "br",
    "blockquote",
    "hr",
    "pre",
    "small",
    "sup",
    "span",
    "div",
    "del",
    "s",
}


def _item(number: int, url: str | None, title: str, summary: str, points: list[str]) -> Item:
    checked = parse_url(url or "")
    return week_item(
        number,
        PERIOD.start,
        key=f"k{number}",
        url=checked.url if isinstance(checked, WebURL) else None,
        title=title or None,
        topic=("Rust", "Databases", None)[number % 3],
        context=title,
        note=Note(summary, tuple(points), ()),
    )


_hostile_text = st.one_of(
    st.text(max_size=60),
    st.sampled_from(
        [
            "<script>alert(1)</script>",
            "# heading",
            "[x](javascript:alert(1))",
            "<img src=x onerror=alert(1)>",
            "\x00\x07\x1b[31m",
            "---",
            "```",
            "]]>",
            "&#0;",
            "<!--",
            "\ufffe",
            "line\nbreak\r\n# injected",
        ]
    ),
)
digest_items = st.lists(
    st.builds(
        _item,
        st.just(0),
        st.one_of(urls, st.none()),
        _hostile_text,
        _hostile_text,
        st.lists(_hostile_text, max_size=3),
    ),
    max_size=6,
).map(
    lambda items: [
        Item(**{**item.__dict__, "id": n, "key": f"k{n}"}) for n, item in enumerate(items, 1)
    ]
)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, dict(attrs)))


def check_digest(items: list[Item]) -> None:
    """Whatever titles and notes hold, the digest has its own headings only, and its HTML
    only safe tags, http(s) links and no handlers; as text, XML can carry it."""
    markdown = compose(PERIOD, items, WeekSummary(()), zone=UTC)
    plain = [Item(**{**item.__dict__, "title": "t", "note": Note("n", (), ())}) for item in items]
    headings = [line for line in markdown.split("\n") if line.startswith("#")]
    expected = [
        line
        for line in compose(PERIOD, plain, WeekSummary(()), zone=UTC).split("\n")
        if line.startswith("#")
    ]
    assert headings == expected, "a title or note made a heading"
    assert not re.search(r"[\x00-\x08\x0b\x0e-\x1f\x7f]", markdown), "a control character"
    html = html_fragment(markdown, [item.url for item in items if item.url])
    parser = _Tags()
    parser.feed(html)
    for tag, attrs in parser.found:
        assert tag in _ALLOWED_TAGS, f"tag {tag!r} in the digest HTML"
        assert not any(name.startswith("on") for name in attrs), f"handler on {tag!r}"
        href = attrs.get("href")
        assert href is None or href.lower().startswith(("http://", "https://")), f"link {href!r}"
    element = ET.Element("content")
    element.text = xml_text(html)
    ET.fromstring(ET.tostring(element))


# -- the registry ------------------------------------------------------------------------------


_LETTER_PARTS = [
    b"From: =?utf-8?q?A=C3=A9?= <a@b.example>\r\n",
    b"Subject: =?bogus?q?x?=\r\n",
    b"Message-ID: <m@x>\r\n",
    b"Content-Type: text/html; charset=klingon\r\n",
    b"Content-Type: multipart/alternative; boundary=b\r\n",
    b"\r\n--b\r\nContent-Type: text/html\r\n\r\n",
    b"<p><a href='https://t.example/r?url=https%3A%2F%2Fs.example%2F'>A title of a story</a> blurb",
    b"<h2>Sponsor</h2>",
    b"<div style='display:none'>",
    b"Unsubscribe",
    b"\xff\xfe\x00",
    b"\r\n",
]
letters = st.lists(st.sampled_from(_LETTER_PARTS) | st.binary(max_size=40), max_size=30).map(
    b"".join
)
_CLIPPING_PARTS = [
    "Book (Author)\n",
    "- Your Highlight on page 1 | Location 10-12 | Added on Monday, 2 November 2026 21:03:15\n",
    "- Your Note on Location 12 | Added on nonsense\n",
    "- Your Bookmark on page 3\n",
    "==========\n",
    "Highlight,Book Title,Book Author,Note,Highlighted at\n",
    '"a ""quoted"" passage",T,A,n,2026-13-45\n',
    '{"documents": [{"title": "T", "entries": [{"sort": "highlight", "page": 3, "time": 1e30,',
    ' "text": "koreader passage", "note": 5}]}]}',
    "# Book\n##### Author\n## Chapter\n### Page 3 @ 31 February 2026 25:00:00 PM\n**styled*\n",
    "\n---\n",
    '{"highlights": [{"bookmarkId": "b", "text": "kept", "startOffset": null, "createdAt": 7}],',
    ' "bookmarks": [{"id": "b", "content": {"type": "link", "url": "https://k.example/"}}]}',
    "\n",
]
highlight_texts = st.lists(
    st.sampled_from(_CLIPPING_PARTS) | st.text(max_size=30), max_size=30
).map("".join)


_TRANSCRIPT_PARTS = [
    b"WEBVTT\n\n",
    b"1\n",
    b"00:00:01,500 --> 00:00:04,000\n",
    b"99:99.9 --> x align:start\n",
    b"<v Alice>",
    b"<i>",
    b"Bob: words\n",
    b"NOTE a note\n",
    b"\n\n",
    b'{"segments": [{"speaker": 3, "startTime": "x", "body": "said"}, null]}',
    b"\xef\xbb\xbf",
    b"\r\n",
]
transcripts = st.lists(
    st.sampled_from(_TRANSCRIPT_PARTS) | st.binary(max_size=30), max_size=30
).map(b"".join)


def check_letter(raw: bytes) -> None:
    """A letter always reads: its stories have a web URL and a title."""
    letter = read_letter(raw)
    body = read_body(letter.html, letter.plain)
    assert letter.key and letter.sender and letter.subject
    for story in body.stories:
        assert story.url.startswith(("https://", "http://")) and story.title


def check_highlights(text: str) -> None:
    """Highlights always read: each has text and an item; what is not one is named."""
    for format in HIGHLIGHT_FORMATS:
        found = read_highlights(text, format, ZoneInfo("UTC"))
        assert all(h.text.strip() and (h.item.key or h.item.url) for h in found.found)
        assert all(r.reason for r in found.rejected)


def check_transcript(body: bytes) -> None:
    """A transcript file always reads as text; a WebVTT file's cues keep no markup."""
    try:
        text = transcript_text(body, "https://talk.test/t.vtt", "text/vtt; charset=utf-8")
    except ExtractError:
        return  # the documented error: HTML that is not readable
    if body.startswith(b"WEBVTT"):
        assert not re.search(r"<[^>]*>", text)


def targets() -> dict[str, tuple[st.SearchStrategy[Any], Callable[[Any], None]]]:
    """Each target's inputs and its check, by name."""
    return {
        "url parser": (urls, check_url),
        "importers": (import_inputs(fixture_texts()), check_import),
        "line accounting": (shaped_texts, check_import_lines),
        "feed collector": (feed_inputs, check_feed),
        "config loader": (config_texts, check_config),
        "digest renderers": (digest_items, check_digest),
        "letters": (letters, check_letter),
        "highlights": (highlight_texts, check_highlights),
        "podcast transcripts": (transcripts, check_transcript),
    }
