"""Generate examples/seed-run: a realistic run folder for the seed's benchmark matrix.

    python examples/generate.py [OUT_DIR]

Deterministic (fixed random seed), so the committed folder can be checked against it.
Collective configs (no pservers) log MLPerf :::MLLOG lines as the reference job does;
parameter-server configs log PaddlePaddle Fluid lines, as Fluid's dist benchmarks did.
Every log is mostly glog noise, as real ones are.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path

RUN_ID = "seed-resnet50-0001"
SHA = "3f9c2a7d1b6e4f8091a2b3c4d5e6f708192a3b4c"
START_MS = 1_764_460_800_000  # 2025-11-30T00:00:00Z
DATASET = 36_000
PASSES = 5
ACCURACY = (0.312, 0.548, 0.634, 0.689, 0.7121)


@dataclass(frozen=True)
class Config:
    name: str
    trainers: int
    gpus_per_trainer: int
    pservers: int
    batch_size: int
    throughput: float  # samples/s of the whole config
    trainer_mib: int
    pserver_mib: int = 0

    @property
    def nodes(self) -> int:
        return self.trainers + self.pservers


CONFIGS = (
    Config("1x1", 1, 1, 0, 64, 121.3, 11_872),
    Config("1x8", 1, 8, 0, 512, 741.6, 12_104),
    Config("2x8-4ps", 2, 8, 4, 512, 1318.0, 12_230, 2_210),
    Config("4x8-8ps", 4, 8, 8, 512, 2342.5, 12_318, 2_304),
)


def glog(rng: random.Random, t_ms: int) -> str:
    stamp = (
        f"I1130 {t_ms // 3_600_000 % 24:02d}:{t_ms // 60_000 % 60:02d}:"
        f"{t_ms // 1000 % 60:02d}.{t_ms % 1000:03d}000"
    )
    msgs = (
        "executor.cc:132] Run op: conv2d_grad, place: CUDAPlace(0)",
        "operator.cc:178] CUDAPlace(0) Op(batch_norm), inputs:{X[64, 256, 56, 56]}",
        "grpc_client.cc:87] send var fc_0.w_0@GRAD to 10.0.1.12:6174",
        "memory/allocation/allocator_facade.cc:204] alloc chunk of 256 MiB",
        "reader/buffered_reader.cc:55] prefetch queue depth 4",
    )
    return f"{stamp} {1200 + rng.randrange(40)} {rng.choice(msgs)}"


def mllog(key: str, value: object, t_ms: int, **metadata: object) -> str:
    record = {
        "namespace": "",
        "time_ms": t_ms,
        "event_type": "POINT_IN_TIME",
        "key": key,
        "value": value,
        "metadata": {"file": "train.py", **metadata},
    }
    return ":::MLLOG " + json.dumps(record)


def trainer_log(cfg: Config, rank: int, rng: random.Random) -> str:
    per_trainer = cfg.throughput / cfg.trainers
    epoch_ms = int(DATASET / cfg.throughput * 1000)
    t = START_MS + 4_000 * rank
    collective = cfg.pservers == 0
    lines = [glog(rng, t) for _ in range(20)]
    if collective:
        lines.append(mllog("global_batch_size", cfg.batch_size, t))
        lines.append(mllog("run_start", None, t))
    for epoch in range(PASSES):
        warm = 0.82 if epoch == 0 else 1.0
        speed = per_trainer * warm * rng.uniform(0.985, 1.015)
        for step in range(1, 4):
            t += epoch_ms // 4
            lines.extend(glog(rng, t) for _ in range(30))
            if not collective:
                lines.append(
                    f"Pass = {epoch}, Iters = {step * 100}, Loss = "
                    f"{2.3 - 0.3 * epoch - 0.05 * step:.4f}, Accuracy = "
                    f"{ACCURACY[epoch] - 0.02:.4f}, Speed = "
                    f"{speed * rng.uniform(0.97, 1.03):.2f} img/s"
                )
        t += epoch_ms // 4
        accuracy = ACCURACY[epoch] + rng.uniform(-0.0003, 0.0003)
        if collective:
            lines.append(mllog("tracked_stats", {"throughput": round(speed, 2)}, t, step=epoch + 1))
            lines.append(mllog("eval_accuracy", round(accuracy, 5), t, epoch_num=epoch))
        else:
            lines.append(
                f"Pass = {epoch}, Training performance = {speed:.6f} imgs/s, "
                f"Train accuracy = {accuracy + 0.03:.6f}, Test accuracy = {accuracy:.6f}"
            )
    if collective:
        lines.append(mllog("run_stop", None, t, status="success"))
    else:
        total_s = (t - START_MS) / 1000
        lines.append(
            f"Total examples: {int(per_trainer * total_s)}, total time: {total_s:.5f}, "
            f"{per_trainer:.5f} examples/sed"
        )
        converge = (START_MS + 3 * epoch_ms - START_MS) / 1000
        lines.append(
            f"**metrics_data: pass = {PASSES - 1}, train_speed = {per_trainer:.2f}, "
            f"acc_{PASSES - 1}passes = {accuracy:.5f}, converge_speed = {converge:.1f}"
        )
    lines.extend(glog(rng, t) for _ in range(10))
    return "\n".join(lines) + "\n"


def pserver_log(rng: random.Random) -> str:
    return "\n".join(glog(rng, START_MS + 1000 * i) for i in range(60)) + "\n"


def gpu_csv(gpus: int, peak: int, rng: random.Random, header: bool) -> str:
    rows = ["timestamp, index, memory.used [MiB]"] if header else []
    for sample in range(12):
        stamp = f"2025/11/30 00:{sample // 6:02d}:{sample * 10 % 60:02d}.000"
        for gpu in range(gpus):
            used = peak if sample == 7 and gpu == 0 else int(peak * rng.uniform(0.9, 0.99))
            rows.append(f"{stamp}, {gpu}, {used} MiB" if header else f"{stamp}, {gpu}, {used}")
    return "\n".join(rows) + "\n"


def write_config(root: Path, cfg: Config, rng: random.Random) -> None:
    folder = root / cfg.name
    (folder / "logs").mkdir(parents=True, exist_ok=True)
    for node in range(cfg.nodes):
        role = "trainer" if node < cfg.trainers else "pserver"
        rank = node if role == "trainer" else node - cfg.trainers
        log = f"logs/{role}-{rank}.log"
        gpu = f"logs/{role}-{rank}.gpu.csv"
        text = trainer_log(cfg, rank, rng) if role == "trainer" else pserver_log(rng)
        (folder / log).write_text(text)
        gpus = cfg.gpus_per_trainer if role == "trainer" else 1
        peak = cfg.trainer_mib if role == "trainer" else cfg.pserver_mib
        (folder / gpu).write_text(gpu_csv(gpus, peak, rng, header=node % 2 == 0))
        finished = START_MS // 1000 + int(PASSES * DATASET / cfg.throughput) + 30
        manifest = {
            "schema": 1,
            "node": node,
            "exit_code": 0,
            "started_at": "2025-11-30T00:00:00Z",
            "finished_at": f"2025-11-30T{finished // 3600 % 24:02d}:"
            f"{finished // 60 % 60:02d}:{finished % 60:02d}Z",
            "files": [
                {"path": log, "role": role, "rank": rank, "kind": "log"},
                {"path": gpu, "role": role, "rank": rank, "kind": "gpu_memory"},
            ],
        }
        (folder / f"node-{node}.json").write_text(json.dumps(manifest, indent=2) + "\n")


def main(out: Path) -> None:
    rng = random.Random(20251130)
    out.mkdir(parents=True, exist_ok=True)
    run = {
        "schema": 1,
        "run_id": RUN_ID,
        "repo": "PaddlePaddle/Paddle",
        "sha": SHA,
        "ref": "refs/heads/develop",
        "model": "resnet50",
        "target_accuracy": 0.6,
        "accuracy_pass": PASSES - 1,
        "accuracy_tolerance": 0.001,
        "configs": [
            {
                "name": c.name,
                "trainers": c.trainers,
                "gpus_per_trainer": c.gpus_per_trainer,
                "pservers": c.pservers,
                "batch_size": c.batch_size,
                "nodes": c.nodes,
            }
            for c in CONFIGS
        ],
    }
    (out / "run.json").write_text(json.dumps(run, indent=2) + "\n")
    for cfg in CONFIGS:
        write_config(out, cfg, rng)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "seed-run")
