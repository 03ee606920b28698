"""The history site on AWS (moto, the functions' IAM from the template): a push's run is
added to the site's files by the function that publishes it, under site/api/; a pull
request's is not; the sweeper rebuilds nothing; and S3's conditional writes refuse a
writer whose copy is stale."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema

from distkpi.adapters.s3_runs import S3RunStore
from distkpi.reporting import api
from tests.integration.conftest import BUCKET, Stack, event
from tests.integration.test_flow import deliver_all, run_all_nodes, sweep
from tests.integration.test_history import seed_history

SCHEMAS = Path(api.__file__).parent / "api_schemas"


def site_objects(stack: Stack) -> dict[str, Any]:
    listed = stack.s3.list_objects_v2(Bucket=BUCKET, Prefix="site/").get("Contents", [])
    return {o["Key"]: o["ETag"] for o in listed}


def read(stack: Stack, key: str) -> Any:
    return json.loads(stack.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())


def test_a_push_is_added_to_the_site_by_its_publisher_and_the_sweeper_rebuilds_nothing(
    stack: Stack,
) -> None:
    seed_history(stack, 3)
    (pr,) = stack.webhook("pull_request")["json"]["runs"]
    deliver_all(stack, run_all_nodes(stack, pr), copies=1)
    assert site_objects(stack) == {}  # a pull request's history is not published
    payload = copy.deepcopy(event("push")["payload"])
    (push,) = stack.webhook("push", payload=payload)["json"]["runs"]
    deliver_all(stack, run_all_nodes(stack, push), copies=1)
    written = site_objects(stack)
    series = "site/api/series/PaddlePaddle/Paddle/develop/resnet50"
    (chunk,) = [k for k in written if k.startswith(series + "/")]
    assert set(written) >= {"site/api/index.json", f"{series}.json", f"site/api/runs/{push}.json"}
    for key in written:
        if key.startswith("site/api/"):
            doc = read(stack, key)
            kind = doc["schema"].split(".")[2].split("/")[0]
            schema = json.loads((SCHEMAS / f"{kind}.schema.json").read_text())
            jsonschema.validate(doc, schema)
    # the seeded history is the table's: only the run published since is in the files
    assert {p["run_id"] for p in read(stack, chunk)["points"]} == {push}
    (line,) = read(stack, "site/api/index.json")["histories"]
    assert line["latest"]["run_id"] == push and line["runs"] == 1
    assert sweep(stack) == {"timed_out": 0, "republished": 0}
    assert site_objects(stack) == written  # nothing rewritten


def test_a_conditional_write_with_a_stale_copy_is_refused(stack: Stack) -> None:
    store = S3RunStore(BUCKET, stack.s3)
    key = "site/api/index.json"
    assert store.read_tagged(key) is None
    assert store.put_if(key, b'{"v": 1}', "application/json", None)
    assert not store.put_if(key, b'{"v": 2}', "application/json", None)  # it exists now
    first = store.read_tagged(key)
    assert first is not None and first[0] == b'{"v": 1}'
    assert store.put_if(key, b'{"v": 2}', "application/json", first[1])
    assert not store.put_if(key, b'{"v": 3}', "application/json", first[1])  # stale ETag
    assert store.read_bytes(key) == b'{"v": 2}'
