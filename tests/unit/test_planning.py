"""Suites, run ids, run.json and Batch job plans."""

from pathlib import Path

import jsonschema
import pytest

from distkpi.adapters.batch import BatchLauncher
from distkpi.domain.github.webhook import (
    Ignored,
    Trigger,
    decide,
    parse,
    sign,
    signature_matches,
)
from distkpi.domain.planning.jobs import plan_jobs, run_id_for, run_spec_for
from distkpi.domain.planning.suites import (
    load_suite,
    load_suites,
    parse_deployed_suites,
    parse_suite,
)
from distkpi.exceptions import ContractError
from tests.unit.test_cli_kpis import schema

ROOT = Path(__file__).resolve().parents[2]
TRIGGER = Trigger(
    repo="o/r",
    sha="b" * 40,
    ref="refs/pull/7/head",
    branch="f",
    event="pull_request",
    base_branch="develop",
)


def test_every_bundled_suite_loads() -> None:
    names = [s.name for s in load_suites(ROOT / "infra" / "suites")]
    assert "resnet50" in names


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: x\n", "target_accuracy: Field required"),
        ("{", "not valid YAML"),
        (
            "name: x\ntarget_accuracy: 2\naccuracy_pass: 1\naccuracy_tolerance: 0\n"
            "configs: [{name: a, trainers: 1, gpus_per_trainer: 1, batch_size: 1}]\n",
            "target_accuracy: Input should be less than or equal to 1",
        ),
        (
            "name: x\ntarget_accuracy: 0.5\naccuracy_pass: 1\naccuracy_tolerance: 0\n"
            "configs: [{name: a, trainers: 0, gpus_per_trainer: 1, batch_size: 1}]\n",
            "configs.0.trainers",
        ),
        (
            "name: x\ntarget_accuracy: 0.5\naccuracy_pass: 1\naccuracy_tolerance: 0\n"
            "configs: [{name: a, trainers: 1, gpus_per_trainer: 1, batch_size: 1, gpu: 3}]\n",
            "configs.0.gpu: Extra inputs are not permitted",
        ),
    ],
)
def test_a_bad_suite_names_file_and_field(text: str, message: str) -> None:
    with pytest.raises(ContractError) as err:
        parse_suite(text, "infra/suites/x.yaml")
    assert str(err.value).startswith("infra/suites/x.yaml: ")
    assert message in str(err.value)


def test_deployed_suites_set_bad_files_aside_and_keep_the_rest() -> None:
    good = (ROOT / "infra" / "suites" / "resnet50.yaml").read_bytes()
    files = [
        ("a-garbage.yaml", b"\x80\x81 not text"),
        ("b-missing.yaml", b"name: b\n"),
        ("resnet50.yaml", good),
        ("z-copy.yaml", good),
    ]
    suites, broken = parse_deployed_suites(files, "s3://bucket/suites/")
    assert [s.name for s in suites] == ["resnet50"]
    assert [b.name for b in broken] == ["a-garbage.yaml", "b-missing.yaml", "z-copy.yaml"]
    garbage, missing, copy = (b.problem for b in broken)
    assert garbage.startswith("s3://bucket/suites/a-garbage.yaml: not valid YAML")
    assert "s3://bucket/suites/b-missing.yaml: invalid suite: " in missing
    assert "target_accuracy: Field required" in missing
    assert copy == (
        "s3://bucket/suites/z-copy.yaml: suite name 'resnet50' is taken by resnet50.yaml"
    )


def test_missing_suite_file(tmp_path: Path) -> None:
    with pytest.raises(ContractError, match="cannot be read"):
        load_suite(tmp_path / "nope.yaml")


def test_run_spec_follows_the_contract_and_run_ids_are_stable() -> None:
    suite = load_suite(ROOT / "infra" / "suites" / "resnet50.yaml")
    run_id = run_id_for(suite.name, TRIGGER.sha, "delivery-1")
    assert run_id == run_id_for(suite.name, TRIGGER.sha, "delivery-1")
    assert run_id != run_id_for(suite.name, TRIGGER.sha, "delivery-2")
    spec = run_spec_for(run_id, TRIGGER, suite)
    jsonschema.validate(spec.to_json(), schema("run.schema.json"))
    assert [c.nodes for c in spec.configs] == [1, 1, 6, 12]


