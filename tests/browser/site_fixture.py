"""A site folder as the publisher writes it (the history application, `api/` and the `.js`
twins), from known values, for the browser tests and `bench/site_app.py`.

It writes the files of the publisher's contract from formulas rather than through the
publisher, so that a page's test can say exactly what it must show; every file it writes
follows the publisher's JSON Schemas (tests/unit/test_browser_fixture_contract.py):

- ``api/index.json``: every history, its latest run and a sparkline of throughput;
- ``api/series/<repo>/<branch>/<model>.json``: the series head (KPIs, configs, hardware,
  the monthly chunks, the marks) and one chunk per calendar month;
- ``api/runs/<run_id>.json`` (``run_files``) and ``api/regressions.json``;
- each beside its twin (`reporting/app_twins.py`), and the application copied in.

The values are a formula of the run's number, so a test can say what a page must show:
`throughput` is below, the allowed range is 6 % either side of the run's level, the level
drops by 10 % half way (a change point), the largest config regresses to 75 % every 97th
run, and every 13th run ran on the second hardware.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from distkpi.reporting.app_twins import twin, twin_name

APP = Path(__file__).resolve().parents[2] / "layers" / "distkpi" / "distkpi" / "reporting" / "app"
KPIS = (
    {"name": "throughput", "label": "throughput", "unit": "samples/s", "direction": "higher"},
    {"name": "speedup", "label": "speedup", "unit": "x", "direction": "higher"},
    {"name": "efficiency", "label": "scaling efficiency", "unit": "", "direction": "higher"},
    {"name": "time_to_accuracy_s", "label": "time to accuracy", "unit": "s", "direction": "lower"},
    {"name": "test_accuracy", "label": "test accuracy", "unit": "", "direction": "higher"},
    {
        "name": "trainer_gpu_memory_mib",
        "label": "trainer GPU memory",
        "unit": "MiB",
        "direction": "lower",
    },
    {
        "name": "pserver_gpu_memory_mib",
        "label": "pserver GPU memory",
        "unit": "MiB",
        "direction": "lower",
    },
)  # the seed's seven KPIs, as bench/site_build.py records them
HARDWARE = ("p4d.24xlarge", "g5.48xlarge")
AUTHORS = ("Ada Lovelace", "Grace Hopper", None, "Edsger Dijkstra")
START = datetime(2026, 1, 1, tzinfo=UTC)
NOISE = 0.02


@dataclass(frozen=True)
class History:
    repo: str
    branch: str
    model: str
    configs: dict[str, tuple[int, float]]  # name: (GPUs, throughput at run 0)
    runs: int
    every: timedelta  # between two runs
    run_ids: tuple[str, ...] = field(default=())  # the runs' ids; run-<i> where not given

    @property
    def series(self) -> str:
        return f"series/{self.repo}/{self.branch}/{self.model}.json"

    def run_id(self, i: int) -> str:
        return self.run_ids[i] if i < len(self.run_ids) else f"{self.model}-run-{i:06d}"


SEED = {"1x1": (1, 120.0), "1x8": (8, 720.0), "2x8-4ps": (16, 1300.0), "4x8-8ps": (32, 2400.0)}
RESNET = History("PaddlePaddle/Paddle", "develop", "resnet50", SEED, 240, timedelta(hours=9))
LOCAL = History(
    "local/demo",
    "develop",
    "local",
    {"1x1": (1, 40.0), "1x2": (2, 72.0)},
    12,
    timedelta(days=1),
)


def level(history: History, i: int) -> float:
    """The throughput level a run is judged against: 10 % less from half way on."""
    return 0.9 if i >= history.runs // 2 else 1.0


def throughput(history: History, config: str, i: int) -> float:
    """Run i's throughput of a config: its base, the level, a wobble of -1 % to +0.8 %
    (i % 10), and 75 % on the largest config every 97th run."""
    base = history.configs[config][1] * level(history, i) * (1 + ((i % 10) - 5) / 500)
    largest = max(history.configs, key=lambda c: history.configs[c][0])
    return base * 0.75 if i % 97 == 96 and config == largest else base


def sha(history: History, i: int) -> str:
    return hashlib.sha1(f"{history.model}-{i}".encode()).hexdigest()


def finished_at(history: History, i: int) -> str:
    return (START + history.every * i).isoformat(timespec="seconds")


def _judged(value: float, expected: float, direction: str) -> dict[str, Any]:
    lower, upper = expected * (1 - 3 * NOISE), expected * (1 + 3 * NOISE)
    worse = value < lower if direction == "higher" else value > upper
    better = value > upper if direction == "higher" else value < lower
    verdict = "regressed" if worse else "improved" if better else "ok"
    return {"value": value, "lower": lower, "upper": upper, "verdict": verdict}


def kpis_of(history: History, config: str, i: int) -> dict[str, dict[str, Any]]:
    gpus, _ = history.configs[config]
    smallest = min(history.configs, key=lambda c: history.configs[c][0])
    one_gpu = throughput(history, smallest, i)
    tput = throughput(history, config, i)
    expected = history.configs[config][1] * level(history, i)
    expected_one = history.configs[smallest][1] * level(history, i)
    tta = 240.0 * (1 + ((i % 7) - 3) / 400)
    found = {
        "throughput": _judged(tput, expected, "higher"),
        "speedup": _judged(tput / one_gpu, expected / expected_one, "higher"),
        "efficiency": _judged(tput / one_gpu / gpus, expected / expected_one / gpus, "higher"),
        "time_to_accuracy_s": _judged(tta, 240.0, "lower"),
        "test_accuracy": _judged(0.71 + (i % 3) / 1000, 0.71, "higher"),
        "trainer_gpu_memory_mib": _judged(12000.0 + (i % 5), 12000.0, "lower"),
    }
    if "ps" in config:
        found["pserver_gpu_memory_mib"] = _judged(2200.0, 2200.0, "lower")
    return found


def run_verdict(kpis: dict[str, dict[str, dict[str, Any]]]) -> str:
    judged = [k["verdict"] for config in kpis.values() for k in config.values()]
    return "failure" if "regressed" in judged else "success"


def hardware(i: int) -> str:
    return HARDWARE[1] if i % 13 == 12 else HARDWARE[0]


def run_document(history: History, i: int) -> dict[str, Any]:
    configs = {c: kpis_of(history, c, i) for c in history.configs}
    for kpis in configs.values():
        for name, kpi in kpis.items():
            kpi["noise"] = NOISE if name != "time_to_accuracy_s" else 0.01
    run_id = history.run_id(i)
    return {
        "schema": "distkpi.api.run/1",
        "run_id": run_id,
        "repo": history.repo,
        "branch": history.branch,
        "sha": sha(history, i),
        "model": history.model,
        "finished_at": finished_at(history, i),
        "verdict": run_verdict(configs),
        "report": f"reports/{run_id}/index.html",
        "configs": configs,
        # as `distkpi kpis --json` gives them (the part a page reads: its configs' values)
        "kpis": {
            "model": history.model,
            "configs": [
                {"name": c, **{k: v["value"] for k, v in kpis.items()}}
                for c, kpis in configs.items()
            ],
        },
    }


def points(history: History, i: int) -> list[dict[str, Any]]:
    configs = {c: kpis_of(history, c, i) for c in history.configs}
    verdict = run_verdict(configs)
    return [
        {
            "run_id": history.run_id(i),
            "sha": sha(history, i),
            "author": AUTHORS[i % len(AUTHORS)],
            "finished_at": finished_at(history, i),
            "config": config,
            "hardware": hardware(i),
            "verdict": verdict,
            "kpis": kpis,
        }
        for config, kpis in configs.items()
    ]


def marks(history: History) -> list[dict[str, Any]]:
    half, late = history.runs // 2, history.runs * 3 // 4
    largest = max(history.configs, key=lambda c: history.configs[c][0])
    found = [
        ("change_point", half, None, "throughput", "throughput fell 10 % here"),
        ("reset", late, None, None, "new NCCL: baseline reset by ops"),
        ("accepted", late + 2, largest, "throughput", "the slower collective is intended"),
    ]
    if history.runs > 96:
        found.append(("culprit", 96, largest, "throughput", "bisection named this commit"))
    return [
        {
            "kind": kind,
            "at": finished_at(history, i),
            "sha": sha(history, i),
            "run_id": history.run_id(i),
            "config": config,
            "kpi": kpi,
            "text": text,
        }
        for kind, i, config, kpi, text in found
        if i < history.runs
    ]


def regressions() -> dict[str, Any]:
    def regression(i: int, state: str, culprit: bool, diagnosis: str | None) -> dict[str, Any]:
        return {
            "id": f"{RESNET.model}-{i}",
            "state": state,
            "repo": RESNET.repo,
            "branch": RESNET.branch,
            "model": RESNET.model,
            "config": "4x8-8ps",
            "kpi": "throughput",
            "run_id": RESNET.run_id(i),
            "sha": sha(RESNET, i),
            "opened_at": finished_at(RESNET, i),
            "culprit": sha(RESNET, i) if culprit else None,
            "diagnosis": diagnosis,
            "note": None,
        }

    return {
        "schema": "distkpi.api.regressions/1",
        "regressions": [
            regression(96, "fixed", True, "all-reduce time doubled (NCCL ring to tree)"),
            regression(193, "open", False, None),
        ],
    }


class SiteFolder:
    """Writes each API document with its twin."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def api(self, path: str, document: dict[str, Any]) -> None:
        data = json.dumps(document, separators=(",", ":")).encode()
        target = self.root / "api" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        (self.root / "api" / twin_name(path)).write_bytes(twin(path, data))


