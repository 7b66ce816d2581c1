"""The audio edition as a podcast: the week's script, its MP3, and `digests/podcast.xml`.

The script is saved first (`YYYY-Www.audio.txt`), then spoken into `YYYY-Www.mp3`,
then the week's item of the RSS 2.0 feed is rewritten with an enclosure of the file's
exact length, its duration and its chapters (Podlove Simple Chapters, which RSS can
carry inline). An item's guid is the Atom feed's id for the same week. Other weeks'
items are kept as they were.
"""

from __future__ import annotations

import email.utils
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from digest.atomic import write_atomic
from digest.audio.episode import MP3_TYPE, Episode, record_episode
from digest.audio.script import Script
from digest.audio.voices import voice_for
from digest.config import Config
from digest.deliver.atom import existing_elements, xml_text
from digest.models import Period

ITUNES = "http://www.itunes.com/dtds/podcast-1.0.dtd"
PSC = "http://podlove.org/simple-chapters"
PODCAST_ITEMS = 20
ET.register_namespace("itunes", ITUNES)
ET.register_namespace("psc", PSC)


@dataclass(frozen=True)
class Published:
    episode: Episode
    script_path: Path

    def report(self) -> str:
        """Time and size, for the run's report."""
        episode = self.episode
        minutes = episode.duration_s / 60
        return (
            f"audio: {episode.path.name}, {minutes:.1f} min, {episode.size / 1e6:.1f} MB,"
            f" {episode.synthesis_s:.1f} CPU s of synthesis ({episode.voice})"
        )


def podcast_path(config: Config) -> Path:
    return config.digests_dir / "podcast.xml"


def episode_path(config: Config, period: Period) -> Path:
    return config.digests_dir / f"{period.label}.mp3"


def script_path(config: Config, period: Period) -> Path:
    return config.digests_dir / f"{period.label}.audio.txt"


def episode_url(config: Config, period: Period) -> str:
    """Where a podcast app fetches the episode: under [output] public_url, else the file."""
    if config.output.public_url:
        return f"{config.output.public_url.rstrip('/')}/{period.label}.mp3"
    return episode_path(config, period).as_uri()


@dataclass(frozen=True)
class Link:
    markdown: str
    urls: tuple[str, ...]  # for the mail's allowlist of links


def episode_link(config: Config, period: Period) -> Link | None:
    """A line for the mail linking the week's episode, when it is served ([output] public_url)."""
    path = episode_path(config, period)
    if not (config.audio.enabled and config.output.public_url and path.is_file()):
        return None
    episode, feed = (
        episode_url(config, period),
        f"{config.output.public_url.rstrip('/')}/podcast.xml",
    )
    text = f"Listen to this week: [{period.label}.mp3]({episode}), or follow [the podcast]({feed})."
    return Link(text, (episode, feed))


def publish_episode(
    config: Config, period: Period, script: Script, *, dates: str, updated: datetime, guid: str
) -> Published:
    """Save the script, speak it into the MP3, put it in the podcast feed under `guid` (the
    week's id in the Atom feed). The script is written even when no voice can speak it
    (NoVoice then says why)."""
    text_path = script_path(config, period)
    write_atomic(text_path, script.text)
    voice = voice_for(config.audio)
    path = episode_path(config, period)
    episode = record_episode(script, voice, path, bitrate_kbps=config.audio.bitrate_kbps)
    _update_feed(config, period, episode, script, dates=dates, updated=updated, guid=guid)
    return Published(episode, text_path)


def _update_feed(
    config: Config,
    period: Period,
    episode: Episode,
    script: Script,
    *,
    dates: str,
    updated: datetime,
    guid: str,
) -> None:
    path = podcast_path(config)
    items = {
        item.findtext("guid") or "": item
        for item in existing_elements(path, "channel/item", "podcast feed")
    }
    item = _item(config, period, episode, script, dates, updated, guid)
    items[item.findtext("guid") or ""] = item
    newest = sorted(items.values(), key=_published, reverse=True)[:PODCAST_ITEMS]
    write_atomic(path, _serialise(config, newest))


def _item(
    config: Config,
    period: Period,
    episode: Episode,
    script: Script,
    dates: str,
    updated: datetime,
    guid: str,
) -> ET.Element:
    item = ET.Element("item")
    _sub(item, "title", f"{script.title}, {dates}")
    _sub(item, "guid", guid).set("isPermaLink", "false")
    _sub(item, "pubDate", email.utils.format_datetime(updated))
    _sub(item, "description", script.chapters[0].text)
    ET.SubElement(
        item,
        "enclosure",
        url=xml_text(episode_url(config, period)),
        length=str(episode.size),
        type=MP3_TYPE,
    )
    _sub(item, f"{{{ITUNES}}}duration", _clock(episode.duration_s * 1000, millis=False))
    chapters = ET.SubElement(item, f"{{{PSC}}}chapters", version="1.2")
    for mark in episode.chapters:
        ET.SubElement(
            chapters,
            f"{{{PSC}}}chapter",
            start=_clock(mark.start_ms, millis=True),
            title=xml_text(mark.title),
        )
    return item


def _serialise(config: Config, items: list[ET.Element]) -> str:
    rss = ET.Element("rss", version="2.0")
    channel = ET.SubElement(rss, "channel")
    _sub(channel, "title", "digest: the week, narrated")
    base = config.output.public_url.rstrip("/")
    _sub(channel, "link", base or config.digests_dir.as_uri())
    _sub(channel, "description", "Each week's digest, read aloud offline, a chapter per section.")
    _sub(channel, "language", "en")
    _sub(channel, f"{{{ITUNES}}}author", "digest")
    _sub(channel, f"{{{ITUNES}}}explicit", "false")
    if items:
        _sub(channel, "lastBuildDate", items[0].findtext("pubDate") or "")
    channel.extend(items)
    ET.indent(rss)
    return ET.tostring(rss, encoding="unicode", xml_declaration=True) + "\n"


def _published(item: ET.Element) -> tuple[float, str]:
    """Newest first; an item whose date was edited into nonsense sorts last, and is kept."""
    try:
        moment = email.utils.parsedate_to_datetime(item.findtext("pubDate") or "").timestamp()
    except (TypeError, ValueError):
        moment = 0.0
    return moment, item.findtext("guid") or ""


def _clock(milliseconds: float, *, millis: bool) -> str:
    """HH:MM:SS, with .mmm when `millis` (Podlove's chapter starts)."""
    total = round(milliseconds)
    seconds, ms = divmod(total, 1000)
    if not millis:
        seconds += ms >= 500
    hours, rest = divmod(seconds, 3600)
    clock = f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{clock}.{ms:03d}" if millis else clock


def _sub(parent: ET.Element, tag: str, text: str) -> ET.Element:
    element = ET.SubElement(parent, tag)
    element.text = xml_text(text)
    return element
