"""History in DynamoDB: pagination, `distkpi history`, baselines in the collector, resets."""

from __future__ import annotations

import copy
import csv
import io
import json
import random
from pathlib import Path
from typing import Any

import pytest

from distkpi.adapters.dynamo import DynamoTable, HistoryRepository
from distkpi.domain.judging.history import HISTORY_COLUMNS
from distkpi.domain.kpis.engine import ConfigKpis
from distkpi.domain.records import HistoryRecord
from distkpi_cli.history_files import read_resets_csv
from distkpi_cli.main import main
from tests.integration.conftest import BUCKET, TABLE, Stack, event
from tests.integration.test_flow import THROUGHPUT, deliver_all, final_statuses, run_all_nodes

REPO, MODEL = "PaddlePaddle/Paddle", "resnet50"
ON_TABLE = ["--repo", REPO, "--model", MODEL, "--table", TABLE]


def history(page_size: int | None = None) -> HistoryRepository:
    return HistoryRepository(DynamoTable(TABLE, page_size=page_size))


def seed_history(stack: Stack, runs: int, scale: float = 1.0, hardware: str | None = None) -> None:
    """``runs`` earlier pushes to develop, as the collector records them."""
    rng = random.Random(5)
    records: list[HistoryRecord] = []
    for i in range(runs):
        created = f"2026-10-{1 + i // 24:02d}T{i % 24:02d}:00:00.000+00:00"
        for config, total in THROUGHPUT.items():
            tput = total * scale * (1 + 0.01 * rng.gauss(0, 1))
            kpis = {
                "name": config,
                "status": "ok",
                "throughput": tput,
                "speedup": tput / THROUGHPUT["1x1"],
                "efficiency": None,
                "time_to_accuracy_s": 240.0,
                "test_accuracy": 0.7,
                "accuracy_delta": 0.0,
                "trainer_gpu_memory_mib": 12000.0,
                "pserver_gpu_memory_mib": None,
                "gpus": 1,
                "problems": [],
                "hardware": hardware,
            }
            records.append(
                HistoryRecord(
                    repo=REPO,
                    branch="develop",
                    model=MODEL,
                    config=config,
                    sha=f"{i:040x}",
                    run_id=f"push-{i}",
                    created_at=created,
                    finished_at=created,
                    kpis=ConfigKpis.from_record(kpis),
                )
            )
    history().put(records)


def test_history_queries_page_through_hundreds_of_runs(stack: Stack) -> None:
    seed_history(stack, 120)
    records = list(history(page_size=50).history(REPO, "develop", MODEL))
    assert len(records) == 480  # ten pages of 50
    assert records[0].run_id == "push-119"  # newest first
    assert len(list(history().history(REPO, "develop", MODEL, limit=10))) == 10


