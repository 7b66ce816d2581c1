"""Every output of a digest, in the order they are delivered: one module per channel
(deliver.channel.Channel), one line here each."""

from __future__ import annotations

from digest.deliver.channel import Channel
from digest.deliver.channels.email import EmailChannel
from digest.deliver.channels.epub import EpubChannel
from digest.deliver.channels.feed import FeedChannel
from digest.deliver.channels.file import FileChannel
from digest.deliver.channels.log import LogChannel
from digest.deliver.channels.notes import NotesChannel
from digest.deliver.channels.notify import NotifyChannel
from digest.deliver.channels.podcast import PodcastChannel
from digest.deliver.channels.site import SiteChannel

CHANNELS: dict[str, Channel] = {
    "file": FileChannel(),  # first: the others deliver its recorded revision
    "log": LogChannel(),
    "feed": FeedChannel(),
    "podcast": PodcastChannel(),  # before the mail, which links the episode
    "email": EmailChannel(),
    "notes": NotesChannel(),
    "notify": NotifyChannel(),  # one record per URL
    "epub": EpubChannel(),
    "site": SiteChannel(),  # last: it shows what the others delivered
}
