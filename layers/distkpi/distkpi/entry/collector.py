"""S3 Object Created on runs/<run>/<config>/node-<i>.json: a node has reported; on
runs/<run>/<config>/pair-<p>/node-<i>.json: a node of a paired run has done pair p.

The EventBridge rule takes only keys matching runs/*/node-*.json, so run.json, kpis.json,
a decision or the golden curve never invoke it; what its wildcard still lets through (a
command's own node-x.json among its files) is told apart by its name alone, before
anything is read or wired, and counted (`ObjectsNotManifests`)."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import unquote_plus

from distkpi.domain.kpis.runfolder import node_index
from distkpi.domain.layout import LookKey, look_key, manifest_key
from distkpi.entry.observability import count, logger
from distkpi.entry.wiring import fanin
from distkpi.exceptions import NotFoundError


def handle_keys(keys: Iterable[str]) -> int:
    """Feed each node manifest key to the pipeline; returns how many were ours."""
    handled = 0
    for raw in keys:
        key = unquote_plus(raw)
        if (look := look_key(key)) is not None:
            handled += _look(key, look)
            continue
        found = manifest_key(key)
        if found is None:
            logger.info("object is not a node manifest", key=key)
            count("ObjectsNotManifests")
            continue
        node = node_index(found.name)
        if node is None:
            logger.warning("manifest name not node-<i>.json with a canonical i; ignored", key=key)
            count("ManifestsIgnored")
            continue
        logger.append_keys(run_id=found.run_id)
        try:
            fanin().settler.on_node_manifest(found.run_id, found.config, node)
        except NotFoundError:
            logger.warning("manifest of an unknown run, config or node ignored", key=key)
            count("ManifestsIgnored")
            continue
        handled += 1
    return handled


def _look(key: str, look: LookKey) -> int:
    node = node_index(look.name)
    if node is None:
        logger.warning("look manifest name not node-<i>.json; ignored", key=key)
        count("ManifestsIgnored")
        return 0
    logger.append_keys(run_id=look.run_id)
    try:
        fanin().looks.on_look_manifest(look.run_id, look.config, look.pair, node)
    except NotFoundError:
        logger.warning("look manifest of an unknown run, unpaired config or node ignored", key=key)
        count("ManifestsIgnored")
        return 0
    return 1
