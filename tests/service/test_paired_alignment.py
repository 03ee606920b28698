"""A paired run of a suite with an alignment, through the looks and the finisher: each
pair's arms report a real training loss curve (the per-step losses of a PaddleNLP Trainer
run, tests/data/real/paddlenlp/, as MLLOG train_loss lines beside the pipeline's usual
trainer log); a head whose curve is the base's passes, one whose curve parts from it fails
its config at the first look, naming the pair and step."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from distkpi.domain.commit_status import State
from distkpi.domain.contracts import Alignment
from tests.conftest import mllog, trainer_log
from tests.service import test_paired_looks as paired
from tests.unit.test_paired_loss_alignment import BUSTM, OCNLI

BASE_CURVE = OCNLI
# the other run's losses at the steps the base ran: the same steps, another curve
OTHER_CURVE = {step: loss for step, loss in BUSTM.items() if step in OCNLI}


def with_losses(log: str, curve: dict[int, float]) -> str:
    lines = [mllog("train_loss", loss, step_num=step) for step, loss in sorted(curve.items())]
    return log + "\n".join(lines) + "\n"


@pytest.fixture
def head_curve(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, dict[int, float]]]:
    """Each arm's trainer log carries a loss curve: A the base's, B the one set here."""
    curves = {"a": BASE_CURVE, "b": BASE_CURVE}

    def log_of(speed: float, arm: str) -> str:
        return with_losses(trainer_log(speed), curves[arm])

    original = paired.files_of

    def files_of(pipeline: Any, run_id: str, config: str, node: int, pair: int, **scale: float):
        arms = iter("ab")  # files_of writes arm a's log, then b's
        monkeypatch.setattr(paired, "trainer_log", lambda speed: log_of(speed, next(arms)))
        return original(pipeline, run_id, config, node, pair, **scale)

    monkeypatch.setattr(paired, "files_of", files_of)
    yield curves


def aligned_pipeline() -> tuple[Any, Any, str]:
    pipeline, looks, run_id = paired.paired_pipeline()
    run = pipeline.runs.get(run_id)
    spec = run.spec.model_copy(update={"alignment": Alignment(max_rel_diff=0.02, from_step=10)})
    enforced = (*run.verdict_settings.enforced, "loss_alignment")
    settings = run.verdict_settings.model_copy(update={"enforced": enforced})
    pipeline.runs._runs[run_id] = paired.replace(run, spec=spec, verdict_settings=settings)
    return pipeline, looks, run_id


def test_a_head_that_trains_the_same_curve_passes(head_curve: dict[str, Any]) -> None:
    pipeline, looks, run_id = aligned_pipeline()
    decisions = paired.run_to_the_end(pipeline, looks, run_id)
    assert all(ds[0]["outcome"] == "pass" for ds in decisions.values()), decisions
    run = pipeline.runs.get(run_id)
    assert run.evaluation.verdict.state is State.SUCCESS, run.evaluation.description
    stored = pipeline.runs.config(run_id, "1x1").kpis
    assert [(p.aligned, p.loss_alignment) for p in stored.pairs] == [(True, 0.0)]


def test_a_head_whose_loss_curve_parts_from_the_base_fails_at_its_first_look(
    head_curve: dict[str, Any],
) -> None:
    head_curve["b"] = OTHER_CURVE
    pipeline, looks, run_id = aligned_pipeline()
    decisions = paired.run_to_the_end(pipeline, looks, run_id)
    first = decisions["1x1"][0]
    assert (first["decision"], first["outcome"]) == ("stop", "fail")
    assert "loss_alignment" in first["why"]
    run = pipeline.runs.get(run_id)
    assert run.evaluation.verdict.state is State.FAILURE
    stored = pipeline.runs.config(run_id, "1x1").kpis
    (pair,) = stored.pairs
    assert pair.aligned is False and pair.loss_alignment > 0.02
    step = pair.loss_alignment_step
    assert (
        f"pair 1: B's loss curve {pair.loss_alignment:.2%} from A's at step {step} "
        f"({OTHER_CURVE[step]:.6g} vs {BASE_CURVE[step]:.6g}), beyond 2.00%"
    ) in stored.problems
