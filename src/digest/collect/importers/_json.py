"""The common frame of the JSON export importers: load, walk the records, sniff by keys.

A record's `line` is its position among the file's records (1 for the first),
since a JSON export's layout on lines says nothing about its records.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, BinaryIO
from zoneinfo import ZoneInfo

import ijson

from digest.collect.formats import STREAM_BLOCK, ByteSource, ImportResult
from digest.collect.importers.common import (
    add_item,
    join_context,
    pick_topic,
    record_time,
    snippet,
    split_tags,
)
from digest.errors import ImportFormatError, bug_reason, unit_bug
from digest.models import Rejected, SavedItem

_JS_WRAPPER = re.compile(r"^\s*window\.YTD\.[\w.]+\s*=\s*")

Record = dict[str, Any]


def load_json(text: str, name: str) -> Any:
    """The parsed document; the JS wrapper of a Twitter archive is taken off first.

    Several values back to back (`gh api --paginate` prints one array per page, JSON
    Lines one object per line) are read as one list, and a list of pages (`gh api
    --paginate --slurp`) as the list of their records.
    """
    body = _JS_WRAPPER.sub("", text.lstrip("\ufeff"), count=1)
    values = _values(body, name)
    if len(values) == 1:
        return _joined_pages(values[0])
    return _joined_pages(values) if all(isinstance(v, list) for v in values) else values


def _values(body: str, name: str) -> list[Any]:
    decoder = json.JSONDecoder()
    values: list[Any] = []
    position = _skip_space(body, 0)
    while position < len(body) or not values:
        try:
            value, position = decoder.raw_decode(body, position)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(
                f"not a {name} export: invalid JSON at line {exc.lineno} column {exc.colno}:"
                f" {exc.msg}"
            ) from exc
        except RecursionError as exc:
            raise ImportFormatError(f"not a {name} export: JSON nested too deep") from exc
        values.append(value)
        position = _skip_space(body, position)
    return values


def _skip_space(body: str, position: int) -> int:
    while position < len(body) and body[position] in " \t\r\n":
        position += 1
    return position


def _joined_pages(value: Any) -> Any:
    """A list of lists (pages of records) as one list of records; anything else as it is."""
    if isinstance(value, list) and value and all(isinstance(page, list) for page in value):
        return [record for page in value for record in page]
    return value


def keys(*names: str) -> tuple[re.Pattern[str], ...]:
    """Patterns for JSON object keys, for sniffing a head that may be cut mid-document."""
    return tuple(re.compile(rf'"{name}"\s*:') for name in names)


def text_of(record: Record, *names: str) -> str | None:
    """The first of `names` whose value is a non-empty string (numbers become text)."""
    for name in names:
        value = record.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def first_of(record: Record, *names: str) -> Any:
    for name in names:
        if record.get(name) not in (None, ""):
            return record[name]
    return None


def nested(record: Record, name: str, default: Record | None = None) -> Record:
    """The object under `name`, else `default` (an empty object when not given)."""
    value = record.get(name)
    if isinstance(value, dict):
        return value
    return {} if default is None else default


def as_list(value: Any, *wrappers: str) -> list[Any]:
    """`value` if it is a list, else the first list found under one of `wrappers`."""
    if isinstance(value, list):
        return value
    if isinstance(value, dict):
        for name in wrappers:
            inner = value.get(name)
            if isinstance(inner, list):
                return inner
    return []


@dataclass(frozen=True)
class LinkFields:
    """Which keys of a flat bookmark record mean what; the first present of each wins."""

    url: tuple[str, ...]
    title: tuple[str, ...]
    time: str
    tags: str
    context: tuple[str, ...] = ()


class JsonExport:
    """Sniffs by keys, loads the file and hands each object record to `add`.

    A flat bookmark format only declares its `fields`; others override `add`.
    """

    name = ""
    description = ""
    markers: tuple[re.Pattern[str], ...] = ()  # every one must be in the head
    score = 90
    fields: LinkFields | None = None
    appendable = False  # records are numbered, not lines

    def sniff(self, head: str) -> int:
        start = _JS_WRAPPER.sub("", head.lstrip("\ufeff"), count=1).lstrip()
        if not start.startswith(("{", "[")):
            return 0
        return self.score if all(m.search(head) for m in self.markers) else 0

    # Where ijson finds the records of a big file (its paths: "item" for a top-level list,
    # several lists back to back too); none: the export is read whole whatever its size.
    stream_prefixes: tuple[str, ...] = ()

    def parse(self, text: str, *, zone: ZoneInfo) -> ImportResult:
        data = load_json(text, self.name)
        records = self.records(data)
        if records is None:
            raise ImportFormatError(f"not a {self.name} export: no list of records where expected")
        result = ImportResult()
        for number, record in enumerate(records, 1):
            self._read(result, record, number, zone)
        return result

    def parse_file(self, open_file: ByteSource, *, zone: ZoneInfo) -> Iterator[ImportResult]:
        """The records of a big export read one at a time (ijson), in blocks of items, so
        that memory does not grow with the file."""
        result = ImportResult()
        with open_file() as file:
            found = values_at(after_wrapper(file), frozenset(self.stream_prefixes))
            try:
                for number, record in enumerate(self.streamed(found), 1):
                    self._read(result, record, number, zone)
                    if len(result.items) >= STREAM_BLOCK:
                        yield result
                        result = ImportResult()
            except ijson.JSONError as exc:
                raise ImportFormatError(f"not a {self.name} export: invalid JSON: {exc}") from exc
        yield result

    def streamed(self, found: Iterator[tuple[str, Any]]) -> Iterator[Any]:
        """The records of the values found at `stream_prefixes` (with their paths): each
        value, or the records of a page (a list of them, `gh api --paginate --slurp`)."""
        for _, value in found:
            yield from value if isinstance(value, list) else [value]

    def _read(self, result: ImportResult, record: object, number: int, zone: ZoneInfo) -> None:
        if not isinstance(record, dict):
            result.rejected.append(Rejected(number, snippet(record), "not an object"))
            return
        try:
            self.add(result, record, number, zone)
        except Exception as exc:  # a bug: this record is rejected, the others are read
            reject(result, number, record, bug_reason(exc))
            unit_bug(f"{self.name} record {number}", exc)

    def records(self, data: Any) -> Iterator[Any] | None:
        found = as_list(data)
        return iter(found) if isinstance(data, list) else None

    def add(self, result: ImportResult, record: Record, number: int, zone: ZoneInfo) -> None:
        self.add_link(result, record, number, zone)

    def add_link(
        self,
        result: ImportResult,
        record: Record,
        number: int,
        zone: ZoneInfo,
        *,
        folder: str | None = None,
    ) -> None:
        """The record as a link item by `fields`; `folder` is the topic when no tag is."""
        fields = self.fields
        assert fields is not None, f"{self.name}: a JsonExport without fields must override add"
        url = text_of(record, *fields.url)
        if url is None:
            return reject(result, number, record, f"no {fields.url[0]}")
        item = SavedItem(
            url=url,
            title=text_of(record, *fields.title),
            saved_at=record_time(result, record.get(fields.time), zone, line=number, raw=record),
            topic=pick_topic(split_tags(record.get(fields.tags)), folder),
            context=join_context(*(text_of(record, name) for name in fields.context)),
            line=number,
        )
        add_item(result, item, raw=record)


def values_at(file: BinaryIO, prefixes: frozenset[str]) -> Iterator[tuple[str, Any]]:
    """Each value at one of `prefixes` (ijson's paths) of the JSON in `file`, with its
    path, built one at a time: a value found is not looked into for more."""
    # numbers as json reads them: ints of any size (ijson's use_float fails past 64 bits)
    events = (
        (prefix, event, float(value) if isinstance(value, Decimal) else value)
        for prefix, event, value in ijson.parse(file, multiple_values=True)
    )
    for prefix, event, value in events:
        if prefix not in prefixes or event in ("map_key", "end_map", "end_array"):
            continue
        if event not in ("start_map", "start_array"):
            yield prefix, value
            continue
        builder, depth = ijson.ObjectBuilder(), 1
        builder.event(event, value)
        for _, event, value in events:
            depth += {"start_map": 1, "start_array": 1, "end_map": -1, "end_array": -1}.get(
                event, 0
            )
            if not depth:
                break
            builder.event(event, value)
        yield prefix, builder.value


def after_wrapper(file: BinaryIO) -> BinaryIO:
    """`file` from its JSON on: past a UTF-8 BOM and a Twitter archive's JS wrapper."""
    head = file.read(4096)
    start = len(codecs.BOM_UTF8) if head.startswith(codecs.BOM_UTF8) else 0
    wrapper = _JS_WRAPPER_BYTES.match(head, start)
    file.seek(wrapper.end() if wrapper else start)
    return file


_JS_WRAPPER_BYTES = re.compile(rb"\s*window\.YTD\.[\w.]+\s*=\s*")


def reject(result: ImportResult, number: int, record: object, reason: str) -> None:
    result.rejected.append(Rejected(number, snippet(record), reason))