def test_history_cli_filters_and_writes_the_columns_judge_reads(
    stack: Stack, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_history(stack, 20)
    history = [
        "history",
        "--config",
        "4x8-8ps",
        "--kpi",
        "throughput",
        "--format",
        "csv",
        "--limit",
        "5",
    ]
    assert main([*history, *ON_TABLE]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 5
    assert {r["config"] for r in rows} == {"4x8-8ps"} and {r["kpi"] for r in rows} == {"throughput"}
    assert tuple(rows[0]) == HISTORY_COLUMNS
    monkeypatch.delenv("TABLE_NAME")
    assert main(["history", "--repo", REPO, "--model", MODEL]) == 2
    assert "no table" in capsys.readouterr().err


def test_a_pull_request_slower_than_develop_fails(stack: Stack) -> None:
    # Given 12 develop runs at the usual throughput
    seed_history(stack, 12)
    # When a pull request runs 25% slower on the largest config
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    keys = run_all_nodes(stack, run_id, scale={"4x8-8ps": 0.75})
    deliver_all(stack, keys, copies=1)
    # Then the verdict is failure and names the KPI, and the judgements are stored
    (final,) = final_statuses(stack)
    assert final["state"] == "failure"
    assert "4x8-8ps tput -25%" in final["description"]
    run = stack.table.get_item(Key={"PK": f"RUN#{run_id}", "SK": "RUN"})["Item"]
    judged = {(j["config"], j["kpi"]): j for j in run["result"]["judgements"]}
    assert judged[("4x8-8ps", "throughput")]["verdict"] == "regressed"
    assert judged[("1x1", "throughput")]["verdict"] == "pass"


A100 = {"instance_type": "p4d.24xlarge", "gpu_model": "NVIDIA A100-SXM4-40GB", "gpu_count": 8}
H100 = {"instance_type": "p5.48xlarge", "gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8}


def test_a_run_on_new_hardware_starts_its_own_baseline(stack: Stack) -> None:
    # Given 12 develop runs on p4d.24xlarge
    seed_history(stack, 12, hardware="p4d.24xlarge/NVIDIA A100-SXM4-40GB")
    # When a pull request lands on p5.48xlarge, 25% slower on the largest config
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    keys = run_all_nodes(stack, run_id, scale={"4x8-8ps": 0.75}, hardware=H100)
    deliver_all(stack, keys, copies=1)
    # Then nothing is judged against the A100 numbers: every KPI starts its own baseline
    (final,) = final_statuses(stack)
    assert final["state"] == "success", final
    run = stack.table.get_item(Key={"PK": f"RUN#{run_id}", "SK": "RUN"})["Item"]
    assert {j["verdict"] for j in run["result"]["judgements"]} == {"no-baseline"}
    kpis = run["result"]["kpis"]["configs"]["4x8-8ps"]
    assert kpis["hardware"] == "p5.48xlarge/NVIDIA H100 80GB HBM3"
    # and its history rows say where they ran
    rows = list(history().history(REPO, "pr:12091", MODEL))
    assert len(rows) == 4 and {r.kpis.hardware for r in rows} == {
        "p5.48xlarge/NVIDIA H100 80GB HBM3"
    }


def test_the_same_slowdown_on_the_baselines_hardware_fails(stack: Stack) -> None:
    seed_history(stack, 12, hardware="p4d.24xlarge/NVIDIA A100-SXM4-40GB")
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    keys = run_all_nodes(stack, run_id, scale={"4x8-8ps": 0.75}, hardware=A100)
    deliver_all(stack, keys, copies=1)
    (final,) = final_statuses(stack)
    assert final["state"] == "failure" and "4x8-8ps tput -25%" in final["description"]


def test_an_audited_reset_starts_the_baseline_afresh(
    stack: Stack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    seed_history(stack, 12)
    reset = ["baseline", "reset", "--config", "4x8-8ps", "--who", "tester"]
    assert main([*reset, "--reason", "new NCCL, slower on purpose", *ON_TABLE]) == 0
    (reset,) = history().resets(REPO, "develop", MODEL)
    assert reset.reason == "new NCCL, slower on purpose" and reset.who == "tester"
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    deliver_all(stack, run_all_nodes(stack, run_id, scale={"4x8-8ps": 0.75}), copies=1)
    (final,) = final_statuses(stack)
    assert final["state"] == "success"
    run = stack.table.get_item(Key={"PK": f"RUN#{run_id}", "SK": "RUN"})["Item"]
    judged = {(j["config"], j["kpi"]): j for j in run["result"]["judgements"]}
    assert judged[("4x8-8ps", "throughput")]["verdict"] == "no-baseline"
    # the resets listed as `distkpi judge --resets` reads them, to replay the decision
    capsys.readouterr()
    listed = tmp_path / "resets.csv"
    assert main(["baseline", "resets", "--format", "csv", *ON_TABLE]) == 0
    listed.write_text(capsys.readouterr().out)
    assert read_resets_csv(listed) == [reset]


def test_the_report_renders_and_the_cli_writes_it(
    stack: Stack, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    seed_history(stack, 8)
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    deliver_all(stack, run_all_nodes(stack, run_id), copies=1)
    capsys.readouterr()
    assert main(["report", run_id, "--out", str(tmp_path), "--table", TABLE]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "index.html")
    page = (tmp_path / "index.html").read_text()
    for name in ("speedup.png", "throughput_history.png"):
        png = (tmp_path / name).read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000
        assert "data:image/png;base64," in page
    # the seed's table holds the numbers, and each KPI stands against its baseline
    run = stack.table.get_item(Key={"PK": f"RUN#{run_id}", "SK": "RUN"})["Item"]
    speedup = float(run["result"]["kpis"]["configs"]["4x8-8ps"]["speedup"])
    assert f"<td>{speedup:.2f}</td>" in page
    assert "<td>throughput</td>" in page and "allowed range" in page
    # the same page is in S3 beside the run
    stored = stack.s3.get_object(Bucket=BUCKET, Key=f"reports/{run_id}/index.html")["Body"].read()
    assert b"Against the baseline" in stored
    assert main(["report", "no-such-run", "--out", str(tmp_path), "--table", TABLE]) == 2


def test_the_runs_of_a_commit(stack: Stack, capsys: pytest.CaptureFixture[str]) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    sha = "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"
    capsys.readouterr()
    assert main(["runs", "--repo", REPO, "--sha", sha, "--table", TABLE, "--json"]) == 0
    (running,) = json.loads(capsys.readouterr().out)
    assert (running["run_id"], running["status"], running["state"]) == (run_id, "running", None)
    deliver_all(stack, run_all_nodes(stack, run_id), copies=1)
    capsys.readouterr()
    assert main(["runs", "--repo", REPO, "--sha", sha, "--table", TABLE]) == 0
    line = capsys.readouterr().out
    assert run_id in line and "done" in line and "success" in line
    assert main(["runs", "--repo", REPO, "--sha", "0" * 40, "--table", TABLE]) == 0
    assert "no runs" in capsys.readouterr().out
    # the 10 characters every output prints, and a shorter prefix, find the finished run
    for prefix in (sha[:10], sha[:7]):
        assert main(["runs", "--repo", REPO, "--sha", prefix, "--table", TABLE, "--json"]) == 0
        assert [r["run_id"] for r in json.loads(capsys.readouterr().out)] == [run_id]
    # a revision of the checkout the command runs in: a commit with no runs
    assert main(["runs", "--repo", REPO, "--sha", "HEAD", "--table", TABLE]) == 0
    assert capsys.readouterr().out.startswith(f"no runs of {REPO}@")
    assert main(["runs", "--repo", REPO, "--sha", "fffffff", "--table", TABLE]) == 2
    assert capsys.readouterr().err == (
        "distkpi runs: --sha fffffff: no stored run's sha starts with it and it is not a "
        f"commit of {Path.cwd().resolve()}: give a full sha, a unique prefix, or a revision run "
        "inside the repository\n"
    )


@pytest.mark.parametrize("fmt", ["csv", "json", "table", "parquet"])
def test_history_out_writes_the_file_in_every_format(
    stack: Stack, capsys: pytest.CaptureFixture[str], tmp_path: Path, fmt: str
) -> None:
    seed_history(stack, 3)
    out = tmp_path / f"history.{fmt}"
    argv = ["history", "--kpi", "throughput", "--format", fmt, "--out", str(out)]
    assert main([*argv, *ON_TABLE]) == 0
    assert capsys.readouterr().out == ""
    if fmt == "csv":
        rows = list(csv.DictReader(out.open()))
    elif fmt == "json":
        rows = json.loads(out.read_text())
    elif fmt == "parquet":
        import pandas as pd

        rows = pd.read_parquet(out).to_dict(orient="records")
    else:
        lines = out.read_text().splitlines()
        assert lines[0].split()[:3] == ["finished_at", "repo", "branch"]
        rows = lines[1:]
    assert len(rows) == 3 * len(THROUGHPUT)


def fork_pull_request_from_a_branch_named_develop(stack: Stack) -> dict[str, Any]:
    payload = copy.deepcopy(event("pull_request")["payload"])
    head = payload["pull_request"]["head"]
    head["ref"], head["label"] = "develop", "stranger:develop"
    head["repo"] = {**head["repo"], "full_name": "stranger/Paddle"}
    # a stranger's fork runs once a maintainer approves its head
    payload["action"], payload["label"] = "labeled", {"id": 1, "name": "ok-to-test"}
    return payload


def test_a_fork_pull_request_from_develop_never_becomes_develops_baseline(stack: Stack) -> None:
    # Given develop's history at the usual throughput
    seed_history(stack, 12)
    # When a fork's pull request, from its own branch named develop, reports 3x throughput
    payload = fork_pull_request_from_a_branch_named_develop(stack)
    (pr_run,) = stack.webhook(payload=payload, delivery="fork-pr")["json"]["runs"]
    deliver_all(stack, run_all_nodes(stack, pr_run, scale=dict.fromkeys(THROUGHPUT, 3.0)), 1)
    # Then its results are kept under the pull request, not under develop
    repository = history()
    assert {r.run_id for r in repository.history(REPO, "develop", MODEL)} == {
        f"push-{i}" for i in range(12)
    }
    number = payload["number"]
    assert {r.run_id for r in repository.history(REPO, f"pr:{number}", MODEL)} == {pr_run}
    # And the next push of unchanged develop code still passes against develop's own history
    (push_run,) = stack.webhook("push", delivery="push-after-fork")["json"]["runs"]
    deliver_all(stack, run_all_nodes(stack, push_run), copies=1)
    assert [s["state"] for s in final_statuses(stack)] == ["success", "success"]
