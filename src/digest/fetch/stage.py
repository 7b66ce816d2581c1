"""The fetch stage: due items fetched and extracted (fetch.pages reads each page), posts'
links followed, shortened links settled under the page they lead to; outcomes stored in
batches as they come."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from digest import lifecycle
from digest.clock import REAL_WAITS, Clock, Progress, Waits, no_progress
from digest.config import FetchConfig
from digest.errors import (
    DigestError,
    ExtractError,
    FailureKind,
    FetchError,
    NoNetwork,
    SkippedContent,
    UnreadableDocument,
    unit_bug,
)
from digest.fetch.features import fill_missing_features
from digest.fetch.pages import Page, PageReader, page_reader
from digest.fetch.worker import with_features
from digest.lifecycle.fetching import FETCH_WHEN_ONLINE
from digest.models import Item, ItemKind, ItemState, Stage, StageReport
from digest.runtime.context import RunContext, StageOutcome
from digest.runtime.tasks import run_together
from digest.store import Store, url_key
from digest.text import paragraphs, shorten
from digest.urls import is_shortener

if TYPE_CHECKING:
    import requests

MAX_POST_LINKS = 5  # links followed per post
WRITE_BATCH = 64  # fetch outcomes stored in one transaction...
WRITE_EVERY_S = 1.0  # ...or fewer, after this long: a slow run keeps its pages as it goes
LINKED_PARAGRAPH_CHARS = 400


class FetchRun:
    """One run of the fetch stage over one store."""

    def __init__(
        self,
        store: Store,
        config: FetchConfig,
        clock: Clock,
        progress: Progress = no_progress,
        waits: Waits = REAL_WAITS,
        video_session: requests.Session | None = None,  # tests: leads to a stand-in
    ) -> None:
        from digest.fetch.videos import VideoWords  # requests and its kin: when fetching

        self.store = store
        self.videos = VideoWords(config, video_session)
        self.waits = waits
        self.config = config
        self.clock = clock
        self.progress = progress
        self.shorteners = frozenset(config.shortener_hosts)
        self.report = StageReport(Stage.FETCH)
        self.backoff = lifecycle.Backoff(
            config.retry_base_s, config.retry_max_s, config.max_attempts
        )
        self._finished = 0
        self._left = Counter[str]()  # not tried for want of a network, by _waiting_as
        self._unresolved: list[tuple[Item, Callable[[], None]]] = []  # see _settle_unresolved
        self._unread_links: list[tuple[int, int, str]] = []  # (post id, links unread, first why)
        self._unwritten: list[lifecycle.FetchSucceeded | lifecycle.FetchFailed] = []
        self._written_at = time.monotonic()

    async def run(self, due: Sequence[Item], posts: Sequence[Item]) -> StageReport:
        """Fetch the `due` link items and follow the links of `posts`."""
        if not due and not posts:
            return self.report
        links = sum(len(post.links[:MAX_POST_LINKS]) for post in posts)
        total = len(due) + len(posts)
        async with page_reader(
            self.config, self.clock, len(due) + links, self.waits, self.report.info.append
        ) as reader:
            fetches = (self._fetch_item(reader, item) for item in by_host_in_turn(due))
            follows = (self._follow_links(reader, post) for post in posts)
            try:
                await run_together(
                    self._counted(work, total) for work in itertools.chain(fetches, follows)
                )
                self._settle_unresolved(reader.fetcher.offline)
            finally:
                self._write()
        self._report_unread_links()
        if (line := self.videos.line()) is not None:
            self.report.info.append(line)
        return self.report

    def _settle_unresolved(self, offline: str | None) -> None:
        """A name that does not resolve is the host's fault or the network's, known once
        the run's lookups are over: without a network, none of those pages was tried (not
        only those after the verdict: which lookups go first is a matter of timing)."""
        if offline is None:
            for _, apply in self._unresolved:
                apply()
            return
        self._left.update(_waiting_as(item) for item, _ in self._unresolved)
        self._say_offline(offline)

    def _say_offline(self, offline: str) -> None:
        """One line for what a run without a network left for a later run, in place of a
        failure per page, counted as `digest status` counts it (lifecycle.NotFetched): not
        failed, since none was tried."""
        waiting = lifecycle.NotFetched(self._left["pages"], self._left["posts"])
        parts = [waiting.describe()] if waiting.total else []
        if again := self._left["again"]:
            parts.append(f"{again} page{'' if again == 1 else 's'} due again not tried")
        self.report.failed_units = len(self.report.failures)  # those tried, and failed
        self.report.failures.append(f"{offline}: {', '.join(parts)}; {FETCH_WHEN_ONLINE}")
        self.report.left = self._left.total()
        self.report.offline = True

    def _report_unread_links(self) -> None:
        """One line for the posts whose links could not be read: they are not failed items
        (each is noted from its own text), so that the counts agree with `status`."""
        if not self._unread_links:
            return
        post, links, why = min(self._unread_links)
        posts = len(self._unread_links)
        if posts == 1:
            plural = "" if links == 1 else "s"
            self.report.info.append(f"post {post}: {links} link{plural} not read ({why})")
        else:
            unread = sum(count for _, count, _ in self._unread_links)
            self.report.info.append(
                f"{unread} links of {posts} posts not read (post {post}: {why});"
                " the posts are noted from their own text"
            )

    async def _counted(self, work: Awaitable[None], total: int) -> None:
        await work
        self._finished += 1
        self.progress(Stage.FETCH, self._finished, total)

    async def _fetch_item(self, reader: PageReader, item: Item) -> None:
        assert item.url is not None
        try:
            page = await reader.read(item.url, item)
        except NoNetwork:  # not the page's fault: no attempt recorded
            self._left[_waiting_as(item)] += 1
            return
        except DigestError as exc:
            if _unresolved(exc):
                self._unresolved.append((item, functools.partial(self._record_failure, item, exc)))
            else:
                self._record_failure(item, exc)
            return
        except Exception as exc:  # a bug: this item fails and is retried later, the others go on
            self._record_failure(item, ExtractError(unit_bug(f"item {item.id} ({item.url})", exc)))
            return
        item_id = self._settle_shortened(item, page.result.final_url)
        read = await self.videos.read(item.url, page.extracted)
        if read is not page.extracted:  # a transcript: the worker's features were the page's
            read = with_features(read, item)
        text_hash = hashlib.sha256(read.text.encode()).hexdigest()
        self._store(
            lifecycle.fetch_succeeded(
                item, read, text_hash, self.clock(), self.backoff, item_id=item_id
            )
        )
        self.report.done += 1

    def _store(self, intent: lifecycle.FetchSucceeded | lifecycle.FetchFailed) -> None:
        self._unwritten.append(intent)
        if len(self._unwritten) >= WRITE_BATCH or time.monotonic() >= (
            self._written_at + WRITE_EVERY_S
        ):
            self._write()

    def _write(self) -> None:
        """Store the outcomes not stored yet, in one transaction."""
        if self._unwritten:
            self.store.apply_fetches(self._unwritten)
            self._unwritten.clear()
        self._written_at = time.monotonic()

    def _settle_shortened(self, item: Item, final_url: str) -> int:
        """A shortened link's item takes the key of where it led, or merges into the item
        saved there; the id of the item that holds the page."""
        if item.url is None or not is_shortener(item.url, self.shorteners):
            return item.id
        self._write()  # what is pending was decided for the items as they are now
        try:
            key = url_key(final_url)
        except ValueError:
            return item.id
        return item.id if key == item.key else self.store.move_to_key(item.id, key)

    def _record_failure(self, item: Item, exc: DigestError) -> None:
        intent = lifecycle.fetch_failed(
            item,
            str(exc),
            self.clock(),
            self.backoff,
            retry_after_s=getattr(exc, "retry_after", None),
            permanent=getattr(exc, "permanent", False),
            final=isinstance(exc, SkippedContent | UnreadableDocument),
            kind=exc.kind if isinstance(exc, FetchError) else FailureKind.EXTRACT,
            status=exc.status if isinstance(exc, FetchError) else None,
        )
        self._store(intent)
        next_attempt = intent.next_attempt_at
        when = f"will retry after {next_attempt:%Y-%m-%d %H:%M} UTC" if next_attempt else "given up"
        self.report.failures.append(f"{exc}; {when}")

    async def _follow_links(self, reader: PageReader, post: Item) -> None:
        """Resolve a post's first links to where they lead and keep what those pages say."""
        links = post.links[:MAX_POST_LINKS]
        outcomes = await asyncio.gather(*(_read_or_error(reader, link) for link in links))
        if any(isinstance(outcome, NoNetwork) for outcome in outcomes):
            self._left[_waiting_as(post)] += 1  # followed on a run with a network
        elif any(_unresolved(outcome) for outcome in outcomes):
            self._unresolved.append((post, functools.partial(self._links_read, post, outcomes)))
        else:
            self._links_read(post, outcomes)

    def _links_read(self, post: Item, outcomes: Sequence[Page | DigestError]) -> None:
        links = post.links[:MAX_POST_LINKS]
        pages = [outcome for outcome in outcomes if isinstance(outcome, Page)]
        errors = [str(outcome) for outcome in outcomes if not isinstance(outcome, Page)]
        resolved = [
            outcome.result.final_url if isinstance(outcome, Page) else link
            for link, outcome in zip(links, outcomes, strict=True)
        ]
        followed = lifecycle.links_followed(
            post,
            dict.fromkeys(resolved + list(post.links[MAX_POST_LINKS:])),
            "\n".join(linked_line(page) for page in pages) or None,
            "; ".join(errors) or None,
            self.clock(),
        )
        self.store.apply_links_followed(followed)
        self.report.done += 1  # the post itself is read: it is noted from its own text
        if errors:
            self._unread_links.append((post.id, len(errors), errors[0]))