def test_job_requests_single_and_multi_node() -> None:
    suite = load_suite(ROOT / "infra" / "suites" / "resnet50.yaml")
    spec = run_spec_for("run-1", TRIGGER, suite)
    plans = {p.config: p for p in plan_jobs(spec, suite, "bucket")}
    launcher = BatchLauncher("queue", "single", "multi")
    single = launcher.request(plans["1x8"])
    assert single["jobDefinition"] == "single" and "nodeOverrides" not in single
    env = {e["name"]: e["value"] for e in single["containerOverrides"]["environment"]}
    assert env["DISTKPI_GPUS_PER_TRAINER"] == "8" and env["DISTKPI_ROLE"] == "trainer"
    multi = launcher.request(plans["2x8-4ps"])
    groups = multi["nodeOverrides"]["nodePropertyOverrides"]
    assert multi["nodeOverrides"]["numNodes"] == 6
    assert [g["targetNodes"] for g in groups] == ["0:1", "2:5"]


def test_signatures() -> None:
    body = b'{"a": 1}'
    assert signature_matches(b"s", body, sign(b"s", body))
    assert not signature_matches(b"s", body, sign(b"t", body))
    assert not signature_matches(b"s", body, None)
    assert not signature_matches(b"s", body, "sha1=abc")


def test_push_decisions() -> None:
    payload = {"ref": "refs/heads/develop", "after": "c" * 40, "repository": {"full_name": "o/r"}}
    assert isinstance(decide(parse("push", payload), ["develop"]), Trigger)
    assert isinstance(
        decide(parse("push", {**payload, "ref": "refs/tags/v1"}), ["develop"]), Ignored
    )
    assert isinstance(decide(parse("push", {**payload, "after": "0" * 40}), ["develop"]), Ignored)
    assert isinstance(decide(parse("push", {"ref": 3}), ["develop"]), Ignored)


@pytest.mark.parametrize("suite", sorted((ROOT / "infra" / "suites").glob("*.yaml")), ids=str)
def test_bundled_suite_commands_are_ones_their_benchmark_accepts(suite: Path) -> None:
    import subprocess
    import sys

    command = load_suite(suite).command
    if command[1] == "infra/job/paddle/env.py":  # the Paddle benchmark in its environment
        assert list(command[2:5]) in (
            ["run", "cpu", "infra/job/paddle/bench.py"],
            ["run", "gpu", "infra/job/paddle/bench.py"],
        )
        check = f"from bench import arguments; arguments({list(command[5:])!r})"
        env = {"PYTHONPATH": str(ROOT / "infra" / "job" / "paddle")}
    elif command[1] == "infra/job/llm.py":  # the reference LLM job
        check = f"from distkpi_job.llm import args; args({list(command[2:])!r})"
        env = {"PYTHONPATH": str(ROOT / "infra" / "job")}
    else:  # the reference job's script, from the checkout (infra/job/) or the image (/opt/job)
        assert command[0] == "python" and command[1] in ("infra/job/reference.py", "reference.py")
        check = f"from distkpi_job.__main__ import _args; _args({list(command[2:])!r})"
        env = {"PYTHONPATH": str(ROOT / "infra" / "job")}
    subprocess.run([sys.executable, "-c", check], check=True, env=env, capture_output=True)


def test_pull_request_decision_reads_the_recorded_delivery() -> None:
    import json

    payload = json.loads((ROOT / "tests" / "events" / "pull_request.json").read_text())["payload"]
    trigger = decide(parse("pull_request", payload), ["develop"])
    assert isinstance(trigger, Trigger)
    assert trigger.pull_request == payload["number"] and trigger.base_branch == "develop"
    assert trigger.updated_at == "2026-11-30T02:58:42Z"  # orders pushes delivered out of order
    closed = {**payload, "action": "closed"}
    assert isinstance(decide(parse("pull_request", closed), ["develop"]), Ignored)
