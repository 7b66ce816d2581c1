"""Fetched bytes -> article text and metadata (pure: no network, no state).

`extract` picks a reader by Content-Type and by sniffing the first bytes:

    HTML / XHTML     trafilatura; thin results fall back to its baseline
                     extractor or to the page's meta description
    PDF              pypdf, the text of the first MAX_PDF_PAGES pages
    text / markdown  as is
    anything binary  ExtractError "skipped: ..."

HTML is decoded here, not by trafilatura (which guesses from the bytes and
ignores declarations): byte-order mark, then the HTTP charset, then the page's
`<meta>` or XML declaration, then UTF-8, then windows-1252. A declared charset
the bytes do not fit is passed over.
"""

from __future__ import annotations

import codecs
import re
from io import BytesIO

import trafilatura
from lxml.html import HtmlElement
from pypdf import PdfReader
from pypdf.errors import PyPdfError
from trafilatura.settings import Document

from digest.errors import ExtractError
from digest.models import Extracted

MIN_ARTICLE_CHARS = 200  # below this trafilatura's text counts as thin; try the fallbacks
MIN_TEXT_CHARS = 40  # below this whatever we found is no text at all
MAX_PDF_PAGES = 50
MAX_TITLE_CHARS = 200
SNIFF_BYTES = 1024  # how much of the start decides the kind of content
CHARSET_SCAN_BYTES = 4096  # where a `<meta charset>` must appear


_BINARY_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"II*\x00", "image/tiff"),
    (b"MM\x00*", "image/tiff"),
    (b"\x00\x00\x01\x00", "image/x-icon"),
    (b"PK\x03\x04", "application/zip"),
    (b"PK\x05\x06", "application/zip"),
    (b"\x1f\x8b", "application/gzip"),
    (b"BZh", "application/x-bzip2"),
    (b"\xfd7zXZ\x00", "application/x-xz"),
    (b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (b"Rar!\x1a\x07", "application/vnd.rar"),
    (b"\x7fELF", "application/x-executable"),
    (b"\x00asm", "application/wasm"),
    (b"wOFF", "font/woff"),
    (b"wOF2", "font/woff2"),
    (b"OggS", "audio/ogg"),
    (b"fLaC", "audio/flac"),
    (b"ID3", "audio/mpeg"),
    (b"\x1aE\xdf\xa3", "video/webm"),
    (b"SQLite format 3\x00", "application/vnd.sqlite3"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "application/x-ole-storage"),
)
_BINARY_TYPE_PREFIXES = ("image/", "audio/", "video/", "font/", "model/")
# fmt: off
_BINARY_TYPES = frozenset({
    "application/octet-stream", "application/zip", "application/gzip", "application/x-gzip",
    "application/x-tar", "application/x-bzip2", "application/x-7z-compressed",
    "application/vnd.rar", "application/x-rar-compressed", "application/java-archive",
    "application/wasm", "application/x-executable", "application/x-msdownload",
    "application/x-shockwave-flash", "application/msword", "application/vnd.ms-excel",
    "application/vnd.ms-powerpoint", "application/vnd.sqlite3",
})
# fmt: on
_BINARY_TYPE_MARKERS = ("vnd.openxmlformats", "vnd.oasis.opendocument")
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_PLAIN_TYPES = frozenset({"text/plain", "text/markdown", "text/x-markdown"})
_HTML_START = re.compile(
    rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)\b", re.I | re.S
)
_XHTML_START = re.compile(rb"^\s*<\?xml[^>]*>\s*(?:<!doctype\s+html|<html)\b", re.I)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.I)
_XML_ENCODING = re.compile(rb"""^<\?xml[^>]+encoding\s*=\s*["']([\w.:-]+)""", re.I)
_LANGUAGE_TAG = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*")
_CONTROL_BYTES = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# What browsers decode a few labels as (WHATWG Encoding): supersets of the declared charset.
_WEB_ENCODINGS = {
    "iso8859-1": "cp1252",
    "ascii": "cp1252",
    "iso8859-9": "cp1254",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "euc_kr": "cp949",
}
# pypdf meets malformed files with a zoo of exceptions; all mean "unreadable PDF"
_PDF_ERRORS = (
    PyPdfError,
    ValueError,
    KeyError,
    TypeError,
    IndexError,
    AttributeError,
    RecursionError,
)


