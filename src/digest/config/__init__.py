"""The TOML config, validated by pydantic; relative paths resolve against the file's folder.

The models of its sections (values, sources, sections, rules, models), how it is found and
read (loading), and what a user reads when it does not validate (messages).
"""

from digest.config.loading import (
    ConfigLocation,
    default_config_text,
    load_config,
    locate_config,
    parse_config,
    read_prompt_file,
    user_config_path,
    user_data_dir,
)
from digest.config.messages import range_words
from digest.config.models import Config
from digest.config.rules import RuleConfig
from digest.config.sections import (
    NOTE_PROMPT_VARIABLES,
    SUBJECT_FIELDS,
    WEEK_PROMPT_VARIABLES,
    AudioConfig,
    DigestSection,
    EmailConfig,
    EpubConfig,
    FetchConfig,
    LLMConfig,
    LogConfig,
    ModelPrice,
    NotifyConfig,
    OutputConfig,
    ScheduleConfig,
    SiteConfig,
)
from digest.config.sources import (
    IMPORT_SOURCE,
    MAIL_KINDS,
    MANUAL_SOURCE,
    NO_SOURCES,
    NO_SOURCES_FIX,
    RESERVED_SOURCE_NAMES,
    BasicAuth,
    BearerAuth,
    SourceConfig,
)
from digest.config.values import ENV_PREFIX, web_url

__all__ = [
    "ENV_PREFIX",
    "IMPORT_SOURCE",
    "MAIL_KINDS",
    "MANUAL_SOURCE",
    "NO_SOURCES",
    "NO_SOURCES_FIX",
    "NOTE_PROMPT_VARIABLES",
    "RESERVED_SOURCE_NAMES",
    "SUBJECT_FIELDS",
    "WEEK_PROMPT_VARIABLES",
    "AudioConfig",
    "BasicAuth",
    "BearerAuth",
    "Config",
    "ConfigLocation",
    "DigestSection",
    "EmailConfig",
    "EpubConfig",
    "FetchConfig",
    "LLMConfig",
    "LogConfig",
    "ModelPrice",
    "NotifyConfig",
    "OutputConfig",
    "RuleConfig",
    "ScheduleConfig",
    "SiteConfig",
    "SourceConfig",
    "default_config_text",
    "load_config",
    "locate_config",
    "parse_config",
    "range_words",
    "read_prompt_file",
    "user_config_path",
    "user_data_dir",
    "web_url",
]
