"""Collecting a mail source: its new letters, each read once, as items.

A letter kept whole is one item of kind newsletter: its subject as title, its text (footers
and sponsor blocks left out) as a fetched page's, never fetched. A roundup gives a link item
per story instead, its blurb as saved context, merged by URL with the same story saved
elsewhere. Either way the items remember the newsletter they came in. A letter that cannot
be read is one line naming it, and is read again next time; the others go on."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from digest.collect.mail.boxes import (
    Envelope,
    file_letters,
    imap_file_away,
    imap_folder_state,
    imap_letters,
    imap_session,
)
from digest.collect.mail.letters import Letter, letter_of
from digest.collect.mail.roundup import read_body
from digest.config import SourceConfig
from digest.errors import DigestError, SourceError, unit_bug
from digest.lifecycle import LetterRead, SourceChecked, SourceFailed, letter_read
from digest.models import ItemKind, SavedItem, Stage, StageReport
from digest.store import Store


@dataclass
class _Tally:
    letters: int = 0
    roundups: int = 0
    stories: int = 0
    empty: int = 0  # nothing left once footers and sponsor blocks were taken out
    read_uids: list[int] = field(default_factory=list)
    failed_uids: list[int] = field(default_factory=list)


def collect_mail_source(
    store: Store, source: SourceConfig, source_id: int, now: datetime
) -> StageReport:
    """The source's new letters; `done` counts new items. A source that cannot be read (a
    missing path, a refused login) is one failure line naming it, and marked failing."""
    report = StageReport(Stage.COLLECT, part="mail")
    tally = _Tally()
    try:
        if source.kind == "imap":
            _collect_imap(store, source, source_id, now, report, tally)
        else:
            _read(store, source, source_id, file_letters(source), now, report, tally)
    except SourceError as exc:
        report.failures.append(str(exc))
        store.apply_source(SourceFailed(source_id, str(exc), now))
        return report
    if tally.letters:
        report.info.append(_described(source.name, tally))
    store.apply_source(SourceChecked(source_id, now))
    return report


def _collect_imap(
    store: Store,
    source: SourceConfig,
    source_id: int,
    now: datetime,
    report: StageReport,
    tally: _Tally,
) -> None:
    with imap_session(source) as box:
        state = imap_folder_state(box, source.folder)
        stored = store.mail_folder(source_id, source.folder)
        after = stored[1] if stored is not None and stored[0] == state.uidvalidity else 0
        envelopes = imap_letters(box, source.folder, after)
        last = _read(store, source, source_id, envelopes, now, report, tally)
        if tally.failed_uids:  # read again next time, and what came after them too
            last = min(tally.failed_uids) - 1
        store.save_mail_folder(source_id, source.folder, state.uidvalidity, max(last, after))
        imap_file_away(box, source, tally.read_uids)


def _read(
    store: Store,
    source: SourceConfig,
    source_id: int,
    envelopes: Iterable[Envelope],
    now: datetime,
    report: StageReport,
    tally: _Tally,
) -> int:
    """Read the letters not read before; the last IMAP UID seen (0 for none)."""
    last_uid = 0
    for envelope in envelopes:
        last_uid = max(last_uid, envelope.uid or 0)
        try:
            letter = letter_of(envelope.message)
            if not letter.matches(source.senders, source.lists):
                continue
            if store.letters_read(source_id, [letter.key]):
                continue
            intent = letter_intent(letter, source, source_id, now)
            report.done += store.apply_letter(intent).new
        except DigestError:
            raise
        except Exception as exc:  # a bug on one letter: it is named, the others go on
            report.failures.append(unit_bug(f"{source.name}: {envelope.where}", exc))
            if envelope.uid is not None:
                tally.failed_uids.append(envelope.uid)
            continue
        _count(tally, intent, envelope)
    return last_uid


def letter_intent(
    letter: Letter, source: SourceConfig, source_id: int, now: datetime
) -> LetterRead:
    """What the letter gives: a roundup's stories, else the letter itself with its text."""
    body = read_body(letter.html, letter.plain)
    if body.stories:
        stories = (
            SavedItem(
                url=story.url,
                title=story.title,
                saved_at=letter.date,
                topic=source.topic,
                context=story.blurb or None,
            )
            for story in body.stories
        )
        return letter_read(source_id, letter.key, letter.sender, stories, None, now)
    if not body.text:
        return letter_read(source_id, letter.key, letter.sender, (), None, now)
    own = SavedItem(
        url=None,
        title=letter.subject,
        saved_at=letter.date,
        topic=source.topic,
        kind=ItemKind.NEWSLETTER,
        key="mail:" + hashlib.sha256(letter.key.encode()).hexdigest()[:32],
    )
    return letter_read(source_id, letter.key, letter.sender, (own,), body.text, now)


def _count(tally: _Tally, intent: LetterRead, envelope: Envelope) -> None:
    tally.letters += 1
    if envelope.uid is not None:
        tally.read_uids.append(envelope.uid)
    if not intent.items:
        tally.empty += 1
    elif intent.text is None:
        tally.roundups += 1
        tally.stories += len(intent.items)


def _described(name: str, tally: _Tally) -> str:
    parts = [f"{name}: {tally.letters} new letter{'s' if tally.letters != 1 else ''}"]
    if tally.roundups:
        parts.append(f"{tally.stories} stories from {tally.roundups} roundup(s)")
    if tally.empty:
        parts.append(f"{tally.empty} with nothing but sponsor blocks and footers")
    return ", ".join(parts)
