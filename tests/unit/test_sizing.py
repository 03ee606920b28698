"""What each node asks Batch for, and configs the stack can never place."""

from pathlib import Path

import pytest

from distkpi.adapters.batch import MAX_REQUEST_BYTES, BatchLauncher, gpus_requested
from distkpi.domain.contracts import ConfigSpec
from distkpi.domain.planning.jobs import plan_jobs, run_spec_for
from distkpi.domain.planning.sizing import Fleet, InstanceShape, Placement, Refusal, Sizing, place
from distkpi.domain.planning.suites import load_suite, parse_suite
from distkpi.exceptions import ContractError, LaunchError
from distkpi.settings import BatchSettings
from distkpi_cli.local.template import load_template
from tests.unit.test_planning import TRIGGER

ROOT = Path(__file__).resolve().parents[2]
P4D = InstanceShape("p4d.24xlarge", 96, 8, 1_179_648, "NVIDIA A100")
P5 = InstanceShape("p5.48xlarge", 192, 8, 2_097_152, "NVIDIA H100")
C6I = InstanceShape("c6i.4xlarge", 16, 0, 32_768)
FLEET = Fleet(512, (P4D,), C6I)


def spec(name: str, trainers: int, gpus: int, pservers: int = 0) -> ConfigSpec:
    return ConfigSpec(
        name=name,
        trainers=trainers,
        gpus_per_trainer=gpus,
        pservers=pservers,
        batch_size=32,
        nodes=trainers + pservers,
    )


def seed_plans(fleet: Fleet = FLEET) -> list:
    suite = load_suite(ROOT / "infra" / "suites" / "resnet50.yaml")
    run = run_spec_for("r1", TRIGGER, suite)
    return plan_jobs(run, suite, "bucket", fleet=fleet)


def test_the_seed_matrix_asks_for_exactly_57_gpus_and_none_for_a_pserver() -> None:
    plans = seed_plans()
    assert [p.refusal for p in plans] == [None] * 4
    assert sum(p.gpus for p in plans) == 57  # 1 + 8 + 2x8 + 4x8, not 8 per node (160)
    launcher = BatchLauncher("q", "single", "multi")
    requests = [launcher.request(p) for p in plans]
    assert sum(gpus_requested(r) for r in requests) == 57
    for request in requests:
        for group in request.get("nodeOverrides", {}).get("nodePropertyOverrides", []):
            wanted = group["containerOverrides"]["resourceRequirements"]
            role = {e["name"]: e["value"] for e in group["containerOverrides"]["environment"]}
            if role["DISTKPI_ROLE"] == "pserver":
                assert [r["type"] for r in wanted] == ["VCPU", "MEMORY"]
                assert group["instanceTypes"] == ["c6i.4xlarge"]


def test_a_config_beyond_max_vcpus_is_refused_with_the_arithmetic() -> None:
    refused = place(spec("4x8-8ps", 4, 8, 8), Fleet(384, (P4D,), C6I))
    assert refused == Refusal(
        "4x8-8ps needs 12 nodes / 512 vCPUs; MaxvCpus is 384 "
        "(4 x p4d.24xlarge of 96 vCPUs + 8 x c6i.4xlarge of 16)"
    )


def test_trainers_of_a_multinode_job_are_pinned_to_the_smallest_type_that_fits() -> None:
    placed = place(spec("2x8", 2, 8), Fleet(1000, (P5, P4D)))
    assert isinstance(placed, Placement)
    assert placed.trainer.instance_type == "p4d.24xlarge" and placed.vcpus == 192
    single = place(spec("1x1", 1, 1), Fleet(1000, (P5, P4D)))
    assert isinstance(single, Placement) and single.trainer.instance_type is None


def test_without_a_pserver_type_pservers_take_a_gpu_instance_but_no_gpu() -> None:
    placed = place(spec("1x8-2ps", 1, 8, 2), Fleet(1000, (P4D,)))
    assert isinstance(placed, Placement) and placed.pserver is not None
    assert placed.pserver.instance_type == "p4d.24xlarge" and placed.pserver.gpus == 0
    assert placed.vcpus == 3 * 96


