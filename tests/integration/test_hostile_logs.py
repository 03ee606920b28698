"""A pull request's logs say what they like: what GitHub is told of them is neutral, in a
commit status and in a check run alike."""

from __future__ import annotations

import re

from tests.conftest import mllog
from tests.integration.conftest import Stack
from tests.integration.test_flow import deliver_all, final_statuses, run_all_nodes, trainer_log
from tests.integration.test_github_app import checks_named, open_pull_request
from tests.unit.test_hostile_text import GPU_MODEL, RUN_STOP

ZW = "\u200b"


def hostile_run(stack: Stack) -> None:
    run_id = open_pull_request(stack)
    log = trainer_log(100.0) + mllog("run_stop", None, 9_000_000, status=RUN_STOP) + "\n"
    hardware = {"instance_type": "p4d.24xlarge", "gpu_model": GPU_MODEL, "gpu_count": 8}
    keys = run_all_nodes(stack, run_id, broken={("1x1", 0): (log, 0)}, hardware=hardware)
    deliver_all(stack, keys, copies=1)


def test_a_commit_status_quoting_a_log_is_one_plain_line(stack: Stack) -> None:
    hostile_run(stack)
    (final,) = final_statuses(stack)
    assert final["state"] == "error"
    description = final["description"]
    assert "run_stop with status" in description and "\n" not in description
    assert f"@{ZW}org/team" in description and f"https:{ZW}//ev.il" in description


def test_a_check_run_quoting_a_log_renders_no_markup(app_stack: Stack) -> None:
    hostile_run(app_stack)
    (check,) = checks_named(app_stack)
    title, summary = check["output"]["title"], check["output"]["summary"]
    assert title.startswith("infrastructure error: 1x1 failed: trainer 0")
    assert "\n" not in title and f"@{ZW}org/team" in title
    assert "\\<img src=x" in summary and not re.search(r"(?<!\\)<img", summary)
    assert "ev.il" not in summary.replace(f"\\[x\\](https:{ZW}//ev.il)", "")
    assert "e.vil" not in summary.replace(f"\\!\\[i\\](http:{ZW}//e.vil/p.png)", "")
    assert "\n# " not in summary
    assert "@org" not in summary and "Hardware: p4d.24xlarge/A100\\<img" in summary
