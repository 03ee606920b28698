"""The README's picture of a history page: 300 synthetic runs (bench/site_build.py's, with a
step change, regressions and an audited reset) built by `distkpi site` into a folder, the
first page photographed by headless chromium.

    .venv/bin/python docs/pictures/site_page.py   # needs Debian's chromium
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import boto3
from moto import mock_aws

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from chromium import screenshot  # noqa: E402
from site_build import TABLE, seed  # noqa: E402

from distkpi.adapters.dynamo import DynamoTable, HistoryRepository  # noqa: E402
from distkpi_cli.local.template import load_template, table_definition  # noqa: E402
from distkpi_cli.site_pages import FolderSite, build_site  # noqa: E402

PICTURE = ROOT / "docs" / "pictures" / "site-page.png"


def main() -> int:
    os.environ.update(
        {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_DEFAULT_REGION": "us-east-1"}
    )
    with tempfile.TemporaryDirectory() as folder, mock_aws():
        template = load_template((ROOT / "template.yaml").read_text())
        boto3.client("dynamodb").create_table(**table_definition(template, "RunsTable", TABLE))
        table = boto3.resource("dynamodb").Table(TABLE)
        history = HistoryRepository(DynamoTable(TABLE, table))
        seed(history, 300)
        build_site(history, FolderSite(Path(folder)), page_runs=300)
        page = Path(folder) / "PaddlePaddle_Paddle-develop-resnet50.html"
        screenshot(page, PICTURE, 1240, 1180)
    print(f"wrote {PICTURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
