"""The `.js` twin of each JSON file of the history application's API (`api/`).

A page opened from the file system (file://) may not fetch the JSON files beside it: Chromium
refuses. It may still load a script, so each `api/<path>.json` has a twin `api/<path>.js`
that hands the same document to the page: ``distkpiLoaded("<path>", JSON.parse("<the JSON>"));``
(a string given to JSON.parse: V8 reads a month of 700 runs three times faster so than as
an object literal). Over
http(s) (the bucket behind CloudFront or S3 website hosting) the pages fetch the JSON itself;
the twins are what the same pages read from a folder (`distkpi local`'s site).
"""

from __future__ import annotations

import json

CALLBACK = "distkpiLoaded"  # app/api.js defines it


def twin_name(path: str) -> str:
    """`series/o/r/b/m.json` -> `series/o/r/b/m.js`: where a JSON file's twin is written."""
    if not path.endswith(".json"):
        raise ValueError(f"{path!r} is not a JSON file of the API (it must end in .json)")
    return path[: -len(".json")] + ".js"


def twin(path: str, document: bytes) -> bytes:
    """The twin of ``document`` (the JSON file's bytes as written), for its ``path``
    relative to `api/`. The JSON is checked and written compact, inside a JSON string, which
    is a JavaScript string literal (since ES2019 even with U+2028 in it)."""
    twin_name(path)
    try:
        parsed = json.loads(document)
    except ValueError as exc:
        raise ValueError(f"api/{path} is not JSON, so it has no twin: {exc}") from exc
    try:
        body = json.dumps(parsed, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError as exc:  # NaN or Infinity: neither JSON nor a value the page can read
        raise ValueError(f"api/{path} holds a number JSON has not: {exc}") from exc
    text = json.dumps(body, ensure_ascii=False)
    return f"{CALLBACK}({json.dumps(path)},JSON.parse({text}));\n".encode()
