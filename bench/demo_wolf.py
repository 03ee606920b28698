"""Does the demo cry wolf? `distkpi local` (what `make demo` runs) several times in a row on
one commit, with every core kept busy beside it, each run judged against the ones before it
in one state folder, then once on a copy of that commit whose reference job is twice as slow
(each training step followed by a sleep as long as the step). Every unchanged run should say
`success` (with the caveat while the history is too short to fail on), the slowed one
`failure`.

    python bench/demo_wolf.py [--runs 10] [--load spin|unit|none] [--sha REV]

`--load spin` runs a busy loop per core; `--load unit` runs `make unit` over and over. The
state and the runs' folders go under out/demo_wolf/ (started fresh each time)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DISTKPI = ROOT / ".venv" / "bin" / "distkpi"
TRAIN = Path("infra/job/distkpi_job/train.py")
STEP = re.compile(
    r"^( *)(step\(train_x\[idx\]\.to\(device\), train_y\[idx\]\.to\(device\)\))$", re.M
)
# the step, then a sleep as long as it took, at the step's own indentation
SLOW_STEP = (
    r"\1began = time.perf_counter()\n\1\2\n\1time.sleep(time.perf_counter() - began)"
    "  # twice as slow"
)


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def start_load(kind: str) -> list[subprocess.Popen[bytes]]:
    if kind == "spin":
        loop = [sys.executable, "-c", "while True: pass"]
        return [subprocess.Popen(loop) for _ in range(os.cpu_count() or 1)]
    if kind == "unit":
        again = "while true; do make -s unit >/dev/null 2>&1; done"
        return [subprocess.Popen(["bash", "-c", again], cwd=ROOT, start_new_session=True)]
    return []


def stop_load(load: list[subprocess.Popen[bytes]], kind: str) -> None:
    for process in load:
        if kind == "unit":
            os.killpg(process.pid, signal.SIGTERM)
        else:
            process.terminate()
        process.wait()


def slowed_copy(sha: str, where: Path) -> str:
    """A clone of ``sha`` with one more commit: the reference job's steps twice as slow."""
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(where)], check=True)
    git("checkout", "-q", "-b", "slowed", sha, cwd=where)
    train = where / TRAIN
    text = train.read_text()
    slowed, found = STEP.subn(SLOW_STEP, text)
    if found != 1:
        raise SystemExit(f"{TRAIN} has no single training step line to slow down")
    train.write_text(slowed)
    identity = ["-c", "user.email=bench@example.com", "-c", "user.name=bench"]
    git(*identity, "commit", "-qam", "reference job: every step twice as slow", cwd=where)
    os.chmod(where, 0o755)
    return git("rev-parse", "HEAD", cwd=where)


def local_run(repo: Path, sha: str, state: Path, out: Path) -> tuple[str, str, float]:
    """One `distkpi local`: its final status's state and description, and its seconds."""
    command = [str(DISTKPI), "local", "--repo", str(repo), "--sha", sha]
    command += ["--state", str(state), "--out", str(out), "--json"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    try:
        start = done.stdout.index("{")  # the one JSON document it prints
        statuses = json.JSONDecoder().raw_decode(done.stdout[start:])[0]["statuses"]
        final = [s for s in statuses if s["state"] != "pending"][-1]
    except (ValueError, KeyError, IndexError):
        tail = done.stderr.strip().splitlines()[-1:] or ["no output"]
        return "error", f"exit {done.returncode}: {tail[0]}", seconds
    return final["state"], final["description"], seconds


def slowed_only(sha: str, history: Path, kind: str) -> int:
    work = ROOT / "out" / "demo_wolf_slowed"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.copytree(history, work / "state")
    print(f"$ python bench/demo_wolf.py --slowed-from {history} --load {kind} --sha {sha[:10]}")
    load = start_load(kind)
    try:
        slow_sha = slowed_copy(sha, work / "slowed")
        verdict, description, seconds = local_run(
            work / "slowed", slow_sha, work / "state", work / "out"
        )
    finally:
        stop_load(load, kind)
    print(
        f"slowed   {slow_sha[:10]}: {verdict} - {description} "
        f"({seconds:.0f} s, load {os.getloadavg()[0]:.1f})"
    )
    return 0 if verdict == "failure" else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of the unchanged commit")
    parser.add_argument("--load", choices=("spin", "unit", "none"), default="spin")
    parser.add_argument("--sha", default="HEAD", help="the commit to run (default: HEAD)")
    parser.add_argument(
        "--slowed-from",
        metavar="STATE",
        help="only the slowed commit, against a copy of this state folder's history",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="one unchanged run, no load and no slowed commit: that the check still runs",
    )
    args = parser.parse_args()
    if args.smoke:
        args.runs, args.load = 1, "none"
    sha = git("rev-parse", "--verify", f"{args.sha}^{{commit}}")
    if args.slowed_from:
        return slowed_only(sha, Path(args.slowed_from), args.load)
    work = ROOT / "out" / "demo_wolf"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    state, out = work / "state", work / "out"
    flags = "--smoke" if args.smoke else f"--runs {args.runs} --load {args.load}"
    print(f"$ python bench/demo_wolf.py {flags} --sha {sha[:10]}")
    print(f"cores {os.cpu_count()}, load beside the runs: {args.load}")
    load = start_load(args.load)
    verdicts: list[str] = []
    try:
        for k in range(1, args.runs + 1):
            verdict, description, seconds = local_run(ROOT, sha, state, out)
            verdicts.append(verdict)
            load_1m = os.getloadavg()[0]
            print(
                f"run {k:2}/{args.runs} {sha[:10]}: {verdict} - {description} "
                f"({seconds:.0f} s, load {load_1m:.1f})",
                flush=True,
            )
        if args.smoke:
            return 0 if verdicts == ["success"] else 1
        slow_sha = slowed_copy(sha, work / "slowed")
        verdict, description, seconds = local_run(work / "slowed", slow_sha, state, out)
        print(
            f"slowed   {slow_sha[:10]}: {verdict} - {description} "
            f"({seconds:.0f} s, load {os.getloadavg()[0]:.1f})",
            flush=True,
        )
    finally:
        stop_load(load, args.load)
    unchanged = sum(v == "success" for v in verdicts)
    print(f"unchanged: {unchanged}/{len(verdicts)} success; slowed: {verdict}")
    print(f"reproduce: {shlex.join([sys.executable, *sys.argv])}")
    return 0 if unchanged == len(verdicts) and verdict == "failure" else 1


if __name__ == "__main__":
    sys.exit(main())
