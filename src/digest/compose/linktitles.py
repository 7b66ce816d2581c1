"""A readable title for a link nobody named and no run has read (pure): what a well-known
address holds ("arxiv.org/abs/1910.05446" -> "arXiv 1910.05446"), else the words of its
address ("i-want-off-mr-golangs-wild-ride" -> "I want off Mr Golang's wild ride"), else
its host and path.

Only a slug of two words or more becomes a title: "letsgo.html" or "452520" say nothing a
reader can use, and the host and path say at least where the link leads. A lone word under
a term or course folder reads with it ("fall25/lectures" -> "Fall25 lectures"); the
digest names the site beside such a title.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from digest.text import url_title
from digest.urls import for_display

# a last path part that stands for the folder above it ("reinventing_explanation/index.html")
_FOLDER_PAGES = frozenset({"index", "default", "home", "main"})
_EXTENSION = re.compile(r"\.(html?|php|aspx?|pdf|md|txt)$", re.IGNORECASE)
_SEPARATORS = re.compile(r"[-_+.~\s]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
_LETTERS = re.compile(r"[A-Za-z]")
_UPPER = (
    "ai ml llm gpu cpu tpu api sql dns http https html css pdf jax aws gcp ui ux os io cuda rl"
    " nlp rag json xml url cli ptx mlir cpp sla slo sli mvcc tls ssh tcp udp jit wasm ssd ram"
)
_ACRONYMS = {word: word.upper() for word in _UPPER.split()}
_ACRONYMS |= {"llms": "LLMs", "gpus": "GPUs", "apis": "APIs", "cpus": "CPUs", "i": "I"}
_HONORIFICS = frozenset({"mr", "mrs", "ms", "dr", "st"})
_CONTRACTIONS = {
    "dont": "don't", "doesnt": "doesn't", "didnt": "didn't", "cant": "can't", "wont": "won't",
    "isnt": "isn't", "arent": "aren't", "wasnt": "wasn't", "shouldnt": "shouldn't",
    "couldnt": "couldn't", "wouldnt": "wouldn't", "youre": "you're", "ive": "I've",
    "im": "I'm", "thats": "that's", "whats": "what's", "hes": "he's", "shes": "she's",
}  # fmt: skip
MIN_SLUG_WORDS = 2
# a term or course folder: letters then digits, or digits then letters ("fall25", "2024spring")
_TERM = re.compile(r"[a-z]{2,}\d{2,4}|\d{2,4}[a-z]{2,}", re.IGNORECASE)

# well-known addresses, matched from the start of "host/path?query" (no "www."): what they hold
_KNOWN = tuple(
    (re.compile(pattern, re.IGNORECASE), title)
    for pattern, title in (
        (r"arxiv\.org/(?:abs|pdf|html)/(?P<id>\d{4}\.\d{4,5})", "arXiv {id}"),
        (r"(?:mobile\.)?(?:x|twitter)\.com/(?!i/)(?P<user>\w{1,15})/status/\d", "Post by @{user} on X"),
        (r"(?:m\.)?youtube\.com/(?:watch\?(?:.*&)?v=|shorts/|live/)[\w-]|youtu\.be/[\w-]", "YouTube video"),
        (r"(?:m\.)?youtube\.com/playlist\?(?:.*&)?list=", "YouTube playlist"),
        (r"(?:m\.)?youtube\.com/@(?P<name>[\w.-]+)", "YouTube channel @{name}"),
        (r"gist\.github\.com/(?P<user>[\w-]+)/[0-9a-f]+", "Gist by {user}"),
        (r"github\.com/(?!(?:orgs|topics|features|sponsors|settings|marketplace|collections)/)"
         r"(?P<repo>[\w.-]+/[\w.-]+)", "GitHub: {repo}"),
        (r"news\.ycombinator\.com/item\?id=\d", "Hacker News discussion"),
        (r"bsky\.app/profile/(?P<user>[\w.-]+)/post/\w", "Post by @{user} on Bluesky"),
        (r"huggingface\.co/papers/(?P<id>\d{4}\.\d{4,5})", "Hugging Face paper {id}"),
        (r"huggingface\.co/datasets/(?P<name>[\w.-]+/[\w.-]+)", "Hugging Face dataset {name}"),
        (r"huggingface\.co/spaces/(?P<name>[\w.-]+/[\w.-]+)", "Hugging Face space {name}"),
        (r"huggingface\.co/(?!(?:blog|docs|learn|papers|datasets|spaces)/)(?P<name>[\w.-]+/[\w.-]+)",
         "Hugging Face model {name}"),
        (r"(?:old\.)?reddit\.com/r/(?P<sub>\w+)/comments/\w+/?$", "Post in r/{sub}"),
        (r"openreview\.net/(?:forum|pdf)\?(?:.*&)?id=(?P<id>[\w-]+)", "OpenReview paper {id}"),
    )
)  # fmt: skip


def link_title(url: str) -> str:
    """What a well-known address holds, else the slug of `url` made readable, else its host
    and path (text.url_title)."""
    return known_title(url) or slug_title(url) or url_title(url)


def known_title(url: str) -> str | None:
    """A title from _KNOWN for an address of a well-known shape, or None."""
    parts = urlsplit(for_display(url))
    host = (parts.hostname or "").removeprefix("www.")
    address = host + parts.path + (f"?{parts.query}" if parts.query else "")
    for pattern, title in _KNOWN:
        if found := pattern.match(address):
            return title.format(**found.groupdict())
    return None


def slug_title(url: str) -> str | None:
    """The last telling part of the URL's path as words in sentence case, or None; a
    word alone with the part above it when that one names something ("fall25/lectures"
    -> "Fall25 lectures")."""
    path = urlsplit(for_display(url)).path
    parts = [unquote(p) for p in path.split("/") if p]
    for index in reversed(range(len(parts))):
        words = _words(_EXTENSION.sub("", parts[index]))
        if not words or (len(words) == 1 and words[0].casefold() in _FOLDER_PAGES):
            continue
        alone = len(words) == 1 and words[0].isalpha()
        if alone and index and _names_something(parts[index - 1]):
            words = [*_words(parts[index - 1]), *words]
        if len(words) < MIN_SLUG_WORDS or not any(_LETTERS.search(w) for w in words):
            return None  # "452520", "letsgo", "intro": the host and path tell more
        return _sentence(words)
    return None


def _names_something(part: str) -> bool:
    """A folder that names a term or a course by letters and digits ("fall25", "cs149"):
    the word below it is one of its parts. Other folders ("features", "public", "v139"
    over "schmidt21a") make no title with the word below them."""
    return bool(_TERM.fullmatch(part))


def _words(part: str) -> list[str]:
    spaced = _CAMEL.sub(" ", part) if "-" not in part and "_" not in part else part
    return [word for word in _SEPARATORS.split(spaced) if word]


def _sentence(words: list[str]) -> str:
    shown: list[str] = []
    for word in words:
        low = word.casefold()
        if shown and shown[-1].casefold() in _HONORIFICS:  # Mr Golang's: a name follows
            shown.append(_possessive(word).capitalize())
            continue
        fixed = _ACRONYMS.get(low) or _CONTRACTIONS.get(low) or _course_code(low)
        if fixed is None:
            fixed = word if _mixed_case(word) else low
        shown.append(fixed)
    first = shown[0]
    shown[0] = first[:1].upper() + first[1:]
    for index, word in enumerate(shown):
        if word.casefold() in _HONORIFICS:
            shown[index] = word.capitalize()
    return " ".join(shown)


def _course_code(low: str) -> str | None:
    """ "cs149" -> "CS149": two or three letters and a number name a course or a model."""
    return low.upper() if re.fullmatch(r"[a-z]{2,3}\d{2,4}", low) else None


def _possessive(word: str) -> str:
    """'golangs' after an honorific reads as a name's: "Golang's"."""
    low = word.casefold()
    return f"{low[:-1]}'s" if low.endswith("s") and len(low) > 3 else low


def _mixed_case(word: str) -> bool:
    """A word written with care ("FlashAttention", "PyTorch", "vLLM") is kept as it is."""
    return any(c.isupper() for c in word[1:]) and any(c.islower() for c in word)