def extract(content: bytes, *, url: str, content_type: str | None) -> Extracted:
    """Return the readable text and metadata of one fetched resource.

    Raises ExtractError naming `url` when the content is binary, unsupported,
    unreadable, or holds fewer than MIN_TEXT_CHARS characters of text.
    """
    media_type, charset = parse_content_type(content_type)
    head = content[:SNIFF_BYTES]
    if _looks_like_pdf(head) or (media_type == "application/pdf" and b"%PDF-" in head):
        return _extract_pdf(content, url)
    if is_probably_binary(content_type, head):
        label = _sniff_binary(head) or media_type or "unknown type"
        raise ExtractError(f"skipped: {url!r}: binary content ({label})")
    if media_type in _HTML_TYPES or _looks_like_html(head):
        return _extract_html(content, url, charset)
    if media_type == "application/pdf":
        raise ExtractError(f"extract failed: {url!r}: declared PDF but not a PDF file")
    if media_type is None or media_type in _PLAIN_TYPES:
        return _extract_plain(content, url, charset, markdown="markdown" in (media_type or ""))
    raise ExtractError(f"skipped: {url!r}: unsupported content ({media_type})")


def is_probably_binary(content_type: str | None, head: bytes) -> bool:
    """Whether a response starting with `head` is not worth reading on (image, archive, ...).

    Known file signatures win over the Content-Type; PDF and HTML are never binary.
    """
    if _sniff_binary(head):
        return True
    if _looks_like_pdf(head) or _looks_like_html(head):
        return False
    media_type, _ = parse_content_type(content_type)
    if media_type is None or media_type == "application/octet-stream":
        return _has_control_bytes(head)
    return media_type.startswith(_BINARY_TYPE_PREFIXES) or _is_binary_type(media_type)


def parse_content_type(content_type: str | None) -> tuple[str | None, str | None]:
    """`'text/html; charset="UTF-8"'` -> `('text/html', 'UTF-8')`; missing parts are None."""
    if not content_type:
        return None, None
    media_type, *params = content_type.split(";")
    charset = None
    for param in params:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("\"'") or None
    return media_type.strip().lower() or None, charset


def decode_html(content: bytes, http_charset: str | None) -> str:
    """Decode HTML: BOM, HTTP charset, `<meta>`/XML declaration, UTF-8, then windows-1252."""
    return _decode(content, (http_charset, _declared_charset(content[:CHARSET_SCAN_BYTES])))


def _decode(content: bytes, declared: tuple[str | None, ...]) -> str:
    """The first of BOM, `declared` charsets and UTF-8 the bytes fit; else windows-1252."""
    for bom, encoding in _BOMS:
        if content.startswith(bom):
            return content.decode(encoding, errors="replace")
    for candidate in (*declared, "utf-8"):
        text = _try_decode(content, candidate)
        if text is not None:
            return text
    return content.decode("cp1252", errors="replace")


def _try_decode(content: bytes, charset: str | None) -> str | None:
    encoding = _python_encoding(charset)
    if encoding is None:
        return None
    try:
        return content.decode(encoding)
    except UnicodeDecodeError:
        return None


def _python_encoding(charset: str | None) -> str | None:
    """The codec for a declared charset, as browsers read it; None if unknown."""
    if not charset:
        return None
    try:
        name = codecs.lookup(charset.strip()).name
    except LookupError:
        return None
    if name in _WEB_ENCODINGS:
        return _WEB_ENCODINGS[name]
    if name.startswith("utf-16") or name.startswith("utf-32"):
        return "utf-8"  # a byte-oriented page cannot really be UTF-16 without a BOM
    return name


def _declared_charset(head: bytes) -> str | None:
    match = _XML_ENCODING.search(head.lstrip()) or _META_CHARSET.search(head)
    return match.group(1).decode("ascii") if match else None


def _extract_html(content: bytes, url: str, http_charset: str | None) -> Extracted:
    tree = trafilatura.load_html(decode_html(content, http_charset))
    if tree is None:
        raise ExtractError(f"extract failed: {url!r}: not parseable as HTML")
    document = _run_trafilatura(tree, url) or Document()
    main_text = _clean(document.text)
    text, extractor = main_text, "trafilatura"
    if len(main_text) < MIN_ARTICLE_CHARS:
        text, extractor = _fallback_text(tree, main_text)
    if len(text) < MIN_TEXT_CHARS:
        raise ExtractError(f"extract failed: {url!r}: no article text found (page too thin)")
    return Extracted(
        text=text,
        title=_clean(document.title or _page_title(tree)) or None,
        author=document.author or None,
        published=document.date or None,
        language=_page_language(tree),
        extractor=extractor,
    )


def _run_trafilatura(tree: HtmlElement, url: str) -> Document | None:
    """Main text (comments left out) and metadata; settings chosen by bench/extraction_quality.py.

    favor_precision scored best there; deduplication stays off since its cache is global state.
    """
    document = trafilatura.bare_extraction(
        tree,  # copied by trafilatura, so the tree stays intact for the fallbacks
        url=url,
        with_metadata=True,
        favor_precision=True,
        include_comments=False,
        include_tables=True,
        deduplicate=False,
    )
    return document if isinstance(document, Document) else None


