"""The audio edition through the CLI: a real espeak-ng episode, the podcast feed, the mail."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import feedparser
import miniaudio
import pytest
from click.testing import CliRunner, Result

from digest.audio.script import week_script
from digest.cli import cli
from digest.compose.entries import Topic
from digest.config import AudioConfig, Config, DigestSection
from digest.deliver.podcast import podcast_path, publish_episode
from digest.errors import DeliveryError
from digest.periods import parse_week
from id3_frames import chapters_of
from loopback import LoopbackServer
from mailrig import Sink
from test_audio_script import DATES, URL_OR_MARKDOWN, entry
from test_end_to_end import RSS_ENTRIES, WEEK, serve_site, write_config

NO_ESPEAK = shutil.which("espeak-ng") is None


@dataclass
class AudioRig:
    config: Path
    data: Path

    def run(self, *args: str) -> Result:
        return CliRunner().invoke(cli, [*args, "--config", str(self.config)])

    @property
    def digests(self) -> Path:
        return self.data / "digests"


@pytest.fixture
def audio_rig(tmp_path: Path, server: LoopbackServer) -> Iterator[AudioRig]:
    serve_site(server, RSS_ENTRIES)
    config = write_config(tmp_path, server, "[audio]\nenabled = true\n")
    yield AudioRig(config, tmp_path / "data")


def sections_of(markdown: str) -> list[str]:
    backlog = {"Still unread from earlier weeks", "One year ago"}
    headings = re.findall(r"(?m)^## (.+)$", markdown)
    return [heading.replace("\\", "") for heading in headings if heading not in backlog]


@pytest.mark.slow
@pytest.mark.skipif(NO_ESPEAK, reason="espeak-ng is not installed (.ci/run installs it)")
def test_now_narrates_the_week_into_an_mp3_with_a_chapter_per_section(audio_rig: AudioRig) -> None:
    result = audio_rig.run("now", "--week", WEEK)

    assert result.exit_code == 0, result.output
    mp3 = audio_rig.digests / f"{WEEK}.mp3"
    script = (audio_rig.digests / f"{WEEK}.audio.txt").read_text()
    decoded = miniaudio.decode_file(str(mp3), nchannels=1)
    expected_s = len(script.split()) / 150 * 60
    assert 0.7 * expected_s <= decoded.duration <= 1.3 * expected_s
    toc, chapters = chapters_of(mp3.read_bytes())
    chapters.sort(key=lambda chap: chap.start_ms)
    assert toc.children == [chap.element_id for chap in chapters]
    titles = [chap.title for chap in chapters]
    assert titles == sections_of((audio_rig.digests / f"{WEEK}.md").read_text())
    assert chapters[-1].end_ms == pytest.approx(decoded.duration * 1000, abs=100)
    assert not URL_OR_MARKDOWN.search(script)
    assert re.search(
        r"audio: 2026-W47\.mp3, [\d.]+ min, [\d.]+ MB, [\d.]+ CPU s of synthesis", (result.output)
    )


@pytest.mark.slow
@pytest.mark.skipif(NO_ESPEAK, reason="espeak-ng is not installed (.ci/run installs it)")
def test_the_podcast_feed_has_the_episode_once_with_its_size_and_the_atom_id(
    audio_rig: AudioRig,
) -> None:
    assert audio_rig.run("now", "--week", WEEK).exit_code == 0
    mp3 = audio_rig.digests / f"{WEEK}.mp3"
    written = mp3.stat().st_mtime_ns

    assert audio_rig.run("now", "--week", WEEK).exit_code == 0  # same content: not spoken again

    podcast = feedparser.parse(str(audio_rig.digests / "podcast.xml"))
    atom = feedparser.parse(str(audio_rig.digests / "feed.xml"))
    assert not podcast.bozo, podcast.bozo_exception
    (episode,) = podcast.entries
    (enclosure,) = episode.enclosures
    assert int(enclosure.length) == mp3.stat().st_size
    assert enclosure.type == "audio/mpeg"
    assert enclosure.href == mp3.as_uri()
    assert episode.id == atom.entries[0].id
    assert re.fullmatch(r"\d\d:\d\d:\d\d", episode.itunes_duration)
    chapters = [chapter.title for chapter in episode.psc_chapters.chapters]
    assert chapters == sections_of((audio_rig.digests / f"{WEEK}.md").read_text())
    assert mp3.stat().st_mtime_ns == written
    with sqlite3.connect(audio_rig.data / "digest.db") as db:
        rows = db.execute("SELECT status FROM deliveries WHERE channel = 'podcast'").fetchall()
    assert rows == [("sent",)]


@pytest.mark.slow
@pytest.mark.skipif(NO_ESPEAK, reason="espeak-ng is not installed (.ci/run installs it)")
def test_the_mail_links_the_episode_when_the_digests_are_served(
    tmp_path: Path, sink: tuple[Sink, int], server: LoopbackServer
) -> None:
    handler, port = sink
    extra = (
        '[audio]\nenabled = true\n[output]\npublic_url = "https://me.example/digests"\n'
        f'[email]\nenabled = true\nhost = "127.0.0.1"\nport = {port}\nsecurity = "none"\n'
        'send = "every_revision"\n'
    )
    serve_site(server, RSS_ENTRIES)
    result = CliRunner().invoke(
        cli, ["now", "--week", WEEK, "--config", str(write_config(tmp_path, server, extra))]
    )

    assert result.exit_code == 0, result.output
    (message,) = handler.messages()
    html = next(part for part in message.walk() if part.get_content_type() == "text/html")
    body = html.get_payload(decode=True)
    assert isinstance(body, bytes)
    assert f'href="https://me.example/digests/{WEEK}.mp3"' in body.decode()


def test_with_no_voice_the_digest_is_written_the_run_says_so_and_exits_3(
    tmp_path: Path, server: LoopbackServer
) -> None:
    serve_site(server, RSS_ENTRIES)
    extra = '[audio]\nenabled = true\nespeak = "/nonexistent/espeak-ng"\n'
    config = write_config(tmp_path, server, extra)
    result = CliRunner().invoke(cli, ["now", "--week", WEEK, "--config", str(config)])

    assert result.exit_code == 3, result.output
    digests = tmp_path / "data" / "digests"
    assert result.stdout.splitlines()[-1] == str(digests / f"{WEEK}.md")
    assert (digests / f"{WEEK}.md").is_file()
    assert (digests / f"{WEEK}.audio.txt").is_file()  # the script is there to read
    assert not (digests / f"{WEEK}.mp3").exists()
    said = [line for line in result.output.splitlines() if "no voice installed" in line]
    assert len(said) == 1 and "'/nonexistent/espeak-ng' ([audio] espeak)" in said[0]


def test_a_piper_voice_that_is_not_there_is_named_and_the_digest_is_written(
    tmp_path: Path, server: LoopbackServer
) -> None:
    serve_site(server, RSS_ENTRIES)
    config = write_config(tmp_path, server, '[audio]\nenabled = true\nvoice = "gone.onnx"\n')
    result = CliRunner().invoke(cli, ["now", "--week", WEEK, "--config", str(config)])

    assert result.exit_code == 3, result.output
    assert (tmp_path / "data" / "digests" / f"{WEEK}.md").is_file()
    assert f"audio: no Piper voice at {tmp_path / 'gone.onnx'} ([audio] voice)" in result.output


PIPER_VOICE = os.environ.get("DIGEST_TEST_PIPER_VOICE", "")


@pytest.mark.skipif(
    not PIPER_VOICE, reason="set DIGEST_TEST_PIPER_VOICE to a Piper .onnx to speak with Piper"
)
def test_a_piper_voice_speaks_the_week_with_its_chapters(audio_rig: AudioRig) -> None:
    with audio_rig.config.open("a") as config:
        config.write(f"voice = {json.dumps(PIPER_VOICE)}\n")  # under [audio], the last table

    result = audio_rig.run("now", "--week", WEEK)

    assert result.exit_code == 0, result.output
    mp3 = audio_rig.digests / f"{WEEK}.mp3"
    assert miniaudio.decode_file(str(mp3), nchannels=1).duration > 10
    assert "(Piper (" in result.output
    titles = [chap.title for chap in chapters_of(mp3.read_bytes())[1]]
    assert sorted(titles) == sorted(sections_of((audio_rig.digests / f"{WEEK}.md").read_text()))


def test_doctor_names_the_voice_or_says_there_is_none(tmp_path: Path) -> None:
    config = tmp_path / "digest.toml"
    config.write_text(
        '[digest]\ndata_dir = "data"\n[audio]\nenabled = true\nespeak = "/none/espeak"\n'
    )

    result = CliRunner().invoke(cli, ["doctor", "--local", "--config", str(config)])

    assert result.exit_code == 1
    (line,) = [line for line in result.output.splitlines() if line.startswith("audio:")]
    assert line.startswith("audio: problem: no voice installed: espeak-ng not found as")
    assert line.endswith(
        "fix: apt-get install espeak-ng, or set [audio] voice to a Piper voice model"
    )


# -- the podcast feed across weeks -------------------------------------------------------------


def podcast_config(tmp_path: Path) -> Config:
    return Config(digest=DigestSection(data_dir=tmp_path / "data"), audio=AudioConfig(enabled=True))


def publish(config: Config, label: str, note: str, hour: int) -> None:
    script = week_script(
        label,
        DATES,
        [Topic("Serving", [entry("A title", note)])],
        max_minutes=5,
        words_per_minute=150,
    )
    period = parse_week(label, ZoneInfo("UTC"))
    updated = datetime(2026, 11, 23, hour, tzinfo=UTC)
    publish_episode(config, period, script, dates=DATES, updated=updated, guid=f"tag:t,{label}")


@pytest.mark.skipif(NO_ESPEAK, reason="espeak-ng is not installed (.ci/run installs it)")
def test_a_new_revision_replaces_its_week_in_the_podcast_and_keeps_the_others(
    tmp_path: Path,
) -> None:
    config = podcast_config(tmp_path)
    publish(config, "2026-W46", "Short.", 1)
    publish(config, "2026-W47", "Short.", 2)

    publish(config, "2026-W46", "A longer note, spoken for a little longer than the first.", 3)

    feed = feedparser.parse(str(podcast_path(config)))
    assert [entry.title.split(",")[0] for entry in feed.entries] == [
        "Digest for 2026-W46",  # its new revision is the newest
        "Digest for 2026-W47",
    ]
    for week in feed.entries:
        label = week.title.split(" ")[2].rstrip(",")
        size = (config.digests_dir / f"{label}.mp3").stat().st_size
        assert int(week.enclosures[0].length) == size


@pytest.mark.skipif(NO_ESPEAK, reason="espeak-ng is not installed (.ci/run installs it)")
def test_a_podcast_feed_that_cannot_be_read_is_left_as_it_is(tmp_path: Path) -> None:
    config = podcast_config(tmp_path)
    config.digests_dir.mkdir(parents=True)
    podcast_path(config).write_text("<rss><channel><item>half")

    with pytest.raises(DeliveryError, match="podcast.xml: not readable as a podcast feed"):
        publish(config, "2026-W47", "Short.", 1)
    assert podcast_path(config).read_text() == "<rss><channel><item>half"
