"""A KPI a reader of its own observes by name (measuring.observed) is combined over a
config's trainers as tokens/s is: by what one report counts, and never as a partial sum of
the trainers that reported it."""

from __future__ import annotations

from distkpi.domain.contracts import ConfigSpec
from distkpi.domain.kpis.measuring import Measuring, observed
from distkpi.domain.logs.logsummary import LogSummary, Observation, Per

SPEC = ConfigSpec(name="2x8", trainers=2, gpus_per_trainer=8, pservers=0, batch_size=64, nodes=2)


def trainer(depth: float | None, per: Per = Per.PROCESS) -> LogSummary:
    summary = LogSummary()
    if depth is not None:
        for _ in range(3):
            summary.observe(Observation("prefetch_depth", depth, "batches", per=per))
    return summary


def measured(*trainers: LogSummary) -> float | None:
    return observed("prefetch_depth")(Measuring(SPEC, tuple(enumerate(trainers))))


def test_every_trainer_s_process_count_is_summed() -> None:
    assert measured(trainer(4.0), trainer(6.0)) == 10.0


def test_a_trainer_that_reports_none_leaves_no_partial_sum() -> None:
    assert measured(trainer(4.0), trainer(None)) is None


def test_trainers_that_count_it_differently_give_none() -> None:
    assert measured(trainer(4.0), trainer(6.0, Per.JOB)) is None
