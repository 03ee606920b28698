"""Where things live in the bucket: run folders, their KPIs, reports and suites.

runs/<run_id>/run.json                     the run's spec (launcher)
runs/<run_id>/<config>/node-<i>.json       a node's manifest, written last (node)
runs/<run_id>/<config>/...                 the files a manifest names (node)
runs/<run_id>/<config>/pair-<p>/<arm>/...  a paired run's files of pair p, arm a or b (node)
runs/<run_id>/<config>/pair-<p>/node-<i>.json  node i's look manifest after pair p (node)
runs/<run_id>/<config>/pair-<p>/decision.json  the collector's signed decision on that look
runs/<run_id>/kpis.json                    the run's KPIs (publisher)
reports/<run_id>/index.html, *.png         the run's report (publisher)
suites/<model>.yaml                        the suites a delivery runs (deploy)

The files a manifest names (logs, GPU samples, traces, what a command left) are tagged
EXPIRES_TAG when uploaded: the bucket's lifecycle rule deletes them after the stack's
LogRetentionDays. Manifests (with each file's summary), run.json, kpis.json, decisions,
reports and the site are not tagged and stay.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

RUNS = "runs/"
REPORTS = "reports/"
SUITES = "suites/"
SITE = "site/"  # the history site the sweeper builds
DELIVERIES = "deliveries/"  # each queued GitHub delivery's body, as the webhook verified it
REPORT_PAGE = "index.html"
# the object tag (as S3's Tagging header) of what expires after LogRetentionDays
EXPIRES_KEY, EXPIRES_VALUE = "distkpi-retention", "logs"
EXPIRES_TAG = f"{EXPIRES_KEY}={EXPIRES_VALUE}"

_MANIFEST = re.compile(r"^runs/(?P<run>[^/]+)/(?P<config>[^/]+)/(?P<name>node-[^/]*\.json)$")
_LOOK = re.compile(
    r"^runs/(?P<run>[^/]+)/(?P<config>[^/]+)/pair-(?P<pair>[1-9][0-9]?)/(?P<name>node-[^/]*\.json)$"
)
ARMS = ("a", "b")  # a: the base commit, b: the head
WARMUP = "warmup"


def run_prefix(run_id: str) -> str:
    return f"{RUNS}{run_id}/"


def config_prefix(run_id: str, config: str) -> str:
    return f"{RUNS}{run_id}/{config}/"


def pair_prefix(pair: int) -> str:
    """Inside a config folder: a paired run's files of one pair."""
    return f"pair-{pair}/"


def arm_prefix(pair: int, arm: str) -> str:
    return f"{pair_prefix(pair)}{arm}/"


def decision_key(run_id: str, config: str, pair: int) -> str:
    return f"{config_prefix(run_id, config)}{pair_prefix(pair)}decision.json"


DIAGNOSIS = "diagnosis.json"  # a config's diagnosis, in the diagnosed run's folder


def diagnosis_key(run_id: str, config: str) -> str:
    return f"{config_prefix(run_id, config)}{DIAGNOSIS}"


def delivery_key(delivery: str) -> str:
    """Where a delivery's body is kept for the launcher: named by the SHA-256 of its id (a
    header GitHub does not sign, so never a key of its own making)."""
    return f"{DELIVERIES}{hashlib.sha256(delivery.encode()).hexdigest()}.json"


def run_spec_key(run_id: str) -> str:
    return f"{RUNS}{run_id}/run.json"


def kpis_key(run_id: str) -> str:
    return f"{RUNS}{run_id}/kpis.json"


def report_key(run_id: str, name: str = REPORT_PAGE) -> str:
    return f"{REPORTS}{run_id}/{name}"


@dataclass(frozen=True)
class ManifestKey:
    """runs/<run>/<config>/<name>, where name looks like node-*.json (canonical or not)."""

    run_id: str
    config: str
    name: str


def manifest_key(key: str) -> ManifestKey | None:
    match = _MANIFEST.match(key)
    return ManifestKey(match["run"], match["config"], match["name"]) if match else None


@dataclass(frozen=True)
class LookKey:
    """runs/<run>/<config>/pair-<p>/<name>, a node's look manifest after pair p."""

    run_id: str
    config: str
    pair: int
    name: str


def look_key(key: str) -> LookKey | None:
    match = _LOOK.match(key)
    if not match:
        return None
    return LookKey(match["run"], match["config"], int(match["pair"]), match["name"])
