"""MLPerf-style :::MLLOG lines, one JSON object per line."""

from __future__ import annotations

import json
import time
from typing import Any, TextIO


class MLLog:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def event(self, key: str, value: Any = None, **metadata: Any) -> None:
        record = {
            "namespace": "",
            "time_ms": int(time.time() * 1000),
            "event_type": "POINT_IN_TIME",
            "key": key,
            "value": value,
            "metadata": metadata,
        }
        self.out.write(":::MLLOG " + json.dumps(record) + "\n")
        self.out.flush()

    def info(self, message: str) -> None:
        self.out.write(time.strftime("I%m%d %H:%M:%S ") + message + "\n")
        self.out.flush()
