"""Reading one training log: its lines found by the scanner (linescan.py), each read by a
suite's declared patterns (declared.py) and by the first built-in reader that claims it
(registry.py; README: what each family reports)."""

from __future__ import annotations

from dataclasses import dataclass

from distkpi.domain.accuracy import Direction
from distkpi.domain.logs import registry as readers
from distkpi.domain.logs.declared import reader_for
from distkpi.domain.logs.linescan import Readable, scan_lines
from distkpi.domain.logs.logsummary import LogSummary
from distkpi.domain.logs.normalise import normalise
from distkpi.domain.logs.readers.base import NUMBER_DOES_NOT_FIT, PASS_DOES_NOT_FIT
from distkpi.domain.logs.registry import NEEDLES, Registry, parse_line
from distkpi.domain.patterns import DeclaredMetrics

__all__ = [
    "DEFAULT_SETTINGS",
    "NEEDLES",
    "NUMBER_DOES_NOT_FIT",
    "PASS_DOES_NOT_FIT",
    "ParseSettings",
    "parse_line",
    "parse_log",
]


@dataclass(frozen=True)
class ParseSettings:
    """What reading one log needs to know from its run: how its quality metric improves,
    how many throughput reports are warm-up (None: the first 5%, at least one), and the
    suite's own patterns."""

    direction: Direction = Direction.HIGHER
    warmup_reports: int | None = None
    metrics: DeclaredMetrics | None = None


DEFAULT_SETTINGS = ParseSettings()


def parse_log(
    stream: Readable, settings: ParseSettings = DEFAULT_SETTINGS, registry: Registry | None = None
) -> LogSummary:
    """Stream a training log of any size into a LogSummary; never raises on bad content.
    ``registry``: the readers asked (None: registry.REGISTRY, as it is when the log is read)."""
    registry = registry if registry is not None else readers.REGISTRY
    declared = reader_for(settings.metrics) if settings.metrics is not None else None
    summary = LogSummary(
        direction=settings.direction,
        warmup_reports=settings.warmup_reports,
        declared=settings.metrics.kpis() if settings.metrics is not None else (),
    )
    # what the suite's patterns read of the KPIs only they then give (declared.py)
    own = LogSummary(warmup_reports=settings.warmup_reports)
    triggers = declared.triggers if declared else ()
    lines, problems = scan_lines(stream, registry.needles, triggers)
    for raw in lines:
        line = normalise(raw)
        if declared is not None:
            declared.read(line, summary, own)
        registry.read_normalised(line, summary)
    if declared is not None:
        declared.adopt(own, summary)
    for problem in problems.describe():
        summary.note(problem)
    return summary
