"""Read a run folder (run.json, <config>/node-<i>.json and the files they name) from any source.

The source is anything with ``read_bytes``/``open``/``list_names``: a local folder here, an
S3 prefix in the collector. Problems with one node or file never stop the others: a file
that cannot be read or parsed is a problem of its config, so a config can always be settled.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any, BinaryIO, Protocol

from distkpi.domain.accuracy import Direction, Target
from distkpi.domain.contracts import (
    MAX_CONFIG_LOG_BYTES,
    MAX_LOG_BYTES,
    ConfigSpec,
    FileEntry,
    NodeManifest,
    RunSpec,
    parse_node_manifest,
    parse_run_spec,
)
from distkpi.domain.kpis.combining import merged_runs
from distkpi.domain.kpis.engine import (
    ConfigEvidence,
    ConfigKpis,
    ConfigStatus,
    PairKpis,
    ParsedGpuMemory,
    ParsedLog,
    RunKpis,
    arms_loss_alignment,
    config_kpis,
    run_kpis,
)
from distkpi.domain.kpis.golden import parse_golden
from distkpi.domain.layout import ARMS, DIAGNOSIS, arm_prefix, pair_prefix
from distkpi.domain.logs.engineversion import engine_version
from distkpi.domain.logs.filesummary import (
    PARSED_KINDS,
    Summary,
    summarize,
    summary_from_json,
)
from distkpi.domain.logs.logformats import DEFAULT_SETTINGS, ParseSettings
from distkpi.domain.logs.logsummary import LogSummary
from distkpi.domain.logs.parsesettings import settings_digest
from distkpi.domain.signing import HashingReader, Unsealed, unseal
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


def stored_diagnoses(source: RunSource, configs: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Each config's diagnosis as its diagnosis job stored it in the run's folder
    (<config>/diagnosis.json); a config without one, or with an unreadable one, has none."""
    found = {}
    for config in configs:
        try:
            data = json.loads(source.read_bytes(f"{config}/{DIAGNOSIS}"))
        except (NotFoundError, StorageError, ValueError):
            continue
        if isinstance(data, dict):
            found[config] = data
    return found


def with_diagnoses(
    kpis: dict[str, Any], diagnoses: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """A run's KPIs as JSON (`RunKpis.to_json`) with each diagnosed config's `diagnosis`."""
    for name, diagnosis in diagnoses.items():
        config = kpis.get("configs", {}).get(name)
        if isinstance(config, dict):
            config["diagnosis"] = diagnosis
    return kpis


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
    *,
    pair: int | None = None,
) -> NodeManifest:
    """A node's manifest (given ``pair``, its look manifest after that pair); ContractError
    (with the reason) when it is unreadable, invalid, (given the config's key) not signed
    with it, or signed for another run, config, node or pair than where it was found (a
    signed manifest must say which; given ``run_id``, that one)."""
    where = f"{config}/{pair_prefix(pair) if pair else ''}node-{node}.json"
    try:
        data = json.loads(source.read_bytes(where))
    except NotFoundError:
        raise
    except (ValueError, RecursionError) as exc:
        raise ContractError(f"{where} is not JSON: {exc}") from exc
    if key is not None:
        try:
            unseal(key, data)
        except Unsealed as exc:
            raise ContractError(f"{where} is not signed with this config's key (forged?)") from exc
    manifest = parse_node_manifest(data, where)
    if manifest.node != node:
        raise ContractError(f"{where} says it is node {manifest.node}")
    if manifest.pair != pair:
        raise ContractError(f"{where} says it reports pair {manifest.pair}")
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


class OverCap(Exception):
    """A file longer than what may be parsed of it: the problem says which bound."""


class CappedReader:
    """A stream that refuses to yield more than ``limit`` bytes: reading past them raises
    OverCap, so a huge file costs at most ``limit`` bytes of reading before it is refused."""

    def __init__(self, stream: BinaryIO, limit: int, problem: str) -> None:
        self.stream, self.limit, self.problem, self.count = stream, limit, problem, 0

    def read(self, size: int = -1) -> bytes:
        room = self.limit - self.count + 1  # one byte more tells a file just at the cap
        block = self.stream.read(room if size < 0 else min(size, room))
        self.count += len(block)
        if self.count > self.limit:
            raise OverCap(self.problem)
        return block


