"""Pasted social posts: many posts one after another, usually with no separator.

The splitting rule. A post is a run of lines; a new post starts at a line that
*opens* one, which is any of:

1. the first line after a blank line or a separator line (`---`, `***`, `___`);
2. a headline in capitals ("IN 1986 MIT FILMED A LECTURE THAT …": four words or
   more, at least 85% of the letters upper case);
3. a series opener: "Day 83/365 of …", "Week 3 …", "Part 2 …";
4. a line after a closing line, one that ends with an arrow or pointing emoji
   ("Links ↓", "see what you can build👇") or a call to bookmark ("… a
   must-bookmark."), or a summary line starting "TL;DR" (a post's last word);
5. a line after a line that ends with a URL ("Paper & Repo: https://t.co/…"),
   unless it is a list item or another URL line (link lists: "2. Title" then its
   link), or it starts in lower case and so does the post's last line of prose
   (a lower-case writer going on after a link);
6. a short title line ("LLM Knowledge Bases"): two to eight words, starting
   with a capital, without final punctuation or closing arrow, after a line
   that ends a sentence or a list, and followed by a longer line of prose;
7. after a line that ends a sentence (. ! ? or a closing quote/bracket):
   a line opening with a quote ("“don't train your own model” is …"); a
   counted list opener ("Here are 12 websites …") unless the post in hand is one
   line, which is then the list's hook and opens the post itself ("I don't
   understand why so many people want … citizenship." before "Here are 12
   websites to find remote jobs …": a list needs its lead-in); a term introduced with its
   abbreviation ("Recursive Language Models (RLMs) have been …"); a news opener
   with "just" and a past verb in its first six words ("An engineer at X just
   shared …", "Kimi K2.5 tech report just dropped!") unless the line before is a
   short hook of six words or fewer, which then opens the post itself
   ("firewalls can't stop this." before "A developer just open sourced …"); or
   a line starting in lower case when the post so far has two or more prose
   lines, all capitalised (a lower-case writer's post after a capitalised one).

Everything else continues the post in hand. Rules 1-6 rest on a signal a
reader sees at a glance; rule 7 on the wording of one line, so each boundary it
makes is a guess, reported in the import report ("post boundary guessed
(quote) at line 22") for the user to check: where a boundary is ambiguous we
split, since a wrong split costs a short post while a wrong merge hides a post
inside another. Checked by eye on two real pasted files (bench/posts_split.py
prints a file's split): 15 posts and 14 boundaries in the first, all found; 14
posts and 13 boundaries in the second, all found, none invented (the one-line hook
"I don't understand why …" stays with its "Here are 12 websites …").
Its limits: a post that opens with an ordinary capitalised sentence right after
another post's ordinary last sentence cannot be told from a new paragraph and
stays joined to the post before it; a quoted or "just launched" sentence in the
middle of a post splits it; a post pasted with blank lines between its own
paragraphs is split at each of them.

Each post becomes a SavedItem of kind POST with no URL (the store keys it by a
hash of its text): its first line as title, its whole text as context, and the
http(s) links found in it as `links`. Nothing is dropped: every non-blank line
belongs to exactly one post.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from digest.collect.formats import ImportResult, register
from digest.collect.importers.common import NO_WORDS, has_words, trim_title, urls_in, web_links
from digest.models import ItemKind, Rejected, SavedItem

_SEPARATOR = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,}|={3,})\s*$")
_ENDS_WITH_URL = re.compile(r"https?://\S+\s*$")
_LIST_ITEM = re.compile(r"^\s*(?:\d{1,3}[.)]\s|[^\w\s\"'“‘«(\[@#$])")
_CLOSER = re.compile(
    r"(?:[↓⬇⤵👇👉🧵]|\bbelow:?|\b(?:must[- ]bookmark|bookmark (?:it|this)|follow for more)[.!]?)"
    r"\s*[\ufe0f]?\s*$",
    re.IGNORECASE,
)
_EMOJI_BULLET = re.compile(r"^(?:[❯•→►▶✅✔➡👉🔹🔸⚡🚀💡📌]|->)")
_SERIES = re.compile(r"^(?:day|week|part)\s+\d+\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?…\"”)]\s*$")
_FINAL_PUNCT = re.compile(r"[.,:;!?…\"”]\s*$")
_STRUCTURED = re.compile(r"^\s*(?:[{\[<]|---\s*$|#{1,6}\s)")
_MARKDOWN = re.compile(r"^#{1,6}\s|\]\(https?://", re.MULTILINE)
_QUOTE_OPENING = re.compile(r"^[\"'“‘]\w")
_COUNTED_LIST_OPENER = re.compile(r"^here are \d+\b", re.IGNORECASE)
_NEWS_OPENER = re.compile(
    r"^(?:\S+\s+){0,5}just\s+(?:open[- ]?sourced|\w+ed|spent|built|made|wrote|found|got)\b",
    re.IGNORECASE,
)
# A term introduced with its abbreviation opens a post about it: "Recursive Language
# Models (RLMs) have been floating around …".
_TERM_DEFINED = re.compile(r"^[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)+\s+\([A-Z][A-Z0-9-]+s?\)\s")
# A summary line ends its post: "TL;DR: raw data … is collected, then …".
_SUMMARY = re.compile(r"^tl;?\s?dr\b", re.IGNORECASE)
_HOOK_WORDS = 6


@dataclass(frozen=True)
class _Line:
    number: int
    text: str


@dataclass
class _Split:
    """The posts of a file, and the boundaries that were guesses (for the import report)."""

    posts: list[list[_Line]] = field(default_factory=list)
    guessed: list[tuple[_Line, str]] = field(default_factory=list)


# Boundaries told apart from a new paragraph only by the wording of one line: reported.
_GUESSED = frozenset({"quote", "counted list", "news", "hook", "term defined", "voice"})


def split_posts(text: str) -> _Split:
    """The posts of a pasted file, each as its numbered non-blank lines."""
    split = _Split()
    current: list[_Line] = []
    after_gap = False
    lines = text.splitlines()
    for index, raw in enumerate(lines):
        line = raw.strip()
        if not line or _SEPARATOR.match(line):
            after_gap = True
            continue
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        signal = "gap" if after_gap else _opening_signal(line, current, following)
        if current and signal is not None:
            split.posts.append(current)
            current = []
            if signal in _GUESSED:
                split.guessed.append((_Line(index + 1, line), signal))
        current.append(_Line(index + 1, line))
        after_gap = False
    if current:
        split.posts.append(current)
    return split


def _opening_signal(line: str, post: list[_Line], following: str) -> str | None:
    """Why `line` opens a new post (the rule's name), or None when it goes on with `post`."""
    if not post:
        return None
    previous = post[-1].text
    if _is_shouting(line):
        return "headline"
    if _SERIES.match(line):
        return "series"
    if _LIST_ITEM.match(line) or _ENDS_WITH_URL.search(line):
        return None
    if _CLOSER.search(previous) or _SUMMARY.match(previous):
        return "closer"
    if _ENDS_WITH_URL.search(previous):
        lower_goes_on = _starts_lower(line) and _starts_lower(_last_prose(post))
        return None if lower_goes_on else "after link"
    if _is_title_line(line, previous, following):
        return "title"
    return _opens_after_ending(line, post, following) if _SENTENCE_END.search(previous) else None


def _opens_after_ending(line: str, post: list[_Line], following: str) -> str | None:
    """Openers told apart from a new paragraph only because the line before ended a sentence."""
    if _QUOTE_OPENING.match(line):
        return "quote"
    if _COUNTED_LIST_OPENER.match(line):
        return "counted list" if len(post) > 1 else None  # else the line before is its hook
    if _TERM_DEFINED.match(line):
        return "term defined"
    if _NEWS_OPENER.match(line):
        # else the short line before is this post's hook
        return "news" if len(post[-1].text.split()) > _HOOK_WORDS else None
    if len(line.split()) <= _HOOK_WORDS and _NEWS_OPENER.match(following):
        return "hook"
    return "voice" if line[0].islower() and _voice_is_capitalised(post) else None


def _voice_is_capitalised(post: list[_Line]) -> bool:
    """Two or more prose lines so far, all starting with a capital: a lower-case line is someone else."""
    prose = [line.text for line in post if not _LIST_ITEM.match(line.text)]
    return len(prose) >= 2 and not any(text[0].islower() for text in prose)


def _last_prose(post: list[_Line]) -> str:
    """The post's last line that is neither a list item nor a link: the writer's voice."""
    for line in reversed(post):
        if not (_LIST_ITEM.match(line.text) or _ENDS_WITH_URL.search(line.text)):
            return line.text
    return post[0].text


def _is_shouting(line: str) -> bool:
    letters = [c for c in line if c.isalpha()]
    if len(line.split()) < 4 or len(letters) < 20 or _LIST_ITEM.match(line):
        return False
    return sum(c.isupper() for c in letters) >= 0.85 * len(letters)


def _is_title_line(line: str, previous: str, following: str) -> bool:
    words = len(line.split())
    if not 2 <= words <= 8 or not line[0].isupper() or _FINAL_PUNCT.search(line):
        return False
    if _CLOSER.search(line):
        return False
    ends_block = _SENTENCE_END.search(previous) or _LIST_ITEM.match(previous)
    return bool(ends_block) and len(following.split()) > words and not _LIST_ITEM.match(following)


def _starts_lower(line: str) -> bool:
    letter = next((c for c in line if c.isalpha()), "")
    return letter.islower()


def signals_of_posts(lines: list[str], head: str) -> list[str]:
    """The signals of pasted posts found in a file's head, by name."""
    checks = (
        ("t.co links", "://t.co/" in head),
        ("closing lines (`Links ↓`)", any(_CLOSER.search(line) for line in lines)),
        ("links ending a post", _link_ends_a_post(lines)),
        ("emoji or arrow bullets", any(_EMOJI_BULLET.match(line) for line in lines)),
        ("series openers (`Day N/365`)", any(_SERIES.match(line) for line in lines)),
        ("headlines in capitals", any(_is_shouting(line) for line in lines)),
    )
    return [name for name, found in checks if found]


def _link_ends_a_post(lines: list[str]) -> bool:
    """A line of prose ending with a link, followed by a line that is no list item or link."""
    return any(
        _ENDS_WITH_URL.search(line)
        and len(line.split()) >= 2
        and not _LIST_ITEM.match(line)
        and not (_LIST_ITEM.match(after) or _ENDS_WITH_URL.search(after))
        for line, after in zip(lines, lines[1:], strict=False)
    )


def _post_item(lines: list[_Line]) -> SavedItem:
    text = "\n".join(line.text for line in lines)
    return SavedItem(
        url=None,
        title=trim_title(lines[0].text),
        context=text,
        kind=ItemKind.POST,
        links=web_links(urls_in(text)),
        line=lines[0].number,
    )


class PostsImporter:
    name = "posts"
    description = "saved social-media posts pasted one after another (prose, t.co links)"
    appendable = False  # a post may go on in lines pasted later

    def sniff(self, head: str) -> int:
        """Prose and the signals of pasted posts (`signals`): these win over a list's
        entries even in a short file. Markdown (headings, `[title](url)`) counts against."""
        lines = [line.strip() for line in head.splitlines() if line.strip()]
        if len(lines) < 3 or _STRUCTURED.match(head):
            return 0
        if "," in lines[0] and lines[0].count(",") == lines[1].count(",") >= 2:
            return 0  # a CSV header and row
        listed = sum(1 for line in lines if _LIST_ITEM.match(line)) / len(lines)
        prose = sum(1 for line in lines if len(line.split()) >= 10) / len(lines)
        score = 20 + 60 * prose - 30 * listed + 15 * len(signals_of_posts(lines, head))
        score -= 40 if _MARKDOWN.search(head) else 0
        return max(1, min(85, round(score)))

    def signals(self, head: str) -> list[str]:
        """What in `head` says pasted posts, for the import report."""
        lines = [line.strip() for line in head.splitlines() if line.strip()]
        prose = sum(1 for line in lines if len(line.split()) >= 10)
        return [*signals_of_posts(lines, head), f"{prose} lines of prose"]

    def parse(self, text: str, *, zone: ZoneInfo) -> ImportResult:
        split = split_posts(text)
        worded = [post for post in split.posts if any(has_words(line.text) for line in post)]
        return ImportResult(
            items=[_post_item(post) for post in worded],
            skipped=[
                Rejected(post[0].number, post[0].text, NO_WORDS)
                for post in split.posts
                if post not in worded
            ],
            notices=[
                Rejected(
                    line.number,
                    line.text,
                    f"post boundary guessed ({signal}): split here; check the post before",
                )
                for line, signal in split.guessed
            ],
        )


register(PostsImporter())
