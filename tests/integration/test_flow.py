"""One merge request through the whole pipeline: webhook -> Batch -> S3 -> collector -> status."""

from __future__ import annotations

import copy
import hashlib
import io
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from distkpi.domain.logs.engineversion import engine_version
from distkpi.domain.logs.logformats import DEFAULT_SETTINGS, ParseSettings
from distkpi.domain.logs.parsesettings import settings_digest, settings_from_json
from distkpi.domain.planning.jobenv import PARSE_SETTINGS
from distkpi.domain.signing import config_key, sign
from distkpi.entry import wiring
from distkpi_cli.local.handlers import LambdaContext
from distkpi_cli.node.summaries import describe
from tests.conftest import trainer_log
from tests.integration.conftest import BUCKET, Stack, event

SHA = "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"
THROUGHPUT = {"1x1": 120.0, "1x8": 720.0, "2x8-4ps": 1300.0, "4x8-8ps": 2400.0}


def upload_node(
    stack: Stack,
    run_id: str,
    config: str,
    node: int,
    role: str,
    rank: int,
    log: str | bytes,
    *,
    exit_code: int = 0,
    key: str | None = None,
    hardware: dict[str, Any] | None = None,
    summaries: bool = True,
    parse: ParseSettings = DEFAULT_SETTINGS,
) -> str:
    """What `distkpi node` does: the node's files first, then its manifest, naming each
    file's sha256 and its summary (node/summaries.py; an older image's has none:
    ``summaries=False``) made with ``parse``, the job's DISTKPI_PARSE_SETTINGS, signed with
    the config's key (``key`` overrides it)."""
    prefix = f"runs/{run_id}/{config}/"
    log_path, gpu_path = f"logs/{role}-{rank}.log", f"logs/{role}-{rank}.gpu.csv"
    gpu = "timestamp, index, memory.used [MiB]\n2026/11/30 00:00:00.000, 0, 12000 MiB\n"
    files = []
    for path, kind, body in ((log_path, "log", log), (gpu_path, "gpu_memory", gpu)):
        data = body.encode() if isinstance(body, str) else body
        stack.job_s3.put_object(Bucket=BUCKET, Key=prefix + path, Body=data)
        entry = {"path": path, "role": role, "rank": rank, "kind": kind}
        if summaries:
            entry |= describe(io.BytesIO(data), kind, parse)
        else:
            entry["sha256"] = hashlib.sha256(data).hexdigest()
        files.append(entry)
    manifest = {
        "schema": 1,
        "run_id": run_id,
        "config": config,
        "node": node,
        "exit_code": exit_code,
        "started_at": "2026-11-30T03:00:00Z",
        "finished_at": "2026-11-30T03:10:00Z",
        "files": files,
    }
    if hardware is not None:
        manifest["hardware"] = hardware
    if summaries:
        manifest["engine_version"] = engine_version()
        if (digest := settings_digest(parse)) is not None:
            manifest["summary_settings"] = digest
    signed = sign(key or config_key_of(stack, run_id, config), manifest)
    key_name = f"{prefix}node-{node}.json"
    stack.job_s3.put_object(Bucket=BUCKET, Key=key_name, Body=json.dumps(signed))
    return key_name


def config_key_of(stack: Stack, run_id: str, config: str) -> str:
    """The manifest key the launcher gave the config's job: derived from the stack's master
    secret over the run and config (a config that does not exist has one too)."""
    return config_key(stack.manifest_master, run_id, config)


