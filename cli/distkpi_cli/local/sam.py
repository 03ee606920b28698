"""template.yaml as CloudFormation sees it: expanded by the SAM translator, offline.

`make lint` lints the expansion (cfn-lint and checkov do not expand SAM themselves), and the
integration tests give each function exactly the IAM policies the expansion grants its role.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


class OfflinePolicyLoader:
    """SAM asks IAM for managed policy ARNs by name; this template names none."""

    def load(self) -> dict[str, str]:
        return {}


def packaged(template: dict[str, Any]) -> dict[str, Any]:
    """Local CodeUri/ContentUri paths swapped for S3 URIs, as `sam package` would."""
    for name, resource in template.get("Resources", {}).items():
        props = resource.get("Properties", {})
        for key in ("CodeUri", "ContentUri"):
            if isinstance(props.get(key), str) and not props[key].startswith("s3://"):
                props[key] = f"s3://lint-artifacts/{name}.zip"
    return template


def expand(path: Path) -> dict[str, Any]:
    from samtranslator.translator.transform import transform  # dev-only: tests and lint
    from samtranslator.yaml_helper import yaml_parse

    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    template = packaged(yaml_parse(path.read_text()))
    expanded: dict[str, Any] = transform(template, {}, OfflinePolicyLoader())
    return expanded
