"""Where things live in the bucket: run folders, their KPIs, reports and suites.

runs/<run_id>/run.json                     the run's spec (launcher)
runs/<run_id>/<config>/node-<i>.json       a node's manifest, written last (node)
runs/<run_id>/<config>/...                 the files a manifest names (node)
runs/<run_id>/kpis.json                    the run's KPIs (publisher)
reports/<run_id>/index.html, *.png         the run's report (publisher)
suites/<model>.yaml                        the suites a delivery runs (deploy)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RUNS = "runs/"
REPORTS = "reports/"
SUITES = "suites/"
SITE = "site/"  # the history site the sweeper builds
REPORT_PAGE = "index.html"

_MANIFEST = re.compile(r"^runs/(?P<run>[^/]+)/(?P<config>[^/]+)/(?P<name>node-[^/]*\.json)$")


def run_prefix(run_id: str) -> str:
    return f"{RUNS}{run_id}/"


def config_prefix(run_id: str, config: str) -> str:
    return f"{RUNS}{run_id}/{config}/"


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
