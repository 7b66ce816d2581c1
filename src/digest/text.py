"""Plain-text helpers shared by the summarisers: cleaning, sentences, words, links (pure)."""

from __future__ import annotations

import html
import math
import re
import string
from collections import Counter
from collections.abc import Collection, Mapping
from urllib.parse import urlsplit

from digest.urls import for_display

# C0 controls other than tab and newline, DEL and the C1 controls (a terminal obeys ESC and
# BEL), and the zero-width and bidi formatting characters (U+061C, U+200B-U+200F,
# U+202A-U+202E, U+2060-U+2069, U+FEFF): invisible to a reader, they hide or reorder what
# is shown (`Invoice \u202eexe.pdf` reads as `Invoice fdp.exe`).
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]"
)
# A character reference (`&#x202E;`, `&#8207;`, `&rlm;`) that a renderer would turn into one.
_REFERENCE = re.compile(r"&(?:#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[A-Za-z]{2,31});?")

_ABBREVIATIONS = (
    "e.g i.e etc vs cf al approx dr mr mrs ms prof sr jr st mt no nos fig figs vol inc ltd co corp"
    " jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k a.m p.m ph.d dept est"
)
ABBREVIATIONS = frozenset(_ABBREVIATIONS.split())

# A candidate sentence end: terminal punctuation, closing quotes or brackets, then whitespace.
# A lower-case letter after it still starts a sentence (lower-cased text, chat-style posts);
# abbreviations and initials are recognised instead.
_BOUNDARY = re.compile(r"[.!?…]+[\"'”’)\]]*\s+")
# A short capitalised name's dot ("The VW ID." + "Buzz costs more"): likely no sentence end.
_NAME_CUT = re.compile(r"(?:^|\s)[A-Z][A-Z0-9]{0,2}\.$")
_WORD = re.compile(r"[^\W_][\w'’-]*")

_STOPWORDS = """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can can't cannot could did didn't do does doesn't doing
    don't down during each either few for from further had has have having he her here hers herself
    him himself his how however i if in into is isn't it it's its itself just let's like made make
    makes many may me might more most much must my myself new no nor not now of off on once one only
    or other our ours ourselves out over own per same she should so some such than that that's the
    their theirs them themselves then there these they this those through thus to too two under
    until up upon us use used using very via was wasn't we well were what when where which while
    who whom why will with within without would yet you your yours yourself also get gets got
    first last still even every way ways may really something things thing lot lots said says"""
STOPWORDS = frozenset(_STOPWORDS.split())


def clean(text: str) -> str:
    """Drop invisible and control characters, raw or as character references, and
    normalise line endings: the one cleaner of every text stored for a reader."""
    text = _INVISIBLE.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    while "&" in text:  # again: `&&#x202E;#x202E;` leaves a reference once cut
        cleaned = _REFERENCE.sub(_visible_reference, text)
        if cleaned == text:
            break
        text = cleaned
    return text


def for_terminal(text: str) -> str:
    """`text` fit for one line of a terminal: no password or token of a URL in it
    (urls.for_display), and every control, bidi and zero-width character, and every byte a
    file name held that was not UTF-8, shown as an escape (`\\x1b`, `\\u202e`, `\\xe9`): a
    file name, title or source name cannot move the cursor, write the clipboard, reorder
    what is shown, or start a line of its own."""
    return _UNSHOWABLE.sub(_escaped, for_display(text))


_UNSHOWABLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]"
)


def _escaped(found: re.Match[str]) -> str:
    code = ord(found[0])
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def for_reader(text: str) -> str:
    """Text as stored to be shown: no hidden characters (clean), and no password or token
    of a URL quoted in it (urls.for_display), so the database and every output agree."""
    return for_display(clean(text))


def _visible_reference(reference: re.Match[str]) -> str:
    """The reference as written, or nothing when it stands for an invisible character."""
    return "" if _INVISIBLE.fullmatch(html.unescape(reference.group())) else reference.group()


def paragraphs(text: str) -> list[str]:
    """Non-empty lines (extracted text keeps one paragraph per line), whitespace collapsed."""
    return [" ".join(line.split()) for line in text.split("\n") if line.strip()]