@dataclass
class _Budget:
    """What is left of the bytes a config's files may take to parse (None: no bound)."""

    left: int | None

    def reader(self, stream: BinaryIO, path: str) -> BinaryIO | CappedReader:
        if self.left is None:
            return stream
        if self.left < MAX_LOG_BYTES:
            total = _mib(MAX_CONFIG_LOG_BYTES)
            why = f"{path}: not parsed: the config's files are over {total} in all"
            return CappedReader(stream, self.left, why)
        why = f"{path}: over {_mib(MAX_LOG_BYTES)}, not parsed (a node cuts its logs there)"
        return CappedReader(stream, MAX_LOG_BYTES, why)


def _mib(size: int) -> str:
    return f"{size / 2**20:g} MiB"


def _parsed(entry: FileEntry, summary: Summary) -> ParsedLog | ParsedGpuMemory:
    if isinstance(summary, LogSummary):
        return ParsedLog(entry.path, entry.role, entry.rank, summary)
    return ParsedGpuMemory(entry.path, entry.role, entry.rank, summary)


def parse_settings(run: RunSpec) -> ParseSettings:
    """What reading each log of ``run`` needs from its run.json."""
    return ParseSettings(run.accuracy_direction, run.warmup_reports, run.metrics)


def _parse_file(
    source: RunSource, config: str, entry: FileEntry, budget: _Budget, settings: ParseSettings
) -> ParsedLog | ParsedGpuMemory:
    """The file parsed, its digest checked against the manifest's in the same pass; OverCap
    when it is longer than a file may be, or than the config has left."""
    with source.open(f"{config}/{entry.path}") as raw:
        capped = budget.reader(raw, entry.path)
        try:
            with HashingReader(capped) as stream:
                parsed = _parsed(entry, summarize(entry.kind, stream, settings))
                if entry.sha256 is not None and stream.finish() != entry.sha256:
                    raise ChangedAfterUpload(entry.path)
        finally:
            if isinstance(capped, CappedReader) and budget.left is not None:
                budget.left -= capped.count
        return parsed


@dataclass(frozen=True)
class Reading:
    """How a config's files are read. ``key``: the config's manifest key, which verifies the
    manifests and so the summaries their nodes made; without it (`distkpi kpis` on a folder)
    every file is parsed. ``parse_logs``: whether files without a usable summary are parsed
    (the collector) or left out with a problem (job_events and the sweeper read no log)."""

    key: str | None = None
    parse_logs: bool = True
    # the run the manifests must be signed for (with the config and node where they lie)
    run_id: str | None = None
    # the collector's bounds on what it parses (MAX_LOG_BYTES a file, MAX_CONFIG_LOG_BYTES a
    # config); `distkpi kpis` on a person's own folder parses files of any size
    capped: bool = True
    # what parsing each log needs from its run (parse_settings); a node summarizes with the
    # defaults, so a run with settings of its own has its logs parsed here
    settings: ParseSettings = DEFAULT_SETTINGS


# why a node's summaries of a suite with patterns, a direction or a warm-up of its own are
# not used: its manifest names no digest of those settings, or another (a node image older
# than DISTKPI_PARSE_SETTINGS); the collector parses its logs, said only where left unread
OWN_WAY = (
    "the manifest's summaries were not made with the suite's own parse settings "
    "(direction, warm-up or patterns)"
)


def _why_not_summaries(manifest: NodeManifest, reading: Reading) -> str | None:
    """Why a node's summaries cannot stand for its files; None when they can."""
    if reading.key is None:
        return "no key to verify the manifest's summaries with"
    if manifest.engine_version is None:
        return "no file summaries in the manifest (an older image?)"
    if manifest.summary_settings != settings_digest(reading.settings):
        return OWN_WAY
    if manifest.engine_version != engine_version():
        return (
            f"the manifest's summaries are of engine version {manifest.engine_version}, "
            f"not {engine_version()}"
        )
    return None


def _summarized(entry: FileEntry) -> ParsedLog | ParsedGpuMemory | str:
    """The file as its node summarized it, or why its summary cannot be used."""
    if entry.summary is None:
        return f"no summary of {entry.path} in the manifest"
    try:
        return _parsed(entry, summary_from_json(entry.kind, entry.summary))
    except ContractError:
        return f"the manifest's summary of {entry.path} is unreadable"


