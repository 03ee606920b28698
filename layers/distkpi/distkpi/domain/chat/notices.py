"""An alert as a chat shows it: a title, the verdict's words, the regressed KPIs as a table,
who is mentioned and the links. The strings of a log (a verdict's description) and of
GitHub's commits (an author's name, a title) are neutralised here, once; `slack.py` only
lays them out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from distkpi.domain.bisect.plan import Bisection, BisectState
from distkpi.domain.github.alerts import Alerted
from distkpi.domain.github.codeowners import mentions as as_mentions
from distkpi.domain.judging.evaluation import Evaluation
from distkpi.domain.judging.statistics import KpiVerdict
from distkpi.domain.untrusted import neutral

HEADINGS = ("config", "KPI", "value", "baseline", "Δ")


@dataclass(frozen=True)
class Link:
    label: str
    url: str


@dataclass(frozen=True)
class Notice:
    suite: str  # the rate limit's key and the message's subject (`repo/model`)
    title: str
    summary: str
    rows: tuple[tuple[str, ...], ...] = ()
    headings: tuple[str, ...] = HEADINGS
    mentions: tuple[str, ...] = ()
    links: tuple[Link, ...] = ()
    culprit: str | None = None


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def regressed_rows(evaluation: Evaluation) -> tuple[tuple[str, ...], ...]:
    return tuple(
        (
            neutral(j.config),
            j.kpi,
            _number(j.value),
            _number(j.baseline),
            f"{j.delta:+.1%}" if j.delta is not None else "-",
        )
        for j in evaluation.judgements
        if j.verdict is KpiVerdict.REGRESSED
    )


def regression_notice(
    evaluation: Evaluation,
    run: Alerted,
    mentions: Sequence[str],
    *,
    web_url: str,
    report_url: str | None,
    pull_request: int | None = None,
) -> Notice:
    """A run's regression: a push's to a configured branch, or a pull request's failure."""
    web = web_url.rstrip("/")
    where = f"pull request #{pull_request}" if pull_request is not None else run.branch
    links = [Link("Report", report_url)] if report_url else []
    if pull_request is not None:
        links.append(Link("Pull request", f"{web}/{run.repo}/pull/{pull_request}"))
    links.append(Link("Commit", f"{web}/{run.repo}/commit/{run.sha}"))
    state = evaluation.verdict.state.value
    return Notice(
        suite=f"{run.repo}/{run.model}",
        title=f"distkpi/{run.model} {state} on {run.repo} {where} @ {run.sha[:10]}",
        summary=neutral(evaluation.description),
        rows=regressed_rows(evaluation),
        mentions=tuple(mentions),
        links=tuple(links),
    )


def culprit_notice(
    bisection: Bisection, mentions: Sequence[str], *, web_url: str, report_url: str | None
) -> Notice:
    """A bisection that ended: its culprit (and its author mentioned) or the range left."""
    web = web_url.rstrip("/")
    b = bisection
    culprit = b.commit(b.culprit) if b.culprit else None
    links = [Link("Report", report_url)] if report_url else []
    text = None
    if b.state is BisectState.FOUND and culprit is not None:
        title = f"distkpi/{b.model} on {b.repo} {b.branch}: {culprit.sha[:10]} did it"
        login = as_mentions([culprit.login] if culprit.login else [])
        by = f" ({login[0]})" if login else ""
        text = f"{culprit.sha[:10]} by {neutral(culprit.author)}{by}: {neutral(culprit.title)}"
        links.append(Link("Culprit", f"{web}/{b.repo}/commit/{culprit.sha}"))
        mentions = (*mentions, *as_mentions([culprit.login] if culprit.login else []))
    else:
        title = f"distkpi/{b.model} on {b.repo} {b.branch}: bisection {b.state.value}"
        links.append(Link("Commits", f"{web}/{b.repo}/compare/{b.good}...{b.bad}"))
    rows = tuple((neutral(e.config), e.kpi, _number(e.good), _number(e.bad)) for e in b.ends)
    return Notice(
        suite=f"{b.repo}/{b.model}",
        title=title,
        summary=neutral(b.why),
        rows=rows,
        headings=("config", "KPI", "good", "bad"),
        mentions=tuple(dict.fromkeys(mentions)),
        links=tuple(links),
        culprit=text,
    )


# what Amazon Q Developer in chat applications (formerly AWS Chatbot) shows of a topic's
# message: only its "custom notification" JSON; it subscribes to a topic over HTTPS
CHATBOT_DESCRIPTION_LIMIT = 8000


def chatbot_notification(subject: str, body: str) -> dict[str, object]:
    """An alert as an Amazon Q Developer custom notification (the message's text as is: it
    was neutralised when it was written)."""
    description = body
    if len(description) > CHATBOT_DESCRIPTION_LIMIT:
        description = description[: CHATBOT_DESCRIPTION_LIMIT - 1] + "…"
    return {
        "version": "1.0",
        "source": "custom",
        "content": {"textType": "client-markdown", "title": subject, "description": description},
    }
