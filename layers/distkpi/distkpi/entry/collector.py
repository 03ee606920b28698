"""S3 ObjectCreated on runs/<run>/<config>/node-<i>.json: a node has reported."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import unquote_plus

from distkpi.domain.kpis.runfolder import node_index
from distkpi.domain.layout import manifest_key
from distkpi.entry.observability import count, logger
from distkpi.entry.wiring import fanin
from distkpi.exceptions import NotFoundError


def handle_keys(keys: Iterable[str]) -> int:
    """Feed each node manifest key to the pipeline; returns how many were ours."""
    settler = fanin().settler
    handled = 0
    for raw in keys:
        key = unquote_plus(raw)
        found = manifest_key(key)
        if found is None:
            logger.info("object is not a node manifest", key=key)
            continue
        node = node_index(found.name)
        if node is None:
            logger.warning("manifest name not node-<i>.json with a canonical i; ignored", key=key)
            count("ManifestsIgnored")
            continue
        logger.append_keys(run_id=found.run_id)
        try:
            settler.on_node_manifest(found.run_id, found.config, node)
        except NotFoundError:
            logger.warning("manifest of an unknown run, config or node ignored", key=key)
            count("ManifestsIgnored")
            continue
        handled += 1
    return handled