def run_all_nodes(
    stack: Stack,
    run_id: str,
    broken: dict[tuple[str, int], Any] | None = None,
    scale: dict[str, float] | None = None,
    hardware: dict[str, Any] | None = None,
    summaries: bool = True,
) -> list[str]:
    """Every node of the run uploads; ``scale`` makes a config faster or slower;
    ``hardware`` is what every node says it ran on; ``summaries=False``: an older image's
    nodes, whose manifests hold no summaries."""
    broken, scale = broken or {}, scale or {}
    spec = json.loads(
        stack.s3.get_object(Bucket=BUCKET, Key=f"runs/{run_id}/run.json")["Body"].read()
    )
    keys = []
    for cfg in spec["configs"]:
        parse = settings_from_json(job_variable(stack, run_id, cfg["name"], PARSE_SETTINGS))
        for node in range(cfg["nodes"]):
            role = "trainer" if node < cfg["trainers"] else "pserver"
            rank = node if role == "trainer" else node - cfg["trainers"]
            log = (
                trainer_log(THROUGHPUT[cfg["name"]] * scale.get(cfg["name"], 1.0) / cfg["trainers"])
                if role == "trainer"
                else "serving\n"
            )
            log, exit_code = broken.get((cfg["name"], node), (log, 0))
            keys.append(
                upload_node(
                    stack,
                    run_id,
                    cfg["name"],
                    node,
                    role,
                    rank,
                    log,
                    exit_code=exit_code,
                    hardware=hardware,
                    summaries=summaries,
                    parse=parse,
                )
            )
    return keys


def job_variable(stack: Stack, run_id: str, config: str, name: str) -> str | None:
    """A variable the launcher put in the config's job (its first node group's, for a
    multi-node job), as the node reads it."""
    request = submitted(stack, jobs_by_config(stack, run_id)[config])
    groups = request.get("nodeOverrides", {}).get("nodePropertyOverrides", [])
    container = request.get("containerOverrides") or groups[0]["containerOverrides"]
    return {e["name"]: e["value"] for e in container["environment"]}.get(name)


def deliver_all(stack: Stack, keys: list[str], copies: int = 2, threads: int = 8) -> None:
    """Every S3 event delivered ``copies`` times, from several threads at once."""
    with ThreadPoolExecutor(threads) as pool:
        for result in pool.map(stack.collect, keys * copies):
            assert "handled" in result


def jobs_by_config(stack: Stack, run_id: str) -> dict[str, str]:
    """The Batch job id of each config of a run."""
    return {j["jobName"].removeprefix(f"distkpi-{run_id}-"): j["jobId"] for j in stack.jobs()}


def submitted(stack: Stack, job_id: str) -> dict[str, Any]:
    return stack.table.get_item(Key={"PK": f"JOB#{job_id}", "SK": "JOB"})["Item"]["request"]  # type: ignore[no-any-return]


def final_statuses(stack: Stack) -> list[dict[str, Any]]:
    return [s for s in stack.github.statuses if s["state"] != "pending"]


def sweep(stack: Stack) -> dict[str, int]:
    """A sweep, and the overdue runs it handed over settled by the deadlines function."""
    swept = stack.sweep()
    assert swept["overdue"] >= swept["timed_out"]
    return {k: swept[k] for k in ("timed_out", "republished")}


