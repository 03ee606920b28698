"""S3 ObjectCreated on runs/<run>/<config>/node-<i>.json: a node has reported."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote_plus

from distkpi.entry.observability import logger
from distkpi.entry.wiring import wiring
from distkpi.exceptions import NotFoundError

NODE_KEY = re.compile(r"^runs/(?P<run>[^/]+)/(?P<config>[^/]+)/node-(?P<node>\d+)\.json$")


def handle_keys(keys: Iterable[str]) -> int:
    """Feed each node manifest key to the pipeline; returns how many were ours."""
    pipeline = wiring().fanin
    handled = 0
    for raw in keys:
        key = unquote_plus(raw)
        match = NODE_KEY.match(key)
        if not match:
            logger.info("object is not a node manifest", key=key)
            continue
        run_id, config, node = match["run"], match["config"], int(match["node"])
        logger.append_keys(run_id=run_id)
        try:
            pipeline.on_node_manifest(run_id, config, node)
        except NotFoundError:
            logger.warning("manifest of an unknown run or config ignored", key=key)
            continue
        handled += 1
    return handled
