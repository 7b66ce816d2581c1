"""`digest search`: what the store's full-text index finds, shown as lines or as JSON.

Bounded before SQLite sees it: at most MAX_QUERY_CHARS characters and MAX_QUERY_TERMS
terms, at most MAX_LIMIT hits, and the store stops a search after SEARCH_SECONDS
(store.search). Every field shown, as lines or JSON, goes through the redaction of every
other output (urls.for_display); lines are escaped for the terminal (text.for_terminal).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TextIO
from zoneinfo import ZoneInfo

from rich.console import Console
from rich.text import Text

from digest.compose.linktitles import link_title
from digest.store import SearchHit
from digest.store.search import MARK_END, MARK_START
from digest.text import for_terminal
from digest.urls import for_display

MAX_QUERY_CHARS = 1_000
MAX_QUERY_TERMS = 64
MAX_LIMIT = 1_000
_TERM = re.compile(r'"[^"]*"|[^\s()]+')

_MARKED = re.compile(f"{MARK_START}(.*?){MARK_END}", re.DOTALL)
_STRAY = re.compile(f"[{MARK_START}{MARK_END}]")


# What makes a query FTS5 syntax rather than plain words: quotes, groups, prefixes, columns,
# the operators. A query without any of them that FTS5 still refuses (`c++`, `vllm.ai`) is
# searched as its words, each a phrase.
_SYNTAX = re.compile(r'["()*:^]|\b(?:AND|OR|NOT|NEAR)\b')


def query_problem(query: str) -> str | None:
    """Why `query` is too large to search (None: it is not)."""
    if len(query) > MAX_QUERY_CHARS:
        return f"the query is {len(query):,} characters; at most {MAX_QUERY_CHARS:,}"
    if (terms := len(_TERM.findall(query))) > MAX_QUERY_TERMS:
        return f"the query has {terms:,} terms; at most {MAX_QUERY_TERMS}"
    return None


# `column:value` of the index, and names a reader may use for them
_COLUMNS = {"title", "text", "note", "context", "tags", "host"}
_ALIASES = {"section": "tags", "topic": "tags", "heading": "tags", "tag": "tags", "site": "host"}
_FIELDED = re.compile(r'(?<![\w"])(?P<column>[A-Za-z]+):(?P<value>"[^"]*"|[^\s()"]+)')


def with_columns(query: str) -> str:
    """`query` with the reader's column names made FTS5's (`section:Rust` -> `tags:Rust`) and
    a value FTS5 would refuse quoted (`host:fasterthanli.me` -> `host:"fasterthanli.me"`)."""

    def fielded(match: re.Match[str]) -> str:
        column = _ALIASES.get(match["column"].casefold(), match["column"].casefold())
        if column not in _COLUMNS:
            return match[0]
        value = match["value"]
        if not value.startswith('"') and not re.fullmatch(r"\w+\*?", value):
            value = '"' + value.removesuffix("/") + '"'
        return f"{column}:{value}"

    return _FIELDED.sub(fielded, query)


def as_phrases(query: str) -> str | None:
    """`query`'s words as FTS5 phrases (`vllm.ai` -> `"vllm.ai"`, which FTS5 reads as the
    words vllm and ai in a row); None when it uses FTS5 syntax, which is left to FTS5."""
    if _SYNTAX.search(query) or not query.split():
        return None
    return " ".join(f'"{word}"' for word in query.split())


def marked(snippet: str, left: str = "**", right: str = "**") -> str:
    """The snippet with each matched word between `left` and `right`."""
    return _STRAY.sub("", _MARKED.sub(lambda m: f"{left}{m[1]}{right}", snippet))


def hit_json(hit: SearchHit, zone: ZoneInfo) -> dict[str, object]:
    return {
        "id": hit.id,
        "saved_at": hit.saved_at.astimezone(zone).isoformat(),
        "title": for_display(hit_title(hit)),
        "url": for_display(hit.url) if hit.url else None,
        "host": hit.host,
        "kind": hit.kind.value,
        "state": hit.state.value,
        "read": hit.read,
        "snippet": for_display(marked(hit.snippet)),
    }


def write_json(hits: Sequence[SearchHit], zone: ZoneInfo, out: TextIO) -> None:
    """One JSON object per hit and line, best first (the snippet's matches in **…**)."""
    for hit in hits:
        out.write(json.dumps(hit_json(hit, zone), ensure_ascii=False) + "\n")


def show_hits(hits: Sequence[SearchHit], zone: ZoneInfo, console: Console) -> None:
    """A line a hit: id, date, title and host; then the snippet, its matches in bold on a
    terminal and plain elsewhere (a pipe or file gets text, not markdown), unless it only
    repeats the title or host."""
    for hit in hits:
        day = hit.saved_at.astimezone(zone).date().isoformat()
        host = f"  ({hit.host})" if hit.host else ""
        head = Text(f"{hit.id:>6}  {day}  ")
        head.append(_shown(hit_title(hit)), style="bold")
        head.append(host, style="dim")
        console.print(head, soft_wrap=True, crop=False)
        if not _repeats_head(hit):
            console.print(
                _snippet(_shown(hit.snippet), console.is_terminal), soft_wrap=True, crop=False
            )


def _repeats_head(hit: SearchHit) -> bool:
    """Whether the snippet says nothing the hit's first line does not: its title, its host
    or a part of either (FTS5 cuts a snippet of a long title with "…")."""
    words = _comparable(marked(hit.snippet, "", ""))
    head = (_comparable(hit_title(hit)), _comparable(hit.host or ""))
    return not words or any(words in shown for shown in head)


def _comparable(text: str) -> str:
    return " ".join(text.replace("…", " ").casefold().split())


def hit_title(hit: SearchHit) -> str:
    """The hit's title; a link saved without one is named by the words of its address."""
    return link_title(hit.url) if hit.url and hit.title == hit.url else hit.title


def _shown(text: str) -> str:
    """`text` for the terminal, the snippet's match marks kept."""
    parts = for_display(text).split(MARK_START)
    return MARK_START.join(
        MARK_END.join(for_terminal(piece) for piece in part.split(MARK_END)) for part in parts
    )


def _snippet(snippet: str, terminal: bool) -> Text:
    line = Text("        ")
    if not terminal:
        return line.append(marked(snippet, "", ""))
    position = 0
    for match in _MARKED.finditer(snippet):
        line.append(_STRAY.sub("", snippet[position : match.start()]))
        line.append(match[1], style="bold")
        position = match.end()
    return line.append(_STRAY.sub("", snippet[position:]))
