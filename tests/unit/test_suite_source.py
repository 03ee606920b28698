"""What a suite says of the code under test (source, setup, command, image, repos), checked
field by field, and how it reaches every node of every job."""

from __future__ import annotations

import json

import pytest

from distkpi.adapters.batch import BatchLauncher
from distkpi.domain.github.webhook import Trigger
from distkpi.domain.planning.jobs import plan_jobs, run_spec_for
from distkpi.domain.planning.suites import parse_suite
from distkpi.exceptions import ContractError

SUITE = """
name: mymodel
repos: [myorg/mymodel]
image: "registry.example/mymodel:{sha}"
setup:
  - [pip, install, -e, .]
  - make -C csrc
command: [torchrun, "--nnodes=${NNODES}", train.py]
target_accuracy: 0.5
accuracy_pass: 1
accuracy_tolerance: 0.01
configs:
  - {name: 1x1, trainers: 1, gpus_per_trainer: 1, batch_size: 8}
  - {name: 2x1-1ps, trainers: 2, gpus_per_trainer: 1, pservers: 1, batch_size: 8}
"""
COMMAND = 'command: [torchrun, "--nnodes=${NNODES}", train.py]'
TRIGGER = Trigger("myorg/mymodel", "c" * 40, "refs/heads/develop", "develop", "push", "develop")


def with_line(old: str, new: str) -> str:
    assert old in SUITE
    return SUITE.replace(old, new)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (
            with_line('command: [torchrun, "--nnodes=${NNODES}", train.py]', "command: []"),
            "command",
        ),
        (
            with_line('command: [torchrun, "--nnodes=${NNODES}", train.py]', "command: [run, 3]"),
            "command.1",
        ),
        (with_line("  - make -C csrc", "  - []"), "setup.1"),
        (with_line("  - make -C csrc", '  - ""'), "setup.1"),
        (with_line("repos: [myorg/mymodel]", "source: ftp://example.com/x.git"), "source"),
        (with_line("repos: [myorg/mymodel]", "source: https://x/{owner}.git"), "source"),
        # credentials in the URL would reach the code as DISTKPI_SOURCE_URL
        (
            with_line(
                "repos: [myorg/mymodel]", "source: https://x-access-token:ghp_x@github.com/{repo}"
            ),
            "source",
        ),
        (with_line("repos: [myorg/mymodel]", "source: ssh://git:pw@example.com/{repo}"), "source"),
        (with_line('image: "registry.example/mymodel:{sha}"', 'image: ":latest"'), "image"),
        (with_line("repos: [myorg/mymodel]", "repos: [not-a-repo]"), "repos.0"),
    ],
)
def test_a_bad_field_is_an_error_naming_the_file_and_the_field(text: str, field: str) -> None:
    with pytest.raises(ContractError) as raised:
        parse_suite(text, "suites/mymodel.yaml")
    assert str(raised.value).startswith(f"suites/mymodel.yaml: invalid suite: {field}")


def test_the_suite_reaches_every_node_of_every_job() -> None:
    suite = parse_suite(SUITE, "suites/mymodel.yaml")
    assert suite.runs_for("myorg/mymodel") and not suite.runs_for("someone/else")
    plans = plan_jobs(run_spec_for("r1", TRIGGER, suite), suite, "bucket")
    for plan in plans:
        env = plan.environment
        assert env["DISTKPI_SOURCE_URL"] == "https://github.com/myorg/mymodel.git"
        assert json.loads(env["DISTKPI_SETUP"]) == [["pip", "install", "-e", "."], "make -C csrc"]
        assert json.loads(env["DISTKPI_COMMAND"]) == ["torchrun", "--nnodes=${NNODES}", "train.py"]
        assert plan.image == f"registry.example/mymodel:{'c' * 40}"
    launcher = BatchLauncher("queue", "single", "multi")
    launcher._for_image[("single", plans[0].image)] = "single-with-image:7"  # type: ignore[index]
    launcher._for_image[("multi", plans[1].image)] = "multi-with-image:7"  # type: ignore[index]
    single, multi = (launcher.request(p) for p in plans)
    assert single["containerOverrides"]["command"] == ["distkpi", "node"]
    assert single["jobDefinition"] == "single-with-image:7"
    assert multi["jobDefinition"] == "multi-with-image:7"
    for group in multi["nodeOverrides"]["nodePropertyOverrides"]:
        assert group["containerOverrides"]["command"] == ["distkpi", "node"]


def test_source_none_runs_what_the_image_holds() -> None:
    suite = parse_suite(with_line("repos: [myorg/mymodel]", "source: none"), "s.yaml")
    assert suite.source_url("myorg/mymodel") == "none"


def test_a_multi_node_definition_gets_the_image_on_every_node_range() -> None:
    from distkpi.adapters.batch import _with_image

    base = {
        "jobDefinitionName": "distkpi-multinode",
        "jobDefinitionArn": "arn:...:1",
        "revision": 1,
        "status": "ACTIVE",
        "type": "multinode",
        "nodeProperties": {
            "numNodes": 2,
            "mainNode": 0,
            "nodeRangeProperties": [{"targetNodes": "0:", "container": {"image": "old"}}],
        },
    }
    request = _with_image(base, "new:abc")
    assert "revision" not in request and "jobDefinitionArn" not in request
    assert request["nodeProperties"]["nodeRangeProperties"][0]["container"] == {"image": "new:abc"}
    assert base["nodeProperties"]["nodeRangeProperties"][0]["container"]["image"] == "old"  # type: ignore[index]


@pytest.mark.parametrize(
    ("pattern", "path", "touched"),
    [
        (
            "python/paddle/distributed/**",
            "python/paddle/distributed/fleet/base/role_maker.py",
            True,
        ),
        ("python/paddle/distributed/**", "python/paddle/nn/layer.py", False),
        ("**/CMakeLists.txt", "CMakeLists.txt", True),
        ("**/CMakeLists.txt", "paddle/fluid/CMakeLists.txt", True),
        ("paddle/*.cc", "paddle/a.cc", True),
        ("paddle/*.cc", "paddle/fluid/a.cc", False),
        ("setup.py", "setup.py", True),
        ("setup.py", "tools/setup.py", False),
    ],
)
def test_paths_are_globs_with_double_star_for_any_folders(
    pattern: str, path: str, touched: bool
) -> None:
    suite = parse_suite(SUITE + f"paths: [{pattern!r}]\n", "s.yaml")
    assert suite.touched_by([path]) is touched
    assert suite.touched_by(None)  # files unknown: the suite runs
    assert parse_suite(SUITE, "s.yaml").touched_by([path])  # no paths: every change


def test_empty_paths_are_a_clear_error() -> None:
    with pytest.raises(ContractError, match=r"s\.yaml: invalid suite: paths"):
        parse_suite(SUITE + "paths: []\n", "s.yaml")
