"""A check run's markdown, as a person reads it in the pull request: the seed's KPI table,
each enforced KPI with its baseline range and delta, then the verdict and why, the
hardware, the GPU-hours and the report's link, then the problems."""

from __future__ import annotations

from collections.abc import Sequence

from distkpi.domain.accuracy import Target
from distkpi.domain.judging.evaluation import Evaluation
from distkpi.domain.judging.statistics import Judgement, KpiVerdict
from distkpi.domain.judging.table import rows
from distkpi.domain.kpis.engine import ConfigKpis
from distkpi.domain.untrusted import neutral

# GitHub refuses an output.summary or output.text longer than this
MAX_OUTPUT = 65_535
TRUNCATED = "\n\n… (truncated: the report has everything)"

MARKS = {
    KpiVerdict.REGRESSED: "🔻 **regressed**",
    KpiVerdict.IMPROVED: "🔺 improved",
    KpiVerdict.MISSING: "⚠️ **enforced, not reported**",
    KpiVerdict.BEYOND_TOLERANCE: "⚠️ beyond tolerance, too little history to fail",
}


def _cell(value: float | None, fmt: str) -> str:
    return "–" if value is None else f"{value:{fmt}}"


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def _judged_cell(plain: str, judged: Judgement | None) -> str:
    """The value, then for an enforced KPI its baseline range and delta, marked when it
    moved beyond the range."""
    if judged is None or judged.verdict in (KpiVerdict.NOT_ENFORCED, KpiVerdict.NO_BASELINE):
        return plain
    parts = [plain]
    if judged.low is not None and judged.high is not None:
        parts.append(f"range {_number(judged.low)}–{_number(judged.high)}")
    if judged.delta is not None:
        parts.append(f"Δ {judged.delta:+.1%}")
    mark = MARKS.get(judged.verdict)
    if mark:
        parts.append(mark)
    return "<br>".join(parts)


def kpi_table(evaluation: Evaluation, target_accuracy: Target | None = None) -> str:
    """The seed's table in markdown: a row per KPI, a column per config."""
    configs = evaluation.kpis.configs
    judged = {(j.config, j.kpi): j for j in evaluation.judgements}
    lines = [
        "| KPI | " + " | ".join(_escape(c.name) for c in configs) + " |",
        "|---|" + "---:|" * len(configs),
    ]
    for row in rows(evaluation.kpis, target_accuracy, unicode=True):
        kpi = row.kpi.name if row.kpi is not None and row.kpi.judged else None
        label = row.label
        cells = [
            _judged_cell(_escape(row.cell(c)), judged.get((c.name, kpi)) if kpi else None)
            for c in configs
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _escape(text: str) -> str:
    """Text (a log's, as often as not) as markdown that renders it and nothing else."""
    return neutral(text, markdown=True)


def _problems(configs: Sequence[ConfigKpis]) -> list[str]:
    return [f"- **{_escape(c.name)}**: {_escape(p)}" for c in configs for p in c.problems]


def summary_markdown(
    evaluation: Evaluation,
    report_url: str | None,
    target_accuracy: Target | None = None,
    limit: int = MAX_OUTPUT,
) -> str:
    """The check's summary: the table, the verdict and why, hardware, GPU-hours, the
    report's link, then the problems; at most ``limit`` characters, the problems cut first."""
    run = evaluation.kpis
    state = evaluation.verdict.state.value
    verdict = f"**Verdict: {state}**: {_escape(evaluation.description)}"
    head = [kpi_table(evaluation, target_accuracy), "", verdict]
    hardware = sorted({c.hardware for c in run.configs if c.hardware})
    facts = []
    if hardware:
        facts.append(f"Hardware: {', '.join(_escape(h) for h in hardware)}")
    if run.gpu_hours is not None:
        facts.append(f"GPU-hours: {run.gpu_hours:.3g}")
    if run.base_sha:
        pairs = ", ".join(f"{_escape(c.name)} {len(c.pairs)}" for c in run.configs)
        facts.append(f"Paired against `{run.base_sha[:10]}`, pairs run: {pairs}")
    if facts:
        head += ["", " · ".join(facts)]
    if report_url:
        head += ["", f"[Full report]({report_url})"]
    text = "\n".join(head)
    problems = _problems(run.configs)
    if not problems:
        return _clip(text, limit)
    section = "\n\n#### Problems\n" + "\n".join(problems)
    if len(text) + len(section) <= limit:
        return text + section
    room = limit - len(text) - len(TRUNCATED)
    return text + section[: max(0, room)] + TRUNCATED if room > 0 else _clip(text, limit)


def problems_text(configs: Sequence[ConfigKpis], limit: int = MAX_OUTPUT) -> str | None:
    problems = _problems(configs)
    return _clip("\n".join(problems), limit) if problems else None


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(TRUNCATED)] + TRUNCATED
