"""The pinned PaddlePaddle environment the Paddle suites run in, made once per machine and
kept between runs.

    python infra/job/paddle/env.py setup cpu|gpu      # the suite's setup
    python infra/job/paddle/env.py run cpu|gpu ARGS   # the suite's command: python ARGS in it

The environment is a virtualenv under $DISTKPI_CACHE_DIR (default ~/.cache/distkpi) named
after the requirements file's hash, so a change of pins makes a new one. Every node of a
local run sets up at once: the first makes it under a file lock, the others wait for it and
then find it complete. A half-made environment (a killed setup) has no completion mark and
is made again.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILDS = {"cpu": HERE / "cpu.txt", "gpu": HERE / "gpu.txt"}
COMPLETE = ".distkpi-complete"


def environment(build: str) -> Path:
    requirements = BUILDS[build].read_bytes()
    digest = hashlib.sha256(requirements).hexdigest()[:12]
    cache = Path(os.environ.get("DISTKPI_CACHE_DIR") or Path.home() / ".cache" / "distkpi")
    return cache / "envs" / f"paddle-{build}-{digest}"


def python_of(env: Path) -> Path:
    return env / "bin" / "python"


def setup(build: str) -> Path:
    env = environment(build)
    env.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{env}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (env / COMPLETE).exists():
            print(f"paddle environment ready: {env.name}", flush=True)
            return env
        shutil.rmtree(env, ignore_errors=True)
        print(f"making the paddle environment {env.name}", flush=True)
        venv.create(env, with_pip=True)
        pip = [str(python_of(env)), "-m", "pip", "install", "--quiet", "--no-deps"]
        subprocess.run([*pip, "-r", str(BUILDS[build])], check=True)
        (env / COMPLETE).write_text(BUILDS[build].read_text())
        print(f"paddle environment made: {env.name}", flush=True)
    return env


def run(build: str, args: list[str]) -> None:
    env = environment(build)
    if not (env / COMPLETE).exists():
        sys.exit(f"no paddle environment {env}: the suite's setup makes it")
    python = str(python_of(env))
    os.execv(python, [python, *args])


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[0] not in ("setup", "run") or argv[1] not in BUILDS:
        sys.exit(__doc__)
    if argv[0] == "setup":
        setup(argv[1])
    else:
        run(argv[1], argv[2:])


if __name__ == "__main__":
    main(sys.argv[1:])
