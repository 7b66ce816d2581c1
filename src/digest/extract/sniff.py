"""What a response is (HTML, PDF, text, binary) and how its bytes decode; pure and cheap.

The fetcher can call `is_probably_binary(content_type, head)` on the first SNIFF_BYTES
of a body to stop before reading the rest.

HTML is decoded here, not by trafilatura (which guesses from the bytes and
ignores declarations): byte-order mark, then UTF-8 if the bytes hold non-ASCII and
fit it, then the HTTP charset, then the page's `<meta>` or XML declaration, then
UTF-8, then windows-1252. A declared charset the bytes do not fit is passed over.
"""

from __future__ import annotations

import codecs
import re

SNIFF_BYTES = 1024  # how much of the start decides the kind of content
CHARSET_SCAN_BYTES = 4096  # where a `<meta charset>` is looked for first (then the whole head)

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
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
PLAIN_TYPES = frozenset({"text/plain", "text/markdown", "text/x-markdown"})
_HTML_START = re.compile(
    rb"^\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html|head|body)\b", re.I | re.S
)
_XHTML_START = re.compile(rb"^\s*<\?xml[^>]*>\s*(?:<!doctype\s+html|<html)\b", re.I)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.I)
_HEAD_END = re.compile(rb"</head\b|<body\b", re.I)
_XML_ENCODING = re.compile(rb"""^<\?xml[^>]+encoding\s*=\s*["']([\w.:-]+)""", re.I)
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


def is_probably_binary(content_type: str | None, head: bytes) -> bool:
    """Whether a response starting with `head` is not worth reading on (image, archive, ...).

    Known file signatures win over the Content-Type; PDF and HTML are never binary.
    """
    if sniff_binary(head):
        return True
    if looks_like_pdf(head) or looks_like_html(head):
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
    """Decode HTML: BOM, UTF-8 when it fits non-ASCII bytes, HTTP charset, `<meta>`/XML
    declaration, UTF-8, then windows-1252."""
    return decode_bytes(content, (http_charset, _declared_charset(content)))


def decode_bytes(content: bytes, declared: tuple[str | None, ...]) -> str:
    """The BOM's charset; else UTF-8 when the bytes hold non-ASCII and fit it; else the
    first of the `declared` charsets and UTF-8 the bytes fit; else windows-1252."""
    for bom, encoding in _BOMS:
        if content.startswith(bom):
            return content.decode(encoding, errors="replace")
    # Non-ASCII bytes that are valid UTF-8 are UTF-8 whatever is declared: text in another
    # charset almost never fits UTF-8's byte patterns, while servers still send their
    # default `charset=iso-8859-1` with UTF-8 pages (every "’" would read "â€™").
    if not content.isascii() and (text := _try_decode(content, "utf-8")) is not None:
        return text
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


def _declared_charset(content: bytes) -> str | None:
    """The XML declaration's encoding, else the first `<meta>` charset of the head: browsers
    honour one that comes after kilobytes of scripts and styles (they decode again)."""
    head = content[:CHARSET_SCAN_BYTES]
    match = _XML_ENCODING.search(head.lstrip()) or _META_CHARSET.search(head)
    if match is None and (end := _HEAD_END.search(content)) is not None:
        match = _META_CHARSET.search(content, 0, end.start())
    return match.group(1).decode("ascii") if match else None


def looks_like_pdf(head: bytes) -> bool:
    return head.lstrip().startswith(b"%PDF-")


def looks_like_html(head: bytes) -> bool:
    head = head.removeprefix(codecs.BOM_UTF8)
    return bool(_HTML_START.match(head) or _XHTML_START.match(head))


def sniff_binary(head: bytes) -> str | None:
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
