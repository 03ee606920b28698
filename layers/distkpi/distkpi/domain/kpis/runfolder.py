"""Read a run folder (run.json, <config>/node-<i>.json and the files they name) from any source.

The source is anything with ``read_bytes``/``open``/``list_names``: a local folder here, an
S3 prefix in the collector. Problems with one node or file never stop the others: a file
that cannot be read or parsed is a problem of its config, so a config can always be settled.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import BinaryIO, Protocol

from distkpi.domain.contracts import (
    ConfigSpec,
    FileEntry,
    NodeManifest,
    RunSpec,
    parse_node_manifest,
    parse_run_spec,
)
from distkpi.domain.kpis.engine import (
    ConfigEvidence,
    ConfigKpis,
    ParsedGpuMemory,
    ParsedLog,
    RunKpis,
    config_kpis,
    run_kpis,
)
from distkpi.domain.logs.gpumemory import parse_gpu_memory
from distkpi.domain.logs.logformats import parse_log
from distkpi.domain.signing import HashingReader, signed_by
from distkpi.exceptions import ContractError, NotFoundError, RunFolderError, StorageError

# Only node-<i>.json with i written as Python writes it counts: node-01.json beside
# node-1.json must not count node 1 twice.
NODE_FILE = re.compile(r"^node-(0|[1-9][0-9]{0,5})\.json$")
LOOKS_LIKE_NODE_FILE = re.compile(r"^node-.*\.json$", re.DOTALL)


def node_index(name: str) -> int | None:
    """The node a manifest file name stands for; None when it is not a canonical one."""
    match = NODE_FILE.match(name)
    return int(match.group(1)) if match else None


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
    return _indices(source.list_names(config))


def _indices(names: list[str]) -> list[int]:
    return sorted(i for i in map(node_index, names) if i is not None)


def _stray_manifests(names: list[str]) -> list[str]:
    return [
        f"{name!r} ignored: not node-<i>.json with i written without leading zeros"
        for name in names
        if LOOKS_LIKE_NODE_FILE.match(name) and node_index(name) is None
    ]


def read_manifest(
    source: RunSource,
    config: str,
    node: int,
    key: str | None = None,
    run_id: str | None = None,
) -> NodeManifest:
    """A node's manifest; ContractError (with the reason) when it is unreadable, invalid,
    (given the config's key) not signed with it, or signed for another run, config or node
    than where it was found (a signed manifest must say which; given ``run_id``, that
    one)."""
    where = f"{config}/node-{node}.json"
    try:
        data = json.loads(source.read_bytes(where))
    except NotFoundError:
        raise
    except (ValueError, RecursionError) as exc:
        raise ContractError(f"{where} is not JSON: {exc}") from exc
    if key is not None and not (isinstance(data, dict) and signed_by(key, data)):
        raise ContractError(f"{where} is not signed with this config's key (forged?)")
    manifest = parse_node_manifest(data, where)
    if manifest.node != node:
        raise ContractError(f"{where} says it is node {manifest.node}")
    _check_bound(manifest, where, key is not None, run_id, config)
    return manifest


def _check_bound(
    manifest: NodeManifest, where: str, signed: bool, run_id: str | None, config: str
) -> None:
    if signed and None in (manifest.run_id, manifest.config):
        raise ContractError(f"{where} does not say which run and config it is for")
    wrong_config = manifest.config is not None and manifest.config != config
    wrong_run = None not in (manifest.run_id, run_id) and manifest.run_id != run_id
    if wrong_config or wrong_run:
        raise ContractError(
            f"{where} is signed for node {manifest.node} of config {manifest.config} of run "
            f"{manifest.run_id}: copied from there"
        )


class ChangedAfterUpload(Exception):
    """A file whose sha256 is not the one its node's manifest gives."""


def _parse_file(source: RunSource, config: str, entry: FileEntry) -> ParsedLog | ParsedGpuMemory:
    """The file parsed, its digest checked against the manifest's in the same pass."""
    with source.open(f"{config}/{entry.path}") as raw:
        stream = HashingReader(raw)
        parsed: ParsedLog | ParsedGpuMemory
        if entry.kind == "log":
            parsed = ParsedLog(entry.path, entry.role, entry.rank, parse_log(stream))
        else:
            summary = parse_gpu_memory(stream)
            parsed = ParsedGpuMemory(entry.path, entry.role, entry.rank, summary)
        if entry.sha256 is not None and stream.finish() != entry.sha256:
            raise ChangedAfterUpload(entry.path)
        return parsed


def _parse_files(
    source: RunSource, config: str, manifest: NodeManifest, evidence: ConfigEvidence
) -> None:
    logs, gpus = list(evidence.logs), list(evidence.gpu_memory)
    for entry in _unique_entries(manifest, evidence):
        if entry.kind == "file":
            continue
        try:
            parsed = _parse_file(source, config, entry)
        except ChangedAfterUpload:
            evidence.invalid_nodes[manifest.node] = (
                f"{entry.path} changed after upload: its sha256 is not the manifest's"
            )
            continue
        except NotFoundError:
            evidence.problems.append(f"{entry.path}: named by node {manifest.node} but missing")
            continue
        except StorageError as exc:
            evidence.problems.append(f"{entry.path}: cannot be read: {exc}")
            continue
        except Exception as exc:  # a parser bug must not leave the config unsettled forever
            evidence.problems.append(f"{entry.path}: cannot be parsed: {type(exc).__name__}")
            continue
        if isinstance(parsed, ParsedLog):
            logs.append(parsed)
        else:
            gpus.append(parsed)
    evidence.logs, evidence.gpu_memory = logs, gpus


def _unique_entries(manifest: NodeManifest, evidence: ConfigEvidence) -> list[FileEntry]:
    """The manifest's files not named before in this config: a file counts once."""
    seen = {log.path for log in evidence.logs} | {gpu.path for gpu in evidence.gpu_memory}
    unique = []
    for entry in manifest.files:
        if entry.path in seen:
            evidence.problems.append(
                f"{entry.path}: named again by node {manifest.node}; counted once"
            )
            continue
        seen.add(entry.path)
        unique.append(entry)
    return unique


def gather_config(
    source: RunSource, spec: ConfigSpec, key: str | None = None, run_id: str | None = None
) -> ConfigEvidence:
    """Read every manifest of ``spec`` that arrived and parse the files each one names; with
    the config's key, a manifest not signed with it, or signed for another run (``run_id``),
    config or node, is an invalid node. A file whose digest differs from its manifest's makes
    its node invalid, whatever the key."""
    manifests: dict[int, NodeManifest] = {}
    invalid: dict[int, str] = {}
    evidence = ConfigEvidence(spec=spec, manifests=manifests, invalid_nodes=invalid)
    names = source.list_names(spec.name)
    evidence.problems.extend(_stray_manifests(names))
    for node in _indices(names):
        if node >= spec.nodes:
            evidence.problems.append(
                f"node-{node}.json ignored: the config has {spec.nodes} node(s)"
            )
            continue
        try:
            manifests[node] = read_manifest(source, spec.name, node, key, run_id)
        except NotFoundError:  # listed, then gone: it has not reported
            continue
        except (ContractError, StorageError) as exc:
            invalid[node] = str(exc)
            continue
        _parse_files(source, spec.name, manifests[node], evidence)
    return evidence


def config_kpis_from(source: RunSource, run: RunSpec, spec: ConfigSpec) -> ConfigKpis:
    evidence = gather_config(source, spec, run_id=run.run_id)
    return config_kpis(evidence, run.target_accuracy, run.accuracy_pass)


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
