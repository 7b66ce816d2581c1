"""Your templates: [output] templates_dir's digest.md.j2 and mail.html.j2, a broken one
falling back to the built-in with one line and exit 3, and the log not appended for a
change of look alone."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from click.testing import CliRunner, Result

from digest.cli import cli
from digest.config import Config
from digest.deliver.html import markdown_to_html
from digest.deliver.outbox import deliver_digest
from digest.periods import parse_week
from digest.store import Store
from mailrig import Sink, elements, make_config, part

WEEK = "2026-W45"
JOURNAL = "## 2026-11-03\n- A thought worth keeping about paged attention\n- Another note\n"
MARKDOWN = "# Digest for 2026-W47\n\n## The week\n\n- [Kept](https://kept.example/)\n"
NOW = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)


@dataclass
class Rig:
    root: Path

    @property
    def templates(self) -> Path:
        return self.root / "templates"

    @property
    def digest(self) -> Path:
        return self.root / "data" / "digests" / f"{WEEK}.md"

    def run(self, *args: str) -> Result:
        return CliRunner().invoke(cli, [*args, "--config", str(self.root / "digest.toml")])

    def log_markers(self) -> list[str]:
        log = self.root / "data" / "digest-log.md"
        return re.findall(r"^<!-- digest .* -->$", log.read_text(), flags=re.M)


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    (tmp_path / "inbox").mkdir()
    (tmp_path / "inbox" / "journal.md").write_text(JOURNAL)
    (tmp_path / "templates").mkdir()
    (tmp_path / "digest.toml").write_text(
        '[digest]\ndata_dir = "data"\n\n[[sources]]\nname = "inbox"\nkind = "file"\n'
        'path = "inbox"\n\n[output]\ntemplates_dir = "templates"\n'
    )
    return Rig(tmp_path)


def test_a_markdown_template_of_yours_replaces_the_built_in(rig: Rig) -> None:
    (rig.templates / "digest.md.j2").write_text(
        "# My week {{ label }}\n{% for topic in topics %}{% for entry in topic.entries %}"
        "* {{ entry.title | md_text }}\n{% endfor %}{% endfor %}"
    )

    result = rig.run("now", "--week", WEEK)

    assert result.exit_code == 0, result.output
    text = rig.digest.read_text()
    assert text.startswith(f"# My week {WEEK}\n")
    assert "* A thought worth keeping about paged attention\n" in text


@pytest.mark.parametrize(
    ("template", "line", "why"),
    [
        ("# {{ label }}\n\n{{ nope.title }}\n", 3, "'nope' is undefined"),
        ("# {{ label }}\n{% for t in topics %}\n", 2, "Unexpected end of template"),
    ],
)
def test_a_broken_markdown_template_falls_back_in_one_line_and_exits_3(
    rig: Rig, template: str, line: int, why: str
) -> None:
    (rig.templates / "digest.md.j2").write_text(template)

    result = rig.run("now", "--week", WEEK)

    assert result.exit_code == 3
    path = rig.templates / "digest.md.j2"
    (reported,) = [text for text in result.stderr.splitlines() if "template error" in text]
    assert reported.startswith(f"  ! template error: {path}:{line}: {why}")
    assert reported.endswith("; the built-in digest.md.j2 was used")
    assert rig.digest.read_text().startswith(f"# Digest for {WEEK}\n")
    assert "Traceback" not in result.output


def test_the_exported_templates_give_the_built_in_digest(rig: Rig) -> None:
    rig.run("now", "--week", WEEK)
    built_in = rig.digest.read_text()
    rig.digest.unlink()

    exported = rig.run("templates", "export", str(rig.templates))
    rig.run("now", "--week", WEEK)

    assert sorted(p.name for p in rig.templates.iterdir()) == ["digest.md.j2", "mail.html.j2"]
    assert exported.exit_code == 0 and rig.digest.read_text() == built_in


def test_a_new_look_alone_rewrites_the_file_but_not_the_log(rig: Rig) -> None:
    rig.run("now", "--week", WEEK)
    (rig.templates / "digest.md.j2").write_text("# {{ label }}, my way\n")

    again = rig.run("now", "--week", WEEK)

    assert again.exit_code == 0, again.output
    assert rig.digest.read_text() == f"# {WEEK}, my way\n"
    assert len(rig.log_markers()) == 1


def mail_config(tmp_path: Path, port: int) -> Config:
    config = make_config(tmp_path, port, send="every_revision")
    (tmp_path / "templates").mkdir()
    output = config.output.model_copy(update={"templates_dir": tmp_path / "templates"})
    return config.model_copy(update={"output": output})


def test_a_mail_template_of_yours_is_used_and_still_sanitised(
    tmp_path: Path, store: Store, sink: tuple[Sink, int]
) -> None:
    handler, port = sink
    config = mail_config(tmp_path, port)
    (tmp_path / "templates" / "mail.html.j2").write_text(
        '<div style="color: #333333; position: fixed" onclick="steal()">'
        "<script>alert(1)</script><h4>{{ label }}, {{ period_range }}</h4>{{ body }}"
        '<img src="https://tracker.example/p.gif"><a href="javascript:x()">x</a>'
        "<p>{{ '<b>escaped</b>' }}</p></div>"
    )
    period = parse_week("2026-W47", ZoneInfo("UTC"))

    outcome = deliver_digest(
        store, config, period, MARKDOWN, NOW, allowed_urls={"https://kept.example/"}
    )

    assert outcome.failures == [] and "email" in outcome.delivered
    html = part(handler.messages()[0], "text/html")
    tags = [tag for tag, _ in elements(html)]
    assert "h4" in tags and "script" not in tags and "img" not in tags
    assert "2026-W47, 16–22 November 2026" in html
    assert "&lt;b&gt;escaped&lt;/b&gt;" in html
    assert 'style="color:#333333"' in html.replace(" ", "")
    assert "onclick" not in html and "javascript" not in html and "position" not in html
    hrefs = [attrs.get("href") for tag, attrs in elements(html) if tag == "a"]
    assert [href for href in hrefs if href] == ["https://kept.example/"]


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("<p>fine</p>\n<p>{{ 1 / 0 }}</p>\n", "division by zero (ZeroDivisionError: guard it"),
        ("<p>fine</p>\n{% for x in body %}\n", "Unexpected end of template"),
    ],
)
def test_a_broken_mail_template_sends_the_built_in_and_says_so(
    tmp_path: Path, store: Store, sink: tuple[Sink, int], template: str, problem: str
) -> None:
    handler, port = sink
    config = mail_config(tmp_path, port)
    path = tmp_path / "templates" / "mail.html.j2"
    path.write_text(template)
    period = parse_week("2026-W47", ZoneInfo("UTC"))

    outcome = deliver_digest(store, config, period, MARKDOWN, NOW)

    assert "email" in outcome.delivered
    (failure,) = outcome.failures
    assert failure.startswith(f"template error: {path}:2: {problem}")
    assert failure.endswith("; the built-in mail.html.j2 was used")
    assert ">Digest for 2026-W47</h1>" in part(handler.messages()[0], "text/html")


def test_without_a_mail_template_of_yours_the_built_in_html_is_unchanged(
    tmp_path: Path, store: Store, sink: tuple[Sink, int]
) -> None:
    handler, port = sink
    config = mail_config(tmp_path, port)  # a templates_dir without mail.html.j2
    period = parse_week("2026-W47", ZoneInfo("UTC"))

    deliver_digest(store, config, period, MARKDOWN, NOW, allowed_urls={"https://kept.example/"})

    html = part(handler.messages()[0], "text/html")
    built_in = markdown_to_html(
        MARKDOWN, title="Your digest, 16–22 Nov 2026", allowed_urls={"https://kept.example/"}
    )
    assert html == built_in


SECRET = "sw0rdfish-SECRET-29"
HOSTILE_TEMPLATES = [
    "{{ cycler.__init__.__globals__.os.environ.get('DIGEST_SMTP_PASSWORD') }}",
    "{{ lipsum.__globals__['os'].popen('echo $DIGEST_SMTP_PASSWORD').read() }}",
    "{{ label.__class__.__mro__[1].__subclasses__() }}",
    "{{ self.__init__.__globals__ }}",
    "{% for i in range(10**12) %}x{% endfor %}",
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "{% macro d(n) %}{% if n %}{{ d(n-1) }}{{ d(n-1) }}{% endif %}{% endmacro %}{{ d(60) }}",
    "{{ 'a' * 10**10 }}",
    "{{ label.ljust(10**10) }}",
    "{{ ('%999999999s' % label) }}",
    "{{ topics.append(1) }}",
]


@pytest.mark.parametrize("template", HOSTILE_TEMPLATES)
def test_a_hostile_template_ends_in_seconds_with_one_line_and_no_secret(
    rig: Rig, template: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DIGEST_SMTP_PASSWORD", SECRET)
    (rig.templates / "digest.md.j2").write_text(f"# {{{{ label }}}}\n\n{template}\n")

    started = time.process_time()  # the work it takes: a busy machine's wall time flakes
    result = rig.run("now", "--week", WEEK)

    assert time.process_time() - started < 20
    assert result.exit_code == 3, result.output
    (reported,) = [line for line in result.stderr.splitlines() if "template error" in line]
    assert reported.startswith(f"  ! template error: {rig.templates / 'digest.md.j2'}:3: ")
    assert "Traceback" not in result.output and SECRET not in result.output
    assert rig.digest.read_text().startswith(f"# Digest for {WEEK}\n")
    for path in (rig.root / "data").rglob("*"):
        assert not path.is_file() or SECRET.encode() not in path.read_bytes(), path
