"""The whole `digest now` over many loopback hosts, beside the trafilatura command and the
CPU floor, in one run.

    python bench/fetch_extract.py EXTRACTION_DATA_DIR [--pages 1000] [--hosts 16]
        [--feeds 10] [--latency-s 0.05] [--delay-s 1.0] [--skip-trafilatura] [--skip-floor]

EXTRACTION_DATA_DIR holds html/<id>.html.gz (the extraction benchmark, see
docs/benchmarks.md). Its pages are served under distinct URLs, /page/<n>, by one
asyncio server process listening on 127.0.0.2 … 127.0.0.<hosts+1>, each answer held
back `latency_s`; /feed/<k>.xml on the first host is an RSS feed of every `feeds`-th
page from page k, dated now. The URL list groups each host's pages together, as a saved
list would.

The figures:
- digest: `digest now` (the command line, a fresh data folder) with the feeds as its
  sources and `per_host_delay_s = delay_s`: collect, fetch and extract, offline notes,
  sections and stories, the digest written; CPU of the whole process tree (its
  extraction workers and the fork server they come from included);
- trafilatura: the same URL list through `trafilatura -i LIST --parallel 16 --json`, its
  config file setting SLEEP_TIME (its per-host delay) to the same delay, SSRF protection
  off for the loopback hosts;
- the floor: the CPU time of extracting the pages in one process, ÷ the cores, with plain
  `trafilatura.extract` (the issue's floor) and with ours (each distinct page timed
  once, weighted by how often the list holds it); and beside it the wall time of our
  extraction of every page split over one process per core (no fetching), which is
  what the cores really give when both work at once;
- the server's CPU during each run, since it shares the cores;
- the peak memory of each run's whole process tree (the sum of the resident sets of the
  process and all its descendants, sampled every 50 ms; shared pages count once per
  process, so it overstates), and the sum of their proportional set sizes (PSS: a page
  shared by n processes counts 1/n in each), which does not.

Each runs in its own process, so that CPU and peak memory are its own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from process_tree import sample_tree_memory

TRAFILATURA_PARALLEL = 16
PR_SET_CHILD_SUBREAPER = 36  # Linux prctl option


# -- the loopback hosts ---------------------------------------------------------------------


Respond = Callable[[bytes], tuple[bytes, bytes, bytes]]  # path -> status, header lines, body


def serve(data_dir: Path, hosts: int, latency_s: float, page_count: int, feed_count: int) -> None:
    """Child process: answer GET /page/<n> with page n (mod the data set) on every host,
    and GET /feed/<k>.xml with feed k."""
    pages = load_pages(data_dir)
    html = b"Content-Type: text/html; charset=utf-8\r\n"

    def respond(path: bytes) -> tuple[bytes, bytes, bytes]:
        if path.startswith(b"/page/") and path[6:].isdigit():
            return b"200 OK", html, pages[int(path[6:]) % len(pages)]
        if path.startswith(b"/feed/") and path[6:-4].isdigit():
            return b"200 OK", html, feeds[int(path[6:-4]) % len(feeds)]
        return b"404 Not Found", html, b"not found"

    feeds: list[bytes] = []

    async def main() -> None:
        port = await start_hosts(respond, hosts, latency_s)
        urls = url_list(port, page_count, hosts)
        feeds.extend(feed_xml(urls[k::feed_count]) for k in range(feed_count))
        print(port, flush=True)
        await asyncio.Event().wait()

    asyncio.run(main())


async def start_hosts(respond: Respond, hosts: int, latency_s: float) -> int:
    """Listen on 127.0.0.2 … 127.0.0.<hosts+1>, one port for all, each answer (from
    `respond`, given the request's path) held back `latency_s`; the port."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1]
                await asyncio.sleep(latency_s)
                status, headers, body = respond(path)
                writer.write(
                    b"HTTP/1.1 %s\r\n%sContent-Length: %d\r\n\r\n" % (status, headers, len(body))
                    + body
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    first = await asyncio.start_server(answer, host_address(0), 0, backlog=1024)
    port: int = first.sockets[0].getsockname()[1]
    for n in range(1, hosts):
        await asyncio.start_server(answer, host_address(n), port, backlog=1024)
    return port


def feed_xml(urls: list[str]) -> bytes:
    """An RSS feed of `urls`, every entry dated now (this week's digest holds them)."""
    from email.utils import format_datetime

    when = format_datetime(utc_now(), usegmt=True)
    entries = "".join(
        f"<item><title>Page {url.rsplit('/', 1)[1]}</title><link>{url}</link>"
        f"<guid>{url}</guid><pubDate>{when}</pubDate></item>"
        for url in urls
    )
    return (
        f'<?xml version="1.0"?><rss version="2.0"><channel><title>Bench</title>'
        f"<link>http://bench.test/</link>{entries}</channel></rss>"
    ).encode()


def host_address(n: int) -> str:
    return f"127.0.0.{2 + n}"


def load_pages(data_dir: Path) -> list[bytes]:
    files = sorted((data_dir / "html").glob("*.html.gz"))
    if not files:
        sys.exit(f"no html/*.html.gz in {data_dir}")
    return [gzip.decompress(path.read_bytes()) for path in files]


def url_list(port: int, pages: int, hosts: int) -> list[str]:
    per_host = -(-pages // hosts)
    return [f"http://{host_address(n // per_host)}:{port}/page/{n}" for n in range(pages)]


# -- the three measurements, each in a child process ---------------------------------------------


def run_now(feed_urls: list[str], delay_s: float) -> dict[str, Any]:
    """`digest now` in a fresh data folder with the feeds as sources: its wall time, the CPU
    of its whole tree, and how many pages it extracted."""
    import ctypes
    import sqlite3

    # A subreaper: the fork server and its workers, orphaned when digest exits, are reaped
    # here, so that their CPU counts among this process's children.
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        sources = "".join(
            f'[[sources]]\nname = "feed {n}"\nkind = "feed"\nurl = "{url}"\n\n'
            for n, url in enumerate(feed_urls)
        )
        (root / "digest.toml").write_text(
            f'[digest]\ndata_dir = "data"\n\n{sources}[fetch]\n'
            f'allow_private_addresses = ["127.0.0.0/8"]\nper_host_delay_s = {delay_s}\n'
        )
        command = [str(Path(sys.executable).with_name("digest")), "now", "--config", "digest.toml"]
        started = time.perf_counter()
        log = (root / "stderr.txt").open("w")
        child = subprocess.Popen(command, cwd=root, stdout=subprocess.DEVNULL, stderr=log)
        _, status, _ = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        with contextlib.suppress(ChildProcessError):
            while True:
                os.wait()
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        log.close()
        errors = (root / "stderr.txt").read_text(errors="replace")
        with sqlite3.connect(root / "data" / "digest.db") as db:
            (pages,) = db.execute("SELECT count(*) FROM items WHERE text IS NOT NULL").fetchone()
            (failed,) = db.execute("SELECT count(*) FROM items WHERE error IS NOT NULL").fetchone()
    return {
        "pages": pages,
        "failures": failed,
        "exit": os.waitstatus_to_exitcode(status),
        "stderr_tail": errors.strip().splitlines()[-3:],
        "wall_s": wall,
        "cpu_s": cpu(usage),
        "peak_mb": usage.ru_maxrss / 1024,
    }


def run_floor(data_dir: Path, pages: int) -> dict[str, Any]:
    """Extraction alone: in one process (CPU time), then split over every core (wall time)."""
    import trafilatura

    from digest.errors import ExtractError
    from digest.extract import extract

    def ours(body: bytes) -> None:
        with contextlib.suppress(ExtractError):
            extract(body, url="http://x.test/page", content_type=None)

    bodies = load_pages(data_dir)
    times = {"trafilatura_cpu_s": lambda b: trafilatura.extract(b), "cpu_s": ours}
    figures: dict[str, Any] = {name: 0.0 for name in times}
    for n, body in enumerate(bodies):
        served = len(range(n, pages, len(bodies)))  # how often the URL list holds page n
        for name, run in times.items():
            started = time.process_time()
            run(body)
            figures[name] += served * (time.process_time() - started)
    cores = os.cpu_count() or 1
    with ProcessPoolExecutor(cores) as pool:
        list(pool.map(time.sleep, [0.1] * cores))  # the workers exist before the clock starts
        started = time.perf_counter()
        shares = [(data_dir, pages, share, cores) for share in range(cores)]
        list(pool.map(extract_share, *zip(*shares, strict=True)))
        parallel_s = time.perf_counter() - started
    return figures | {"parallel_wall_s": parallel_s}


def extract_share(data_dir: Path, pages: int, share: int, shares: int) -> None:
    """Extract pages share, share + shares, … (pages in the data set, as served)."""
    from digest.errors import ExtractError
    from digest.extract import extract

    bodies = load_pages(data_dir)
    for n in range(share, pages, shares):
        with contextlib.suppress(ExtractError):
            extract(bodies[n % len(bodies)], url=f"http://x.test/page/{n}", content_type=None)


def run_trafilatura(urls_file: Path, delay_s: float) -> dict[str, Any]:
    package = Path(sys.executable).parent.parent / "lib"
    [settings] = package.glob("python*/site-packages/trafilatura/settings.cfg")
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "settings.cfg"
        config.write_text(
            settings.read_text()
            .replace("SLEEP_TIME = 5.0", f"SLEEP_TIME = {delay_s}")
            .replace("SSRF_PROTECTION = on", "SSRF_PROTECTION = off")
            .replace("INSECURE_SSL_FALLBACK = on", "INSECURE_SSL_FALLBACK = off")
        )
        # JSON lines on stdout, one per page: files in -o are named by a hash of the
        # text, so the repeated pages would overwrite each other and hide the count
        command = [
            str(Path(sys.executable).with_name("trafilatura")), "-i", str(urls_file),
            "--parallel", str(TRAFILATURA_PARALLEL), "--json", "--config-file", str(config),
        ]  # fmt: skip
        output = Path(tmp) / "out.jsonl"
        started = time.perf_counter()
        with output.open("w") as out:
            child = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        written = sum(1 for line in output.open() if line.startswith("{"))
    return {
        "pages": written,
        "exit": os.waitstatus_to_exitcode(status),
        "wall_s": wall,
        "cpu_s": cpu(usage),
        "peak_mb": usage.ru_maxrss / 1024,
        "command": f"trafilatura -i URLS --parallel {TRAFILATURA_PARALLEL} --json"
        f" --config-file CFG  (CFG: SLEEP_TIME = {delay_s}, SSRF_PROTECTION = off)",
    }


def cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def utc_now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


def in_child(*args: str) -> dict[str, Any]:
    """Run this script with `args` in a child; its JSON figures and its tree's peak memory."""
    child = subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True)
    peak = [0, 0]
    sampler = threading.Thread(target=sample_tree_memory, args=(child, peak), daemon=True)
    sampler.start()
    stdout, _ = child.communicate()
    sampler.join()
    if child.returncode:
        raise SystemExit(f"child {args[-1]} failed with exit {child.returncode}")
    result: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    return result | {"tree_peak_mb": peak[0] / 2**20, "tree_peak_pss_mb": peak[1] / 2**20}


def in_child_beside(server_pid: int, *args: str) -> dict[str, Any]:
    """in_child(*args), with the CPU the server used meanwhile (Linux: from /proc)."""
    before = process_cpu_s(server_pid)
    figures = in_child(*args)
    return figures | {"server_cpu_s": process_cpu_s(server_pid) - before}


def process_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the report -------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data_dir", type=Path)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--feeds", type=int, default=10)
    parser.add_argument("--latency-s", type=float, default=0.05)
    parser.add_argument("--delay-s", type=float, default=1.0)
    parser.add_argument("--skip-trafilatura", action="store_true")
    parser.add_argument("--skip-floor", action="store_true")
    parser.add_argument("--child", choices=["serve", "now", "floor", "trafilatura"])
    parser.add_argument("--urls", type=Path)
    args = parser.parse_args()
    if args.child == "serve":
        return serve(args.data_dir, args.hosts, args.latency_s, args.pages, args.feeds)
    if args.child:
        figures = {
            "now": lambda: run_now(args.urls.read_text().split("\n")[-1].split(), args.delay_s),
            "floor": lambda: run_floor(args.data_dir, args.pages),
            "trafilatura": lambda: run_trafilatura(args.urls, args.delay_s),
        }[args.child]()
        print(json.dumps(figures))
        return
    compare(args)


def compare(args: argparse.Namespace) -> None:
    cores = os.cpu_count() or 1
    print(f"load before: {os.getloadavg()[0]:.2f} on {cores} cores")
    common = [str(args.data_dir), "--hosts", str(args.hosts), "--delay-s", str(args.delay_s)]
    served = [*common, "--latency-s", str(args.latency_s), "--pages", str(args.pages)]
    served += ["--feeds", str(args.feeds)]
    server = subprocess.Popen(
        [sys.executable, __file__, *served, "--child", "serve"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as urls:
            feeds = " ".join(
                f"http://{host_address(0)}:{port}/feed/{k}.xml" for k in range(args.feeds)
            )  # the last line: what `digest now` subscribes to; the lines before, the pages
            urls.write("\n".join(url_list(port, args.pages, args.hosts)) + "\n" + feeds)
            urls.flush()
            with_urls = [*common, "--urls", urls.name, "--pages", str(args.pages)]
            ours = in_child_beside(server.pid, *with_urls, "--child", "now")
            theirs = (
                None
                if args.skip_trafilatura
                else in_child_beside(server.pid, *with_urls, "--child", "trafilatura")
            )
    finally:
        server.terminate()
        server.wait()
    floor = (
        None
        if args.skip_floor
        else in_child(*common, "--pages", str(args.pages), "--child", "floor")
    )
    print(f"load after: {os.getloadavg()[0]:.2f}")
    report(args, ours, theirs, floor, cores)


def report(
    args: argparse.Namespace,
    ours: dict[str, Any],
    theirs: dict[str, Any] | None,
    floor: dict[str, Any] | None,
    cores: int,
) -> None:
    rate = ours["pages"] / ours["wall_s"]
    print(
        f"{args.pages} pages on {args.hosts} hosts, {args.latency_s * 1000:.0f} ms latency,"
        f" {args.delay_s:g} s per-host delay"
    )
    print(
        f"digest now:  {ours['wall_s']:6.1f} s  {rate:6.1f} pages/s  ({ours['pages']} extracted,"
        f" {ours['failures']} failed, exit {ours['exit']})  CPU {ours['cpu_s']:.1f} s (whole tree)"
        f"  peak {ours['peak_mb']:.0f} MB largest process; whole tree {ours['tree_peak_mb']:.0f} MB"
        f" RSS, {ours['tree_peak_pss_mb']:.0f} MB PSS (goal < 250); server CPU"
        f" {ours['server_cpu_s']:.1f} s"
    )
    for line in ours["stderr_tail"]:
        print(f"  digest said: {line}")
    if theirs is not None:
        their_rate = theirs["pages"] / theirs["wall_s"]
        print(
            f"trafilatura: {theirs['wall_s']:6.1f} s  {their_rate:6.1f} pages/s"
            f"  ({theirs['pages']} extracted, exit {theirs['exit']})  CPU {theirs['cpu_s']:.1f} s"
            f"  peak {theirs['peak_mb']:.0f} MB largest process; whole tree"
            f" {theirs['tree_peak_mb']:.0f} MB RSS, {theirs['tree_peak_pss_mb']:.0f} MB PSS;"
            f" server CPU {theirs['server_cpu_s']:.1f} s"
        )
        print(f"  command: {theirs['command']}")
        print(
            f"  digest now / trafilatura, wall: {ours['wall_s'] / theirs['wall_s']:.2f}x"
            "  (goal <= 0.5)"
        )
        ours_cpu = ours["cpu_s"]
        print(
            f"  CPU per page: digest {1000 * ours_cpu / ours['pages']:.1f} ms, trafilatura"
            f" {1000 * theirs['cpu_s'] / theirs['pages']:.1f} ms (the load does not inflate these)"
        )
    if floor is not None:
        floor_s = floor["trafilatura_cpu_s"] / cores
        print(
            f"CPU floor:   {floor_s:6.1f} s  (trafilatura.extract over the pages, one process,"
            f" {floor['trafilatura_cpu_s']:.1f} s CPU / {cores} cores)"
        )
        print(f"  digest now / floor: {ours['wall_s'] / floor_s:.2f}x  (goal <= 1.5)")
        print(
            f"our extraction's own floor: {floor['cpu_s'] / cores:.1f} s"
            f" ({floor['cpu_s']:.1f} s CPU / {cores} cores; digest / that:"
            f" {ours['wall_s'] * cores / floor['cpu_s']:.2f}x)"
        )
        print(
            f"extraction alone on {cores} processes at once: {floor['parallel_wall_s']:.1f} s"
            f"  (digest / that: {ours['wall_s'] / floor['parallel_wall_s']:.2f}x)"
        )


if __name__ == "__main__":
    main()
