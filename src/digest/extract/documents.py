"""PDF and plain-text readers."""

from __future__ import annotations

from io import BytesIO

from pypdf import PdfReader
from pypdf.errors import PyPdfError

from digest.errors import UnreadableDocument
from digest.extract.cleanup import clean, first_line
from digest.extract.sniff import decode_bytes
from digest.models import Extracted

MIN_TEXT_CHARS = 40  # below this whatever we found is no text at all
MAX_PDF_PAGES = 50
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


def extract_pdf(content: bytes, url: str) -> Extracted:
    try:
        reader = PdfReader(BytesIO(content))
        if reader.is_encrypted and not reader.decrypt(""):
            raise UnreadableDocument("PDF is encrypted", url=url)
        pages = [page.extract_text() or "" for page in reader.pages[:MAX_PDF_PAGES]]
        info = reader.metadata
        meta_title, author = (info.title, info.author) if info is not None else (None, None)
        published = _pdf_date(reader)
    except _PDF_ERRORS as exc:
        raise UnreadableDocument(f"unreadable PDF ({exc})", url=url) from exc
    text = "\n\n".join(clean(page) for page in pages if page.strip())
    if len(text) < MIN_TEXT_CHARS:
        raise UnreadableDocument("no text in PDF (scanned pages?)", url=url)
    return Extracted(
        text=text,
        title=clean(meta_title) or first_line(text),
        author=clean(author) or None,
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


def extract_plain(content: bytes, charset: str | None, *, markdown: bool) -> Extracted:
    """Text and markdown as they are; too little of it is marked thin."""
    text = decode_bytes(content, (charset,)).replace("\r\n", "\n").replace("\r", "\n").strip()
    title = first_line(text)
    if markdown and title:
        title = title.lstrip("#").strip() or None
    quality = "thin" if len(text) < MIN_TEXT_CHARS else None
    return Extracted(text=text, title=title, extractor="plain", quality=quality)