def _waiting_as(item: Item) -> str:
    """What an item not tried for want of a network is, for the run's line: a page never
    fetched, a post whose links were never followed, or a page due again."""
    if item.kind is ItemKind.POST:
        return "posts"
    return "pages" if item.state is ItemState.NEW else "again"


def _unresolved(outcome: object) -> bool:
    return isinstance(outcome, FetchError) and outcome.kind is FailureKind.UNRESOLVED


async def _read_or_error(reader: PageReader, url: str) -> Page | DigestError:
    """A linked page, or why there is none: a bot wall in front of it is no page."""
    try:
        page = await reader.read(url)
    except DigestError as exc:
        return exc
    if page.extracted.quality == lifecycle.Quality.BLOCKED:
        return FetchError("the page was a bot check", url=url)
    return page


def linked_line(page: Page) -> str:
    """ "Linked: <title> — <first paragraph>", what a post's note learns from a linked page."""
    title = page.extracted.title or page.result.final_url
    first = next(iter(paragraphs(page.extracted.text)), "")
    return f"Linked: {title} — {shorten(first, LINKED_PARAGRAPH_CHARS)}"


def by_host_in_turn(items: Sequence[Item]) -> list[Item]:
    """One item per host in turn, so that no host's politeness delay holds up the others."""
    queues: dict[str, list[Item]] = {}
    for item in items:
        queues.setdefault(urlsplit(item.url or "").hostname or "", []).append(item)
    turns = itertools.zip_longest(*queues.values())
    return [item for turn in turns for item in turn if item is not None]


@dataclass(frozen=True)
class FetchStage:
    """The fetch stage as a run makes it: the link items due at the run's time (every failed
    one with `retry`, whatever its backoff says), the new posts' links, then the features of
    items that have none (fetch.features)."""

    retry: bool = False

    async def run(self, run: RunContext) -> StageOutcome:
        due = lifecycle.items_due_for_fetch(
            run.store.fetch_candidates(), run.clock(), retry=self.retry
        )
        fetches = FetchRun(run.store, run.config.fetch, run.clock, run.progress, run.waits)
        report = await fetches.run(due, run.store.posts_to_follow())
        fill_missing_features(run.store)
        if run.run_id is not None:
            run.store.record_fetch(run.run_id, report.done, offline=report.offline)
        return StageOutcome([report])