def _read_file(
    source: RunSource,
    config: str,
    entry: FileEntry,
    node: int,
    evidence: ConfigEvidence,
    *,
    budget: _Budget,
    settings: ParseSettings,
) -> ParsedLog | ParsedGpuMemory | None:
    """The file parsed from the folder; None, with the problem, when it cannot be."""
    try:
        return _parse_file(source, config, entry, budget, settings)
    except OverCap as over:
        evidence.problems.append(str(over))
        evidence.unusable_files.append(entry.path)
    except ChangedAfterUpload:
        evidence.invalid_nodes[node] = (
            f"{entry.path} changed after upload: its sha256 is not the manifest's"
        )
    except NotFoundError:
        _unusable(evidence, entry, f"named by node {node} but missing")
    except StorageError as exc:
        _unusable(evidence, entry, f"cannot be read: {exc}")
    except Exception as exc:  # a parser bug must not leave the config unsettled forever
        _unusable(evidence, entry, f"cannot be parsed: {type(exc).__name__}")
    return None


def _unusable(evidence: ConfigEvidence, entry: FileEntry, why: str) -> None:
    evidence.problems.append(f"{entry.path}: {why}")
    evidence.unusable_files.append(entry.path)


def _parse_files(
    source: RunSource,
    config: str,
    manifest: NodeManifest,
    evidence: ConfigEvidence,
    reading: Reading,
    *,
    budget: _Budget,
) -> str | None:
    """Its files into ``evidence``; why its summaries could not stand for them, if so."""
    logs, gpus = list(evidence.logs), list(evidence.gpu_memory)
    why_not = _why_not_summaries(manifest, reading)
    fell_back: list[str] = []
    for entry in _unique_entries(manifest, evidence):
        if entry.kind not in PARSED_KINDS:
            continue
        if entry.truncated_bytes is not None:
            evidence.problems.append(
                f"{entry.path}: cut by node {manifest.node} at {_mib(MAX_LOG_BYTES)} "
                f"({entry.truncated_bytes} bytes off its end not uploaded)"
            )
        parsed: ParsedLog | ParsedGpuMemory | str | None = why_not
        if why_not is None:
            parsed = _summarized(entry)
        if isinstance(parsed, str):
            fell_back.append(parsed)
            parsed = None
            if reading.parse_logs:
                parsed = _read_file(
                    source,
                    config,
                    entry,
                    manifest.node,
                    evidence,
                    budget=budget,
                    settings=reading.settings,
                )
        if isinstance(parsed, ParsedLog):
            logs.append(parsed)
        elif parsed is not None:
            gpus.append(parsed)
    evidence.logs, evidence.gpu_memory = logs, gpus
    return fell_back[0] if fell_back else None


def _say_why_parsed(reading: Reading, fell_back: dict[str, list[int]]) -> list[str]:
    """One problem per reason, naming its nodes; none for a folder read without a key,
    where parsing every file is the point."""
    if reading.key is None and reading.parse_logs:
        return []
    done = (
        "parsed from the run folder"
        if reading.parse_logs
        else "not read: only the collector parses logs"
    )
    return [
        f"node(s) {', '.join(map(str, nodes))}: {why}; their files were {done}"
        for why, nodes in fell_back.items()
        if not (why == OWN_WAY and reading.parse_logs)
    ]


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
    source: RunSource, spec: ConfigSpec, reading: Reading = Reading()
) -> ConfigEvidence:
    """Read every manifest of ``spec`` that arrived and the files each one names (from its
    summaries, as ``reading`` allows, else parsed); with the config's key, a manifest not
    signed with it, or signed for another run (``reading.run_id``), config or node, is an
    invalid node. A file parsed whose digest differs from its manifest's makes its node
    invalid, whatever the key."""
    manifests: dict[int, NodeManifest] = {}
    invalid: dict[int, str] = {}
    evidence = ConfigEvidence(spec=spec, manifests=manifests, invalid_nodes=invalid)
    fell_back: dict[str, list[int]] = {}
    budget = _Budget(MAX_CONFIG_LOG_BYTES if reading.capped else None)
    names = source.list_names(spec.name)
    evidence.problems.extend(_stray_manifests(names))
    for node in _indices(names):
        if node >= spec.nodes:
            evidence.problems.append(
                f"node-{node}.json ignored: the config has {spec.nodes} node(s)"
            )
            continue
        try:
            manifests[node] = read_manifest(source, spec.name, node, reading.key, reading.run_id)
        except NotFoundError:  # listed, then gone: it has not reported
            continue
        except (ContractError, StorageError) as exc:
            invalid[node] = str(exc)
            continue
        why = _parse_files(source, spec.name, manifests[node], evidence, reading, budget=budget)
        if why is not None:
            fell_back.setdefault(why, []).append(node)
    evidence.problems.extend(_say_why_parsed(reading, fell_back))
    return evidence


