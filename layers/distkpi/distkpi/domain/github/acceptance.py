"""Accepting an intended regression: who asked (a pull request comment `/distkpi accept
<reason>`, the check run's "Accept regression" button, `distkpi accept`), what an accepted
run keeps, and what its status then says. Whether the asker may is GitHub's collaborator
permission (services/accept.py), never anything the comment says."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from distkpi.domain.commit_status import State
from distkpi.domain.untrusted import neutral

if TYPE_CHECKING:
    from distkpi.domain.judging.evaluation import Evaluation

COMMAND = "/distkpi accept"
# the check run's button (GitHub: label at most 20 characters, description 40, identifier 20)
ACTION_ID = "accept"
ACCEPT_ACTION = {
    "label": "Accept regression",
    "description": "Accept the regressed KPIs for this head",
    "identifier": ACTION_ID,
}
# `distkpi accept RUN_ID`: a repository_dispatch of this type, its client_payload run_id, reason
ACCEPT_EVENT_TYPE = "distkpi-accept"
# GitHub's collaborator permission (its role_name) that may accept
MAY_ACCEPT = frozenset({"admin", "maintain", "write"})
MAX_REASON = 500
BUTTON_REASON = "accepted with the check run's Accept regression button"


class Via(StrEnum):
    COMMENT = "comment"
    CHECK_RUN = "check_run"
    COMMAND = "command"  # `distkpi accept`, through a repository_dispatch


@dataclass(frozen=True)
class AcceptAsked:
    """Someone asked to accept: the runs of a pull request's head (a comment: its number),
    or one run (the check run's button, `distkpi accept`: its id)."""

    repo: str
    login: str
    reason: str
    via: Via
    pull_request: int | None = None
    run_id: str | None = None


@dataclass(frozen=True)
class Merged:
    """A pull request merged into ``base_branch``: ``head_sha`` was its head, ``merge_sha``
    the commit the merge made on the base branch (the head itself for a fast-forward)."""

    repo: str
    base_branch: str
    head_sha: str
    merge_sha: str
    pull_request: int | None = None


@dataclass(frozen=True)
class Acceptance:
    """Who accepted a run's regressed KPIs, when and why: kept on the run, its history
    records and its regressions."""

    login: str
    at: str
    reason: str
    via: Via
    kpis: tuple[tuple[str, str], ...] = field(default=())  # (config, kpi) accepted

    @property
    def configs(self) -> list[str]:
        return sorted({config for config, _ in self.kpis})

    def to_json(self) -> dict[str, Any]:
        return {
            "login": self.login,
            "at": self.at,
            "reason": self.reason,
            "via": self.via.value,
            "kpis": [{"config": c, "kpi": k} for c, k in self.kpis],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Acceptance:
        return cls(
            login=str(data["login"]),
            at=str(data["at"]),
            reason=str(data["reason"]),
            via=Via(str(data.get("via", Via.COMMENT.value))),
            kpis=tuple((str(k["config"]), str(k["kpi"])) for k in data.get("kpis", ())),
        )


def reason_of_comment(body: str | None) -> str | None:
    """The reason of a `/distkpi accept <reason>` comment ("" when it gives none); None for
    any other comment. Only the first line counts, bounded to MAX_REASON characters."""
    if body is None:
        return None
    first = body.strip().splitlines()[0].strip() if body.strip() else ""
    if first != COMMAND and not first.startswith(COMMAND + " "):
        return None
    return first.removeprefix(COMMAND).strip()[:MAX_REASON]


def accepted_description(login: str, reason: str) -> str:
    """What the status (or check run's title) says once accepted: raw text, which the
    reporters make neutral as every description (no mention of the login, no markup)."""
    return f"accepted by @{login}: {reason}"


def accepted_markdown(acceptance: Acceptance) -> str:
    """The section a check run's summary ends with once accepted (neutral text only)."""
    kpis = ", ".join(f"{c} {k}" for c, k in acceptance.kpis) or "none"
    said = accepted_description(acceptance.login, acceptance.reason)
    return (
        f"\n\n### Accepted\n\n{neutral(said, markdown=True)} "
        f"({neutral(acceptance.at, markdown=True)}). "
        f"Accepted KPIs: {neutral(kpis, markdown=True)}. "
        "This covers this head only: a new push is judged afresh; on merge these configs' "
        "baseline starts anew at the merge commit.\n"
    )


def not_allowed_reply(login: str, repo: str, permission: str) -> str:
    return (
        f"@{login}: only people with write, maintain or admin permission on {repo} may "
        f"accept a regression (yours: {permission}). Nothing changed."
    )


def to_accept(
    evaluation: Evaluation | None, accuracy_tolerance: float, acceptable: Iterable[str] | None
) -> tuple[tuple[tuple[str, str], ...], str | None]:
    """A finished run's regressed KPIs (config, kpi), and why they cannot be accepted (None:
    they can): a verdict other than failure, a failure that is not only regressed KPIs (a
    config's accuracy misaligned), or a regressed KPI the suite's `verdict.acceptable`
    leaves out."""
    if evaluation is None:
        return (), "it has not finished"
    state = evaluation.verdict.state
    if state is not State.FAILURE:
        return (), f"its verdict is {state.value}, not a failure"
    regressed = tuple((j.config, j.kpi) for j in evaluation.judgements if j.verdict == "regressed")
    if not regressed:
        return (), "it failed on no regressed KPI"
    misaligned = [
        c.name
        for c in evaluation.kpis.configs
        if c.accuracy_delta is not None and abs(c.accuracy_delta) > accuracy_tolerance
    ]
    if misaligned:
        return regressed, f"it also failed on accuracy misaligned ({', '.join(misaligned)})"
    if acceptable is not None:
        allowed = set(acceptable)
        outside = sorted({kpi for _, kpi in regressed if kpi not in allowed})
        if outside:
            return regressed, (
                f"the suite's verdict.acceptable ({', '.join(sorted(allowed)) or 'none'}) "
                f"does not allow accepting {', '.join(outside)}"
            )
    return regressed, None
