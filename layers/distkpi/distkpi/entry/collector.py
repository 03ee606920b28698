"""S3 ObjectCreated on runs/<run>/<config>/node-<i>.json: a node has reported."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote_plus

from distkpi.domain.runfolder import node_index
from distkpi.entry.observability import count, logger
from distkpi.entry.wiring import wiring
from distkpi.exceptions import NotFoundError

MANIFEST_KEY = re.compile(r"^runs/(?P<run>[^/]+)/(?P<config>[^/]+)/(?P<name>node-[^/]*\.json)$")


def handle_keys(keys: Iterable[str]) -> int:
    """Feed each node manifest key to the pipeline; returns how many were ours."""
    pipeline = wiring().fanin
    handled = 0
    for raw in keys:
        key = unquote_plus(raw)
        match = MANIFEST_KEY.match(key)
        if not match:
            logger.info("object is not a node manifest", key=key)
            continue
        node = node_index(match["name"])
        if node is None:
            logger.warning("manifest name not node-<i>.json with a canonical i; ignored", key=key)
            count("ManifestsIgnored")
            continue
        run_id, config = match["run"], match["config"]
        logger.append_keys(run_id=run_id)
        try:
            pipeline.on_node_manifest(run_id, config, node)
        except NotFoundError:
            logger.warning("manifest of an unknown run, config or node ignored", key=key)
            count("ManifestsIgnored")
            continue
        handled += 1
    return handled