def test_per_gpu_resources_no_instance_has_are_refused_naming_the_field() -> None:
    suite = parse_suite(
        (ROOT / "infra" / "suites" / "resnet50.yaml").read_text()
        + "resources: {vcpus_per_gpu: 16}\n",
        "suites/resnet50.yaml",
    )
    refused = place(spec("1x8", 1, 8), FLEET, suite.resources, suite.pserver)
    assert isinstance(refused, Refusal)
    assert "resources.vcpus_per_gpu 16" in refused.reason
    assert "128 vCPUs" in refused.reason and "p4d.24xlarge: 8 GPUs, 96 vCPUs" in refused.reason
    plans = plan_jobs(run_spec_for("r1", TRIGGER, suite), suite, "b", fleet=FLEET)
    refused = {p.config for p in plans if p.refusal and "(suite suites/resnet50.yaml)" in p.refusal}
    assert refused == {"1x8", "2x8-4ps", "4x8-8ps"}  # 16 vCPUs for one GPU fit


def test_memory_an_instance_keeps_for_itself_is_not_offered() -> None:
    whole = Sizing(memory_mib_per_gpu=P4D.memory_mib // 8)
    assert isinstance(place(spec("1x8", 1, 8), Fleet(512, (P4D,), sizing=whole)), Refusal)


def test_more_nodes_than_batch_allows_is_refused() -> None:
    refused = place(spec("huge", 1001, 1), Fleet(10**6, (P4D,)))
    assert isinstance(refused, Refusal) and "at most 1000" in refused.reason


def test_a_pserver_asking_for_gpus_names_the_file_and_field() -> None:
    text = (ROOT / "infra" / "suites" / "resnet50.yaml").read_text()
    with pytest.raises(ContractError) as err:
        parse_suite(text + "pserver: {gpus: 1}\n", "suites/resnet50.yaml")
    assert str(err.value).startswith("suites/resnet50.yaml: invalid suite: pserver: ")
    assert "gpus: a parameter server asks for no GPU" in str(err.value)


def test_a_request_batch_would_refuse_for_its_size_is_not_sent() -> None:
    (plan, *_) = seed_plans()
    big = plan.__class__(**{**plan.__dict__, "environment": {"X": "y" * MAX_REQUEST_BYTES}})
    with pytest.raises(LaunchError, match="Batch takes at most 30720"):
        BatchLauncher("q", "single", "multi", batch=object()).submit(big)  # type: ignore[arg-type]


def test_the_functions_default_to_what_the_template_defaults_to() -> None:
    parameters = load_template((ROOT / "template.yaml").read_text())["Parameters"]
    settings = BatchSettings.model_validate(
        {
            "TABLE_NAME": "t",
            "BUCKET_NAME": "b",
            "GITHUB_TOKEN_SECRET_ID": "s",
            "MANIFEST_SECRET_ID": "k",
            "JOB_QUEUE": "q",
            "SINGLE_NODE_JOB_DEFINITION": "s",
            "MULTI_NODE_JOB_DEFINITION": "m",
        }
    )
    assert ",".join(settings.instance_types) == parameters["InstanceTypes"]["Default"]
    assert settings.pserver_instance_type == parameters["PserverInstanceType"]["Default"]
    assert settings.max_vcpus == parameters["MaxvCpus"]["Default"]
    sizing = settings.sizing
    assert sizing.vcpus_per_gpu == parameters["VcpusPerGpu"]["Default"]
    assert sizing.memory_mib_per_gpu == parameters["MemoryMiBPerGpu"]["Default"]
    assert sizing.pserver_vcpus == parameters["PserverVcpus"]["Default"]
    assert sizing.pserver_memory_mib == parameters["PserverMemoryMiB"]["Default"]


def test_max_vcpus_defaults_to_what_the_largest_bundled_suite_needs() -> None:
    parameters = load_template((ROOT / "template.yaml").read_text())["Parameters"]
    placed = [place(s, Fleet(10**6, (P4D,), C6I)) for s in _bundled_specs()]
    needs = [p.vcpus for p in placed if isinstance(p, Placement)]
    assert len(needs) == len(placed)
    assert parameters["MaxvCpus"]["Default"] == max(needs)


def _bundled_specs() -> list[ConfigSpec]:
    from distkpi.domain.planning.suites import load_suites

    return [c for s in load_suites(ROOT / "infra" / "suites") for c in s.specs()]
