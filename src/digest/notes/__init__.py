"""Summarisers: a protocol and a registry of the two we ship, offline and OpenAI-compatible.

`make_summarizer(config.llm, on_call=record)` gives one (`formats`: the response formats the
server is known to take, by model, and the callback told of newly found ones); `await summarizer.note(request)` makes
a note; `await summarizer.week_summary(label, [(item_id, title, note), ...])` the week's
statements, each citing item ids. `on_call` hears of every LLM call, with its tokens and cost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from digest.clock import AsyncSleep, Clock, async_sleep, utc_now
from digest.config import LLMConfig
from digest.errors import ConfigError
from digest.notes.base import CallRecord, NoteRequest, Summarizer, note_cache_key
from digest.notes.offline import OfflineSummarizer

if TYPE_CHECKING:  # the OpenAI SDK is loaded only when an OpenAI-compatible model is used
    from digest.notes.capabilities import OnFormat

__all__ = [
    "REGISTRY",
    "CallRecord",
    "NoteRequest",
    "OfflineSummarizer",
    "Options",
    "Summarizer",
    "make_summarizer",
    "note_cache_key",
]

OnCall = Callable[[CallRecord], None]


@dataclass(frozen=True)
class Options:
    """What a summariser is told besides the config."""

    on_call: OnCall | None = None
    known_formats: dict[str, str] = field(default_factory=dict)
    on_format: OnFormat | None = None
    need_key: bool = True  # False: only to plan calls (--dry-run), none is made
    clock: Clock = utc_now  # for a Retry-After given as a date
    sleep: AsyncSleep = async_sleep  # waits between retries


def _offline(config: LLMConfig, options: Options) -> Summarizer:
    return OfflineSummarizer(config)


def _openai(config: LLMConfig, options: Options) -> Summarizer:
    from digest.notes.chat_calls import ChatCalls
    from digest.notes.openai_chat import OpenAISummarizer

    api_key, base_url = config.api_key, config.effective_base_url
    if api_key is None and base_url is None and options.need_key:
        raise ConfigError(
            f"config error: llm.api_key_env: ${config.api_key_env} is not set; the openai"
            " provider needs an API key, or llm.base_url for a local server"
        )
    # Local OpenAI-compatible servers need no key, but the client insists on one.
    calls = ChatCalls(
        config,
        api_key=api_key or "not-needed",
        base_url=base_url,
        on_call=options.on_call,
        known_formats=options.known_formats,
        on_format=options.on_format,
        clock=options.clock,
        sleep=options.sleep,
    )
    return OpenAISummarizer(config, calls)


REGISTRY: dict[str, Callable[[LLMConfig, Options], Summarizer]] = {
    "offline": _offline,
    "openai": _openai,
}


def make_summarizer(
    config: LLMConfig, *, on_call: OnCall | None = None, options: Options | None = None
) -> Summarizer:
    """The summariser `config.provider` names; `on_call` hears of every LLM call it makes."""
    options = options or Options()
    if on_call is not None:
        options = replace(options, on_call=on_call)
    return REGISTRY[config.provider](config, options)
