"""A run's diagnoses as people read them beside its verdict: one line per diagnosed config,
the regression it explains first (`1x8 throughput -12%: communication +38% per step
(all_reduce 2.1 -> 2.9 ms), compute unchanged`), for the check run's summary and the
alert. Every name a trace gave passes `neutral`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from distkpi.domain.diagnosis.texts import TIMING_KPIS, diagnosis_line, regression_line
from distkpi.domain.github.alerts import SUBJECT_LIMIT
from distkpi.domain.judging.evaluation import Evaluation
from distkpi.domain.judging.statistics import KpiVerdict
from distkpi.domain.untrusted import neutral

# the KPI a line names, as people say it
SAID = {"step_time_s": "step time", "tokens_per_s": "tokens/s"}


def diagnosis_lines(
    evaluation: Evaluation, diagnoses: Mapping[str, Mapping[str, Any]]
) -> list[str]:
    """Per diagnosed config (in the run's order): its most regressed timing KPI and the
    diagnosis line; a config diagnosed without a regression (`on: always`) by its name."""
    lines = []
    for config in evaluation.kpis.configs:
        stored = diagnoses.get(config.name)
        if stored is None:
            continue
        said = diagnosis_line(stored) if stored.get("roles") else _why_none(stored)
        if stored.get("culprit"):
            said = f"culprit {str(stored.get('head_sha'))[:10]}: {said}"
        regressed = [
            j
            for j in evaluation.judgements
            if j.config == config.name
            and j.kpi in TIMING_KPIS
            and j.verdict is KpiVerdict.REGRESSED
        ]
        worst = max(regressed, key=lambda j: abs(j.delta or 0.0), default=None)
        if worst is None:
            lines.append(neutral(f"{config.name}: {said}"))
        else:
            kpi = SAID.get(worst.kpi, worst.kpi)
            lines.append(neutral(regression_line(config.name, kpi, worst.delta, said)))
    return lines


def diagnosis_markdown(lines: list[str], report_url: str | None = None) -> str:
    """The check run's section (appended to its summary)."""
    if not lines:
        return ""
    out = [
        "",
        "",
        "#### Why it changed (profiled base and head)",
        *(f"- {neutral(line, markdown=True)}" for line in lines),
    ]
    if report_url:
        out += ["", f"Breakdown, top operations and traces: [report]({report_url})"]
    return "\n".join(out)


def _why_none(stored: Mapping[str, Any]) -> str:
    problems = stored.get("problems") or []
    return f"not diagnosed: {problems[0]}" if problems else "not diagnosed: no traces"


def diagnosis_alert(
    model: str, where: tuple[str, str, str], lines: list[str], report_url: str | None
) -> tuple[str, str]:
    """The regression's alert again, with why: (subject, body); ``where``: the repository,
    branch and commit."""
    repo, branch, sha = where
    body = [f"distkpi/{model} on {repo} {branch} @ {sha[:10]}: profiled base and head", ""]
    body += [f"- {line}" for line in lines]
    if report_url:
        body += ["", f"Report: {report_url}"]
    subject = f"distkpi: why {model} regressed on {repo} {branch}"
    return subject[:SUBJECT_LIMIT], "\n".join(body) + "\n"
