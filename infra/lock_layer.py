"""Lock the Lambda layer's dependencies exactly: layers/distkpi/requirements.txt from
requirements.in, at the versions the tests install.

    python infra/lock_layer.py      (make lock)

1. pip resolves the test environment (`.[dev]`) together with requirements.in, for this
   machine's Python: the versions the tests will run.
2. pip resolves requirements.in alone for the Lambda runtime (CPython 3.12, manylinux
   x86_64, wheels only) with every version of step 1 as a constraint: the layer's closure,
   each package at its tested version, or an error naming the one the runtime cannot have.

requirements.txt (what `sam build` and `make package` install) gets step 2's packages, each
`==` its version; `make` installs the test environment with it as constraints.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LAYER = ROOT / "layers" / "distkpi"
REQUIREMENTS_IN = LAYER / "requirements.in"
LOCK = LAYER / "requirements.txt"
RUNTIME_PYTHON = "3.12"
# the runtime's OS (Amazon Linux 2023, glibc 2.34) runs both
RUNTIME_PLATFORMS = ("manylinux2014_x86_64", "manylinux_2_28_x86_64")
RUNTIME_TARGET = [
    *(f"--platform={platform}" for platform in RUNTIME_PLATFORMS),
    f"--python-version={RUNTIME_PYTHON}",
    "--implementation=cp",
    "--only-binary=:all:",
]
HEADER = """\
# The Lambda layer's dependencies, each at the version the tests install. Generated from
# requirements.in by `make lock` (infra/lock_layer.py); do not edit. `sam build`,
# `make package` and the test environment (as constraints) all install exactly these.
"""


def resolve(args: list[str]) -> list[dict[str, Any]]:
    """What `pip install ARGS` would install into an empty environment."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed"]
        subprocess.run([*pip, "--quiet", "--report", str(report), *args], check=True, cwd=ROOT)
        installed: list[dict[str, Any]] = json.loads(report.read_text())["install"]
        return installed


def pins(installed: list[dict[str, Any]]) -> dict[str, str]:
    found = {}
    for item in installed:
        name = item["metadata"]["name"].lower().replace("_", "-")
        found[name] = item["metadata"]["version"]
    return found


def lock() -> dict[str, str]:
    tested = pins(resolve([".[dev]", "-r", str(REQUIREMENTS_IN)]))
    tested.pop("distkpi", None)
    with tempfile.TemporaryDirectory() as tmp:
        constraints = Path(tmp) / "tested.txt"
        constraints.write_text("".join(f"{n}=={v}\n" for n, v in sorted(tested.items())))
        layer = resolve([*RUNTIME_TARGET, "-c", str(constraints), "-r", str(REQUIREMENTS_IN)])
    return pins(layer)


def main() -> None:
    locked = lock()
    LOCK.write_text(HEADER + "".join(f"{n}=={v}\n" for n, v in sorted(locked.items())))
    print(f"{LOCK.relative_to(ROOT)}: {len(locked)} packages locked")


if __name__ == "__main__":
    main()
