"""What the listing commands (`distkpi regressions`, `distkpi bisections`, `distkpi runs`)
share: the histories their flags select, each history's `SERIES` entry naming its (repo,
branch, model) whose items are one Query, and the list printed as JSON or a line each."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from distkpi.adapters.dynamo import DynamoTable

Item = TypeVar("Item")


def histories(
    table: DynamoTable, repo: str | None, model: str | None, branch: str | None = None
) -> list[tuple[str, str, str]]:
    """The (repo, branch, model) of each history kept, those of ``repo``, ``model`` and
    ``branch`` when given, in order."""
    from distkpi.adapters.dynamo import HistoryRepository

    return sorted(
        {
            (s.repo, s.branch, s.model)
            for s in HistoryRepository(table).series(repo)
            if (model is None or s.model == model) and (branch is None or s.branch == branch)
        }
    )


def print_listed(
    found: Sequence[Item],
    *,
    as_json: bool,
    to_json: Callable[[Item], Any],
    line: Callable[[Item], str],
    none: str,
) -> int:
    """A JSON list of ``found``, or a line each (``none`` when there is none); exit 0."""
    if as_json:
        print(json.dumps([to_json(item) for item in found], indent=2))
        return 0
    if not found:
        print(none)
    for item in found:
        print(line(item))
    return 0
