"""Read a run folder (run.json, <config>/node-<i>.json and the files they name) from any source.

The source is anything with ``read_bytes``/``open``/``list_nodes``: a local folder here, an
S3 prefix in the collector. Problems with one node or file never stop the others.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import BinaryIO, Protocol

from distkpi.domain.contracts import (
    ConfigSpec,
    NodeManifest,
    RunSpec,
    parse_node_manifest,
    parse_run_spec,
)
from distkpi.domain.gpumemory import parse_gpu_memory
from distkpi.domain.kpis import (
    ConfigEvidence,
    ConfigKpis,
    ParsedGpuMemory,
    ParsedLog,
    RunKpis,
    config_kpis,
    run_kpis,
)
from distkpi.domain.logformats import parse_log
from distkpi.exceptions import ContractError, NotFoundError, RunFolderError

NODE_FILE = re.compile(r"^node-(\d+)\.json$")


class RunSource(Protocol):
    """Files of one run folder, addressed by paths relative to the folder."""

    def read_bytes(self, path: str) -> bytes:
        """The whole (small) file; NotFoundError when it does not exist."""
        ...

    def open(self, path: str) -> AbstractContextManager[BinaryIO]:
        """A stream over a (possibly huge) file; NotFoundError when it does not exist."""
        ...

    def list_names(self, folder: str) -> list[str]:
        """Names of the files directly inside ``folder``."""
        ...


def read_run_spec(source: RunSource) -> RunSpec:
    try:
        raw = source.read_bytes("run.json")
    except NotFoundError as exc:
        raise RunFolderError("no run.json in the run folder") from exc
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise RunFolderError(f"run.json is not JSON: {exc}") from exc
    try:
        return parse_run_spec(data)
    except ContractError as exc:
        raise RunFolderError(str(exc)) from exc


def node_indices(source: RunSource, config: str) -> list[int]:
    found = (NODE_FILE.match(name) for name in source.list_names(config))
    return sorted(int(m.group(1)) for m in found if m)


def read_manifest(source: RunSource, config: str, node: int) -> NodeManifest:
    """A node's manifest; ContractError (with the reason) when it is unreadable or invalid."""
    where = f"{config}/node-{node}.json"
    try:
        data = json.loads(source.read_bytes(where))
    except NotFoundError:
        raise
    except ValueError as exc:
        raise ContractError(f"{where} is not JSON: {exc}") from exc
    manifest = parse_node_manifest(data, where)
    if manifest.node != node:
        raise ContractError(f"{where} says it is node {manifest.node}")
    return manifest


def _parse_files(
    source: RunSource, config: str, manifest: NodeManifest, evidence: ConfigEvidence
) -> None:
    logs, gpus = list(evidence.logs), list(evidence.gpu_memory)
    for entry in manifest.files:
        path = f"{config}/{entry.path}"
        try:
            with source.open(path) as stream:
                if entry.kind == "log":
                    logs.append(ParsedLog(entry.path, entry.role, entry.rank, parse_log(stream)))
                else:
                    summary = parse_gpu_memory(stream)
                    gpus.append(ParsedGpuMemory(entry.path, entry.role, entry.rank, summary))
        except NotFoundError:
            evidence.problems.append(f"{entry.path}: named by node {manifest.node} but missing")
    evidence.logs, evidence.gpu_memory = logs, gpus


def gather_config(source: RunSource, spec: ConfigSpec) -> ConfigEvidence:
    """Read every manifest of ``spec`` that arrived and parse the files each one names."""
    manifests: dict[int, NodeManifest] = {}
    invalid: dict[int, str] = {}
    evidence = ConfigEvidence(spec=spec, manifests=manifests, invalid_nodes=invalid)
    for node in node_indices(source, spec.name):
        if node >= spec.nodes:
            evidence.problems.append(
                f"node-{node}.json ignored: the config has {spec.nodes} node(s)"
            )
            continue
        try:
            manifests[node] = read_manifest(source, spec.name, node)
        except ContractError as exc:
            invalid[node] = str(exc)
            continue
        _parse_files(source, spec.name, manifests[node], evidence)
    return evidence


def config_kpis_from(source: RunSource, run: RunSpec, spec: ConfigSpec) -> ConfigKpis:
    return config_kpis(gather_config(source, spec), run.target_accuracy, run.accuracy_pass)


def iter_config_kpis(source: RunSource, run: RunSpec) -> Iterator[ConfigKpis]:
    for spec in run.configs:
        yield config_kpis_from(source, run, spec)


def compute_run_kpis(
    source: RunSource,
    target_accuracy: float | None = None,
    accuracy_pass: int | None = None,
) -> RunKpis:
    """The KPIs of a whole run folder, optionally with another target or accuracy pass."""
    run = read_run_spec(source)
    overrides: dict[str, float | int] = {}
    if target_accuracy is not None:
        overrides["target_accuracy"] = target_accuracy
    if accuracy_pass is not None:
        overrides["accuracy_pass"] = accuracy_pass
    if overrides:
        run = run.model_copy(update=overrides)
    configs = {kpis.name: kpis for kpis in iter_config_kpis(source, run)}
    return run_kpis(run, configs)
