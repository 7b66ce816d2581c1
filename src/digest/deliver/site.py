"""The archive site: an index of every week, a page per week (the mail's content, for a
phone), a page per section name across weeks, and full-text search from any static host.

Built from the week files in digests/ (what was delivered). Pages are sanitised as the
mail is (html_fragment: links only to the week's stored URLs) and link to each other by
relative paths only. Incremental: a week page is rendered again only when its markdown
changed (hashes in .digest-site.json, with the sections each week had); the index and
section pages are rewritten when their bytes change. Search is Pagefind (from PyPI,
run as `python -m pagefind`): it indexes the week pages into pagefind/, and its UI on
the index page searches them in the browser.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from zoneinfo import ZoneInfo

from markupsafe import Markup

from digest.atomic import write_atomic
from digest.deliver.channel import content_hash
from digest.deliver.html import html_fragment, our_templates
from digest.periods import format_period, parse_week

TEMPLATES = Path(__file__).parent / "templates" / "site"
MANIFEST = ".digest-site.json"
PAGEFIND_TIMEOUT_S = 300
_WEEK_FILE = re.compile(r"^\d{4}-W\d{2}\.md$")
# sections of the digest that are not the week's items
_NOT_SECTIONS = {"the week", "still unread from earlier weeks", "one year ago"}
_H2 = re.compile(r"<h2[^>]*>(.*?)</h2>", re.DOTALL)

Links = Callable[[str], Collection[str]]  # a week's label -> the URLs its page may link to


@dataclass
class WeekPage:
    """What the site keeps of a week between builds."""

    label: str
    dates: str
    hash: str  # of its markdown
    items: int
    sections: dict[str, str] = field(default_factory=dict)  # name -> sanitised HTML

    @property
    def href(self) -> str:
        return f"{self.label}.html"


@dataclass
class SiteBuild:
    written: list[str] = field(default_factory=list)  # pages rewritten, relative to the site
    problem: str | None = None  # search could not be indexed


def build_site(out: Path, digests: Path, zone: ZoneInfo, links: Links) -> SiteBuild:
    """Bring the site in `out` up to the week files in `digests`. OSError if it cannot be
    written; a search index that cannot be built is the build's `problem`."""
    known = _read_manifest(out)
    build, weeks = SiteBuild(), []
    for path in sorted(digests.glob("*-W*.md"), reverse=True):
        if not _WEEK_FILE.match(path.name):
            continue
        markdown = path.read_text(encoding="utf-8")
        label, digest_hash = path.stem, content_hash(markdown)
        page = known.get(label)
        if page is None or page.hash != digest_hash or not (out / f"{label}.html").exists():
            page = _write_week(out, label, markdown, zone, links(label), build)
        weeks.append(page)
    _write(out, "site.css", (TEMPLATES / "site.css").read_text(encoding="utf-8"), build)
    sections = list(_sections(weeks))
    listed = [{"name": name, "href": href} for name, href, _ in sections]
    index = _render("index.html.j2", title="Digest archive", weeks=weeks, sections=listed)
    _write(out, "index.html", index, build)
    for name, href, parts in sections:
        page_html = _render("section.html.j2", title=name, weeks=parts, root="../")
        _write(out, href, page_html, build)
    _write(out, MANIFEST, json.dumps({w.label: asdict(w) for w in weeks}, indent=1), build)
    if build.written or not (out / "pagefind").is_dir():
        build.problem = _index_search(out)
    return build


def _write_week(
    out: Path, label: str, markdown: str, zone: ZoneInfo, links: Collection[str], build: SiteBuild
) -> WeekPage:
    fragment = html_fragment(markdown, links)  # rendered and sanitised once
    sections = dict(_section_parts(fragment))
    page = WeekPage(
        label,
        format_period(parse_week(label, zone), zone),
        content_hash(markdown),
        _items(markdown),
        sections,
    )
    body = Markup(fragment)  # noqa: S704 (sanitised by nh3)
    own = [{"name": name, "href": _section_href(name)} for name in sections]
    _write(out, page.href, _render("week.html.j2", title=label, body=body, sections=own), build)
    return page


def _section_parts(fragment: str) -> Iterator[tuple[str, str]]:
    """(name, its HTML) of each second-level section of the week's rendered digest that
    holds the week's items."""
    parts = _H2.split(fragment)  # [before, heading, part, heading, part, ...]
    for heading, part in zip(parts[1::2], parts[2::2], strict=True):
        name = html.unescape(re.sub(r"<[^>]*>", "", heading)).strip()
        if name and name.casefold() not in _NOT_SECTIONS:
            yield name, part.strip() + "\n"


def _items(markdown: str) -> int:
    """The week's items: the top-level list entries of its sections."""
    counted = 0
    for block in re.split(r"^## ", markdown, flags=re.MULTILINE)[1:]:
        name, _, body = block.partition("\n")
        if name.strip().casefold() not in _NOT_SECTIONS:
            counted += len(re.findall(r"^- ", body, flags=re.MULTILINE))
    return counted


def _sections(weeks: list[WeekPage]) -> Iterator[tuple[str, str, list[dict[str, object]]]]:
    """(name, page, the weeks that had it, newest first) of every section name."""
    by_href: dict[str, tuple[str, list[dict[str, object]]]] = {}
    for week in weeks:
        for name, body in week.sections.items():
            _, parts = by_href.setdefault(_section_href(name), (name, []))
            parts.append(
                {"label": week.label, "dates": week.dates, "href": week.href, "body": Markup(body)}  # noqa: S704
            )
    for href, (name, parts) in sorted(by_href.items()):
        yield name, href, parts


def _section_href(name: str) -> str:
    slug = re.sub(r"[^\w]+", "-", name.casefold()).strip("-") or "section"
    return f"sections/{slug}.html"


def _write(out: Path, name: str, text: str, build: SiteBuild) -> None:
    path = out / name
    if path.exists() and path.read_text(encoding="utf-8", errors="replace") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text)
    if name != MANIFEST:
        build.written.append(name)


def _read_manifest(out: Path) -> Mapping[str, WeekPage]:
    try:
        raw = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        return {label: WeekPage(**fields) for label, fields in raw.items()}
    except (OSError, ValueError, TypeError):
        return {}  # none yet, or not ours: every week is rendered again


def _index_search(out: Path) -> str | None:
    command = [sys.executable, "-m", "pagefind", "--site", str(out), "--silent"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PAGEFIND_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"site search not indexed: pagefind: {exc}"
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        why = said[-1] if said else f"exit {done.returncode}"
        return f"site search not indexed: pagefind: {why} (pip install 'pagefind[bin]')"
    return None


def _render(template: str, **values: object) -> str:
    values.setdefault("root", "")
    values.setdefault("sections", [])
    values["search"] = template == "index.html.j2"
    return our_templates(TEMPLATES).get_template(template).render(values)
