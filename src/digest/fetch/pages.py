"""The page reader: one URL fetched and extracted per call, within the run's limits.

Fetching is I/O on the event loop, extraction is CPU. For a batch big enough to pay for
starting them, extraction runs in worker processes, one per core, while the loop goes on
fetching. A worker gets a body as a file the parent streamed it into, never as bytes
pickled through the pool's pipe (which would cost the parent a core), and at most
`backlog` pages are between "fetch begun" and "extracted" at once: memory and disk stay
bounded whatever the size of the batch.
"""

from __future__ import annotations

import asyncio
import gc
import io
import itertools
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from multiprocessing import forkserver, get_context
from multiprocessing.context import BaseContext
from pathlib import Path

from digest import lifecycle
from digest.clock import Clock, Waits
from digest.config import FetchConfig
from digest.errors import ExtractError
from digest.extract import extract
from digest.fetch.client import Fetcher, FetchResult, check_status, describe_error, is_challenge
from digest.fetch.worker import extract_file, with_features
from digest.models import Extracted, Item

# what the fork server imports for the workers (the extractors import their readers on use),
# and the tables the workers' page features read, loaded there once for all of them
WORKER_MODULES = (
    "digest.fetch.worker",
    "digest.extract.html",
    "digest.extract.documents",
    "digest.fetch.worker_tables",
)
PROCESS_POOL_THRESHOLD = 8  # fewer pages than this are extracted in-process
EXTRACT_TIMEOUT_S = 120.0  # a worker longer than this on one page is stuck: replaced
# What a bot challenge's answer is taken for, unread: a wall, checked again like the others
CHALLENGED = Extracted(text="", extractor="none (bot challenge)", quality=lifecycle.Quality.BLOCKED)


@dataclass(frozen=True)
class Page:
    result: FetchResult  # its content is empty: the body went to the extractor
    extracted: Extracted


class PageReader:
    """Fetch and extract one URL per call; calls run at once, within the limits."""

    def __init__(self, fetcher: Fetcher, clock: Clock, backlog: int, pool: Pool | None = None):
        self.fetcher = fetcher
        self.clock = clock  # for a Retry-After given as a date
        self.pool = pool
        self._backlog = asyncio.Semaphore(backlog)

    async def read(self, url: str, item: Item | None = None) -> Page:
        """The page at `url`, extracted, with the features of `item` once it is its text
        (computed by the worker that extracted it); FetchError or ExtractError when there
        is none."""
        async with self._backlog:
            if self.pool is None:
                result, extracted = await self._read_here(url)
            else:
                result, extracted = await self.pool.read(self, url, item)
        if item is not None and extracted.features is None:
            extracted = with_features(extracted, item)
        return Page(result, replace(extracted, final_url=result.final_url))

    async def _read_here(self, url: str) -> tuple[FetchResult, Extracted]:
        body = io.BytesIO()
        result = await self.fetcher.get(url, sink=body, skip_binary=True)
        if is_challenge(result):
            return result, CHALLENGED
        check_status(result, now=self.clock())
        content_type = result.headers.get("content-type")
        return result, extract(body.getvalue(), url=result.final_url, content_type=content_type)


