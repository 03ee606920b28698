"""The `.js` twin of an API file, which the history application reads from file://."""

from __future__ import annotations

import json
import re

import pytest

from distkpi.reporting.app_twins import twin, twin_name

RUN = {
    "schema": "distkpi.api.run/1",
    "run_id": "local-cccccccccc-5b6c8e21",
    "configs": {"1x1": {"throughput": {"value": 41.5, "lower": None, "verdict": "unjudged"}}},
    "note": "a line\u2028separator and </script> stay text",
}


def test_a_twin_hands_the_same_document_to_the_page_under_its_path() -> None:
    data = json.dumps(RUN, indent=2).encode()
    found = twin("runs/local-cccccccccc-5b6c8e21.json", data).decode()
    call = re.fullmatch(
        r'distkpiLoaded\("runs/local-cccccccccc-5b6c8e21\.json",JSON\.parse\((".*")\)\);\n', found
    )
    assert call is not None, found[:80]
    assert json.loads(json.loads(call.group(1))) == RUN


def test_a_twin_is_written_beside_its_json_file() -> None:
    assert twin_name("series/o/r/develop/m/2026-03.json") == "series/o/r/develop/m/2026-03.js"
    with pytest.raises(ValueError, match=r"'index\.html' is not a JSON file of the API"):
        twin_name("index.html")


def test_a_file_that_is_not_json_gets_no_twin_and_says_which() -> None:
    with pytest.raises(ValueError, match=r"api/index\.json is not JSON, so it has no twin"):
        twin("index.json", b'{"histories": [')
    with pytest.raises(ValueError, match=r"api/index\.json holds a number JSON has not"):
        twin("index.json", b'{"value": NaN}')
