"""What people read when a bisection ends: the alert sent again with the culprit (or the range
it narrowed to), and the section the pushed head's check run gains. A commit's author and
title come from GitHub (people wrote them), so they pass ``neutral`` like any log's text."""

from __future__ import annotations

from collections.abc import Callable

from distkpi.domain.bisect.deciding import Ends
from distkpi.domain.bisect.plan import Bisection, BisectState, Step
from distkpi.domain.github.alerts import SUBJECT_LIMIT, AlertMessage
from distkpi.domain.untrusted import neutral

ReportUrl = Callable[[str], str | None]


def _at_culprit(b: Bisection, end: Ends) -> float | None:
    """The culprit's value: its bad step's (runs averaged), the bad run's when it is the head."""
    if b.culprit is None:
        return None
    if b.culprit == b.bad:
        return end.bad
    values = [s.values[end.key] for s in b.steps if s.sha == b.culprit and end.key in s.values]
    return sum(values) / len(values) if values else None


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _headline(b: Bisection) -> str:
    span = f"{len(b.line)} commits {b.good[:10]}...{b.bad[:10]}"
    if b.state is BisectState.FOUND and b.culprit is not None:
        return f"bisected {span}: {b.culprit[:10]} did it"
    return f"bisection of {span} {b.state.value}: {neutral(b.why)}"


def _left(b: Bisection) -> list[str]:
    """The commits an inconclusive bisection left: after line[low] up to line[high]."""
    high = b.high if b.high >= 0 else len(b.line) - 1
    return [c.sha for c in b.line[b.low + 1 : high + 1]]


def _step_line(number: int, step: Step, report_url: ReportUrl) -> str:
    side = step.side.value if step.side is not None else "running"
    link = report_url(step.run_id)
    tail = f": {link}" if link else ""
    return f"{number}. {step.sha[:10]} {side}, {step.gpu_hours:.2f} GPU-hours{tail}"


def bisection_alert(
    b: Bisection, *, web_url: str, report_url: ReportUrl, run_report: str | None
) -> AlertMessage:
    """The regression alert again, now that its bisection ended."""
    web = web_url.rstrip("/")
    lines = [f"distkpi/{b.model} on {b.repo} {b.branch}: {_headline(b)}", ""]
    culprit = b.commit(b.culprit) if b.culprit else None
    if culprit is not None:
        lines += [
            f"Culprit: {culprit.sha} by {neutral(culprit.author)}",
            f"  {neutral(culprit.title)}",
            f"  {web}/{b.repo}/commit/{culprit.sha}",
        ]
    else:
        left = _left(b)
        lines.append(f"The culprit is one of {len(left)}: {', '.join(x[:10] for x in left)}")
        if left:
            since = b.line[b.low].sha if b.low >= 0 else b.good
            lines.append(f"  {web}/{b.repo}/compare/{since}...{left[-1]}")
    lines += ["", f"Regressed (good {b.good[:10]} / culprit / bad {b.bad[:10]}):"]
    for end in b.ends:
        at = _number(_at_culprit(b, end))
        lines.append(f"- {end.config} {end.kpi}: {_number(end.good)} / {at} / {_number(end.bad)}")
    configs = ", ".join(b.runs_configs)
    lines += ["", f"Steps ({len(b.steps)}, {b.gpu_hours:.2f} GPU-hours, configs {configs}):"]
    lines += [_step_line(i, s, report_url) for i, s in enumerate(b.steps, 1)]
    if run_report:
        lines += ["", f"Report of {b.bad[:10]}: {run_report}"]
    subject = f"distkpi: {b.model} on {b.repo} {b.branch} bisected: "
    subject += f"{b.culprit[:10]}" if b.culprit else b.state.value
    return AlertMessage(subject[:SUBJECT_LIMIT], "\n".join(lines) + "\n")


def bisection_markdown(b: Bisection, *, web_url: str, report_url: ReportUrl) -> str:
    """The section a pushed head's check run summary gains when its bisection ends."""
    web = web_url.rstrip("/")
    out = ["", "", "### Bisection", "", _headline(b), ""]
    culprit = b.commit(b.culprit) if b.culprit else None
    if culprit is not None:
        title = neutral(culprit.title, markdown=True)
        author = neutral(culprit.author, markdown=True)
        link = f"[`{culprit.sha[:10]}`]({web}/{b.repo}/commit/{culprit.sha})"
        out += [f"Culprit: {link} {title} ({author})", ""]
    else:
        left = _left(b)
        out += [f"The culprit is one of {len(left)}: {', '.join(f'`{s[:10]}`' for s in left)}", ""]
    out += ["| config | KPI | good | culprit | bad |", "| --- | --- | --- | --- | --- |"]
    for end in b.ends:
        values = (_number(end.good), _number(_at_culprit(b, end)), _number(end.bad))
        out.append(f"| {end.config} | {end.kpi} | {' | '.join(values)} |")
    out += ["", "| step | commit | side | GPU-hours | report |", "| --- | --- | --- | --- | --- |"]
    for i, s in enumerate(b.steps, 1):
        url = report_url(s.run_id)
        side = s.side.value if s.side is not None else "running"
        report = f"[report]({url})" if url else "-"
        out.append(f"| {i} | `{s.sha[:10]}` | {side} | {s.gpu_hours:.2f} | {report} |")
    return "\n".join(out) + "\n"
