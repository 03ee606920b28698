"""Jobs that ask for what their nodes use, and runs that can never be placed refused at
once, naming the config and the arithmetic, with no job submitted."""

from __future__ import annotations

import yaml

from tests.integration.conftest import BUCKET, ROOT, Stack
from tests.integration.test_flow import final_statuses, jobs_by_config, submitted


def deploy_resnet50(stack: Stack, **changes: object) -> None:
    suite = yaml.safe_load((ROOT / "infra" / "suites" / "resnet50.yaml").read_text())
    suite.update(changes)
    stack.s3.put_object(Bucket=BUCKET, Key="suites/resnet50.yaml", Body=yaml.safe_dump(suite))


def test_each_node_asks_for_its_roles_resources(stack: Stack) -> None:
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    jobs = jobs_by_config(stack, run_id)
    single = submitted(stack, jobs["1x1"])["containerOverrides"]["resourceRequirements"]
    assert single == [
        {"type": "GPU", "value": "1"},
        {"type": "VCPU", "value": "10"},
        {"type": "MEMORY", "value": "120000"},
    ]
    ranges = {
        r["targetNodes"]: r
        for r in submitted(stack, jobs["4x8-8ps"])["nodeOverrides"]["nodePropertyOverrides"]
    }
    trainers, servers = ranges["0:3"], ranges["4:11"]
    assert trainers["instanceTypes"] == ["p4d.24xlarge"]
    assert {"type": "GPU", "value": "8"} in trainers["containerOverrides"]["resourceRequirements"]
    assert servers["instanceTypes"] == ["c6i.4xlarge"]
    assert servers["containerOverrides"]["resourceRequirements"] == [
        {"type": "VCPU", "value": "8"},
        {"type": "MEMORY", "value": "16000"},
    ]


def test_a_config_larger_than_the_stack_is_refused_and_nothing_is_submitted(
    stack: Stack,
) -> None:
    # Given a suite whose largest config needs 8 p4d trainers and 16 pservers
    suite = yaml.safe_load((ROOT / "infra" / "suites" / "resnet50.yaml").read_text())
    huge = {"name": "8x8-16ps", "trainers": 8, "gpus_per_trainer": 8, "pservers": 16}
    deploy_resnet50(stack, configs=[*suite["configs"], {**huge, "batch_size": 64}])
    # When a pull request arrives
    response = stack.webhook("pull_request")
    assert response["statusCode"] == 201
    (run_id,) = response["json"]["runs"]
    # Then no job is submitted, and the status says which config and why, at once
    assert jobs_by_config(stack, run_id) == {}
    (final,) = final_statuses(stack)
    assert final["state"] == "error"
    assert final["description"].startswith(
        "all 5 configs failed: not submitted: 8x8-16ps needs 24 nodes / 1024 vCPUs; MaxvCpus is 512"
    ), final
    assert len(final["description"]) <= 140
    configs = stack.table.get_item(Key={"PK": f"RUN#{run_id}", "SK": "RUN"})["Item"]["result"]
    problems = configs["kpis"]["configs"]["8x8-16ps"]["problems"]
    assert problems[:1] == [
        "8x8-16ps needs 24 nodes / 1024 vCPUs; MaxvCpus is 512 (8 x p4d.24xlarge of 96 vCPUs "
        "+ 16 x c6i.4xlarge of 16) (suite suites/resnet50.yaml)"
    ]


def test_per_gpu_vcpus_no_instance_has_are_refused_naming_the_field(stack: Stack) -> None:
    deploy_resnet50(stack, resources={"vcpus_per_gpu": 16})
    (run_id,) = stack.webhook("pull_request")["json"]["runs"]
    assert jobs_by_config(stack, run_id) == {}
    (final,) = final_statuses(stack)
    assert final["state"] == "error"
    result = stack.table.get_item(Key={"PK": f"RUN#{run_id}", "SK": "RUN"})["Item"]["result"]
    problem = result["kpis"]["configs"]["1x8"]["problems"][0]
    assert "resources.vcpus_per_gpu 16" in problem and "suites/resnet50.yaml" in problem
    assert "p4d.24xlarge: 8 GPUs, 96 vCPUs" in problem


def test_a_pserver_asking_for_gpus_is_an_invalid_suite(stack: Stack) -> None:
    deploy_resnet50(stack, pserver={"gpus": 1, "vcpus": 8})
    response = stack.webhook("pull_request")
    assert response["json"]["invalid_suites"] == ["resnet50.yaml"]
    (error,) = [s for s in stack.github.statuses if s["context"] == "distkpi/resnet50.yaml"]
    assert error["state"] == "error"
    assert error["description"].startswith("suites/resnet50.yaml: invalid suite: pserver: ")
    assert "gpus: a parameter server asks for no GPU" in error["description"]
