"""The browser tests read a site their fixture writes from known values; the pages must be
tested on files of the contract the publisher writes, so every file of the fixture follows
the publisher's JSON Schemas (reporting/api_schemas/)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from distkpi.reporting import api
from tests.browser.site_fixture import write_site

SCHEMAS = Path(api.__file__).parent / "api_schemas"


def schema(name: str) -> dict[str, object]:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())


def test_every_file_of_the_browser_fixture_follows_the_publishers_schemas(tmp_path: Path) -> None:
    root = write_site(tmp_path / "site")
    index = json.loads((root / "api" / "index.json").read_text())
    jsonschema.validate(index, schema("index"))
    checked = {"index": 1, "series": 0, "chunk": 0, "run": 0}
    for entry in index["histories"]:
        head = json.loads((root / "api" / entry["series"]).read_text())
        jsonschema.validate(head, schema("series"))
        checked["series"] += 1
        for chunk in head["chunks"]:
            jsonschema.validate(
                json.loads((root / "api" / chunk["path"]).read_text()), schema("chunk")
            )
            checked["chunk"] += 1
    for run in sorted((root / "api" / "runs").glob("*.json"))[:50]:
        jsonschema.validate(json.loads(run.read_text()), schema("run"))
        checked["run"] += 1
    assert checked["series"] == 2 and checked["chunk"] > 2 and checked["run"] == 50
