"""A paired run on one node: the base commit (arm A) and the head (arm B) run alternately on
the same nodes, W(A) | A B | B A | A B | B A, with a look after each pair.

What is pure here: the plan from the launcher's variables (DISTKPI_PAIRED, DISTKPI_BASE_SHA)
and the order of the runs. What waits: the collector's decision after a pair
(pair-<p>/decision.json, signed with the config's key and bound to its run, config and
pair), which every node of the job reads, so that they stop or go on together. A node that
sees another node's final manifest while it waits knows that node has ended, and stops too.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pydantic import ValidationError

from distkpi.adapters.s3_runs import S3RunStore
from distkpi.domain.contracts import SHA, LookDecision
from distkpi.domain.layout import WARMUP, arm_prefix, pair_prefix
from distkpi.domain.planning import jobenv
from distkpi.domain.signing import Unsealed, unseal
from distkpi.exceptions import NotFoundError, StorageError
from distkpi_cli.node.polling import poll_until
from distkpi_cli.node.source import NodeProblem


@dataclass(frozen=True)
class PairedPlan:
    base_sha: str
    max_pairs: int
    warmup: bool

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> PairedPlan | None:
        """The launcher's plan, or None for an unpaired run; NodeProblem when it is garbled."""
        text = env.get(jobenv.PAIRED)
        if not text:
            return None
        try:
            data = json.loads(text)
            plan = cls(str(env[jobenv.BASE_SHA]), int(data["max_pairs"]), bool(data["warmup"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise NodeProblem(
                "DISTKPI_PAIRED or DISTKPI_BASE_SHA is not what the launcher writes"
            ) from exc
        if not re.match(SHA, plan.base_sha) or not 1 <= plan.max_pairs <= 8:
            raise NodeProblem(f"paired run: base {plan.base_sha!r}, {plan.max_pairs} pairs")
        return plan


@dataclass(frozen=True)
class Slot:
    """One run of the command: its place in the order, its arm, and its pair (None: the
    warm-up)."""

    seq: int
    arm: str
    pair: int | None

    @property
    def name(self) -> str:
        return WARMUP if self.pair is None else f"pair-{self.pair}-{self.arm}"

    @property
    def prefix(self) -> str:
        """Where its files go inside the config folder."""
        return f"{WARMUP}/" if self.pair is None else arm_prefix(self.pair, self.arm)

    @property
    def closes_pair(self) -> bool:
        return self.pair is not None and self.arm == self.second_arm(self.pair)

    @staticmethod
    def second_arm(pair: int) -> str:
        return "b" if pair % 2 else "a"


def schedule(plan: PairedPlan) -> list[Slot]:
    """Every run the plan may take, in order: the warm-up (of A), then pair p as A B when p
    is odd and B A when it is even, so that a drift within the job cancels over two pairs."""
    slots = [Slot(0, "a", None)] if plan.warmup else []
    for pair in range(1, plan.max_pairs + 1):
        for arm in "ab" if pair % 2 else "ba":
            slots.append(Slot(len(slots), arm, pair))
    return slots


def look_manifest_key(config_key: str, pair: int, node: int) -> str:
    return f"{config_key}{pair_prefix(pair)}node-{node}.json"


def ended_nodes(store: S3RunStore, config_key: str, num_nodes: int) -> set[int]:
    """The nodes whose final manifest is in: they run nothing more."""
    try:
        names = set(store.list_names(config_key))
    except StorageError:
        return set()
    return {n for n in range(num_nodes) if f"node-{n}.json" in names}


@dataclass
class DecisionWait:
    store: S3RunStore
    config_key: str
    run_id: str
    config: str
    key: str | None
    deadline_s: float
    poll_s: float = 2.0
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    def decision(self, pair: int, others: Callable[[], set[int]]) -> LookDecision:
        """The collector's decision on ``pair``; a stop when none comes by the deadline or a
        node of the job has ended (it would never join the next run). A record not signed
        with the config's key, or signed for another run, config or pair, is not one."""
        key = f"{self.config_key}{pair_prefix(pair)}decision.json"

        def decided() -> LookDecision | None:
            found = self._read(key, pair)
            if found is None and (gone := others()):
                names = ", ".join(map(str, sorted(gone)))
                return self._stop(pair, f"node(s) {names} ended before pair {pair} was decided")
            return found

        found = poll_until(
            decided, self.deadline_s, self.poll_s, clock=self.clock, sleep=self.sleep
        )
        if found is None:
            return self._stop(pair, f"no decision on pair {pair} in {self.deadline_s:g}s")
        return found

    def _stop(self, pair: int, why: str) -> LookDecision:
        return LookDecision(
            run_id=self.run_id, config=self.config, pair=pair, decision="stop", why=why
        )

    def _read(self, key: str, pair: int) -> LookDecision | None:
        try:
            data = json.loads(self.store.read_bytes(key))
        except (NotFoundError, StorageError, ValueError):
            return None
        try:
            bound = unseal(self.key, data, run_id=self.run_id, config=self.config, pair=pair)
            decision = LookDecision.model_validate(bound)
        except (Unsealed, ValidationError):
            return None
        return decision
