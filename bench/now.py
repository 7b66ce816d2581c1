"""`digest now` over N loopback pages: wall time and peak memory of the real CLI.

    python bench/now.py [EXTRACTION_DATA_DIR] [--pages 200]

With the extraction benchmark's folder (html/<id>.html.gz, see docs/benchmarks.md)
the pages are real articles served under distinct URLs; without it, generated
articles. Every page is listed in one URL-list file of a fresh inbox, so the run
collects, fetches, extracts, notes and composes all of them.
"""

from __future__ import annotations

import argparse
import gzip
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from loopback import Response, serving  # noqa: E402


def pages_from(data_dir: Path | None, count: int) -> list[bytes]:
    if data_dir is None:
        return [
            (
                f"<html><head><title>Generated article {n}</title></head><body><article>"
                + "".join(
                    f"<p>Paragraph {p} of article {n} explains one more detail of the system,"
                    f" with numbers, caveats and a conclusion worth keeping.</p>"
                    for p in range(30)
                )
                + "</article></body></html>"
            ).encode()
            for n in range(count)
        ]
    files = sorted((data_dir / "html").glob("*.html.gz"))
    return [gzip.decompress(files[n % len(files)].read_bytes()) for n in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data_dir", nargs="?", type=Path)
    parser.add_argument("--pages", type=int, default=200)
    args = parser.parse_args()
    pages = pages_from(args.data_dir, args.pages)
    with tempfile.TemporaryDirectory() as tmp, serving() as server:
        root = Path(tmp)
        for n, page in enumerate(pages):
            server.routes[f"/page/{n}"] = Response(200, page)
        (root / "inbox").mkdir()
        (root / "inbox" / "links.txt").write_text(
            "\n".join(server.url(f"/page/{n}") for n in range(len(pages))) + "\n"
        )
        (root / "digest.toml").write_text(
            '[digest]\ndata_dir = "data"\n\n[[sources]]\nname = "inbox"\nkind = "file"\n'
            'path = "inbox"\n\n[fetch]\nallow_private_addresses = ["127.0.0.1/32"]\n'
            "per_host_concurrency = 16\nper_host_delay_s = 0\n"  # one host serves every page
        )
        digest = Path(sys.executable).with_name("digest")
        started = time.perf_counter()
        done = subprocess.run(
            [str(digest), "now", "--config", str(root / "digest.toml")],
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(done.stderr.strip())
    print(f"pages: {len(pages)}  exit: {done.returncode}")
    print(f"wall time: {wall:.2f} s  ({len(pages) / wall:.1f} pages/s)")
    print(f"peak memory (largest process): {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
