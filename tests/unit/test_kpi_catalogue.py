"""The KPI catalogue is the one place a KPI is defined: the kpis JSON Schema agrees with it,
and a KPI added to it alone (its value read from what the readers already fill) shows in
`distkpi kpis --json`, in the text table and in the judging."""

import csv
import json
import subprocess
import sys
from pathlib import Path

from distkpi.domain.judging.settings import ALL_KPIS, HIGHER_IS_BETTER, KPIS, LOG_SCALE
from distkpi.domain.kpis import catalogue
from tests.unit.test_cli_kpis import EXAMPLE

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "layers" / "distkpi" / "distkpi" / "schemas" / "kpis.schema.json"
# what a config's record holds besides its KPIs
NOT_KPIS = {
    "gpus",
    "pservers",
    "status",
    "test_accuracy_parts",
    "diverged",
    "diagnosis",  # a diagnosis job's, where one ran (issue 36)
    "loss_alignment_step",
    "problems",
    "runs",
    "hardware",
    "gpu_hours",
    "pairs",
    "layout",
}


def test_the_schema_names_every_catalogue_kpi_with_its_bound() -> None:
    config = json.loads(SCHEMA.read_text())["properties"]["configs"]["additionalProperties"]
    properties = config["properties"]
    assert set(properties) - NOT_KPIS == {k.name for k in catalogue.CATALOGUE}
    for kpi in catalogue.CATALOGUE:
        stated = properties[kpi.name]
        assert stated["type"] == ["number", "null"], kpi.name
        bound = {k: v for k, v in stated.items() if k in ("minimum", "exclusiveMinimum")}
        assert bound == (dict([kpi.bound]) if kpi.bound else {}), kpi.name
    # the seed's KPIs stay required; the LLM KPIs are absent from records written before
    required = set(config["required"]) - NOT_KPIS
    assert required == {k.name for k in catalogue.CATALOGUE if not k.optional}


def test_the_judging_rules_come_from_the_catalogue() -> None:
    assert KPIS == (
        "throughput",
        "speedup",
        "efficiency",
        "test_accuracy",
        "time_to_accuracy_s",
        "trainer_gpu_memory_mib",
        "pserver_gpu_memory_mib",
    )
    assert set(ALL_KPIS) - set(KPIS) == {
        "steps_to_accuracy",
        "tokens_per_s",
        "step_time_s",
        "tflops_per_gpu",
        "mfu",
        "loss",
        "loss_alignment",
        "golden_loss",
    }
    assert HIGHER_IS_BETTER["step_time_s"] is False and HIGHER_IS_BETTER["mfu"] is True
    assert HIGHER_IS_BETTER["test_accuracy"] is None  # the run's accuracy_direction
    assert "loss" not in LOG_SCALE and "test_accuracy" not in LOG_SCALE
    assert "tokens_per_s" in LOG_SCALE


