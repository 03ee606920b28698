"""The one comment distkpi keeps per pull request and suite: its headline, the KPIs against
their baseline (regressions first), the problems its configs reported, the links and, when
something regressed, how a writer accepts it; once accepted, who accepted it and why, as
the check run says it (acceptance.py). Every string a log or manifest gave passes
``neutral`` as in the check run (check_summary.py).

``outcome`` is what the comment shows that a suite's ``comment: on_change`` watches: the
verdict, each row's judgement (its config, KPI and verdict) and the acceptance, not the
numbers, which move a little with every run."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from distkpi.domain.commit_status import State
from distkpi.domain.github.acceptance import Acceptance, accepted_description, accepted_markdown
from distkpi.domain.github.check_summary import MARKS, MAX_OUTPUT, TRUNCATED
from distkpi.domain.github.comment_mode import CommentMode
from distkpi.domain.judging.evaluation import Evaluation
from distkpi.domain.judging.statistics import Judgement, KpiVerdict
from distkpi.domain.kpis.catalogue import CATALOGUE
from distkpi.domain.untrusted import neutral

ACCEPT_HINT = "comment `/distkpi accept <reason>` to accept (writers only)"
# at most this many problems are listed; the report has every one
MAX_PROBLEMS = 20

# the order rows are listed in: what needs a person first
_FIRST = (
    KpiVerdict.REGRESSED,
    KpiVerdict.MISSING,
    KpiVerdict.BEYOND_TOLERANCE,
    KpiVerdict.IMPROVED,
    KpiVerdict.PASS,
    KpiVerdict.NO_BASELINE,
    KpiVerdict.NOT_ENFORCED,
)
# shown in the open; the rest is folded
_MOVED = frozenset(_FIRST[:4])
_PLAIN = {
    KpiVerdict.PASS: "within range",
    KpiVerdict.NO_BASELINE: "no baseline yet",
    KpiVerdict.NOT_ENFORCED: "not enforced",
}


def marker(suite: str) -> str:
    """The hidden first line that names the comment's suite (for people and tools that read
    the thread; distkpi finds its comment by the id it kept, not by this line)."""
    return f"<!-- distkpi:suite={suite} -->"


@dataclass(frozen=True)
class CommentFacts:
    """What the comment says besides the evaluation (distkpi's own strings, not a log's)."""

    suite: str
    repo: str
    sha: str
    run_id: str
    report_url: str | None
    web_url: str = "https://github.com"


@dataclass(frozen=True)
class KeptComment:
    """What is kept of a suite's comment: its id on GitHub and the outcome it shows."""

    comment_id: int
    outcome: str


@dataclass(frozen=True)
class PullRequestComment:
    body: str
    outcome: str  # the digest of what on_change watches


def regressed(evaluation: Evaluation) -> bool:
    """Whether the comment shows the accept hint: a failing verdict with a regressed KPI."""
    return evaluation.verdict.state is State.FAILURE and any(
        j.verdict is KpiVerdict.REGRESSED for j in evaluation.judgements
    )


def outcome_of(
    evaluation: Evaluation, diagnoses: Sequence[str] = (), acceptance: Acceptance | None = None
) -> str:
    rows = "\n".join(f"{j.config}\t{j.kpi}\t{j.verdict.value}" for j in _ordered(evaluation))
    text = f"{evaluation.verdict.state.value}\n{rows}" + "".join(f"\n{d}" for d in diagnoses)
    if acceptance is not None:
        text += f"\naccepted\t{acceptance.login}\t{acceptance.at}\t{acceptance.reason}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def should_write(mode: CommentMode, shown: str | None, outcome: str) -> bool:
    """Whether to post or edit: ``shown`` is the outcome the comment shows (None: no comment
    yet, which every mode but never writes)."""
    if mode is CommentMode.NEVER:
        return False
    return mode is CommentMode.ALWAYS or shown != outcome