def gather_looks(
    source: RunSource, spec: ConfigSpec, pairs: int, reading: Reading = Reading()
) -> ConfigEvidence:
    """A paired config's evidence from its nodes' look manifests of pairs 1..``pairs``
    (pair-<p>/node-<i>.json), read and verified as final manifests are; a node's manifest
    stands for it as the look manifest of the last of those pairs."""
    manifests: dict[int, NodeManifest] = {}
    invalid: dict[int, str] = {}
    evidence = ConfigEvidence(spec=spec, manifests=manifests, invalid_nodes=invalid)
    fell_back: dict[str, list[int]] = {}
    budget = _Budget(MAX_CONFIG_LOG_BYTES if reading.capped else None)
    for pair in range(1, pairs + 1):
        for node in range(spec.nodes):
            try:
                look = read_manifest(
                    source, spec.name, node, reading.key, reading.run_id, pair=pair
                )
            except NotFoundError:
                invalid[node] = f"node {node} has not reported pair {pair}"
                continue
            except (ContractError, StorageError) as exc:
                invalid[node] = str(exc)
                continue
            manifests[node] = look
            why = _parse_files(source, spec.name, look, evidence, reading, budget=budget)
            if why is not None:
                fell_back.setdefault(why, []).append(node)
    evidence.problems.extend(_say_why_parsed(reading, fell_back))
    return evidence


def config_kpis_of(evidence: ConfigEvidence, run: RunSpec) -> ConfigKpis:
    if run.paired is not None:
        return paired_config_kpis(evidence, run)
    return config_kpis(
        evidence, run.target_accuracy, run.accuracy_pass, run.accuracy_direction, run=run
    )


def paired_config_kpis(evidence: ConfigEvidence, run: RunSpec) -> ConfigKpis:
    """A paired config: each pair's KPIs of arm A and of arm B, from the files under
    pair-<p>/<arm>/, and the config's own values B's mean over its pairs (its status,
    problems and GPU-hours the whole job's: every run that ran counts)."""

    def kpis(part: ConfigEvidence) -> ConfigKpis:
        return config_kpis(
            part, run.target_accuracy, run.accuracy_pass, run.accuracy_direction, run=run
        )

    whole = kpis(replace(evidence, logs=[], gpu_memory=[]))
    pairs = tuple(
        PairKpis(p, kpis(arm_evidence(evidence, p, "a")), kpis(arm_evidence(evidence, p, "b")))
        for p in paired_pairs(evidence)
    )
    if not pairs:
        return replace(whole, problems=(*whole.problems, "no pair of runs completed"))
    arms: list[str] = []
    if run.alignment is not None:
        measured = [arms_loss_alignment(pair, run.alignment) for pair in pairs]
        pairs = tuple(pair for pair, _ in measured)
        arms = [why for _, why in measured if why is not None]
    heads = merged_runs([pair.b for pair in pairs])
    problems = tuple(
        dict.fromkeys((*evidence.problems, *(p for x in pairs for p in x.b.problems), *arms))
    )
    return replace(
        heads,
        status=whole.status if whole.status is not ConfigStatus.OK else heads.status,
        problems=problems,
        gpu_hours=whole.gpu_hours,
        hardware=whole.hardware,
        pairs=pairs,
    )


def arm_evidence(evidence: ConfigEvidence, pair: int, arm: str) -> ConfigEvidence:
    """The part of a paired config's evidence one arm's run of one pair left."""
    prefix = arm_prefix(pair, arm)
    return replace(
        evidence,
        logs=[log for log in evidence.logs if log.path.startswith(prefix)],
        gpu_memory=[g for g in evidence.gpu_memory if g.path.startswith(prefix)],
        problems=[p for p in evidence.problems if p.startswith(prefix)],
    )


