"""Regressions on a configured branch, told once: which configs a run's verdict alarms of,
which of them are new, and the message a team reads.

A config alarms when its run's verdict is `failure` and it regressed (or its accuracy left
the tolerance). It stays alarmed, with no new message, for as long as its runs keep
regressing, and is cleared by the first run in which it does not.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from distkpi.domain.commit_status import State
from distkpi.domain.judging.evaluation import Evaluation
from distkpi.domain.judging.statistics import KpiVerdict
from distkpi.domain.untrusted import neutral

SUBJECT_LIMIT = 100  # SNS's limit on an email subject


@dataclass(frozen=True)
class AlarmState:
    """What is remembered per (repo, branch, model)."""

    alarmed: frozenset[str] = frozenset()
    last_pass_sha: str | None = None


def regressed_configs(evaluation: Evaluation) -> frozenset[str]:
    if evaluation.verdict.state is not State.FAILURE:
        return frozenset()
    judged = {j.config for j in evaluation.judgements if j.verdict is KpiVerdict.REGRESSED}
    misaligned = {
        c.name
        for c in evaluation.kpis.configs
        if any(r.startswith(f"{c.name} acc Δ") for r in evaluation.verdict.reasons)
    }
    return frozenset(judged | misaligned)


def next_state(
    before: AlarmState, evaluation: Evaluation, sha: str
) -> tuple[AlarmState, frozenset[str]]:
    """The state after this run, and the configs newly alarmed (empty: publish nothing). An
    error verdict says nothing about regressions, so it changes nothing."""
    state = evaluation.verdict.state
    if state is State.ERROR:
        return before, frozenset()
    regressed = regressed_configs(evaluation)
    last_pass = sha if state is State.SUCCESS else before.last_pass_sha
    return AlarmState(regressed, last_pass), regressed - before.alarmed


@dataclass(frozen=True)
class AlertMessage:
    subject: str
    body: str


@dataclass(frozen=True)
class Alerted:
    """The run an alert is about."""

    repo: str
    branch: str
    model: str
    sha: str


def alert_message(
    evaluation: Evaluation,
    run: Alerted,
    new: Iterable[str],
    *,
    last_pass_sha: str | None,
    web_url: str,
    report_url: str | None,
) -> AlertMessage:
    web = web_url.rstrip("/")
    head = f"distkpi/{run.model} on {run.repo} {run.branch} @ {run.sha[:10]}"
    lines = [f"{head}: {neutral(evaluation.description)}", ""]
    lines.append(f"Newly regressed: {', '.join(sorted(new))}")
    for j in evaluation.judgements:
        if j.verdict is KpiVerdict.REGRESSED:
            delta = f"{j.delta:+.1%}" if j.delta is not None else j.why
            allowed = (
                f" (allowed {j.low:.4g} to {j.high:.4g})"
                if j.low is not None and j.high is not None
                else ""
            )
            lines.append(
                f"- {j.config} {j.kpi}: {j.value:.4g} vs {j.baseline:.4g}, {delta}{allowed}"
                if j.value is not None and j.baseline is not None
                else f"- {j.config} {j.kpi}: {delta}"
            )
    reasons = evaluation.verdict.reasons
    lines += [f"- {neutral(reason)}" for reason in reasons if " acc Δ" in reason]
    lines.append("")
    if last_pass_sha:
        compare = f"{web}/{run.repo}/compare/{last_pass_sha}...{run.sha}"
        lines.append(f"Commits since the last passing run: {compare}")
    else:
        lines.append(f"No passing run on record; this commit: {web}/{run.repo}/commit/{run.sha}")
    if report_url:
        lines.append(f"Report: {report_url}")
    subject = f"distkpi: {run.model} regressed on {run.repo} {run.branch}"
    return AlertMessage(subject[:SUBJECT_LIMIT], "\n".join(lines) + "\n")


def with_mentions(message: AlertMessage, mentions: Iterable[str]) -> AlertMessage:
    """The message with a last line naming who it is for (owners, a culprit's author: names
    checked as GitHub logins or teams, codeowners.mentions, never a log's text)."""
    named = " ".join(mentions)
    if not named:
        return message
    return AlertMessage(message.subject, f"{message.body}\nFor: {named}\n")
