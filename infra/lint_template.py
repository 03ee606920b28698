"""Expand template.yaml with the SAM translator (offline), then lint the result with cfn-lint
and check it with checkov.

    python infra/lint_template.py [template.yaml]

Neither cfn-lint nor checkov expands SAM, so mistakes in Serverless resources (bad event
sources, circular dependencies through generated permissions) and what the generated roles
grant would pass them. Local CodeUri/ContentUri paths are swapped for S3 URIs first, as
`sam package` would.

Every checkov finding is fixed or skipped with a reason in the resource's
`Metadata: checkov: skip`. SAM keeps a function's Metadata but not on the resources it
generates for it (its URL, role, alias), so a function's skips are applied to those too.
checkov runs from its own environment (it pins packaging<24, which pytest cannot use):
`make lint` puts it on PATH, and never lets it reach the network (--skip-download).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from distkpi_cli.local.sam import expand


def with_inherited_skips(expanded: dict[str, Any]) -> dict[str, Any]:
    resources = expanded["Resources"]
    functions = {
        name: resource["Metadata"]
        for name, resource in resources.items()
        if resource["Type"] == "AWS::Lambda::Function" and "checkov" in resource.get("Metadata", {})
    }
    for name, resource in resources.items():
        for function, metadata in functions.items():
            if name != function and name.startswith(function) and "Metadata" not in resource:
                resource["Metadata"] = metadata
    return expanded


def run(command: list[str]) -> int:
    return subprocess.run(command, check=False).returncode


def main() -> int:
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "template.yaml")
    expanded = with_inherited_skips(expand(path))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as out:
        json.dump(expanded, out, indent=1)
    try:
        linted = run(["cfn-lint", out.name])
        checked = run(
            [
                "checkov",
                "--quiet",
                "--compact",
                "--skip-download",
                "--framework",
                "cloudformation",
                "--file",
                out.name,
            ]
        )
    finally:
        os.unlink(out.name)
    if linted == 0 and checked == 0:
        count = len(expanded["Resources"])
        print(f"{path}: SAM expansion, cfn-lint and checkov clean ({count} resources)")
    return linted or checked


if __name__ == "__main__":
    sys.exit(main())