def write_history(site: SiteFolder, history: History, run_files: bool) -> dict[str, Any]:
    """The series head, its monthly chunks and (``run_files``) each run's file; returns the
    history's entry of the index."""
    months: dict[str, list[dict[str, Any]]] = {}
    for i in range(history.runs):
        months.setdefault(finished_at(history, i)[:7], []).extend(points(history, i))
        if run_files:
            site.api(f"runs/{history.run_id(i)}.json", run_document(history, i))
    chunks = []
    for month, found in months.items():
        path = f"series/{history.repo}/{history.branch}/{history.model}/{month}.json"
        site.api(path, {"schema": "distkpi.api.chunk/1", "points": found})
        chunks.append(
            {
                "path": path,
                "from": found[0]["finished_at"],
                "to": found[-1]["finished_at"],
                "points": len(found),
            }
        )
    site.api(
        history.series,
        {
            "schema": "distkpi.api.series/1",
            "repo": history.repo,
            "branch": history.branch,
            "model": history.model,
            "runs": history.runs,
            "kpis": list(KPIS),
            "configs": list(history.configs),
            "hardware": list(HARDWARE),
            "chunks": chunks,
            "marks": marks(history),
        },
    )
    last = history.runs - 1
    largest = max(history.configs, key=lambda c: history.configs[c][0])
    return {
        "repo": history.repo,
        "branch": history.branch,
        "model": history.model,
        "runs": history.runs,
        "latest": {
            "run_id": history.run_id(last),
            "sha": sha(history, last),
            "finished_at": finished_at(history, last),
            "verdict": run_verdict({c: kpis_of(history, c, last) for c in history.configs}),
        },
        "series": history.series,
        "sparkline": {
            "kpi": "throughput",
            "config": largest,
            "values": [throughput(history, largest, i) for i in range(max(0, last - 29), last + 1)],
        },
    }


def write_site(
    root: Path, histories: tuple[History, ...] = (RESNET, LOCAL), *, run_files: bool = True
) -> Path:
    """The application and the API of ``histories`` in ``root``; returns ``root``."""
    shutil.copytree(APP, root, dirs_exist_ok=True)
    site = SiteFolder(root)
    entries = [write_history(site, h, run_files) for h in histories]
    updated = max(finished_at(h, h.runs - 1) for h in histories)
    site.api(
        "index.json",
        {"schema": "distkpi.api.index/1", "updated_at": updated, "histories": entries},
    )
    site.api("regressions.json", regressions())
    return root