def pull_request_comment(
    evaluation: Evaluation,
    facts: CommentFacts,
    limit: int = MAX_OUTPUT,
    diagnoses: Sequence[str] = (),
    acceptance: Acceptance | None = None,
) -> PullRequestComment:
    """The comment; ``diagnoses``: a line per diagnosed config once its diagnosis job has
    reduced its traces (domain/github/diagnosis_texts.diagnosis_lines); ``acceptance``: who
    accepted the run's regressions, which makes it `success` with the check run's title
    and closing section, the table kept."""
    web = facts.web_url.rstrip("/")
    state = evaluation.verdict.state.value
    headline = evaluation.description
    if acceptance is not None:
        state = State.SUCCESS.value
        headline = accepted_description(acceptance.login, acceptance.reason)
    lines = [
        marker(facts.suite),
        f"### distkpi/{facts.suite}: {state}",
        "",
        f"**{_escape(headline)}**",
        "",
        f"Commit [`{facts.sha[:10]}`]({web}/{facts.repo}/commit/{facts.sha}) · run "
        f"`{facts.run_id}`",
        "",
        kpi_rows(evaluation),
    ]
    if diagnoses:
        lines += ["", "**Why it changed** (profiled base and head):", ""]
        lines += [f"- {_escape(d)}" for d in diagnoses]
    links = []
    if facts.report_url:
        links.append(f"[Full report]({facts.report_url})")
    links.append(f"[Checks]({web}/{facts.repo}/commit/{facts.sha}/checks)")
    lines += ["", " · ".join(links)]
    if acceptance is not None:
        lines += ["", accepted_markdown(acceptance).strip()]
    elif regressed(evaluation):
        lines += ["", f"Intended? {ACCEPT_HINT}."]
    head = "\n".join(lines)
    problems = _problems(evaluation)
    body = head + problems if len(head) + len(problems) <= limit else head
    if len(body) > limit:
        body = body[: limit - len(TRUNCATED)] + TRUNCATED
    return PullRequestComment(body + "\n", outcome_of(evaluation, diagnoses, acceptance))


def kpi_rows(evaluation: Evaluation) -> str:
    """One row per config and judged KPI, regressions first: what moved beyond its range in
    the open, the rest folded under a summary line."""
    ordered = _ordered(evaluation)
    if not ordered:
        return "No KPI was judged."
    moved = [j for j in ordered if j.verdict in _MOVED]
    rest = [j for j in ordered if j.verdict not in _MOVED]
    parts = [_table(moved) if moved else "No KPI moved beyond its range."]
    if rest:
        folded = f"{len(rest)} KPI value(s) within range or without a baseline"
        parts.append(f"<details><summary>{folded}</summary>\n\n{_table(rest)}\n\n</details>")
    return "\n\n".join(parts)


def _table(judgements: Sequence[Judgement]) -> str:
    lines = [
        "| config | KPI | value | baseline | allowed | Δ | |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for j in judgements:
        allowed = (
            f"{_number(j.low)}–{_number(j.high)}"
            if j.low is not None and j.high is not None
            else "–"
        )
        delta = f"{j.delta:+.1%}" if j.delta is not None else "–"
        mark = MARKS.get(j.verdict) or _PLAIN.get(j.verdict, j.verdict.value)
        lines.append(
            f"| {_escape(j.config)} | {_label(j.kpi)} | {_maybe(j.value)} | {_maybe(j.baseline)} "
            f"| {allowed} | {delta} | {mark} |"
        )
    return "\n".join(lines)


def _ordered(evaluation: Evaluation) -> list[Judgement]:
    configs = [c.name for c in evaluation.kpis.configs]
    kpis = [k.name for k in CATALOGUE]

    def key(j: Judgement) -> tuple[int, int, int, str, str]:
        return (
            _FIRST.index(j.verdict) if j.verdict in _FIRST else len(_FIRST),
            configs.index(j.config) if j.config in configs else len(configs),
            kpis.index(j.kpi) if j.kpi in kpis else len(kpis),
            j.config,
            j.kpi,
        )

    return sorted(evaluation.judgements, key=key)


def _label(name: str) -> str:
    found = next((k for k in CATALOGUE if k.name == name), None)
    return _escape(found.label if found else name)


def _problems(evaluation: Evaluation) -> str:
    listed = [
        f"- **{_escape(c.name)}**: {_escape(p)}"
        for c in evaluation.kpis.configs
        for p in c.problems
    ]
    if not listed:
        return ""
    more = len(listed) - MAX_PROBLEMS
    shown = listed[:MAX_PROBLEMS] + ([f"- … and {more} more in the report"] if more > 0 else [])
    return "\n\n#### Problems\n" + "\n".join(shown)


def _maybe(value: float | None) -> str:
    return "–" if value is None else _number(value)


def _number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def _escape(text: str) -> str:
    return neutral(text, markdown=True)