def sentences(text: str, limit: int | None = None) -> list[str]:
    """Sentences in reading order, paragraph by paragraph, at most `limit`: abbreviations,
    initials, decimals and a short name's dot ("The VW ID. Buzz") end none, nor does a "?"
    or "!" in brackets or quotes that the sentence goes on after ("(it is short!) and")."""
    found: list[str] = []
    for paragraph in paragraphs(text):
        found.extend(_split_paragraph(paragraph))
        if limit is not None and len(found) >= limit:
            break
    return found[:limit]


def _split_paragraph(paragraph: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(paragraph):
        following = paragraph[match.end() : match.end() + 1]
        if not following or _is_abbreviation(paragraph[start : match.start() + 1]):
            continue
        if following.islower() and match[0].rstrip().endswith(("…", "...", ")", '"', "”", "’")):
            continue  # "wait… and then", "(it is short!) and", ("why?") and
        piece = paragraph[start : match.end()].strip()
        if _NAME_CUT.search(piece) and len(piece.split()) <= 3:
            continue
        pieces.append(piece)
        start = match.end()
    tail = paragraph[start:].strip()
    if tail:
        pieces.append(tail)
    return pieces


def _is_abbreviation(before: str) -> bool:
    """Whether the text up to and including a '.' ends with an abbreviation or an initial."""
    if not before.endswith("."):
        return False
    last = before.rsplit(None, 1)[-1].lstrip("(\"'“‘[").rstrip(".").lower()
    if last in ABBREVIATIONS:
        return True
    return len(last) == 1 and last.isalpha()  # an initial: "J. R. R. Tolkien"


def words(text: str) -> list[str]:
    """Lower-case content words: no stopwords, numbers or single letters."""
    found = (word.strip("'’-").lower() for word in _WORD.findall(text))
    return [w for w in found if len(w) > 1 and not w.isdigit() and w not in STOPWORDS]


MIN_LANGUAGE_WORDS = 12  # fewer words (a title, a link) are too few to tell a language by


def language_of(text: str) -> str | None:
    """The ISO 639-1 code of the language `text` is written in (py3langid), or None when it
    has too few words to judge; links are left out first (a URL is no language)."""
    prose = without_links(text)
    if len(re.findall(r"[^\W\d_]{2,}", prose)) < MIN_LANGUAGE_WORDS:
        return None
    import py3langid  # loaded on first use: its model takes a second to read

    return str(py3langid.classify(prose)[0])


def looks_english(text: str) -> bool:
    """False for a text long enough to judge that is in another language than English."""
    return language_of(text) in (None, "en")


def surely_english(text: str) -> bool:
    """True for a text long enough to judge that is in English."""
    return language_of(text) == "en"


def shorten(text: str, limit: int) -> str:
    """Cut at a word boundary so that the result, with an ellipsis, fits in `limit` characters."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0].rstrip(" ,;:-–—")
    return cut + "…"


_MARKDOWN_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_AUTOLINK = re.compile(r"<(?:https?|ftp|mailto):[^>]*>", re.IGNORECASE)
URL = re.compile(r"\b(?:https?://|ftp://|www\.)\S+", re.IGNORECASE)
_MAY_HOLD_LINK = re.compile(r"\]\(|<|://|www\.", re.IGNORECASE)
# A space left before punctuation once a link is cut; not before a file name's dot (".md").
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([,;:!?]|\.(?!\w))")


_LIST_ITEM = re.compile(r"^\s*(?:[-*+•▪→>❯]+[\ufe0f\s]*|\d{1,3}[.)]\s+)")
# A few words pointing at what follows ("Links ↓", "More details in the report 👉").
_LIST_TRAILER = re.compile(r"^[^.!?…]{0,60}[\u2190-\u21ff\u2b00-\u2bff\U0001f446-\U0001f449]\s*$")
_SYMBOL_LED = re.compile(r"^\s*[\u2190-\u2bff\U0001f000-\U0001faff][\ufe0f\s]*")
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*$")


def without_links(text: str) -> str:
    """Model text with every link and URL taken out: `[text](url)` keeps only its text."""
    if not _MAY_HOLD_LINK.search(text):  # most notes: no regex pass needed (compose speed)
        return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", " ".join(text.split()))
    text = _MARKDOWN_LINK.sub(lambda m: m[1], text)
    text = URL.sub("", _AUTOLINK.sub("", text))
    return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", " ".join(text.split()))


def is_list_line(line: str) -> bool:
    """Whether a line of saved text is a list item ("-x", "> x", "1. x", "2) x", an emoji
    bullet) or a list's trailer ("Links ↓", "More 👉"), not prose."""
    line = without_links(line).lstrip("\\").rstrip()
    led = _SYMBOL_LED.match(line) and not _SENTENCE_END.search(line)  # "🚀 We did X." is prose
    return bool(_LIST_ITEM.match(line) or _LIST_TRAILER.search(line) or led)


def list_item(line: str) -> str:
    """A list line's words without its marker; "" for a trailer ("Links ↓")."""
    line = without_links(line).lstrip("\\").strip()
    if _LIST_TRAILER.search(line):
        return ""
    return _SYMBOL_LED.sub("", _LIST_ITEM.sub("", line, count=1), count=1).strip()


def strip_trailing_punctuation(text: str) -> str:
    return text.strip().rstrip(".!?:;,").strip()


URL_TITLE_CHARS = 60


def url_title(url: str) -> str:
    """A link without a title, named by its address, short: host, path and query, no scheme."""
    parts = urlsplit(for_display(url))  # no token in the query, no lookalike host
    query = f"?{parts.query}" if parts.query else ""
    shown = (parts.hostname or "").removeprefix("www.") + parts.path.rstrip("/") + query
    return shorten(shown, URL_TITLE_CHARS) if shown else for_display(url)


# -- user templates ------------------------------------------------------------


def fill_template(template: str, values: Mapping[str, str]) -> str:
    """`template` with each `{name}` replaced by `values[name]`: no attribute or index
    access, no conversion or format spec, nothing evaluated. ValueError (template_problem's
    words) for a template that is anything more."""
    if (problem := template_problem(template, values.keys())) is not None:
        raise ValueError(problem)
    pieces = string.Formatter().parse(template)
    return "".join(
        literal + (values[name] if name is not None else "") for literal, name, *_ in pieces
    )


def template_problem(template: str, names: Collection[str]) -> str | None:
    """Why `template` is not plain text with `{name}` fields drawn from `names`, or None."""
    allowed = ", ".join(f"{{{name}}}" for name in names)
    try:
        fields = [
            (name, spec, conversion)
            for _, name, spec, conversion in string.Formatter().parse(template)
        ]
    except ValueError as exc:
        return f"not a template ({exc}); write {{{{ and }}}} for a brace"
    for name, spec, conversion in fields:
        if name is None:
            continue
        if name not in names:
            return f"unknown field {{{name}}}; the fields are {allowed}"
        if spec or conversion:
            return f"{{{name}}} takes no format spec or conversion; write it as {{{name}}}"
    return None


# -- bags of words -------------------------------------------------------------

COMMON_WORD_UNITS = 50  # a word in more units than this and than half of them is not counted


def tfidf(documents: list[list[str]]) -> list[dict[str, float]]:
    """TF-IDF vectors of unit length, so that a dot product is the cosine similarity."""
    frequency = Counter(word for doc in documents for word in set(doc))
    count = len(documents)
    idf = {word: math.log((1 + count) / (1 + df)) + 1 for word, df in frequency.items()}
    vectors = []
    for doc in documents:
        vector = {w: n * idf[w] for w, n in Counter(doc).items()}
        norm = math.sqrt(sum(v * v for v in vector.values())) or 1.0
        vectors.append({w: v / norm for w, v in vector.items()})
    return vectors


def cosine(a: dict[str, float], b: dict[str, float]) -> float:
    if len(a) > len(b):
        a, b = b, a
    return sum(value * b.get(word, 0.0) for word, value in a.items())


def similarities(vectors: list[dict[str, float]]) -> dict[tuple[int, int], float]:
    """Cosine similarity of every pair (i < j) that shares a word, through a word index: only
    pairs with something in common cost anything."""
    postings: dict[str, list[tuple[int, float]]] = {}
    for index, vector in enumerate(vectors):
        for word, weight in vector.items():
            postings.setdefault(word, []).append((index, weight))
    similarity: dict[tuple[int, int], float] = {}
    common = max(COMMON_WORD_UNITS, len(vectors) // 2)
    for posting in postings.values():
        if len(posting) > common:  # in most of a long text: tells no passage apart
            continue
        for a, (i, x) in enumerate(posting):
            for j, y in posting[a + 1 :]:
                similarity[i, j] = similarity.get((i, j), 0.0) + x * y
    return similarity
