"""A run's parse settings (logformats.ParseSettings) as the job carries them to its nodes
(DISTKPI_PARSE_SETTINGS, domain/parse_settings.py), and the digest a manifest names for the
settings its summaries were made with: the collector takes a node's summaries of a suite
that reads its logs its own way (direction, warm-up, patterns) only when that digest is the
one of the run's own settings, and parses the files otherwise (older manifests name none)."""

from __future__ import annotations

from typing import Any

from distkpi.domain.logs.logformats import ParseSettings
from distkpi.domain.parse_settings import digest, read_settings_json, settings_json


def settings_to_json(settings: ParseSettings) -> dict[str, Any] | None:
    """What the job carries; None for the engine's defaults (no variable, no digest)."""
    return settings_json(settings.direction, settings.warmup_reports, settings.metrics)


def settings_from_json(text: str | None) -> ParseSettings:
    """The settings DISTKPI_PARSE_SETTINGS holds; the defaults when it is empty.
    ContractError naming what is wrong with it otherwise."""
    return ParseSettings(*read_settings_json(text))


def settings_digest(settings: ParseSettings) -> str | None:
    """sha256 of the settings' canonical JSON; None for the defaults."""
    return digest(settings_to_json(settings))