class Pool:
    """Worker processes that extract bodies the parent streams into a spool folder.

    The workers start with the first body to extract, so a run that fetches nothing (no
    network) never pays for them; when they cannot start, `info` is told and pages are
    extracted in this process. A worker that dies or takes longer than `extract_timeout_s`
    fails its page with an ExtractError (retried on a later run) and the workers are
    replaced; pages being extracted by the other workers at that moment fail the same way.
    """

    def __init__(
        self,
        workers: int,
        info: Callable[[str], None],
        extract_timeout_s: float = EXTRACT_TIMEOUT_S,
    ) -> None:
        self.workers = workers
        self.info = info
        self.extract_timeout_s = extract_timeout_s
        self.executor: ProcessPoolExecutor | None = None
        self.in_process = False  # the workers could not start
        self.spool = Path(tempfile.mkdtemp(prefix="digest-pages-"))
        self._names = itertools.count()
        self._starting = asyncio.Lock()

    async def read(
        self, reader: PageReader, url: str, item: Item | None
    ) -> tuple[FetchResult, Extracted]:
        path = self.spool / f"{next(self._names)}.html"
        try:
            with path.open("wb") as body:
                result = await reader.fetcher.get(url, sink=body, skip_binary=True)
            if is_challenge(result):
                return result, CHALLENGED
            check_status(result, now=reader.clock())
            content_type = result.headers.get("content-type")
            extracted = await self._extract(path, result.final_url, content_type, item)
        finally:
            path.unlink(missing_ok=True)
        return result, extracted

    async def _extract(
        self, path: Path, url: str, content_type: str | None, item: Item | None
    ) -> Extracted:
        executor = await self._started()
        if executor is None:
            return extract_file(str(path), url, content_type, item)
        try:
            async with asyncio.timeout(self.extract_timeout_s):
                return await asyncio.get_running_loop().run_in_executor(
                    executor, extract_file, str(path), url, content_type, item
                )
        except BrokenProcessPool:
            self._replace(executor)
            raise ExtractError("the extraction worker died", url=url) from None
        except TimeoutError:
            self._replace(executor)
            raise ExtractError(f"took longer than {self.extract_timeout_s:g}s", url=url) from None

    async def _started(self) -> ProcessPoolExecutor | None:
        """The workers, started on first use; None when they cannot start. They start in a
        thread: the fork server answers only once it has imported the extractors and loaded
        the tables (seconds on a busy machine), and the fetches go on meanwhile."""
        if self.executor is not None or self.in_process:
            return self.executor
        async with self._starting:
            if self.executor is None and not self.in_process:
                await asyncio.to_thread(self._start)
        return self.executor

    def _start(self) -> None:
        try:
            self.executor = _start_workers(self.workers)
        except OSError as error:  # e.g. a TMPDIR too long for the fork server's socket path
            self.in_process = True
            self.info(
                f"extraction workers could not start ({describe_error(error)}); pages are "
                "extracted in this process (set TMPDIR to a short folder to get them back)"
            )

    def _replace(self, executor: ProcessPoolExecutor) -> None:
        """New workers for the broken or stuck `executor`, once however many pages saw it."""
        if executor is self.executor:
            self.executor = _start_workers(self.workers)
            _stop_workers(executor)

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(cancel_futures=True)
            stop_fork_server()
        shutil.rmtree(self.spool, ignore_errors=True)


class EarlyStart:
    """Told how many new items each source gave as the collect stage reads them: once they
    are enough for the extraction workers, starts the fork server they come from, so that
    its imports (a second of CPU) are done by the time the first page is fetched."""

    def __init__(self) -> None:
        self.items = 0

    def __call__(self, new_items: int) -> None:
        started = self.items >= PROCESS_POOL_THRESHOLD
        self.items += new_items
        if started or self.items < PROCESS_POOL_THRESHOLD or (os.cpu_count() or 1) < 2:
            return
        try:
            _worker_context()
            forkserver.ensure_running()
        except OSError:  # the pool says why when it tries again
            pass


def stop_fork_server() -> None:
    """The fork server would stay for the life of the process (the daemon's, or a run's notes
    and compose): ~130 MB holding the extractors and the embedding tables. The next pool
    starts another; stopping it has no public call (the one CPython's own tests use)."""
    forkserver._forkserver._stop()  # type: ignore[attr-defined]


def _worker_context() -> BaseContext:
    # Not fork: a forked worker inherits locks that other threads (the resolver's, the
    # daemon's scheduler) held at that moment and can hang on one for ever. The fork
    # server imports the extractors once; each pool's workers are then forked from it.
    context = get_context("forkserver")
    context.set_forkserver_preload(["__main__", *WORKER_MODULES])
    return context


def _start_workers(workers: int) -> ProcessPoolExecutor:
    context = _worker_context()
    # gc.freeze: the collector leaves the inherited objects alone, so their pages stay shared
    executor = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=gc.freeze)
    executor.submit(int)  # start the workers while the first pages are being fetched
    return executor


def _stop_workers(executor: ProcessPoolExecutor) -> None:
    """Shut down without waiting, killing a worker stuck on a page (no public way in 3.11)."""
    processes = list((getattr(executor, "_processes", None) or {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        process.kill()


@asynccontextmanager
async def page_reader(
    config: FetchConfig,
    clock: Clock,
    pages: int,
    waits: Waits,
    info: Callable[[str], None],
) -> AsyncIterator[PageReader]:
    """A reader for a batch of about `pages` pages: worker processes only when it pays
    and they can start (`info` is told when they cannot)."""
    workers = os.cpu_count() or 1
    pool = Pool(workers, info) if workers > 1 and pages >= PROCESS_POOL_THRESHOLD else None
    try:
        async with Fetcher(config, waits) as fetcher:
            # enough pages in hand to keep the fetches going and every worker busy
            backlog = config.concurrency + (2 * pool.workers if pool else 0)
            yield PageReader(fetcher, clock, backlog, pool)
    finally:
        if pool is not None:
            pool.close()
        stop_fork_server()  # one the collect stage started (EarlyStart) if the pool was not
