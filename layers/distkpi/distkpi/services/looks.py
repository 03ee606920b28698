"""A paired config's looks: when every node of it has sent its look manifest after a pair,
the pair is judged with the run's pairs so far against the paired history, and the decision
(stop, with pass or fail, or go on) is stored once on the config and written, signed with
the config's key, where the job's nodes wait for it.

Each look manifest's arrival is counted on the config in the table (an atomic, idempotent
ADD of its node): the manifests of a look are read once, by the arrival that completes it,
and another config's complete pairs are read off its record; nothing is listed."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from aws_lambda_powertools import Logger

from distkpi.domain.contracts import ConfigSpec, LookDecision, RunSpec
from distkpi.domain.judging.paired import judge_look
from distkpi.domain.kpis.engine import ConfigEvidence, run_kpis
from distkpi.domain.kpis.runfolder import (
    Reading,
    RunSource,
    config_kpis_of,
    gather_looks,
    parse_settings,
)
from distkpi.domain.layout import decision_key
from distkpi.domain.purpose import policy_of
from distkpi.domain.records import RunRecord
from distkpi.domain.signing import ManifestKeys, seal
from distkpi.exceptions import NotFoundError
from distkpi.services.baseline import baseline_of
from distkpi.services.ports import Counter, History, RunFolders, Runs, no_metrics

logger = Logger(child=True)
# an A/A calibration job measures noise, so it runs every pair whatever its looks see
CALIBRATION_GOES_ON = {"decision": "continue", "why": "calibration: an A/A job runs every pair"}


@dataclass
class PairedLooks:
    runs: Runs
    history: History
    store: RunFolders
    keys: ManifestKeys
    count: Counter = no_metrics

    def on_look_manifest(
        self, run_id: str, config: str, pair: int, node: int
    ) -> LookDecision | None:
        """Node ``node``'s look manifest after ``pair`` landed: the decision once every
        node's is in and verified (None before, or after the run's last pair, when nobody
        waits); NotFoundError when it is no pair of a paired config of a known run, or no
        node of it."""
        run = self.runs.get(run_id)
        if run is None:
            raise NotFoundError(f"no run {run_id}")
        spec = run.spec
        if spec.paired is None or config not in {c.name for c in spec.configs}:
            raise NotFoundError(f"{config} of run {run_id} is no paired config")
        if not 1 <= pair <= spec.paired.max_pairs:
            return None
        # N arrivals cost N counts in the table and one reading of the look's manifests
        nodes = spec.config(config).nodes
        arrived = self.runs.add_look_arrival(run_id, config, pair, node).look_arrivals
        if pair == spec.paired.max_pairs:  # counted for the other configs' looks; none waits
            return None
        if missing := sorted(set(range(nodes)) - arrived.get(pair, frozenset())):
            waiting = {n: f"node {n} has not reported pair {pair}" for n in missing}
            logger.info(
                "look not complete", run_id=run_id, config=config, pair=pair, waiting=waiting
            )
            return None
        evidence = self._looks(spec, spec.config(config), pair)
        if evidence.invalid_nodes:
            logger.info(
                "look not complete",
                run_id=run_id,
                config=config,
                pair=pair,
                waiting=evidence.invalid_nodes,
            )
            return None
        return self._decide(run, config, pair, evidence)

    def _decide(self, run: RunRecord, config: str, pair: int, own: ConfigEvidence) -> LookDecision:
        """``own``: the config's look manifests so far, read and verified already."""
        spec = run.spec
        if not policy_of(run).judges_looks:
            return self._store(spec, config, pair, CALIBRATION_GOES_ON)
        so_far = {
            c.name: config_kpis_of(own if c.name == config else self._looks(spec, c, n), spec)
            for c in spec.configs
            if (n := pair if c.name == config else self._complete_pairs(spec, c))
        }
        judged = judge_look(
            run_kpis(spec, so_far),
            baseline_of(self.history, run).rows,
            run.verdict_settings,
            config,
            pair,
        )
        return self._store(spec, config, pair, {**judged.to_json(), "why": judged.why[:1000]})

    def _store(
        self, spec: RunSpec, config: str, pair: int, decided: Mapping[str, object]
    ) -> LookDecision:
        decision = LookDecision.model_validate(
            {"run_id": spec.run_id, "config": config, "pair": pair, **decided}
        )
        stored = LookDecision.model_validate(
            self.runs.record_look(spec.run_id, config, pair, decision.to_json())
        )
        key = self.keys.for_config(spec.run_id, config)
        body = json.dumps(seal(key, stored.to_json())).encode()
        self.store.put_bytes(decision_key(spec.run_id, config, pair), body)
        self.count("LooksDecided")
        logger.info(
            "look decided",
            run_id=spec.run_id,
            config=config,
            pair=pair,
            decision=stored.decision,
            outcome=stored.outcome,
            why=stored.why,
        )
        return stored

    def _complete_pairs(self, spec: RunSpec, config: ConfigSpec) -> int:
        """How many pairs every node of another config has sent its look manifest of (its
        arrivals as counted in the table)."""
        record = self.runs.config(spec.run_id, config.name)
        arrived = record.look_arrivals if record is not None else {}
        pairs = 0
        assert spec.paired is not None
        for pair in range(1, spec.paired.max_pairs + 1):
            if not set(range(config.nodes)) <= arrived.get(pair, frozenset()):
                break
            pairs = pair
        return pairs

    def _source(self, run_id: str) -> RunSource:
        return self.store.run(run_id)

    def _looks(self, spec: RunSpec, config: ConfigSpec, pairs: int) -> ConfigEvidence:
        """The config's look manifests of pairs 1..``pairs``, verified with its key."""
        key = self.keys.for_config(spec.run_id, config.name)
        reading = Reading(key, True, spec.run_id, settings=parse_settings(spec))
        return gather_looks(self._source(spec.run_id), config, pairs, reading)
