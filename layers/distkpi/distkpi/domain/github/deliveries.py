"""A GitHub delivery done once: what its work answered, and whether that was an earlier
attempt's (services/ports.Deliveries; adapters/dynamo/deliveries.py keeps them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Once:
    """A delivery's answer (JSON), and whether it was stored by an earlier attempt; None
    for a repeat while the first attempt's claim is in progress."""

    answer: dict[str, Any] | None
    repeat: bool
