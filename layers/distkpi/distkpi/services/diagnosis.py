"""A diagnosis job's run, finished: each config's traces reduced (domain/diagnosis/) and the
diagnosis stored with the run it diagnoses, as `<config>/diagnosis.json` in that run's
folder and in its kpis.json (per config, `diagnosis`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Logger

from distkpi.domain.contracts import FileEntry
from distkpi.domain.diagnosis.collect import reduce_traces, trace_files
from distkpi.domain.diagnosis.compare import Diagnosis
from distkpi.domain.diagnosis.texts import diagnosis_line
from distkpi.domain.kpis.runfolder import node_indices, read_manifest, stored_diagnoses
from distkpi.domain.layout import diagnosis_key, kpis_key
from distkpi.domain.records import RunRecord
from distkpi.domain.signing import ManifestKeys
from distkpi.exceptions import ContractError, NotFoundError, StorageError
from distkpi.services.ports import Counter, RunFolders, no_metrics

logger = Logger(child=True)


@dataclass
class Diagnoser:
    store: RunFolders
    keys: ManifestKeys
    count: Counter = no_metrics

    def finished(self, run: RunRecord) -> dict[str, dict[str, Any]]:
        """Reduce every config of a finished diagnosis run and store each diagnosis with the
        diagnosed run; what was stored, per config. Idempotent: a publisher that dies
        before the end does it all again."""
        spec = run.spec
        assert spec.diagnosis is not None and spec.paired is not None
        of_run = spec.diagnosis.of_run
        gpu_hours = {}
        if run.evaluation is not None:
            gpu_hours = {c.name: c.gpu_hours for c in run.evaluation.kpis.configs}
        stored = {}
        for config in spec.configs:
            if not spec.diagnosis.culprit and self._culprit_s(of_run, config.name):
                continue  # the culprit's own diagnosis says more than the push's
            found = self._reduce(run, config.name)
            found["gpu_hours"] = gpu_hours.get(config.name)
            self.store.put_json(diagnosis_key(of_run, config.name), found)
            stored[config.name] = found
            self.count("DiagnosesStored")
            logger.info(
                "config diagnosed",
                run_id=run.run_id,
                of_run=of_run,
                config=config.name,
                largest_change=(found.get("diagnosis") or {}).get("largest_change"),
                problems=found["problems"],
            )
        self._into_kpis(of_run, stored)
        return stored

    def _culprit_s(self, of_run: str, config: str) -> bool:
        """Whether the config's diagnosis stored is a bisection culprit's."""
        found = stored_diagnoses(self.store.run(of_run), [config]).get(config, {})
        return bool(found.get("culprit"))

    def _reduce(self, run: RunRecord, config: str) -> dict[str, Any]:
        spec = run.spec
        assert spec.paired is not None and spec.diagnosis is not None
        source = self.store.run(run.run_id)
        key = self.keys.for_config(run.run_id, config)
        entries: list[FileEntry] = []
        problems: list[str] = []
        try:
            nodes = node_indices(source, config)
        except StorageError as exc:
            nodes, problems = [], [f"run folder cannot be read: {exc}"]
        for node in nodes:
            try:
                manifest = read_manifest(source, config, node, key, run.run_id)
            except (ContractError, NotFoundError, StorageError) as exc:
                problems.append(f"node {node}: {exc}")
                continue
            entries.extend(manifest.files)

        def read(path: str) -> bytes:
            return source.read_bytes(f"{config}/{path}")

        try:
            reduced = reduce_traces(
                trace_files(entries),
                read,
                base_sha=spec.paired.base_sha,
                head_sha=spec.sha,
                link=lambda path: f"runs/{run.run_id}/{config}/{path}",
            )
        except (NotFoundError, StorageError) as exc:
            return _stored(run, None, [*problems, f"traces cannot be read: {exc}"])
        return _stored(run, reduced.diagnosis, [*problems, *reduced.problems])

    def _into_kpis(self, of_run: str, stored: dict[str, dict[str, Any]]) -> None:
        """The diagnosed run's kpis.json with each diagnosed config's `diagnosis`."""
        try:
            kpis = json.loads(self.store.run(of_run).read_bytes("kpis.json"))
        except (NotFoundError, StorageError, ValueError):
            logger.warning("diagnosed run has no kpis.json", run_id=of_run)
            return
        configs = kpis.get("configs") if isinstance(kpis, dict) else None
        for name, config in (configs or {}).items():
            if name in stored and isinstance(config, dict):
                config["diagnosis"] = stored[name]
        self.store.put_json(kpis_key(of_run), kpis)


def _stored(run: RunRecord, diagnosis: Diagnosis | None, problems: list[str]) -> dict[str, Any]:
    """A config's diagnosis as stored and shown: the contract's fields, the job's run, its
    one-line summary and what kept it from being whole."""
    assert run.spec.diagnosis is not None and run.spec.paired is not None
    body: dict[str, Any] = (
        diagnosis.to_json()
        if diagnosis is not None
        else {
            "base_sha": run.spec.paired.base_sha,
            "head_sha": run.spec.sha,
            "steps": 0,
            "roles": {},
            "largest_change": None,
            "top_ops": [],
            "traces": {},
        }
    )
    return {
        **body,
        "run_id": run.run_id,
        "culprit": run.spec.diagnosis.culprit,
        "line": diagnosis_line(body) if diagnosis is not None else None,
        "problems": problems,
    }
