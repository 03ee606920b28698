"""The end-to-end tier: real training through the real handlers. `make test` keeps the
first hour's path (a suite from the webhook to its verdict, a crashing node, a dry run, the
pages' quick commands); every other end-to-end test is `slow` (`make slow`, which CI runs
after `make test`), so that `make test` stays a matter of minutes on 2 cores."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FIRST_HOUR = {
    "test_local.py::test_a_tiny_suite_from_webhook_to_verdict",
    "test_local.py::test_a_crashing_node_gives_an_error_and_a_failed_config",
    "test_local.py::test_a_dry_run_prints_what_a_pull_request_would_submit",
    "test_docs_commands.py::test_the_pages_quick_commands_print_what_they_show",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        name = f"{item.path.name}::{getattr(item, 'originalname', item.name)}"
        if item.path.parent == HERE and name not in FIRST_HOUR:
            item.add_marker(pytest.mark.slow)
