"""What the node reads of its job environment (distkpi/domain/planning/jobenv.py names
every variable), read once, before anything runs: the suite's setup and command, the
deadlines and waits, and whether the run is paired. Its place in the job is `Place`
(node/placement.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from distkpi.domain.logs.logformats import DEFAULT_SETTINGS, ParseSettings
from distkpi.domain.logs.parsesettings import settings_from_json
from distkpi.domain.planning import jobenv
from distkpi.exceptions import ContractError
from distkpi_cli.node.hardening import MAX_CODE_TASKS
from distkpi_cli.node.paired import PairedPlan
from distkpi_cli.node.source import NodeProblem


@dataclass(frozen=True)
class NodeSettings:
    workdir: str | None
    source_url: str | None  # None: the repository on GitHub
    setup: list[Any]
    suite_command: list[Any] | NodeProblem  # used only when no command is given after --
    setup_timeout_s: float
    command_timeout_s: float
    rendezvous_s: float
    node_wait_s: float
    decision_wait_s: float
    decision_poll_s: float
    max_tasks: int  # the code's processes and threads at most, when it has a uid of its own
    signing_key: str | None
    paired: PairedPlan | None  # whether the run is paired is decided here, and only here
    # a diagnosis job's: each run writes its traces to DISTKPI_PROFILE_DIR for this many steps
    profile_steps: int | None = None
    # how its logs are summarised: the run's parse settings (the engine's defaults if none)
    parse: ParseSettings = DEFAULT_SETTINGS

    DEFAULT_NODE_WAIT_S: ClassVar[float] = 900

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> NodeSettings:
        """NodeProblem naming the first variable that is not what the launcher writes."""
        return cls(
            workdir=env.get(jobenv.WORKDIR) or None,
            source_url=env.get(jobenv.SOURCE_URL) or None,
            setup=_json_list(env, jobenv.SETUP),
            suite_command=_or_problem(env, jobenv.COMMAND),
            setup_timeout_s=_seconds(env, jobenv.SETUP_TIMEOUT_S, 3600),
            command_timeout_s=_seconds(env, jobenv.COMMAND_TIMEOUT_S, 7200),
            rendezvous_s=_seconds(env, jobenv.RENDEZVOUS_S, 600),
            node_wait_s=_seconds(env, jobenv.NODE_WAIT_S, cls.DEFAULT_NODE_WAIT_S),
            decision_wait_s=_seconds(env, jobenv.DECISION_WAIT_S, 900),
            decision_poll_s=_seconds(env, jobenv.DECISION_POLL_S, 2),
            max_tasks=_max_tasks(env),
            signing_key=env.get(jobenv.MANIFEST_KEY) or None,
            paired=PairedPlan.from_env(env),
            profile_steps=_profile_steps(env),
            parse=_parse_settings(env),
        )


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name)
    if text is None:
        return default
    try:
        return float(text)
    except ValueError as exc:
        raise NodeProblem(f"{name} is not a number of seconds: {text!r}") from exc


def _parse_settings(env: Mapping[str, str]) -> ParseSettings:
    try:
        return settings_from_json(env.get(jobenv.PARSE_SETTINGS))
    except ContractError as exc:
        raise NodeProblem(f"{jobenv.PARSE_SETTINGS}: {exc}") from exc


def _profile_steps(env: Mapping[str, str]) -> int | None:
    text = env.get(jobenv.PROFILE_STEPS)
    if not text:
        return None
    if not text.isdigit() or not 1 <= int(text) <= 50:
        raise NodeProblem(f"{jobenv.PROFILE_STEPS} is not a number of steps (1-50): {text!r}")
    return int(text)


def _max_tasks(env: Mapping[str, str]) -> int:
    try:
        return int(env.get(jobenv.CODE_MAX_TASKS) or MAX_CODE_TASKS)
    except ValueError as exc:
        raise NodeProblem(f"{jobenv.CODE_MAX_TASKS} is not a number") from exc


def _or_problem(env: Mapping[str, str], name: str) -> list[Any] | NodeProblem:
    try:
        return _json_list(env, name)
    except NodeProblem as problem:
        return problem


def _json_list(env: Mapping[str, str], name: str) -> list[Any]:
    """A JSON list the launcher put in ``name`` (the suite's command or setup)."""
    try:
        value = json.loads(env.get(name) or "[]")
    except ValueError as exc:
        raise NodeProblem(f"{name} is not a JSON list") from exc
    if not isinstance(value, list):
        raise NodeProblem(f"{name} is not a JSON list")
    return value
