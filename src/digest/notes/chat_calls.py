"""Answers from any OpenAI-compatible chat completions server, through the official client.

Our own timeouts, retries (429 and 5xx, honouring Retry-After), concurrency bound and spending
cap. An answer's retries and its repair are sends like the first, all within what the caller
allows (llm.max_attempts over all runs); a request nothing listened to, or refused before any
work (429, 401/403/404), is not one. Structured output is asked for as json_schema; a server
that answers 400, 422 or 500 about it is asked with json_object, then with the plain prompt
(capabilities.py), and what worked is reported through `on_format` so that later runs do not
probe again. One repair turn when the caller allows two calls. Reasoning models get
max_completion_tokens. After as many calls in a row got no answer, no more this run.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import openai
from openai.types.chat import ChatCompletionMessageParam

from digest.clock import AsyncSleep, Clock, async_sleep, utc_now
from digest.config import LLMConfig
from digest.errors import LLMUnavailable, SummarizeError, UnusableAnswer
from digest.fetch.retry_after import retry_after_s
from digest.lifecycle import backoff_delay
from digest.notes.answers import describe_invalid
from digest.notes.base import CallRecord
from digest.notes.bounded import AnswerTooLarge, Breaker, CappedTransport, answer_cap, too_large
from digest.notes.capabilities import FORMATS, Capabilities, OnFormat, response_format_param
from digest.notes.costs import Spending, call_cost
from digest.notes.prompts import MESSAGE_OVERHEAD_TOKENS, repair_messages
from digest.notes.tokens import count_tokens
from digest.text import shorten

log = logging.getLogger(__name__)

RETRY_AFTER_CAP_S = 60.0
RETRYABLE_STATUS = frozenset({408, 409, 429})
UNAVAILABLE_STATUS = frozenset({401, 403, 404})
# A refusal of the request's form may come as any of these: llama-cpp-python answers 500
FORM_REFUSED = frozenset({400, 422, 500})

OnCall = Callable[[CallRecord], None]
Parse = Callable[[str | None, bool], Any]  # (content, cut off by max_tokens) -> answer


@dataclass(frozen=True)
class Ask:
    """What one exchange with the model is for, and its limits."""

    purpose: str  # "note" or "week-summary"; a repair is "<purpose>-repair"
    model: str
    schema_name: str
    schema: dict[str, object]
    max_tokens: int
    who: str  # names the culprit in error messages
    item_id: int | None = None
    delimiter: str = ""
    messages: list[ChatCompletionMessageParam] = field(default_factory=list)
    prompt_tokens: int = 0  # of the first messages, counted once (a repair adds its own)

    def tokens_in(self) -> int:
        """The input of the next call, as the budget counts it (an upper bound)."""
        extra = sum(count_tokens(str(m.get("content", ""))) for m in self.messages[2:])
        return self.prompt_tokens + extra + MESSAGE_OVERHEAD_TOKENS * len(self.messages)


@dataclass
class Sends:
    """Requests sent for one answer, against how many it may send (None: no cap)."""

    allowed: int | None
    made: int = 0

    def left(self) -> bool:
        return self.allowed is None or self.made < self.allowed


class ChatCalls:
    """The calls of one run to one server: they remember its fallbacks, what the run has
    spent and whether the server still answers."""

    def __init__(
        self,
        config: LLMConfig,
        *,
        api_key: str,
        base_url: str | None,
        on_call: OnCall | None = None,
        known_formats: dict[str, str] | None = None,
        on_format: OnFormat | None = None,
        clock: Clock = utc_now,
        sleep: AsyncSleep = async_sleep,
    ) -> None:
        self.config = config
        self.clock = clock
        self.sleep = sleep
        self.capabilities = Capabilities(config, known_formats, on_format)
        self.spending = Spending(config)
        self._api_key = api_key
        self._base_url = base_url
        self._on_call = on_call
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: openai.AsyncOpenAI | None = None
        self._slots = asyncio.Semaphore(config.concurrency)
        self._preparing = asyncio.Semaphore(1)
        self._stopped: LLMUnavailable | None = None  # no more calls this run, and why
        self._breaker = Breaker()

    @property
    def where(self) -> str:
        return self._base_url or "api.openai.com"

    @asynccontextmanager
    async def preparing(self) -> AsyncIterator[None]:
        """One at a time: the CPU work before a call (condensing, counting), so that a crowd
        of threads does not starve the event loop, which waits on calls, of the GIL."""
        self._bind_to_running_loop()
        async with self._preparing:
            yield

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    # -- one answer: a call, and one repair if it does not validate ---------------

    async def answer(self, ask: Ask, parse: Parse, sends: Sends) -> Any:
        async with self._slot():
            try:
                return await self._answer_in_slot(ask, parse, sends)
            except LLMUnavailable as exc:
                self._stopped = self._stopped or exc  # calls waiting for a slot make none
                raise

    async def _answer_in_slot(self, ask: Ask, parse: Parse, sends: Sends) -> Any:
        if self._stopped is not None:
            raise self._stopped
        content, truncated = await self._complete(ask, ask.purpose, sends)
        try:
            return parse(content, truncated)
        except ValueError as exc:
            if not sends.left():
                raise _unusable(ask, "no usable answer", exc) from exc
            ask.messages.extend(repair_messages(content, describe_invalid(exc)))
        content, truncated = await self._complete(ask, f"{ask.purpose}-repair", sends)
        try:
            return parse(content, truncated)
        except ValueError as again:
            raise _unusable(ask, "no usable answer after one repair", again) from again

    @asynccontextmanager
    async def _slot(self) -> AsyncIterator[None]:
        self._bind_to_running_loop()
        async with self._slots:
            yield

    async def _complete(self, ask: Ask, purpose: str, sends: Sends) -> tuple[str | None, bool]:
        """The answer's content and whether max_tokens cut it off; retries transient failures
        while `sends` allows, and after a 400, 422 or 500 naming the response format (or the
        token parameter) asks again in the next one; any other 5xx is the server's fault."""
        attempt = 0
        while True:
            response_format = FORMATS[0]
            try:
                async with self.capabilities.probing(ask.model):
                    response_format = self.capabilities.response_format(ask.model)
                    answer = await self._call(ask, purpose, response_format, sends)
                self.capabilities.confirm(ask.model)
                return answer
            except openai.APIStatusError as exc:
                if (change := self._another_way(ask.model, response_format, exc)) is not None:
                    log.info("%s model %s: %s; asking with %s", self.where, ask.model,
                             _status(exc), change)  # fmt: skip
                    continue
                if exc.status_code in (400, 422):
                    raise SummarizeError(f"summarize failed: {ask.who}: {_status(exc)}") from exc
                await self._wait_to_retry(exc, attempt, ask.who, sends)
                attempt += 1
            except (openai.APIConnectionError, TimeoutError, AnswerTooLarge) as exc:
                if cap := too_large(exc):
                    raise SummarizeError(f"summarize failed: {ask.who}: {cap}") from exc
                await self._wait_to_retry(exc, attempt, ask.who, sends)
                attempt += 1

    def _another_way(
        self, model: str, response_format: str, exc: openai.APIStatusError
    ) -> str | None:
        """After a refusal of the request's form (a 400, 422 or 500 naming the response
        format or the token parameter): what to change before asking again, else None."""
        if exc.status_code not in FORM_REFUSED:
            return None
        return self.capabilities.another_way(model, response_format, _said(exc), exc.param)

    async def _wait_to_retry(self, exc: Exception, attempt: int, who: str, sends: Sends) -> None:
        """Waits before the next try of a transient failure; raises when none is left."""
        delay = self._retry_delay(exc, who)
        if attempt >= self.config.max_retries or not sends.left():
            raise self._gave_up(exc, attempt + 1, who) from exc
        if delay is None:
            delay = backoff_delay(attempt + 1, base_s=0.5, max_s=8.0).total_seconds()
        await self.sleep(delay)

    def _gave_up(self, exc: Exception, tries: int, who: str) -> SummarizeError:
        attempts = f"{tries} attempt{'s' if tries > 1 else ''}"
        if isinstance(exc, openai.APIConnectionError) and not isinstance(
            exc, openai.APITimeoutError
        ):
            # Nothing listens there: every other item would wait through the same retries.
            return LLMUnavailable(f"LLM unavailable: cannot connect to {self.where} ({attempts})")
        return SummarizeError(f"summarize failed: {who}: {_failure(exc, self.config)} ({attempts})")

    def _retry_delay(self, exc: Exception, who: str) -> float | None:
        """Seconds the server asked us to wait, if it did; raises when retrying cannot help."""
        if not isinstance(exc, openai.APIStatusError):
            return None
        if _no_quota(exc):
            raise LLMUnavailable(
                f"LLM unavailable: {self.where}: insufficient_quota: {shorten(exc.message, 200)}"
            )
        if exc.status_code in UNAVAILABLE_STATUS:
            raise LLMUnavailable(
                f"LLM unavailable: {self.where} model {self.config.model!r}: {_status(exc)}"
            )
        if exc.status_code not in RETRYABLE_STATUS and exc.status_code < 500:
            raise SummarizeError(f"summarize failed: {who}: {_status(exc)}")
        return retry_after_s(exc.response.headers, self.clock(), cap_s=RETRY_AFTER_CAP_S)

    async def _call(
        self, ask: Ask, purpose: str, response_format: str, sends: Sends
    ) -> tuple[str | None, bool]:
        client = self._bind_to_running_loop()
        estimate = ask.tokens_in()
        reserved = self.spending.reserve(ask.model, estimate, ask.max_tokens)
        reasoning = self.capabilities.token_param(ask.model) == "max_completion_tokens"
        started = time.monotonic()
        try:
            async with asyncio.timeout(self.config.timeout_s):
                completion = await client.chat.completions.create(
                    model=ask.model,
                    messages=ask.messages,
                    response_format=response_format_param(
                        response_format, ask.schema_name, ask.schema
                    ),
                    max_tokens=openai.omit if reasoning else ask.max_tokens,
                    max_completion_tokens=ask.max_tokens if reasoning else openai.omit,
                )
        except BaseException as exc:
            self.spending.settle(reserved, 0.0)
            sent = self._was_sent(ask.model, response_format, exc)
            sends.made += sent
            self._record(ask, purpose, 0, 0, started, ok=False, sent=sent)
            self._count_silence(exc)
            raise
        self._breaker.answered()
        sends.made += 1
        usage = completion.usage
        choice = completion.choices[0] if completion.choices else None
        content = choice.message.content if choice else None
        tokens_in = usage.prompt_tokens if usage else estimate
        tokens_out = usage.completion_tokens if usage else count_tokens(content or "")
        cost = self._record(ask, purpose, tokens_in, tokens_out, started, ok=True)
        self.spending.settle(reserved, cost)
        return content, choice is not None and choice.finish_reason == "length"

    def _count_silence(self, exc: BaseException) -> None:
        """After a call that got no answer (timed out, could not connect) and as many before
        it in a row: no more calls to this server in this run."""
        silent = isinstance(exc, TimeoutError | openai.APIConnectionError) and not too_large(exc)
        if not silent:
            self._breaker.answered()
        elif self._breaker.no_answer():
            raise LLMUnavailable(
                f"LLM unavailable: {self.where}: {self._breaker.silent} calls in a row got no"
                f" answer ({_failure(exc, self.config)}); no more calls this run"
            ) from exc

    def _was_sent(self, model: str, response_format: str, exc: BaseException) -> bool:
        """Whether a failed request counts as sent: not when nothing listened, nor when the
        server only refused a parameter that the next request changes (capabilities)."""
        if too_large(exc):
            return True  # the server worked on it: it sent too much
        if isinstance(exc, openai.APIConnectionError):
            return isinstance(exc, openai.APITimeoutError)
        if isinstance(exc, openai.APIStatusError) and _refused(exc):
            return False  # rate limited, no key, no quota, no such model: nothing worked on
        if isinstance(exc, openai.APIStatusError) and exc.status_code in FORM_REFUSED:
            return not self.capabilities.would_change(model, response_format, _said(exc), exc.param)
        return True

    def _record(
        self,
        ask: Ask,
        purpose: str,
        tokens_in: int,
        tokens_out: int,
        started: float,
        *,
        ok: bool,
        sent: bool = True,
    ) -> float:
        cost = call_cost(self.config, ask.model, tokens_in, tokens_out)
        duration = round(time.monotonic() - started, 3)
        record = CallRecord(
            ask.model, purpose, tokens_in, tokens_out, duration, ok, cost, ask.item_id, sent
        )
        if self._on_call is not None:
            self._on_call(record)
        return cost

    def _bind_to_running_loop(self) -> openai.AsyncOpenAI:
        """The client and the concurrency bound belong to the event loop that uses them."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._loop = loop
            self._slots = asyncio.Semaphore(self.config.concurrency)
            self._preparing = asyncio.Semaphore(1)
            self.capabilities.rebind()
            self._client = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self._base_url,
                timeout=self.config.timeout_s,
                max_retries=0,
                http_client=openai.DefaultAsyncHttpxClient(
                    transport=CappedTransport(answer_cap(self.config))
                ),
            )
        return self._client


def _unusable(ask: Ask, what: str, exc: ValueError) -> UnusableAnswer:
    return UnusableAnswer(f"summarize failed: {ask.who}: {what}: {describe_invalid(exc)}")


# -- errors and retries -------------------------------------------------------


def _no_quota(exc: openai.APIStatusError) -> bool:
    return exc.code == "insufficient_quota" or exc.type == "insufficient_quota"


def _refused(exc: openai.APIStatusError) -> bool:
    """Refused before any work (rate limited, or the run stops: LLMUnavailable): the request
    is not one of the item's sends."""
    return exc.status_code == 429 or _no_quota(exc) or exc.status_code in UNAVAILABLE_STATUS


def _said(exc: openai.APIStatusError) -> str:
    """The error's message and its whole body: servers that validate with FastAPI put the
    parameter's name in `detail`, where the client does not look for a message."""
    body = exc.body if isinstance(exc.body, str) else json.dumps(exc.body, default=str)
    return f"{exc.message} {body}"


def _status(exc: openai.APIStatusError) -> str:
    return f"HTTP {exc.status_code}: {shorten(exc.message, 200)}"


def _failure(exc: BaseException, config: LLMConfig) -> str:
    if isinstance(exc, TimeoutError | openai.APITimeoutError):
        return f"no answer within {config.timeout_s:g}s"
    if isinstance(exc, openai.APIStatusError):
        return _status(exc)
    return f"{type(exc).__name__}: {exc}"