# a KPI defined in the catalogue alone: how many evaluations the first trainer's log made
# (a number the built-in readers already fill), more being better
FAKE_KPI = """
import sys
from distkpi.domain.kpis import catalogue

def evaluations(measuring):
    if not measuring.trainers:
        return None
    return float(len(measuring.trainers[0][1].accuracy_by_pass))

catalogue.CATALOGUE = (
    *catalogue.CATALOGUE,
    catalogue.Kpi(
        "evaluations", "", "evaluations", "evals", ".0f", True, log_scale=False,
        measure=evaluations,
    ),
)
from distkpi_cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def _distkpi(*argv: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", FAKE_KPI, *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _history(path: Path, evaluations: float) -> Path:
    """Twelve earlier runs whose every config made ``evaluations`` evaluations."""
    with path.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(
            ["finished_at", "repo", "branch", "model", "config", "sha", "run_id", "kpi", "value"]
        )
        for i in range(12):
            for config in ("1x1", "1x8", "2x8-4ps", "4x8-8ps"):
                value = evaluations + (i % 3) * 0.5
                writer.writerow(
                    [
                        f"2026-11-{i + 1:02d}T00:00:00Z",
                        "PaddlePaddle/Paddle",
                        "develop",
                        "resnet50",
                        config,
                        f"{i:040x}",
                        f"run-{i}",
                        "evaluations",
                        value,
                    ]
                )
    return path


def test_a_kpi_added_to_the_catalogue_alone_is_measured_shown_and_judged(tmp_path: Path) -> None:
    # Given the seed's example run folder, whose trainer logs each evaluate every pass
    configs = json.loads(_distkpi("kpis", str(EXAMPLE), "--json"))["configs"]
    counts = {name: c["evaluations"] for name, c in configs.items()}
    # Then: measured for every config, in the record beside the seed's KPIs
    assert set(counts) == {"1x1", "1x8", "2x8-4ps", "4x8-8ps"}
    assert all(isinstance(v, float) and v >= 1 for v in counts.values())
    # and a row of the text table, after the seed's KPIs and before the cost
    table = _distkpi("kpis", str(EXAMPLE)).splitlines()
    labels = [
        line.split("  ")[0].strip() for line in table[3:] if line and not line.startswith(" ")
    ]
    assert labels.index("evaluations") == labels.index("accuracy delta") + 1
    assert labels.index("GPU-hours") == labels.index("evaluations") + 1
    # and judged like any other: a history of many more evaluations makes it regress
    many = _history(tmp_path / "h.csv", evaluations=max(counts.values()) + 50)
    judged = json.loads(_distkpi("judge", str(EXAMPLE), "--history", str(many), "--json"))
    verdicts = {j["config"]: j["verdict"] for j in judged if j["kpi"] == "evaluations"}
    assert verdicts == dict.fromkeys(counts, "regressed")


# a KPI of its own and the reader that measures it, added to the catalogue and the registry
# alone: the reader emits a named observation (the prefetch queue's depth every Paddle data
# reader logs), the summary folds it in by that name, the catalogue's measure reads it back
FAKE_READER = """
import re
import sys
from distkpi.domain.kpis import catalogue, measuring
from distkpi.domain.logs import registry
from distkpi.domain.logs.logsummary import LogSummary, Observation, Per
from distkpi.domain.logs.readers.base import Reader

DEPTH = re.compile(r"prefetch queue depth (\\d++)")

def prefetch_depth(line: str, out: LogSummary) -> bool:
    m = DEPTH.search(line)
    if m is None:
        return False
    out.observe(Observation("prefetch_depth", float(m.group(1)), "batches", per=Per.PROCESS))
    return True

registry.REGISTRY = registry.Registry(
    (*registry.READERS, Reader("prefetch", (b"prefetch queue depth",), prefetch_depth))
)
catalogue.CATALOGUE = (
    *catalogue.CATALOGUE,
    catalogue.Kpi(
        "prefetch_depth", "batches", "prefetch queue depth", "prefetch", ".0f", True,
        log_scale=False, measure=measuring.observed("prefetch_depth"),
    ),
)
from distkpi_cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_kpi_and_its_reader_added_to_the_catalogue_and_registry_alone_are_measured() -> None:
    # Given the seed's run folder, whose trainer logs each say `prefetch queue depth 4`
    done = subprocess.run(
        [sys.executable, "-c", FAKE_READER, "kpis", str(EXAMPLE), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    configs = json.loads(done.stdout)["configs"]
    # Then each config's figure is its trainers' observations combined by what they count
    # (one process's depth each, summed over its trainer logs)
    trainers = {c: len(list((EXAMPLE / c / "logs").glob("trainer-*.log"))) for c in configs}
    assert {c: v["prefetch_depth"] for c, v in configs.items()} == {
        c: 4.0 * n for c, n in trainers.items()
    }
    assert trainers == {"1x1": 1, "1x8": 1, "2x8-4ps": 2, "4x8-8ps": 4}