def _fallback_text(tree: HtmlElement, main_text: str) -> tuple[str, str]:
    """The longest of trafilatura's thin text, its baseline extractor and the meta description."""
    candidates = [
        (main_text, "trafilatura"),
        (_baseline_text(tree), "trafilatura-baseline"),
        (_meta_description(tree), "meta-description"),
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
    return _clean(text)


def _meta_description(tree: HtmlElement) -> str:
    for query in (
        "//meta[@property='og:description']/@content",
        "//meta[translate(@name, 'DESCRIPTION', 'description')='description']/@content",
        "//meta[@name='twitter:description']/@content",
    ):
        values = [_clean(str(value)) for value in tree.xpath(query)]
        if best := max(values, key=len, default=""):
            return best
    return ""


def _page_title(tree: HtmlElement) -> str | None:
    for query in ("(//title)[1]//text()", "//meta[@property='og:title']/@content", "//h1//text()"):
        found = " ".join(str(part) for part in tree.xpath(query)).strip()
        if found:
            return found[:MAX_TITLE_CHARS]
    return None


def _page_language(tree: HtmlElement) -> str | None:
    """The declared language as a BCP 47 tag (`en`, `de-AT`), else None."""
    for query in (
        "/html/@lang",
        "/html/@*[name()='xml:lang']",
        "//meta[translate(@http-equiv, 'CONTENTLANGUAGE', 'contentlanguage')"
        "='content-language']/@content",
        "//meta[@property='og:locale']/@content",
    ):
        for value in tree.xpath(query):
            tag = str(value).split(",")[0].strip().replace("_", "-")
            if _LANGUAGE_TAG.fullmatch(tag):
                return _canonical_language(tag)
    return None


def _canonical_language(tag: str) -> str:
    """BCP 47 letter case: `EN-us` -> `en-US`, `zh-hant-tw` -> `zh-Hant-TW`."""
    primary, *subtags = tag.split("-")
    cased = [
        part.upper() if len(part) == 2 else part.title() if len(part) == 4 else part.lower()
        for part in subtags
    ]
    return "-".join([primary.lower(), *cased])


def _extract_pdf(content: bytes, url: str) -> Extracted:
    try:
        reader = PdfReader(BytesIO(content))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ExtractError(f"extract failed: {url!r}: PDF is encrypted")
        pages = [page.extract_text() or "" for page in reader.pages[:MAX_PDF_PAGES]]
        info = reader.metadata
        meta_title, author = (info.title, info.author) if info is not None else (None, None)
        published = _pdf_date(reader)
    except _PDF_ERRORS as exc:
        raise ExtractError(f"extract failed: {url!r}: unreadable PDF ({exc})") from exc
    text = "\n\n".join(_clean(page) for page in pages if page.strip())
    if len(text) < MIN_TEXT_CHARS:
        raise ExtractError(f"extract failed: {url!r}: no text in PDF (scanned pages?)")
    return Extracted(
        text=text,
        title=_clean(meta_title) or _first_line(text),
        author=_clean(author) or None,
        published=published,
        language=None,
        extractor="pdf",
    )


def _pdf_date(reader: PdfReader) -> str | None:
    try:
        created = reader.metadata.creation_date if reader.metadata is not None else None
    except ValueError:  # a malformed /CreationDate
        return None
    return created.date().isoformat() if created is not None else None


def _extract_plain(content: bytes, url: str, charset: str | None, *, markdown: bool) -> Extracted:
    text = _decode(content, (charset,)).replace("\r\n", "\n").replace("\r", "\n").strip()
    if len(text) < MIN_TEXT_CHARS:
        raise ExtractError(f"extract failed: {url!r}: no article text found (page too thin)")
    title = _first_line(text)
    if markdown and title:
        title = title.lstrip("#").strip() or None
    return Extracted(text=text, title=title, extractor="plain")


def _first_line(text: str) -> str | None:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:MAX_TITLE_CHARS]
    return None


def _clean(text: str | None) -> str:
    """Trim each line and drop runs of blank lines."""
    if not text:
        return ""
    lines = [line.strip() for line in text.replace("\r\n", "\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _looks_like_pdf(head: bytes) -> bool:
    return head.lstrip().startswith(b"%PDF-")


def _looks_like_html(head: bytes) -> bool:
    head = head.removeprefix(codecs.BOM_UTF8)
    return bool(_HTML_START.match(head) or _XHTML_START.match(head))


def _sniff_binary(head: bytes) -> str | None:
    for magic, label in _BINARY_MAGIC:
        if head.startswith(magic):
            return label
    if head[4:8] == b"ftyp":
        return "video/mp4"
    if head.startswith(b"RIFF") and head[8:12] in (b"WEBP", b"WAVE", b"AVI "):
        return {b"WEBP": "image/webp", b"WAVE": "audio/wav", b"AVI ": "video/x-msvideo"}[head[8:12]]
    return None


def _has_control_bytes(head: bytes) -> bool:
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    return bool(_CONTROL_BYTES.search(head))


def _is_binary_type(media_type: str) -> bool:
    return media_type in _BINARY_TYPES or any(m in media_type for m in _BINARY_TYPE_MARKERS)
