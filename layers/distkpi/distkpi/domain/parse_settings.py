"""How a run's logs are read, as the job carries it to its nodes (DISTKPI_PARSE_SETTINGS) and
as a manifest names it: the run's `accuracy_direction`, `warmup_reports` and the suite's
`metrics:` patterns as one JSON object, absent for the engine's defaults, and its sha256.
Shared by the launcher (planning), which writes it without the parser, and the parser's side
(logs/parsesettings.py), which reads it into a ParseSettings."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import ValidationError

from distkpi.domain.accuracy import Direction
from distkpi.domain.patterns import DeclaredMetrics
from distkpi.exceptions import ContractError


def settings_json(
    direction: Direction, warmup_reports: int | None, metrics: DeclaredMetrics | None
) -> dict[str, Any] | None:
    """The settings as the job carries them; None for the engine's defaults."""
    if direction is Direction.HIGHER and warmup_reports is None and metrics is None:
        return None
    return {
        "accuracy_direction": direction.value,
        "warmup_reports": warmup_reports,
        "metrics": None if metrics is None else metrics.model_dump(mode="json"),
    }


def digest(data: dict[str, Any] | None) -> str | None:
    """sha256 of the settings' canonical JSON; None for the defaults."""
    if data is None:
        return None
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def read_settings_json(
    text: str | None,
) -> tuple[Direction, int | None, DeclaredMetrics | None]:
    """The settings DISTKPI_PARSE_SETTINGS holds (the defaults when it is empty);
    ContractError naming what is wrong with it otherwise."""
    if not text:
        return Direction.HIGHER, None, None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ContractError(f"parse settings are not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ContractError("parse settings are not a JSON object")
    warmup = data.get("warmup_reports")
    if warmup is not None and (not isinstance(warmup, int) or isinstance(warmup, bool)):
        raise ContractError("parse settings: warmup_reports is not a whole number")
    try:
        direction = Direction(data.get("accuracy_direction", Direction.HIGHER))
        metrics = data.get("metrics")
        declared = None if metrics is None else DeclaredMetrics.model_validate(metrics)
    except (ValueError, ValidationError) as exc:
        raise ContractError(f"parse settings are not readable: {exc}") from exc
    return direction, warmup, declared
