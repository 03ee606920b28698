"""How a suite's golden curve (`golden: FILE`, a file of the repository under test) reaches
the run folder: the launcher names it to the job (DISTKPI_GOLDEN), the main node copies it
out of its checkout before any code runs and uploads it as `<config>/golden.json` named in
its signed manifest, and the collector reads that copy, checked against its sha256."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from distkpi.domain.contracts import ConfigSpec, NodeManifest
from distkpi.domain.kpis.engine import ConfigEvidence
from distkpi.domain.kpis.golden import golden_from
from distkpi.domain.kpis.runfolder import with_golden
from distkpi.domain.planning.jobs import plan_jobs, run_spec_for
from distkpi.domain.planning.suites import parse_suite
from distkpi_cli.localfs import LocalRunSource
from distkpi_cli.node.golden import copy_golden, golden_copy
from tests.unit.test_llm_kpis import WHEN, run_spec
from tests.unit.test_parallel_layout import SUITE
from tests.unit.test_planning import TRIGGER

GOLDEN = golden_from([{1: 5.65, 2: 5.36, 3: 4.99}, {1: 5.66, 2: 5.35, 3: 4.99}], 0.02)
RAW = json.dumps(GOLDEN.to_json()).encode()
WANTED = "infra/suites/llm.golden.json"


def test_the_launcher_names_the_suites_golden_file_to_the_job() -> None:
    suite = parse_suite(f"{SUITE.rstrip()}\ngolden: {WANTED}\n", "infra/suites/llama.yaml")
    plans = plan_jobs(run_spec_for("run-1", TRIGGER, suite), suite, "bucket")
    assert {p.environment["DISTKPI_GOLDEN"] for p in plans} == {WANTED}
    plain = parse_suite(SUITE, "infra/suites/llama.yaml")
    assert all(
        "DISTKPI_GOLDEN" not in p.environment
        for p in plan_jobs(run_spec_for("run-1", TRIGGER, plain), plain, "bucket")
    )


def checkout(tmp_path: Path) -> tuple[Path, Path]:
    src, work = tmp_path / "src", tmp_path / "work"
    (src / "infra" / "suites").mkdir(parents=True)
    work.mkdir()
    return src, work


def test_the_main_node_copies_the_golden_file_of_its_checkout(tmp_path: Path) -> None:
    src, work = checkout(tmp_path)
    (src / WANTED).write_bytes(RAW)
    assert copy_golden({"DISTKPI_GOLDEN": WANTED}, src, work) is None
    copy = golden_copy(work)
    assert copy is not None and copy.read_bytes() == RAW
    # a suite without one: nothing copied, nothing said
    other = tmp_path / "other"
    other.mkdir()
    assert copy_golden({}, src, other) is None and golden_copy(other) is None


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (
            lambda src, secret: None,
            f"golden curve {WANTED}: No such file or directory in the checkout",
        ),
        (
            lambda src, secret: (src / WANTED).symlink_to(secret),
            f"golden curve {WANTED}: not a file of the checkout",
        ),
        (
            lambda src, secret: (src / WANTED).symlink_to(src / "infra" / "inside.json"),
            f"golden curve {WANTED}: not a regular file",
        ),
    ],
    ids=["missing", "link-out-of-the-checkout", "fifo-inside"],
)
def test_a_golden_path_that_is_no_file_of_the_checkout_is_never_read(
    tmp_path: Path, make, why: str
) -> None:
    src, work = checkout(tmp_path)
    secret = tmp_path / "runner-secret"
    secret.write_text("AWS_SECRET_ACCESS_KEY=x")
    import os

    os.mkfifo(src / "infra" / "inside.json")  # a read of it would block the node forever
    make(src, secret)
    assert copy_golden({"DISTKPI_GOLDEN": WANTED}, src, work) == why
    assert golden_copy(work) is None
    assert copy_golden({"DISTKPI_GOLDEN": "../runner-secret"}, src, work) == (
        "golden curve ../runner-secret: not a file of the checkout"
    )


def folder_with(tmp_path: Path, uploaded: bytes, named: bytes | None) -> ConfigEvidence:
    """A run folder whose config 1x1 holds ``uploaded`` as golden.json and whose node's
    manifest names the sha256 of ``named`` (None: names no golden.json)."""
    (tmp_path / "1x1").mkdir(parents=True)
    (tmp_path / "1x1" / "golden.json").write_bytes(uploaded)
    files = []
    if named is not None:
        digest = hashlib.sha256(named).hexdigest()
        files = [
            {"path": "golden.json", "role": "trainer", "rank": 0, "kind": "file", "sha256": digest}
        ]
    manifest = NodeManifest.model_validate(
        {
            "schema": 1,
            "node": 0,
            "exit_code": 0,
            "started_at": WHEN,
            "finished_at": WHEN,
            "files": files,
        }
    )
    spec = ConfigSpec(name="1x1", trainers=1, gpus_per_trainer=1, pservers=0, batch_size=8, nodes=1)
    return ConfigEvidence(spec=spec, manifests={0: manifest})


def test_the_collector_judges_against_the_copy_the_node_signed(tmp_path: Path) -> None:
    run = run_spec(golden=WANTED)
    evidence = with_golden(LocalRunSource(tmp_path), run, folder_with(tmp_path, RAW, RAW))
    assert evidence.golden == GOLDEN and evidence.problems == []


def test_a_golden_copy_changed_after_upload_is_not_judged(tmp_path: Path) -> None:
    run = run_spec(golden=WANTED)
    tampered = RAW.replace(b"5.655", b"9.655")
    evidence = with_golden(LocalRunSource(tmp_path), run, folder_with(tmp_path, tampered, RAW))
    assert evidence.golden is None
    assert evidence.problems == [
        "1x1/golden.json changed after upload: its sha256 is not the manifest's"
    ]


def test_without_a_nodes_copy_the_run_folders_own_golden_json_is_read(tmp_path: Path) -> None:
    run = run_spec(golden=WANTED)
    (tmp_path / "golden.json").write_bytes(RAW)  # put there by hand, as the KPIs page says
    evidence = with_golden(LocalRunSource(tmp_path), run, folder_with(tmp_path, b"{}", None))
    assert evidence.golden == GOLDEN
    (tmp_path / "golden.json").unlink()
    missing = with_golden(LocalRunSource(tmp_path), run, folder_with(tmp_path / "x", b"", None))
    assert missing.problems == [f"golden curve {WANTED}: no golden.json in the run folder"]
