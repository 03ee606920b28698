"""`distkpi local --suite infra/suites/local-llm.yaml` end to end: the reference LLM job
(infra/job/llm.py) trained for real as one process, two DDP workers and two FSDP workers,
its torchtitan-style lines read into the language-model KPIs, the loss curves aligned and
held against the repository's golden curve."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import jsonschema
import pytest
import yaml

from distkpi_cli.local.demo import run_local
from tests.conftest import git
from tests.e2e.test_local import ROOT, commit_all
from tests.unit.test_cli_kpis import schema

# minutes of real training or benchmarks: `make slow`, which CI runs beside `make test`
pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SUITE = ROOT / "infra" / "suites" / "local-llm.yaml"
LLM_KPIS = ("tokens_per_s", "step_time_s", "tflops_per_gpu", "loss", "steps_to_accuracy")


def llm_repository(tmp_path: Path) -> Path:
    """A repository with the reference jobs and the suite's golden curve, committed."""
    repo = tmp_path / "repo"
    golden = yaml.safe_load(SUITE.read_text())["golden"]
    shutil.copytree(
        ROOT / "infra" / "job", repo / "infra" / "job", ignore=shutil.ignore_patterns("__pycache__")
    )
    (repo / golden).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / golden, repo / golden)
    git(repo, "init", "-q", "--initial-branch=main")
    commit_all(repo, "the LLM job")
    return repo


def test_the_llm_suite_gives_every_language_model_kpi_alignment_and_golden(
    tmp_path: Path,
) -> None:
    result = run_local(
        SUITE, tmp_path / "out", source=llm_repository(tmp_path), progress=io.StringIO()
    )
    (run,) = result.to_json()["runs"]
    jsonschema.validate(run, schema("kpis.schema.json"))
    configs = run["configs"]
    assert set(configs) == {"1x1", "1x2-ddp", "1x2-fsdp"}
    for name, cfg in configs.items():
        assert cfg["status"] == "ok", (name, cfg["problems"])
        for kpi in LLM_KPIS:
            assert cfg[kpi] is not None, (name, kpi, cfg["problems"])
        # the tokens/s the job prints per device, summed over the config's workers
        assert cfg["throughput"] == pytest.approx(cfg["tokens_per_s"] / 64)
        assert cfg["golden_loss"] is not None and cfg["golden_loss"] < 0.02, name
        # a CPU has no peak in the table, and its RSS is not passed off as GPU memory
        assert cfg["mfu"] is None
        assert any("MFU unknown: no fp32 peak known for cpu" in p for p in cfg["problems"])
        assert cfg["trainer_gpu_memory_mib"] is None
        assert not any("golden" in p for p in cfg["problems"]), cfg["problems"]
    assert configs["1x2-fsdp"]["layout"]["zero_stage"] == 3
    for name in ("1x2-ddp", "1x2-fsdp"):  # same global batch and seed as one process
        assert configs[name]["loss_alignment"] < 0.01, configs[name]["problems"]
        assert configs[name]["loss"] == pytest.approx(configs["1x1"]["loss"], rel=0.01)
    # every config's node uploaded the golden curve it was judged against, from the commit
    folder = result.runs[0].folder
    golden = json.loads((folder / "1x1" / "golden.json").read_text())
    assert golden == json.loads((ROOT / "infra/suites/local-llm.golden.json").read_text())
    # the enforced KPIs are the deterministic ones, so an unchanged commit passes
    assert result.runs[0].state == "success", result.runs[0].description
    assert result.ok