_PAIR_PATH = re.compile(r"^pair-([1-9][0-9]?)/([ab])/")


def paired_pairs(evidence: ConfigEvidence) -> list[int]:
    """The pairs of which both arms left a log, in order."""
    arms: dict[int, set[str]] = {}
    for log in evidence.logs:
        if match := _PAIR_PATH.match(log.path):
            arms.setdefault(int(match[1]), set()).add(match[2])
    return sorted(p for p, seen in arms.items() if seen == set(ARMS))


GOLDEN_FILE = "golden.json"


def with_golden(source: RunSource, run: RunSpec, evidence: ConfigEvidence) -> ConfigEvidence:
    """A suite with a golden curve: the copy its main node uploaded from the checkout
    (``<config>/golden.json``, named with its sha256 in the node's signed manifest), else one
    put at the run folder's top (``golden.json``), or a problem saying why it cannot be
    judged."""
    if run.golden is None:
        return evidence
    try:
        evidence.golden = parse_golden(_golden_bytes(source, evidence), run.golden)
    except NotFoundError:
        evidence.problems.append(f"golden curve {run.golden}: no {GOLDEN_FILE} in the run folder")
    except (ContractError, StorageError) as exc:
        evidence.problems.append(str(exc))
    return evidence


def _golden_bytes(source: RunSource, evidence: ConfigEvidence) -> bytes:
    config = evidence.spec.name
    for manifest in evidence.manifests.values():
        entry = next((e for e in manifest.files if e.path == GOLDEN_FILE), None)
        if entry is None:
            continue
        raw = source.read_bytes(f"{config}/{GOLDEN_FILE}")
        if entry.sha256 is not None and hashlib.sha256(raw).hexdigest() != entry.sha256:
            raise ContractError(
                f"{config}/{GOLDEN_FILE} changed after upload: its sha256 is not the manifest's"
            )
        return raw
    return source.read_bytes(GOLDEN_FILE)


def config_kpis_from(
    source: RunSource, run: RunSpec, spec: ConfigSpec, *, capped: bool = True
) -> ConfigKpis:
    reading = Reading(run_id=run.run_id, settings=parse_settings(run), capped=capped)
    return config_kpis_of(with_golden(source, run, gather_config(source, spec, reading)), run)


def iter_config_kpis(
    source: RunSource, run: RunSpec, *, capped: bool = True
) -> Iterator[ConfigKpis]:
    for spec in run.configs:
        yield config_kpis_from(source, run, spec, capped=capped)


def with_overrides(
    run: RunSpec,
    target_accuracy: Target | None = None,
    accuracy_pass: int | None = None,
    accuracy_direction: Direction | None = None,
) -> RunSpec:
    """``run`` with another target, accuracy pass or direction, checked as run.json is (a
    target of 2.69 needs the direction lower): ContractError when it does not hold."""
    overrides: dict[str, object] = {}
    if target_accuracy is not None:
        overrides["target_accuracy"] = target_accuracy
    if accuracy_pass is not None:
        overrides["accuracy_pass"] = accuracy_pass
    if accuracy_direction is not None:
        overrides["accuracy_direction"] = accuracy_direction
    if not overrides:
        return run
    try:
        return parse_run_spec({**run.to_json(), **overrides})
    except ContractError as exc:
        given = ", ".join(f"{k} {v}" for k, v in overrides.items())
        raise ContractError(f"{given}: {exc}") from exc


def compute_run_kpis(
    source: RunSource,
    target_accuracy: Target | None = None,
    accuracy_pass: int | None = None,
    accuracy_direction: Direction | None = None,
    *,
    capped: bool = True,
) -> RunKpis:
    """The KPIs of a whole run folder, optionally with another target, accuracy pass or
    direction; ``capped``: with the collector's bounds on what it parses."""
    run = with_overrides(read_run_spec(source), target_accuracy, accuracy_pass, accuracy_direction)
    configs = {kpis.name: kpis for kpis in iter_config_kpis(source, run, capped=capped)}
    return run_kpis(run, configs)
