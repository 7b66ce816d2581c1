"""What a server does with each model, found out as calls are made and remembered.

The response format: json_schema is asked for first; a server that answers 400, 422 or 500
about it (the error's param is response_format, or its message or body names response_format,
json_schema, json_object, the schema or structured output; llama-cpp-python answers 500) is asked with json_object, then with the plain prompt. Any
other 400 (the context is too long, say) is that item's failure, not a verdict on the server. Until a model's format is known (from
an earlier run, through `known_formats`, or from an answer), its calls go one at a time, so
that a run probes once; what worked is told to `on_format`, which the store keeps.
The token limit: max_completion_tokens for reasoning models (o1, o3, o4, gpt-5…), else
max_tokens, unless llm.token_limit_param says which, or a server names the other one.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any

import openai
from openai.types.chat.completion_create_params import ResponseFormat

from digest.config import LLMConfig

FORMATS = ("json_schema", "json_object", "plain")  # what a server is asked for, in turn
# OpenAI's reasoning models take max_completion_tokens: o1, o3-mini, o4-mini, gpt-5, vendor/o3…
REASONING_MODEL = re.compile(r"(?:^|/)(?:o\d(?:$|[-.])|gpt-5)", re.IGNORECASE)
TOKEN_PARAMS = ("max_tokens", "max_completion_tokens")
OnFormat = Callable[[str, str], None]  # (model, the response format that worked)
ABOUT_FORMAT = re.compile(
    r"response_format|json_schema|json_object|structured|\bschema\b", re.IGNORECASE
)


class Capabilities:
    def __init__(
        self,
        config: LLMConfig,
        known_formats: dict[str, str] | None = None,
        on_format: OnFormat | None = None,
    ) -> None:
        self.config = config
        self.formats = {m: f for m, f in (known_formats or {}).items() if f in FORMATS}
        self._confirmed = set(self.formats)
        self._on_format = on_format
        self._token_params: dict[str, str] = {}  # by model: what a server said it takes
        self._probing = asyncio.Lock()

    def rebind(self) -> None:
        """A new event loop: a new lock."""
        self._probing = asyncio.Lock()

    def response_format(self, model: str) -> str:
        return self.formats.get(model, FORMATS[0])

    def probing(self, model: str) -> AbstractAsyncContextManager[Any]:
        """Held around a call while the model's response format is not known yet."""
        return nullcontext() if model in self._confirmed else self._probing

    def confirm(self, model: str) -> None:
        """The format that got an answer is the model's from now on, in this run and later."""
        if model in self._confirmed:
            return
        self._confirmed.add(model)
        self.formats.setdefault(model, FORMATS[0])
        if self._on_format is not None:
            self._on_format(model, self.formats[model])

    def another_way(
        self, model: str, response_format: str, message: str, param: str | None = None
    ) -> str | None:
        """After a 400, 422 or 500 to a call in `response_format` (the error's message and param):
        what to change before asking again (the token parameter the server names, or the next
        format), or None."""
        change = self._change(model, response_format, message, param)
        if change == "token":
            limit = self.token_param(model)
            other = TOKEN_PARAMS[1 - TOKEN_PARAMS.index(limit)]
            self._token_params[model] = other
            return f"{other} instead of {limit}"
        if change == "meanwhile":
            return f"{self.response_format(model)} output, as a call made meanwhile found"
        if change == "format":
            self.formats[model] = FORMATS[FORMATS.index(response_format) + 1]
            return f"{self.formats[model]} output instead of {response_format}"
        return None

    def would_change(
        self, model: str, response_format: str, message: str, param: str | None = None
    ) -> bool:
        """Whether another_way would ask again in another way (it changes nothing)."""
        return self._change(model, response_format, message, param) is not None

    def _change(
        self, model: str, response_format: str, message: str, param: str | None
    ) -> str | None:
        limit = self.token_param(model)
        other = TOKEN_PARAMS[1 - TOKEN_PARAMS.index(limit)]
        if limit in message and other in message:
            return "token"
        if param != "response_format" and not ABOUT_FORMAT.search(message):
            return None  # not about the format: the item failed, the format stays
        if self.response_format(model) != response_format:
            return "meanwhile"
        if response_format == FORMATS[-1] or model in self._confirmed:
            return None
        return "format"

    def token_param(self, model: str) -> str:
        if model in self._token_params:
            return self._token_params[model]
        if self.config.token_limit_param != "auto":
            return self.config.token_limit_param
        return TOKEN_PARAMS[1] if REASONING_MODEL.search(model) else TOKEN_PARAMS[0]


def response_format_param(
    response_format: str, name: str, schema: dict[str, object]
) -> ResponseFormat | openai.Omit:
    """The request's response_format for `response_format` ("plain": none at all)."""
    if response_format == "plain":
        return openai.omit
    if response_format == "json_object":
        return {"type": "json_object"}
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}