def test_a_pull_request_from_webhook_to_commit_status(stack: Stack) -> None:
    # Given a signed pull_request delivery
    response = stack.webhook("pull_request")
    # Then one run starts, with one Batch job per config and a pending status
    assert response["statusCode"] == 201, response
    (run_id,) = response["json"]["runs"]
    jobs = {j["jobName"]: j for j in stack.jobs()}
    assert set(jobs) == {f"distkpi-{run_id}-{c}".replace(".", "_") for c in THROUGHPUT}
    assert jobs[f"distkpi-{run_id}-1x8"]["tags"] == {"distkpi:run": run_id, "distkpi:config": "1x8"}
    # moto keeps no overrides, so the submitted requests are read from the JOB items
    single = submitted(stack, jobs[f"distkpi-{run_id}-1x8"]["jobId"])
    assert (
        single["jobDefinition"].endswith("distkpi-local-single:1") and "nodeOverrides" not in single
    )
    big = submitted(stack, jobs[f"distkpi-{run_id}-4x8-8ps"]["jobId"])
    assert big["jobDefinition"].endswith("distkpi-local-multinode:1")
    assert big["nodeOverrides"]["numNodes"] == 12
    ranges = {r["targetNodes"]: r for r in big["nodeOverrides"]["nodePropertyOverrides"]}
    assert set(ranges) == {"0:3", "4:11"}
    env = {e["name"]: e["value"] for e in ranges["4:11"]["containerOverrides"]["environment"]}
    assert {e["name"]: e["value"] for e in ranges["0:3"]["containerOverrides"]["environment"]}[
        "DISTKPI_ROLE"
    ] == "trainer"
    assert env["DISTKPI_ROLE"] == "pserver"
    assert env["DISTKPI_RUN_ID"] == run_id and env["DISTKPI_CONFIG"] == "4x8-8ps"
    assert env["DISTKPI_S3_PREFIX"] == f"s3://{BUCKET}/runs/{run_id}/4x8-8ps/"
    assert env["DISTKPI_SHA"] == SHA and env["DISTKPI_REPO"] == "PaddlePaddle/Paddle"
    assert [s["state"] for s in stack.github.statuses] == ["pending"]
    assert stack.github.statuses[0]["context"] == "distkpi/resnet50"
    assert stack.github.statuses[0]["target_url"] is None  # no report to link to yet

    # When every node uploads and each S3 event arrives twice, concurrently
    deliver_all(stack, run_all_nodes(stack, run_id))

    # Then exactly one final status, success, with the headline numbers
    (final,) = final_statuses(stack)
    assert final["state"] == "success"
    assert final["sha"] == SHA and final["repo"] == "PaddlePaddle/Paddle"
    assert final["description"].startswith("32 GPUs 20.0x, eff 0.62, TTA 240s, acc Δ0.0000: ok")
    assert final["target_url"] == f"https://distkpi.example.com/reports/{run_id}/index.html"
    page = stack.s3.get_object(Bucket=BUCKET, Key=f"reports/{run_id}/index.html")["Body"].read()
    assert b"speedup vs GPUs" in page and b"4x8-8ps" in page
    png = stack.s3.get_object(Bucket=BUCKET, Key=f"reports/{run_id}/speedup.png")["Body"].read()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    # and the KPIs are in DynamoDB
    run = stack.table.get_item(Key={"PK": f"RUN#{run_id}", "SK": "RUN"})["Item"]
    assert run["status"] == "done" and run["result"]["state"] == "success"
    kpis = run["result"]["kpis"]["configs"]
    assert float(kpis["4x8-8ps"]["speedup"]) == pytest.approx(20.0)
    assert float(kpis["2x8-4ps"]["pserver_gpu_memory_mib"]) == 12000
    assert "published_at" in run
    # and in the pull request's own history (never its head branch's), finished when the run did
    history = stack.table.query(
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": f"HIST#{run['repo']}#pr:{run['pull_request']}#resnet50"},
    )["Items"]
    assert {h["config"] for h in history} == set(THROUGHPUT)
    assert {h["finished_at"] for h in history} == {run["finished_at"]}


def test_a_redelivered_webhook_starts_nothing_new(stack: Stack) -> None:
    first = stack.webhook("pull_request")
    jobs = len(stack.jobs())
    again = stack.webhook("pull_request")
    assert first["statusCode"] == 201 and again["statusCode"] == 200
    assert again["json"] == {"message": "duplicate delivery", "runs": []}
    assert len(stack.jobs()) == jobs
    assert len(stack.github.statuses) == 1


def test_a_push_to_develop_starts_a_run(stack: Stack) -> None:
    response = stack.webhook("push")
    assert response["statusCode"] == 201 and len(response["json"]["runs"]) == 1


