"""A response body read within bounds: decoded a bounded piece at a time, so that a
compression bomb stops at the cap (only gzip and deflate: no bounded brotli decoder ships
with Python), cut or refused past max_bytes, and held back while its first bytes may
say binary."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import httpx

from digest.errors import FailureKind, FetchError, SkippedContent
from digest.extract.sniff import SNIFF_BYTES, is_probably_binary, parse_content_type, sniff_binary


class Sink(Protocol):
    """Where get() streams the final response's body instead of keeping it (a file)."""

    def write(self, data: bytes, /) -> object: ...


class BinaryGate:
    """Holds back a body's first SNIFF_BYTES; raises SkippedContent (which hangs up) when
    they and the Content-Type say binary, else passes everything on to `sink`."""

    def __init__(self, url: str, content_type: str | None, sink: Sink) -> None:
        self.url, self.content_type, self.sink = url, content_type, sink
        self.head: bytearray | None = bytearray()

    def write(self, data: bytes) -> None:
        if self.head is None:
            self.sink.write(data)
            return
        self.head += data
        if len(self.head) >= SNIFF_BYTES:
            self.close()

    def close(self) -> None:
        """Decide on what came so far (the whole body, when short)."""
        if self.head is None:
            return
        head, self.head = bytes(self.head), None
        if is_probably_binary(self.content_type, head[:SNIFF_BYTES]):
            label = sniff_binary(head) or parse_content_type(self.content_type)[0] or "unknown"
            raise SkippedContent(f"skipped: {self.url!r}: binary content ({label}), not downloaded")
        self.sink.write(head)


async def read_capped(
    response: httpx.Response,
    url: str,
    max_bytes: int,
    write: Callable[[bytes], object],
    truncate: bool = False,
) -> bool:
    """Write the decoded body, stopping as soon as it would exceed max_bytes (bombs too):
    FetchError, or with `truncate` the first max_bytes written and True."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes and not _encoded(response) and not truncate:
        raise _too_large(url, max_bytes)
    decoder = _Decoder(response.headers.get("content-encoding", ""), url)
    size = 0
    async for raw in response.aiter_raw():
        for chunk in decoder.feed(raw, max_bytes - size + 1):
            if size + len(chunk) > max_bytes:
                return _cut(url, max_bytes, write, chunk[: max_bytes - size], truncate)
            size += len(chunk)
            write(chunk)
    tail = decoder.finish()
    if size + len(tail) > max_bytes:
        return _cut(url, max_bytes, write, tail[: max_bytes - size], truncate)
    write(tail)
    return False


def _cut(
    url: str, max_bytes: int, write: Callable[[bytes], object], last: bytes, truncate: bool
) -> bool:
    if not truncate:
        raise _too_large(url, max_bytes)
    write(last)
    return True


def _encoded(response: httpx.Response) -> bool:
    coding: str = response.headers.get("content-encoding", "identity")
    return coding.strip().lower() != "identity"


def _too_large(url: str, max_bytes: int) -> FetchError:
    return FetchError(
        f"body larger than {max_bytes} bytes", url=url, permanent=True, kind=FailureKind.TOO_LARGE
    )


class _Decoder:
    """Undo gzip/deflate a bounded piece at a time: never more than `limit` bytes per step."""

    def __init__(self, encoding: str, url: str) -> None:
        codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
            raise FetchError(f"unsupported Content-Encoding {encoding!r}", url=url, permanent=True)
        self.coding = codings[0] if codings else None
        self.url = url
        self._zlib: Any = None

    def feed(self, data: bytes, limit: int) -> Iterable[bytes]:
        if self.coding is None:
            yield data
            return
        while data:
            if self._zlib is None:
                self._zlib = zlib.decompressobj(self._wbits(data))
            try:
                out: bytes = self._zlib.decompress(data, max(limit, 1))
            except zlib.error as exc:
                raise FetchError(f"bad {self.coding} body", url=self.url) from exc
            yield out
            limit -= len(out)
            if not self._zlib.eof:
                data = self._zlib.unconsumed_tail
                continue
            data = self._zlib.unused_data  # gzip may hold several members; deflate one
            self._zlib = None
            if self.coding == "deflate" or not data.startswith(b"\x1f\x8b"):
                data = b""

    def finish(self) -> bytes:
        return bytes(self._zlib.flush()) if self._zlib is not None else b""

    def _wbits(self, head: bytes) -> int:
        if self.coding != "deflate":
            return 16 + zlib.MAX_WBITS
        zlib_header = len(head) >= 2 and head[0] & 0x0F == 8 and (head[0] << 8 | head[1]) % 31 == 0
        return zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS
