"""The whole `digest now` over many loopback hosts, beside the trafilatura command and the
CPU floor: the acceptance rig of issue 32, taken `--runs` times side by side.

    python bench/fetch_extract.py EXTRACTION_DATA_DIR [MORE_DIRS ...] [--pages 1000]
        [--hosts 16] [--feeds 10] [--latency-s 0.05] [--delay-s 0] [--runs 3]
        [--skip-trafilatura] [--skip-floor] [--before-src OTHER_SRC]

Each EXTRACTION_DATA_DIR holds html/<id>.html.gz (the extraction benchmark, see
docs/benchmarks.md); every page of every folder is served. The pages go round-robin under
`pages` distinct URLs, /page/<n> (page n mod the pages), by one asyncio server process
listening on 127.0.0.2 … 127.0.0.<hosts+1>, each answer held back `latency_s`; the URL
list groups each host's pages together, as a saved list would. /feed/<k>.xml on the first
host is an RSS feed of the k-th `feeds`-th of that list (one per group of hosts), dated
now.

Each run takes, one after the other in the same window (the load moves less between them
than between runs):
- digest: `digest now` (the command line, a fresh data folder) with the feeds as its
  sources and `per_host_delay_s = delay_s`, offline notes: collect, fetch and extract,
  notes, sections and stories, the digest written; CPU of the whole process tree (its
  extraction workers and the fork server they come from included) and the peak of the
  tree's memory (digest and its descendants, sampled every 50 ms): the sum of their
  resident sets (shared pages count once per process, so it overstates) and of their
  proportional set sizes (PSS: a page shared by n processes counts 1/n in each);
- trafilatura: the same URL list through `trafilatura -i LIST --parallel 16` (plain text
  on stdout, as the rig), its config file setting SLEEP_TIME (its per-host delay) to the
  same delay, SSRF protection off for the loopback hosts; its pages are the requests the
  server answered;
- the floor: the CPU time of extracting the pages in one process, ÷ the cores, with plain
  `trafilatura.extract` (the issue's floor) and with ours (each distinct page timed
  once, weighted by how often the list holds it);
- the server's CPU during each, since it shares the cores;
and the load average before each. With `--before-src`, each run also takes `digest now`
from another version's src folder (PYTHONPATH) just before this one, so that before and
after are measured in the same window. The report gives each run and the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from process_tree import sample_tree_memory

TRAFILATURA_PARALLEL = 16
PR_SET_CHILD_SUBREAPER = 36  # Linux prctl option
COUNT_PATH = b"/count"  # how many pages the server has answered


# -- the loopback hosts ---------------------------------------------------------------------


Respond = Callable[[bytes], tuple[bytes, bytes, bytes]]  # path -> status, header lines, body


def serve(data_dirs: list[Path], hosts: int, latency_s: float, pages: int, feeds: int) -> None:
    """Child process: answer GET /page/<n> with page n (mod the data set) on every host,
    GET /feed/<k>.xml with feed k and GET /count with the pages answered so far."""
    bodies = load_pages(data_dirs)
    html = b"Content-Type: text/html; charset=utf-8\r\n"
    answered = [0]

    def respond(path: bytes) -> tuple[bytes, bytes, bytes]:
        if path.startswith(b"/page/") and path[6:].isdigit():
            answered[0] += 1
            return b"200 OK", html, bodies[int(path[6:]) % len(bodies)]
        if path.startswith(b"/feed/") and path[6:-4].isdigit():
            return b"200 OK", html, feed_bodies[int(path[6:-4]) % len(feed_bodies)]
        if path == COUNT_PATH:
            return b"200 OK", html, b"%d" % answered[0]
        return b"404 Not Found", html, b"not found"

    feed_bodies: list[bytes] = []

    async def main() -> None:
        port = await start_hosts(respond, hosts, latency_s)
        urls = url_list(port, pages, hosts)
        per_feed = -(-len(urls) // feeds)
        feed_bodies.extend(feed_xml(urls[k * per_feed : (k + 1) * per_feed]) for k in range(feeds))
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


def load_pages(data_dirs: list[Path]) -> list[bytes]:
    files = [path for folder in data_dirs for path in sorted((folder / "html").glob("*.html.gz"))]
    if not files:
        sys.exit(f"no html/*.html.gz in {', '.join(map(str, data_dirs))}")
    return [gzip.decompress(path.read_bytes()) for path in files]


def url_list(port: int, pages: int, hosts: int) -> list[str]:
    per_host = -(-pages // hosts)
    return [f"http://{host_address(n // per_host)}:{port}/page/{n}" for n in range(pages)]


def pages_answered(port: int) -> int:
    import urllib.request

    with urllib.request.urlopen(f"http://{host_address(0)}:{port}{COUNT_PATH.decode()}") as answer:
        return int(answer.read())


# -- the three measurements, each in a child process ---------------------------------------------


def run_now(feed_urls: list[str], delay_s: float) -> dict[str, Any]:
    """`digest now` in a fresh data folder with the feeds as sources: its wall time, the CPU
    and peak memory of its whole tree, and how many pages it extracted."""
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
        status, _, wall, peak = wait_sampling(child, started)
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
        "exit": status,
        "stderr_tail": errors.strip().splitlines()[-3:],
        "wall_s": wall,
        "cpu_s": cpu(usage),
        "peak_mb": usage.ru_maxrss / 1024,
        "tree_peak_mb": peak[0] / 2**20,
        "tree_peak_pss_mb": peak[1] / 2**20,
    }


def run_floor(data_dirs: list[Path], pages: int) -> dict[str, Any]:
    """Extraction alone in one process: the CPU time of every page of the URL list."""
    import trafilatura

    from digest.errors import ExtractError
    from digest.extract import extract

    def ours(body: bytes) -> None:
        with contextlib.suppress(ExtractError):
            extract(body, url="http://x.test/page", content_type=None)

    bodies = load_pages(data_dirs)
    times = {"trafilatura_cpu_s": lambda b: trafilatura.extract(b), "cpu_s": ours}
    figures: dict[str, Any] = {name: 0.0 for name in times}
    for n, body in enumerate(bodies):
        served = len(range(n, pages, len(bodies)))  # how often the URL list holds page n
        for name, run in times.items():
            started = time.process_time()
            run(body)
            figures[name] += served * (time.process_time() - started)
    return figures


def run_trafilatura(urls_file: Path, delay_s: float, port: int) -> dict[str, Any]:
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
        command = [
            str(Path(sys.executable).with_name("trafilatura")), "-i", str(urls_file),
            "--parallel", str(TRAFILATURA_PARALLEL), "--config-file", str(config),
        ]  # fmt: skip
        answered = pages_answered(port)
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        status, usage, wall, peak = wait_sampling(child, started)
    return {
        "pages": pages_answered(port) - answered,
        "exit": status,
        "wall_s": wall,
        "cpu_s": cpu(usage),
        "peak_mb": usage.ru_maxrss / 1024,
        "tree_peak_mb": peak[0] / 2**20,
        "tree_peak_pss_mb": peak[1] / 2**20,
        "command": f"trafilatura -i URLS --parallel {TRAFILATURA_PARALLEL} --config-file CFG"
        f"  (CFG: SLEEP_TIME = {delay_s}, SSRF_PROTECTION = off)",
    }


def wait_sampling(
    child: subprocess.Popen[Any], started: float
) -> tuple[int, resource.struct_rusage, float, list[int]]:
    """Wait for `child`, sampling its tree's memory: its exit code, its own usage, the wall
    time since `started` and the tree's peak [RSS, PSS] in bytes."""
    peak, done = [0, 0], threading.Event()
    sampler = threading.Thread(target=sample_tree_memory, args=(child.pid, done, peak))
    sampler.start()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    child.returncode = os.waitstatus_to_exitcode(status)
    return child.returncode, usage, wall, peak


def cpu(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def utc_now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


def in_child(*args: str, src: Path | None = None) -> dict[str, Any]:
    """Run this script with `args` in a child (digest imported from `src`, if given); its
    JSON figures."""
    env = os.environ | ({"PYTHONPATH": str(src)} if src else {})
    child = subprocess.run(
        [sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True, env=env
    )
    if child.returncode:
        raise SystemExit(f"child {args[-1]} failed with exit {child.returncode}")
    result: dict[str, Any] = json.loads(child.stdout.strip().splitlines()[-1])
    return result


def in_child_beside(server_pid: int, *args: str, src: Path | None = None) -> dict[str, Any]:
    """in_child(*args), with the load before and the CPU the server used meanwhile."""
    load, before = os.getloadavg()[0], process_cpu_s(server_pid)
    figures = in_child(*args, src=src)
    return figures | {"load": load, "server_cpu_s": process_cpu_s(server_pid) - before}


def process_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the report -------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data_dirs", type=Path, nargs="+")
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--hosts", type=int, default=16)
    parser.add_argument("--feeds", type=int, default=10)
    parser.add_argument("--latency-s", type=float, default=0.05)
    parser.add_argument("--delay-s", type=float, default=0.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-trafilatura", action="store_true")
    parser.add_argument("--skip-floor", action="store_true")
    parser.add_argument("--before-src", type=Path, help="another digest's src folder, run too")
    parser.add_argument("--child", choices=["serve", "now", "floor", "trafilatura"])
    parser.add_argument("--urls", type=Path)
    parser.add_argument("--port", type=int)
    args = parser.parse_args()
    if args.child == "serve":
        return serve(args.data_dirs, args.hosts, args.latency_s, args.pages, args.feeds)
    if args.child:
        figures = {
            "now": lambda: run_now(args.urls.read_text().split("\n")[-1].split(), args.delay_s),
            "floor": lambda: run_floor(args.data_dirs, args.pages),
            "trafilatura": lambda: run_trafilatura(args.urls, args.delay_s, args.port),
        }[args.child]()
        print(json.dumps(figures))
        return
    compare(args)


def compare(args: argparse.Namespace) -> None:
    cores = os.cpu_count() or 1
    compile_digest()
    if args.before_src:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(args.before_src)], check=True)
    dirs = [str(folder) for folder in args.data_dirs]
    common = [*dirs, "--hosts", str(args.hosts), "--delay-s", str(args.delay_s)]
    common += ["--pages", str(args.pages)]
    served = [*common, "--latency-s", str(args.latency_s), "--feeds", str(args.feeds)]
    server = subprocess.Popen(
        [sys.executable, __file__, *served, "--child", "serve"], stdout=subprocess.PIPE, text=True
    )
    runs: list[dict[str, Any]] = []
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as urls:
            feeds = " ".join(
                f"http://{host_address(0)}:{port}/feed/{k}.xml" for k in range(args.feeds)
            )  # the last line: what `digest now` subscribes to; the lines before, the pages
            urls.write("\n".join(url_list(port, args.pages, args.hosts)) + "\n" + feeds)
            urls.flush()
            with_urls = [*common, "--urls", urls.name, "--port", str(port)]
            for _ in range(args.runs):
                run = {}
                if args.before_src:
                    run["before"] = in_child_beside(
                        server.pid, *with_urls, "--child", "now", src=args.before_src
                    )
                run["digest"] = in_child_beside(server.pid, *with_urls, "--child", "now")
                if not args.skip_trafilatura:
                    run["cli"] = in_child_beside(server.pid, *with_urls, "--child", "trafilatura")
                if not args.skip_floor:
                    run["floor"] = in_child(*common, "--child", "floor") | {
                        "load": os.getloadavg()[0]
                    }
                report_run(run, cores)
                runs.append(run)
    finally:
        server.terminate()
        server.wait()
    print(
        f"{args.pages} pages ({len(load_pages(args.data_dirs))} distinct) on {args.hosts} hosts,"
        f" {args.latency_s * 1000:.0f} ms latency, {args.delay_s:g} s per-host delay,"
        f" {args.feeds} feeds; {cores} cores; load after: {os.getloadavg()[0]:.2f}"
    )
    report_median(runs, cores)


def compile_digest() -> None:
    """Byte-compile digest's modules, as installing a package does: with
    PYTHONDONTWRITEBYTECODE set (this machine's shells) an editable install would compile
    every module again in each process of each run."""
    import compileall

    import digest

    compileall.compile_dir(Path(digest.__file__).parent, quiet=1)


def ratios(run: dict[str, Any], cores: int, key: str = "digest") -> dict[str, float]:
    ours = run[key]
    figures = {"wall_s": ours["wall_s"], "cpu_s": ours["cpu_s"], "pss": ours["tree_peak_pss_mb"]}
    figures["rss"] = ours["tree_peak_mb"]
    if "cli" in run:
        figures |= {"cli_wall_s": run["cli"]["wall_s"], "cli_cpu_s": run["cli"]["cpu_s"]}
        figures["to_cli"] = ours["wall_s"] / run["cli"]["wall_s"]
        figures["cpu_to_cli"] = ours["cpu_s"] / run["cli"]["cpu_s"]
    if "floor" in run:
        figures["floor_s"] = run["floor"]["trafilatura_cpu_s"] / cores
        figures["ours_floor_s"] = run["floor"]["cpu_s"] / cores
        figures["to_floor"] = ours["wall_s"] / figures["floor_s"]
    return figures


def report_run(run: dict[str, Any], cores: int) -> None:
    for key in ("before", "digest"):
        if key in run:
            report_digest(run, cores, key)
    if "cli" in run:
        theirs = run["cli"]
        print(
            f"trafilatura: {theirs['wall_s']:.1f} s wall, {theirs['cpu_s']:.1f} s CPU,"
            f" {theirs['pages']} pages, exit {theirs['exit']}; tree peak"
            f" {theirs['tree_peak_mb']:.0f} MB RSS, {theirs['tree_peak_pss_mb']:.0f} MB PSS;"
            f" server CPU {theirs['server_cpu_s']:.1f} s; load before {theirs['load']:.2f}"
            f"\n  command: {theirs['command']}"
        )
    if "floor" in run:
        print(
            f"floor: {run['floor']['trafilatura_cpu_s'] / cores:.1f} s (trafilatura.extract,"
            f" {run['floor']['trafilatura_cpu_s']:.1f} s CPU / {cores} cores; ours"
            f" {run['floor']['cpu_s'] / cores:.1f} s); load after {run['floor']['load']:.2f}"
        )


def report_digest(run: dict[str, Any], cores: int, key: str) -> None:
    ours, figures = run[key], ratios(run, cores, key)
    print(
        f"digest now{' (before)' if key == 'before' else ''}: {ours['wall_s']:.1f} s wall,"
        f" {ours['cpu_s']:.1f} s CPU (tree), {ours['pages']} extracted, {ours['failures']}"
        f" failed, exit {ours['exit']}; tree peak {ours['tree_peak_mb']:.0f} MB RSS,"
        f" {ours['tree_peak_pss_mb']:.0f} MB PSS, largest process {ours['peak_mb']:.0f} MB;"
        f" server CPU {ours['server_cpu_s']:.1f} s; load before {ours['load']:.2f}"
    )
    for line in ours["stderr_tail"]:
        print(f"  digest said: {line}")
    if "to_cli" in figures:
        print(f"  / trafilatura: wall {figures['to_cli']:.2f}x, CPU {figures['cpu_to_cli']:.2f}x")
    if "to_floor" in figures:
        print(f"  / floor: {figures['to_floor']:.2f}x")


def report_median(runs: list[dict[str, Any]], cores: int) -> None:
    for key in ("before", "digest"):
        if key in runs[0]:
            report_median_of(runs, cores, key)


def report_median_of(runs: list[dict[str, Any]], cores: int, key: str) -> None:
    each = [ratios(run, cores, key) for run in runs]
    median = {name: statistics.median(figures[name] for figures in each) for name in each[0]}
    loads = ", ".join(f"{run[key]['load']:.1f}" for run in runs)
    print(
        f"median of {len(runs)} runs, digest now{' (before)' if key == 'before' else ''} (load"
        f" before each: {loads}): {median['wall_s']:.1f} s wall, {median['cpu_s']:.1f} s CPU,"
        f" {median['pss']:.0f} MB PSS ({median['rss']:.0f} MB RSS; goal < 250 MB PSS)"
    )
    if "to_cli" in median:
        print(
            f"  trafilatura {median['cli_wall_s']:.1f} s wall, {median['cli_cpu_s']:.1f} s CPU;"
            f" digest / trafilatura {median['to_cli']:.2f}x wall (goal <= 0.75, toward 0.5),"
            f" {median['cpu_to_cli']:.2f}x CPU"
        )
    if "to_floor" in median:
        print(
            f"  floor {median['floor_s']:.1f} s (ours {median['ours_floor_s']:.1f} s);"
            f" digest / floor {median['to_floor']:.2f}x (goal <= 2, toward 1.5)"
        )


if __name__ == "__main__":
    main()