def test_a_push_elsewhere_is_ignored(stack: Stack) -> None:
    payload = {
        **json.loads(
            json.dumps(
                __import__("tests.integration.conftest", fromlist=["event"]).event("push")[
                    "payload"
                ]
            )
        ),
        "ref": "refs/heads/feature",
    }
    response = stack.webhook("push", payload=payload)
    assert response["statusCode"] == 202
    assert stack.jobs() == []


def test_a_failed_batch_job_settles_the_run_as_error_once(stack: Stack) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    keys = run_all_nodes(stack, run_id)
    failing = next(j for j in stack.jobs() if j["jobName"].endswith("2x8-4ps"))
    # the other configs finish; 2x8-4ps never uploads, its job fails, the event comes twice
    deliver_all(stack, [k for k in keys if "/2x8-4ps/" not in k])
    assert final_statuses(stack) == []
    with ThreadPoolExecutor(2) as pool:
        results = list(
            pool.map(lambda _: stack.job_failed(failing["jobId"], "Host EC2 terminated"), range(2))
        )
    assert all(r == {"settled_config": True} for r in results)
    (final,) = final_statuses(stack)
    assert final["state"] == "error"
    assert "2x8-4ps failed" in final["description"]
    config = stack.table.get_item(Key={"PK": f"RUN#{run_id}", "SK": "CONFIG#2x8-4ps"})["Item"]
    assert config["state"] == "failed"
    assert "job failed: Host EC2 terminated" in config["kpis"]["problems"]
    # late manifests of the failed config change nothing
    deliver_all(stack, [k for k in keys if "/2x8-4ps/" in k], copies=1)
    assert len(final_statuses(stack)) == 1


def pushed(sha: str, updated_at: str = "2026-11-30T03:20:00Z") -> dict[str, Any]:
    """The pull request's `synchronize` delivery after a push of ``sha``."""
    payload = copy.deepcopy(event("pull_request")["payload"])
    payload["action"] = "synchronize"
    payload["pull_request"]["head"]["sha"] = sha
    payload["pull_request"]["updated_at"] = updated_at
    return payload


def test_a_new_push_to_a_pull_request_cancels_its_runs_at_older_commits(stack: Stack) -> None:
    (old,) = stack.webhook("pull_request")["json"]["runs"]
    NEW_SHA = "e" * 40
    response = stack.webhook("pull_request", payload=pushed(NEW_SHA), delivery="second-delivery")
    (new,) = response["json"]["runs"]
    reason = f"cancelled: superseded by {NEW_SHA[:10]}"
    assert [(s["sha"], s["state"], s["description"]) for s in stack.github.statuses][1:] == [
        (NEW_SHA, "pending", "running 4 config(s), up to 32 GPUs"),
        (SHA, "error", reason),
    ]
    cancelled = stack.table.get_item(Key={"PK": f"RUN#{old}", "SK": "RUN"})["Item"]
    assert cancelled["status"] == "cancelled" and "GSI2PK" not in cancelled
    reasons = {j["jobName"]: j.get("statusReason") for j in stack.jobs()}
    assert all(reasons[f"distkpi-{old}-{c}"] == reason for c in THROUGHPUT)
    assert all(reasons[f"distkpi-{new}-{c}"] != reason for c in THROUGHPUT)
    # the old run's late results publish nothing; the new run finishes as usual
    deliver_all(stack, run_all_nodes(stack, old), copies=1)
    deliver_all(stack, run_all_nodes(stack, new), copies=1)
    assert [(s["sha"], s["state"]) for s in final_statuses(stack)] == [
        (SHA, "error"),
        (NEW_SHA, "success"),
    ]
    assert stack.table.get_item(Key={"PK": f"RUN#{old}", "SK": "RUN"})["Item"]["status"] == (
        "cancelled"
    )


def test_a_late_delivery_of_an_older_push_cancels_its_own_runs(stack: Stack) -> None:
    newer, older = "e" * 40, "d" * 40
    (kept,) = stack.webhook("pull_request", payload=pushed(newer), delivery="d2")["json"]["runs"]
    late = pushed(older, updated_at="2026-11-30T03:10:00Z")
    (stale,) = stack.webhook("pull_request", payload=late, delivery="d1")["json"]["runs"]
    status = {
        r: stack.table.get_item(Key={"PK": f"RUN#{r}", "SK": "RUN"})["Item"]["status"]
        for r in (kept, stale)
    }
    assert status == {kept: "running", stale: "cancelled"}
    assert [(s["sha"], s["state"], s["description"]) for s in stack.github.statuses][-1] == (
        older,
        "error",
        f"cancelled: superseded by {newer[:10]}",
    )


def test_a_succeeded_job_whose_node_never_reported_settles_its_config_at_once(
    stack: Stack,
) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    keys = run_all_nodes(stack, run_id)
    lost = f"runs/{run_id}/2x8-4ps/node-5.json"
    stack.s3.delete_object(Bucket=BUCKET, Key=lost)
    deliver_all(stack, [k for k in keys if k != lost], copies=1)
    assert final_statuses(stack) == []
    jobs = jobs_by_config(stack, run_id)
    # a job whose nodes all reported leaves its config to the collector
    assert stack.job_succeeded(jobs["1x8"]) == {"settled_config": False}
    # one node of a multi-node job succeeding is not the end of the job
    assert stack.job_succeeded(jobs["2x8-4ps"] + "#3") == {"settled_config": False}
    assert final_statuses(stack) == []
    assert stack.job_succeeded(jobs["2x8-4ps"]) == {"settled_config": True}
    (final,) = final_statuses(stack)
    assert final["state"] == "error"
    assert final["description"] == "2x8-4ps incomplete: job succeeded but node(s) 5 never reported"
    # the same event again settles nothing twice
    assert stack.job_succeeded(jobs["2x8-4ps"]) == {"settled_config": True}
    assert len(final_statuses(stack)) == 1
    assert stack.job_succeeded("not-ours") == {"settled_config": False}


def test_a_succeeded_job_whose_nodes_all_reported_settles_a_config_still_pending(
    stack: Stack,
) -> None:
    """Every manifest is in, but S3's events for 1x8 were lost: the job's end settles it at
    once, where it used to wait for the sweeper at the run's deadline, hours later."""
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    keys = run_all_nodes(stack, run_id)
    deliver_all(stack, [k for k in keys if "/1x8/" not in k], copies=1)
    assert final_statuses(stack) == []
    jobs = jobs_by_config(stack, run_id)
    assert stack.job_succeeded(jobs["1x8"]) == {"settled_config": True}
    (final,) = final_statuses(stack)
    assert final["state"] == "success"
    assert stack.job_succeeded(jobs["1x8"]) == {"settled_config": False}  # settled already


def test_a_job_event_for_someone_elses_job_is_ignored(stack: Stack) -> None:
    assert stack.job_failed("not-ours", "whatever") == {"settled_config": False}


def test_a_node_exiting_1_and_a_garbage_log_give_error(stack: Stack) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    garbage = b"\x00\xff\xfe:::MLLOG {not json\n" * 50
    keys = run_all_nodes(
        stack,
        run_id,
        broken={("1x8", 0): (trainer_log(720.0), 1), ("2x8-4ps", 1): (garbage, 0)},
    )
    deliver_all(stack, keys, copies=1)
    (final,) = final_statuses(stack)
    assert final["state"] == "error"
    assert final["description"].startswith("1x8 failed; 2x8-4ps failed: node 0 exited with code 1")
    configs = stack.table.get_item(Key={"PK": f"RUN#{run_id}", "SK": "RUN"})["Item"]["result"][
        "kpis"
    ]["configs"]
    assert configs["1x8"]["status"] == "failed" and configs["1x8"]["throughput"] is None
    assert configs["2x8-4ps"]["status"] == "failed"
    assert any("NUL byte" in p for p in configs["2x8-4ps"]["problems"])
    assert configs["4x8-8ps"]["status"] == "ok"


def test_misaligned_accuracy_is_a_failure(stack: Stack) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    keys = run_all_nodes(
        stack, run_id, broken={("4x8-8ps", 0): (trainer_log(600.0, accuracy=0.69), 0)}
    )
    deliver_all(stack, keys, copies=1)
    (final,) = final_statuses(stack)
    assert final["state"] == "failure"
    assert "4x8-8ps acc Δ-0.0100 > 0.001" in final["description"]


def test_a_run_past_its_deadline_is_settled_as_error_and_its_jobs_stopped(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    keys = run_all_nodes(stack, run_id)
    # 2x8-4ps node 5 never uploads its manifest; the S3 events of 4x8-8ps never arrive
    lost = f"runs/{run_id}/2x8-4ps/node-5.json"
    stack.s3.delete_object(Bucket=BUCKET, Key=lost)
    deliver_all(stack, [k for k in keys if k != lost and "/4x8-8ps/" not in k], copies=1)
    assert sweep(stack) == {"timed_out": 0, "republished": 0}  # 8 hours have not passed
    assert final_statuses(stack) == []

    monkeypatch.setenv("RUN_TIMEOUT_S", "0")
    monkeypatch.setenv("QUEUE_WAIT_S", "0")  # its jobs never started (no RUNNING event)
    wiring.reset()
    assert sweep(stack) == {"timed_out": 1, "republished": 0}
    (final,) = final_statuses(stack)
    assert final["state"] == "error"
    assert final["description"] == (
        "2x8-4ps incomplete: timed out: no job started 0h after the run was queued"
    )
    configs = {
        c["name"]: c
        for c in stack.table.query(
            KeyConditionExpression="PK = :pk AND begins_with(SK, :c)",
            ExpressionAttributeValues={":pk": f"RUN#{run_id}", ":c": "CONFIG#"},
        )["Items"]
    }
    assert configs["2x8-4ps"]["state"] == "incomplete"
    assert "node(s) 5 never reported" in configs["2x8-4ps"]["kpis"]["problems"]
    assert configs["4x8-8ps"]["state"] == "ok"  # all its nodes had reported after all
    reasons = {
        j["jobName"].removeprefix(f"distkpi-{run_id}-"): j.get("statusReason") for j in stack.jobs()
    }
    assert (
        reasons["2x8-4ps"]
        == reasons["4x8-8ps"]
        == ("timed out: no job started 0h after the run was queued")
    )
    assert reasons["1x1"] != reasons["2x8-4ps"]
    assert sweep(stack) == {"timed_out": 0, "republished": 0}
    assert len(final_statuses(stack)) == 1


def test_one_broken_overdue_run_does_not_keep_the_others_from_their_deadline(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (broken,) = stack.webhook("pull_request")["json"]["runs"]
    (fine,) = stack.webhook("push")["json"]["runs"]
    stack.table.update_item(
        Key={"PK": f"RUN#{broken}", "SK": "RUN"},
        UpdateExpression="SET spec = :garbage",
        ExpressionAttributeValues={":garbage": {"schema": 99}},
    )
    monkeypatch.setenv("RUN_TIMEOUT_S", "0")
    monkeypatch.setenv("QUEUE_WAIT_S", "0")  # its jobs never started (no RUNNING event)
    wiring.reset()
    assert sweep(stack) == {"timed_out": 1, "republished": 0}
    assert [s["state"] for s in final_statuses(stack)] == ["error"]
    assert stack.table.get_item(Key={"PK": f"RUN#{fine}", "SK": "RUN"})["Item"]["status"] == "done"
    assert "overdue run not settled" in caplog.text


def test_the_sweeper_hands_overdue_runs_over_and_settles_none_itself(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A few big overdue runs used to take the whole sweep, oldest first, and stall the
    statuses and the site for everyone: now the sweep only hands them to the overdue-run
    queue, and the deadlines function settles each in its own invocation."""
    (first,) = stack.webhook("pull_request")["json"]["runs"]
    (second,) = stack.webhook("push")["json"]["runs"]
    monkeypatch.setenv("RUN_TIMEOUT_S", "0")
    monkeypatch.setenv("QUEUE_WAIT_S", "0")  # their jobs never started (no RUNNING event)
    wiring.reset()
    swept = stack.handlers["sweeper"].lambda_handler({"source": "aws.events"}, LambdaContext())
    assert swept == {"overdue": 2, "republished": 0}

    def status() -> dict[str, str]:
        return {
            run: stack.table.get_item(Key={"PK": f"RUN#{run}", "SK": "RUN"})["Item"]["status"]
            for run in (first, second)
        }

    assert status() == {first: "running", second: "running"}
    assert stack.settle_overdue() == 2
    assert status() == {first: "done", second: "done"}
    # the next sweep finds nothing overdue
    assert sweep(stack) == {"timed_out": 0, "republished": 0}


def test_a_report_that_cannot_be_drawn_leaves_the_status_without_a_link(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from distkpi.reporting import page

    def broken(*args: object) -> dict[str, bytes]:
        raise ValueError("no font")

    monkeypatch.setattr(page, "build_report", broken)
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    capsys.readouterr()
    deliver_all(stack, run_all_nodes(stack, run_id), copies=1)
    (final,) = final_statuses(stack)
    assert final["state"] == "success" and final["target_url"] is None
    assert '"ReportFailures":[1.0]' in capsys.readouterr().out
    listed = stack.s3.list_objects_v2(Bucket=BUCKET, Prefix=f"reports/{run_id}/")
    assert listed["KeyCount"] == 0


def test_github_answering_500_then_201_posts_once(stack: Stack) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    stack.github.fail_next(500)
    deliver_all(stack, run_all_nodes(stack, run_id), copies=1)
    assert len(final_statuses(stack)) == 1
    # the pending status, the pull request's comment (500, then its retry), the final status
    assert stack.github.requests == 4
    assert len(stack.github.comments) == 1


def test_github_down_still_stores_the_kpis_and_the_status_goes_out_later(
    stack: Stack,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    stack.github.stop()
    capsys.readouterr()
    deliver_all(stack, run_all_nodes(stack, run_id), copies=1)
    assert [r.getMessage() for r in caplog.records].count("status not posted") == 1
    assert '"StatusPostFailures":[1.0]' in capsys.readouterr().out
    assert "ghs_test_token" not in caplog.text
    run = stack.table.get_item(Key={"PK": f"RUN#{run_id}", "SK": "RUN"})["Item"]
    assert run["status"] == "done" and run["result"]["state"] == "success"
    assert "published_at" not in run and "publish_lease" not in run
    # When GitHub is back, the scheduled sweeper posts the final status, once
    stack.github.start()
    monkeypatch.setenv("GITHUB_API_URL", stack.github.url)
    wiring.reset()
    assert sweep(stack) == {"timed_out": 0, "republished": 1}
    assert sweep(stack) == {"timed_out": 0, "republished": 0}
    (final,) = final_statuses(stack)
    assert final["state"] == "success" and final["sha"] == SHA
    run = stack.table.get_item(Key={"PK": f"RUN#{run_id}", "SK": "RUN"})["Item"]
    assert "published_at" in run and "GSI2PK" not in run


def test_a_manifest_of_an_unknown_run_or_other_objects_are_skipped(stack: Stack) -> None:
    key = upload_node(stack, "no-such-run", "1x1", 0, "trainer", 0, trainer_log(1.0))
    assert stack.collect(key) == {"handled": 0}
    assert stack.collect("runs/no-such-run/run.json") == {"handled": 0}
    assert stack.github.statuses == []
