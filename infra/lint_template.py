"""Expand template.yaml with the SAM translator (offline), then lint the result with cfn-lint.

    python infra/lint_template.py [template.yaml]

cfn-lint alone does not expand SAM, so mistakes in Serverless resources (bad event
sources, circular dependencies through generated permissions) would pass it. Local
CodeUri/ContentUri paths are swapped for S3 URIs first, as `sam package` would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from distkpi.local.sam import expand


def main() -> int:
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "template.yaml")
    expanded = expand(path)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as out:
        json.dump(expanded, out, indent=1)
    try:
        result = subprocess.run(["cfn-lint", out.name], check=False)
    finally:
        os.unlink(out.name)
    if result.returncode == 0:
        print(f"{path}: SAM expansion and cfn-lint clean ({len(expanded['Resources'])} resources)")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
