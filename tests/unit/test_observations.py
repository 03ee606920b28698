"""What a reader emits, an Observation, is folded into the summary in one place
(LogSummary.observe): by name into the summary's own fields, in the unit the catalogue
states for the KPI of that name (the log's own unit converted once), and any other name into
``observed``, for a KPI of the catalogue's own to measure."""

from __future__ import annotations

import pytest

from distkpi.domain.kpis.catalogue import CATALOGUE
from distkpi.domain.logs.logsummary import (
    FOLDS,
    GPU_MEMORY,
    MFU,
    STEP_TIME_S,
    TEST_ACCURACY,
    TFLOPS_PER_GPU,
    THROUGHPUT,
    TOKENS_PER_S,
    TRAINING_LOSS,
    Level,
    LogSummary,
    Observation,
    Per,
)


def test_an_observation_named_as_a_kpi_is_kept_in_the_catalogues_unit() -> None:
    kpis = {k.name: k for k in CATALOGUE}
    named = {name: unit for name, (unit, _) in FOLDS.items() if name in kpis}
    assert set(named) == {THROUGHPUT, TOKENS_PER_S, STEP_TIME_S, TFLOPS_PER_GPU, MFU,
                          TRAINING_LOSS, TEST_ACCURACY}  # fmt: skip
    assert named == {name: kpis[name].unit for name in named}
    assert FOLDS[GPU_MEMORY][0] == kpis["trainer_gpu_memory_mib"].unit == "MiB"


def test_observations_fold_into_the_summarys_fields_in_its_units() -> None:
    out = LogSummary()
    out.observe(Observation(THROUGHPUT, 120.5, "samples/s", level=Level.PASS, per=Per.JOB))
    out.observe(Observation(TOKENS_PER_S, 6697.0, "tokens/s", 10, Per.CARD))
    out.observe(Observation(MFU, 31.6, "%", 10, Per.CARD))
    out.observe(Observation(GPU_MEMORY, 33.94, "GiB", 10, kind="max reserved"))
    out.observe(Observation(TRAINING_LOSS, 7.8, "", 10))
    out.observe(Observation(TEST_ACCURACY, 57.0, "%", 2))
    assert out.best_throughput() == (120.5, Level.PASS) and out.throughput_per() is Per.JOB
    assert out.tokens_per_s.kept == [6697.0] and out.tokens_per_s.per is Per.CARD
    assert out.mfu.kept == [31.6 / 100.0]
    assert (out.framework_memory_mib, out.framework_memory_kind) == (33.94 * 1024.0, "max reserved")
    assert out.loss_by_step == {10: 7.8} and out.last_loss == 7.8
    assert out.accuracy_by_pass == {2: 0.57}
    assert out.observed == {}


def test_any_other_name_is_kept_as_observed_for_a_kpi_of_its_own() -> None:
    out = LogSummary(warmup_reports=1)
    for depth in (2.0, 4.0, 4.0):
        out.observe(Observation("prefetch_depth", depth, "batches", per=Per.PROCESS))
    running = out.observed["prefetch_depth"]
    assert running.per is Per.PROCESS and running.kept == [2.0, 4.0, 4.0]
    assert running.mean == 4.0  # the suite's one warm-up report dropped, as throughput's


def test_a_unit_the_summary_cannot_convert_is_a_readers_mistake() -> None:
    with pytest.raises(ValueError, match="tokens_per_s is kept in 'tokens/s', not 'samples/s'"):
        LogSummary().observe(Observation(TOKENS_PER_S, 1.0, "samples/s"))


def test_named_parts_of_one_evaluation_make_one_accuracy() -> None:
    # Stable Diffusion's FID and CLIP of the same step, each on its own :::MLLOG line
    out = LogSummary()
    out.observe(Observation(TEST_ACCURACY, 90.5, "", 1, kind="FID", time_s=10.0, part_of="1|"))
    out.observe(Observation(TEST_ACCURACY, 0.12, "", 1, kind="CLIP", time_s=11.0, part_of="1|"))
    assert out.accuracy_by_pass == {1: {"FID": 90.5, "CLIP": 0.12}}
    assert [p.time_s for p in out.accuracy_frontier] == [11.0]
