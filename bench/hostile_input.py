"""The worst a log line or a manifest can cost the collector, and that both stay linear.

    python bench/hostile_input.py [--repeat 3] [--smoke]

Lines: every hostile shape the property test builds (a format's head, then one short unit
repeated, as a fuzzer or a broken writer makes them) at 16 KiB, 64 KiB, 256 KiB and 1 MiB
(the longest line the scanner passes on), timed in parse_line against ordinary text of the
same length; the slowest shape's time per KiB must not grow with the length.

Manifests: a config's manifest naming the most files allowed (256) of a 2.4 MB trainer log
each, the same log named 200 times, and 16 and 64 files for the trend, each settled as the
collector settles a config (the run folder read and every file parsed), against
`grep -c -E PATTERN FILES` (the lines that matter, as bench/parse_throughput.py counts
them) on the same page-cached files in the same run. What is parsed is capped (64 MiB a
file, 256 MiB a config: domain/contracts.py), so the 256 files settle like about 110 of
them, and one 1 GiB log, over the cap, costs its first 64 MiB only.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from distkpi.domain.contracts import MAX_FILES_PER_MANIFEST, parse_run_spec  # noqa: E402
from distkpi.domain.kpis.runfolder import gather_config  # noqa: E402
from distkpi.domain.logs.logformats import parse_line  # noqa: E402
from distkpi.domain.logs.logsummary import LogSummary  # noqa: E402
from distkpi_cli.localfs import LocalRunSource  # noqa: E402
from tests.unit.test_parser_properties import HEADS, RUN, UNITS  # noqa: E402

LENGTHS_KIB = (16, 64, 256, 1024)
GREP_PATTERN = "MLLOG|Pass|img/sec|images/sec|examples/se|metrics_data|kpis"
LOG_MB = 2.4


def best_of(repeat: int, work: object) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        work()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return best


def ordinary(length: int) -> str:
    words = "Pass the loss to the optimizer and log the step time, then go on training "
    return (words * (length // len(words) + 1))[:length]


def lines(repeat: int, lengths_kib: tuple[int, ...] = LENGTHS_KIB) -> None:
    print("| line | length | slowest shape | its time | per KiB | ordinary text | ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for kib in lengths_kib:
        length = kib * 1024
        normal = ordinary(length)
        normal_s = best_of(repeat, lambda normal=normal: parse_line(normal, LogSummary()))
        worst = (0.0, "")
        for head in HEADS:
            for unit in UNITS:
                line = head + unit * ((length - len(head)) // len(unit))
                took = best_of(repeat, lambda line=line: parse_line(line, LogSummary()))
                worst = max(worst, (took, f"{head!r} + {unit!r} * n"))
        took, shape = worst
        print(
            f"| hostile | {kib} KiB | `{shape}` | {took * 1e3:.2f} ms | "
            f"{took / kib * 1e6:.1f} µs | {normal_s * 1e3:.3f} ms | {took / normal_s:.0f}x |"
        )


def trainer_log(path: Path) -> None:
    step = (
        ':::MLLOG {"key": "tracked_stats", "value": {"throughput": 1234.5}, "time_ms": 1}\n'
        "I1130 12:00:00.000001 1200 executor.cc:100] Run op conv2d_grad on CUDAPlace(0) "
        "inputs X[64, 512, 7, 7] took 0.123456 ms\n" * 9
    )
    path.write_text(step * int(LOG_MB * 1e6 / len(step)))


def run_folder(root: Path, files: list[str]) -> None:
    config = {"name": "c", "trainers": 1, "gpus_per_trainer": 1, "pservers": 0}
    run = {**RUN, "run_id": "bench", "configs": [{**config, "batch_size": 8, "nodes": 1}]}
    (root / "run.json").write_text(json.dumps(run))
    entries = [{"path": f, "role": "trainer", "rank": 0, "kind": "log"} for f in files]
    manifest = {
        "schema": 1,
        "node": 0,
        "exit_code": 0,
        "started_at": "2026-11-30T00:00:00Z",
        "finished_at": "2026-11-30T00:10:00Z",
        "files": entries,
    }
    (root / "c" / "node-0.json").write_text(json.dumps(manifest))


def manifests(repeat: int, counts: tuple[int, ...] = (16, 64, 256), huge: bool = True) -> None:
    print()
    print("| manifest | bytes named | settle the config | MB/s | `grep -c` the files | ratio |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "c").mkdir()
        trainer_log(root / "c" / "log-0.log")
        for i in range(1, min(max(counts), MAX_FILES_PER_MANIFEST)):
            shutil.copy(root / "c" / "log-0.log", root / "c" / f"log-{i}.log")
        cases = [
            ("the same log named 200 times", ["log-0.log"] * 200),
            *((f"{n} distinct logs", [f"log-{i}.log" for i in range(n)]) for n in counts),
        ]
        if huge:
            with (root / "c" / "huge.log").open("wb") as out:
                block = (root / "c" / "log-0.log").read_bytes()
                while out.tell() < 2**30:
                    out.write(block)
            cases.append(("one 1 GiB log (over the cap)", ["huge.log"]))
        for name, files in cases:
            run_folder(root, files)
            spec = parse_run_spec(json.loads((root / "run.json").read_text())).configs[0]
            source = LocalRunSource(root)
            settle = best_of(repeat, lambda source=source, spec=spec: gather_config(source, spec))
            paths = [str(root / "c" / f) for f in files]
            grep = best_of(
                repeat,
                lambda paths=paths: subprocess.run(
                    # not to /dev/null: grep then stops at the first match of each file
                    ["grep", "-c", "-E", GREP_PATTERN, *paths],
                    capture_output=True,
                    check=True,
                ),
            )
            named = sum((root / "c" / f).stat().st_size for f in files) / 1e6
            print(
                f"| {name} | {named:.0f} MB | {settle:.2f} s | {named / settle:.0f} | "
                f"{grep:.2f} s | {settle / grep:.1f}x |"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--smoke", action="store_true", help="16 KiB lines and 16 files, once: that it runs"
    )
    args = parser.parse_args()
    if args.smoke:
        print("`python bench/hostile_input.py --smoke`\n")
        lines(1, LENGTHS_KIB[:1])
        manifests(1, (16,), huge=False)
        return 0
    print(f"`python bench/hostile_input.py --repeat {args.repeat}`\n")
    lines(args.repeat)
    manifests(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
