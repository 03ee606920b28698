"""`distkpi local --event FILE`: real deliveries, recorded from GitHub, replayed on the local
stack. Each is signed with the local webhook secret and sent to the real webhook handler;
the runs they start then go on as `distkpi local` runs them (or stop, with --dry-run)."""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from distkpi.exceptions import ContractError
from distkpi.services.schedule import SCHEDULE
from distkpi_cli.local.demo import planned_run
from distkpi_cli.local.dispatch import Dispatcher
from distkpi_cli.local.handlers import project_root
from distkpi_cli.local.stack import local_stack
from distkpi_cli.local.state import StateFolder


@dataclass(frozen=True)
class RecordedEvent:
    name: str
    delivery: str
    body: bytes
    # `--event schedule`: the stack's schedule, not a delivery
    scheduled: bool = False


def read_events(files: Sequence[Path], names: Sequence[str]) -> list[RecordedEvent]:
    """Each file's payload with its event name: the n-th --event-name (one applies to all),
    else the file's X-GitHub-Event header. ContractError naming the file when it has none,
    or is not JSON."""
    if len(names) not in (0, 1, len(files)):
        raise ContractError(
            f"--event-name given {len(names)} times for {len(files)} --event: give it once, "
            "or once per --event"
        )
    events = []
    for n, path in enumerate(files):
        if str(path) == SCHEDULE and not path.exists():
            events.append(RecordedEvent(SCHEDULE, SCHEDULE, b"", scheduled=True))
            continue
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ContractError(f"{path}: not a JSON file: {exc}") from exc
        has_headers = isinstance(data, dict) and isinstance(data.get("headers"), dict)
        headers = {k.lower(): v for k, v in data["headers"].items()} if has_headers else {}
        payload = data["payload"] if has_headers and "payload" in data else data
        name = (
            names[n] if len(names) > 1 else (names[0] if names else headers.get("x-github-event"))
        )
        if not name:
            raise ContractError(f"{path}: no X-GitHub-Event header; give --event-name")
        delivery = headers.get("x-github-delivery") or str(uuid.uuid4())
        events.append(RecordedEvent(str(name), str(delivery), json.dumps(payload).encode()))
    return events


def replay(
    suite: Path,
    out: Path,
    events: Sequence[RecordedEvent],
    *,
    dry_run: bool = False,
    source: Path | None = None,
    progress: TextIO | None = None,
    keep_work: bool = False,
    state: StateFolder | None = None,
) -> dict[str, Any]:
    """Deliver ``events`` in order; then run what they started, unless ``dry_run``. With a
    ``state`` folder they are delivered to the stack the earlier runs left (an accept
    comment finds the run it accepts), and it is kept, unless ``dry_run``.
    {"deliveries": [{"event", "status_code", "body"}], "runs": [...], "statuses": [...],
    "comments": [{"number", "body"}]} (the replies posted on pull requests)."""
    with local_stack(
        suite, progress or sys.stderr, repository=source, state=state, save=not dry_run
    ) as stack:
        dispatch = Dispatcher(stack, out, source or project_root(), keep_work=keep_work)
        deliveries: list[dict[str, Any]] = []
        for event in events:
            headers = {
                "X-GitHub-Event": event.name,
                "X-GitHub-Delivery": event.delivery,
                "Content-Type": "application/json",
            }
            code, body = stack.schedule() if event.scheduled else stack.deliver(headers, event.body)
            stack.say(f"webhook: {event.name} -> {code} {body.get('message', '')}")
            deliveries.append({"event": event.name, "status_code": code, "body": body})
        run_ids = [r for d in deliveries for r in d["body"].get("runs", [])]
        runs: list[dict[str, Any]] = []
        if dry_run:  # the same keys as `distkpi local --dry-run --json`
            runs = [planned_run(dispatch, r) for r in run_ids]
        elif run_ids:
            dispatch.run_jobs(run_ids, {})
            for run in dispatch.wait_settled(run_ids):
                assert run.evaluation is not None
                runs.append(
                    {
                        "run_id": run.run_id,
                        "state": run.evaluation.verdict.state.value,
                        "description": run.evaluation.description,
                        "kpis": run.evaluation.kpis.to_json(),
                    }
                )
        statuses = [
            {k: s[k] for k in ("sha", "context", "state", "description")}
            for s in stack.github.statuses
        ]
        comments = [{k: c[k] for k in ("number", "body")} for c in stack.github.comments]
        return {"deliveries": deliveries, "runs": runs, "statuses": statuses, "comments": comments}
