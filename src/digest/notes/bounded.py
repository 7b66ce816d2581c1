"""Bounds on what one model server can cost a run: the bytes of one answer, and the calls made
to a server that keeps timing out or refusing connections.

A note is a few hundred tokens; a server that streams megabytes (a runaway generation, a
misrouted download) is cut off once an answer passes `answer_cap` bytes, before it is held in
memory. The client library reads answers through httpx2 (its own dependency): the cap sits in
the transport, where the bytes arrive.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2

from digest.config import LLMConfig

BYTES_PER_TOKEN = 32  # a token is ~4 characters; JSON may escape each as \uXXXX, twice
ROOM_BYTES = 64 * 1024  # the envelope: ids, usage, a reasoning field, headers' worth of slack
BREAKER_CALLS = 3  # calls in a row that time out or cannot connect: no more calls this run


def answer_cap(config: LLMConfig) -> int:
    """The most bytes an answer may have: room for the longest answer asked for, and more."""
    tokens = max(config.max_output_tokens, config.summary_max_output_tokens)
    return tokens * BYTES_PER_TOKEN + ROOM_BYTES


class AnswerTooLarge(Exception):
    """The server sent more than the cap; the rest was not read."""

    def __init__(self, cap: int) -> None:
        super().__init__(f"the answer was larger than {cap:,} bytes; the rest was not read")
        self.cap = cap


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, cap: int) -> None:
        self._inner = inner
        self._cap = cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        async for chunk in self._inner:
            read += len(chunk)
            if read > self._cap:
                raise AnswerTooLarge(self._cap)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class CappedTransport(httpx2.AsyncBaseTransport):
    """httpx2's own transport, with every response body cut off past `cap` bytes."""

    def __init__(self, cap: int) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._cap = cap

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if isinstance(response.stream, httpx2.AsyncByteStream):
            response.stream = _CappedStream(response.stream, self._cap)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def too_large(exc: BaseException | None) -> AnswerTooLarge | None:
    """The cap behind a failed call, however the client wrapped it."""
    for _depth in range(8):  # a chain of causes is short; a cycle is not followed forever
        if exc is None or isinstance(exc, AnswerTooLarge):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


class Breaker:
    """Counts calls in a row that got no answer at all (timed out, could not connect)."""

    def __init__(self) -> None:
        self.silent = 0

    def answered(self) -> None:
        self.silent = 0

    def no_answer(self) -> bool:
        """One more silent call; True when the run should call this server no more."""
        self.silent += 1
        return self.silent >= BREAKER_CALLS
