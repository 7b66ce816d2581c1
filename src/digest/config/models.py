"""The whole config: every section, checked together (unique names, settings that move)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, PrivateAttr, model_validator

from digest.config.rules import RuleConfig
from digest.config.sections import (
    AudioConfig,
    DigestSection,
    EmailConfig,
    EpubConfig,
    FetchConfig,
    LLMConfig,
    LogConfig,
    NotifyConfig,
    OfflineConfig,
    OutputConfig,
    ScheduleConfig,
    SiteConfig,
)
from digest.config.sources import RESERVED_SOURCE_NAMES, SourceConfig
from digest.config.values import Section


class Config(Section):
    digest: DigestSection = DigestSection()
    sources: list[SourceConfig] = Field(default_factory=list)
    # what the reader cares about: ranks each section's items (see compose/ranking.py)
    interests: list[str] = Field(default_factory=list)
    rules: list[RuleConfig] = Field(default_factory=list)
    fetch: FetchConfig = FetchConfig()
    llm: LLMConfig = LLMConfig()
    offline: OfflineConfig = OfflineConfig()
    email: EmailConfig = EmailConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    output: OutputConfig = OutputConfig()
    audio: AudioConfig = AudioConfig()
    notify: NotifyConfig = NotifyConfig()
    epub: EpubConfig = EpubConfig()
    site: SiteConfig = SiteConfig()
    log: LogConfig = LogConfig()
    _path: Path | None = PrivateAttr(None)  # the file it came from, if any

    @model_validator(mode="after")
    def _unique_source_names(self) -> Config:
        names = [source.name for source in self.sources]
        reserved = sorted(set(names) & RESERVED_SOURCE_NAMES)
        if reserved:
            raise ValueError(
                f"source name {reserved[0]!r} is reserved for links saved with"
                f" `digest {reserved[0] if reserved[0] != 'manual' else 'add'}`; choose another"
            )
        duplicated = sorted({name for name in names if names.count(name) > 1})
        if duplicated:
            raise ValueError(f"source names must be unique: {', '.join(duplicated)}")
        return self

    @model_validator(mode="after")
    def _unique_rule_names(self) -> Config:
        names = [rule.name for rule in self.rules]
        if duplicated := sorted({name for name in names if names.count(name) > 1}):
            raise ValueError(f"rule names must be unique: {', '.join(duplicated)}")
        return self

    @model_validator(mode="after")
    def _offline_settings_reach_the_summariser(self) -> Config:
        sentences = self.offline.note_sentences
        if self.llm.note_sentences != sentences:
            # frozen: the model is still being built here, and only this validator sets llm
            object.__setattr__(
                self, "llm", self.llm.model_copy(update={"note_sentences": sentences})
            )
        return self

    @property
    def path(self) -> Path | None:
        return self._path

    @property
    def data_dir(self) -> Path:
        return self.digest.data_dir

    @property
    def db_path(self) -> Path:
        return self.data_dir / "digest.db"

    @property
    def site_dir(self) -> Path:
        return self.site.out or self.digest.data_dir / "site"

    @property
    def digests_dir(self) -> Path:
        return self.data_dir / "digests"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "digest-log.md"
