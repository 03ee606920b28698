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
from typing import Any

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse


class OfflinePolicyLoader:
    """SAM asks IAM for managed policy ARNs by name; this template names none."""

    def load(self) -> dict[str, str]:
        return {}


def packaged(template: dict[str, Any]) -> dict[str, Any]:
    for name, resource in template.get("Resources", {}).items():
        props = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if isinstance(props.get(key), str) and not props[key].startswith("s3://"):
                props[key] = f"s3://lint-artifacts/{name}.zip"
    return template


def expand(path: Path) -> dict[str, Any]:
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    template = packaged(yaml_parse(path.read_text()))
    return transform(template, {}, OfflinePolicyLoader())  # type: ignore[no-any-return]


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
