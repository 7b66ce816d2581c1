"""[[rules]]: what a rule matches and what it does to the items it matches."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from digest.config.values import Section

_MATCHERS = (
    "host",
    "source",
    "kind",
    "tags",
    "words",
    "regex",
    "language",
    "min_words",
    "max_words",
    "min_minutes",
    "max_minutes",
)
_ACTIONS = ("mute", "skip_notes", "pin", "tag", "section")


class RuleConfig(Section):
    """One [[rules]] entry: what it matches (every condition given must hold; a list matches
    when any of its values does) and what it does to the items it matches."""

    name: str
    host: list[str] = Field(default_factory=list)  # example.com matches its subdomains too
    source: list[str] = Field(default_factory=list)
    kind: list[Literal["link", "note", "post", "newsletter"]] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)  # the note's tags or the item's topic
    words: list[str] = Field(default_factory=list)  # whole words or phrases, in title or text
    regex: str | None = None  # searched in the title and text (RE2: digest.patterns)
    language: list[str] = Field(default_factory=list)  # the page's language: "en", "de"…
    min_words: int | None = Field(None, ge=0, le=10_000_000)
    max_words: int | None = Field(None, ge=0, le=10_000_000)
    # reading time at digest.reading_time.WORDS_PER_MINUTE (230) of the page, else of what was saved
    min_minutes: float | None = Field(None, ge=0, le=100_000)
    max_minutes: float | None = Field(None, ge=0, le=100_000)
    mute: bool = False  # kept and searchable, left out of the digest (and noted offline)
    skip_notes: bool = False  # noted offline: no model call is spent on it
    pin: bool = False  # first in its section, and in "Must read"
    tag: list[str] = Field(default_factory=list)  # added to the note's tags in the digest
    section: str | None = None  # shown under this section

    @field_validator("host", "source", "kind", "tags", "words", "language", "tag", mode="before")
    @classmethod
    def _one_or_a_list(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            from digest.patterns import compile_pattern

            compile_pattern(value)  # ValueError: why RE2 takes it not
        return value

    @model_validator(mode="after")
    def _matches_and_acts(self) -> RuleConfig:
        if not any(getattr(self, key) not in (None, []) for key in _MATCHERS):
            raise ValueError(
                f"rule {self.name!r} matches nothing: give one of {', '.join(_MATCHERS)}"
            )
        if not any(getattr(self, key) not in (None, [], False) for key in _ACTIONS):
            raise ValueError(f"rule {self.name!r} does nothing: give one of {', '.join(_ACTIONS)}")
        return self
