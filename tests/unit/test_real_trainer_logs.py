"""Real Hugging Face Trainer and PaddleNLP Trainer logs (tests/data/real/huggingface/ and
paddlenlp/, provenance in tests/data/real/README.md) against what their own lines say,
worked out here from those lines and not from the readers: the samples of the steps the
log numbers over the run's runtime, the last training loss, and the step time from each
logging interval's steps per second."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

from distkpi.domain.logs.logformats import parse_log
from distkpi.domain.logs.logsummary import Level, LogSummary, Per, warmup_count

DATA = Path(__file__).resolve().parents[1] / "data" / "real"
PADDLENLP = DATA / "paddlenlp"
COMPLETE = PADDLENLP / "fewclue_ocnli_a9.log"
STOPPED_EARLY = PADDLENLP / "fewclue_bustm_a9_ft_b_lr54.log"
HUGGING_FACE = DATA / "huggingface" / "ipex_llm_qlora_trl_sample_output.txt"


def _summary(path: Path) -> LogSummary:
    with path.open("rb") as stream:
        return parse_log(stream)


def _numbers(path: Path, key: str) -> list[float]:
    return [float(v) for v in re.findall(rf"\b{key}[:=]\s*([-+0-9.e]+)", path.read_text())]


def _dict_numbers(path: Path, key: str) -> list[float]:
    return [float(v) for v in re.findall(rf"'{key}': ([-+0-9.e]+)", path.read_text())]


def _paddle_truth(path: Path) -> dict[str, float]:
    text = path.read_text()
    batch = int(re.search(r"Total train batch size \(w\. parallel.*\) = (\d+)", text)[1])
    steps = _numbers(path, "global_step")
    runtime = _numbers(path, "train_runtime")[0]
    rates = [1.0 / v for v in _numbers(path, "interval_steps_per_second")]
    return {
        "throughput": steps[-1] * batch / runtime,
        "loss": _numbers(path, "loss")[-1],
        "step_time_s": statistics.median(rates[warmup_count(len(rates), None) :]),
        "stated": _numbers(path, "train_samples_per_second")[0],
    }


@pytest.mark.parametrize("path", [COMPLETE, STOPPED_EARLY], ids=lambda p: p.name)
def test_a_paddlenlp_log_gives_the_samples_per_second_of_the_steps_it_ran(path: Path) -> None:
    truth = _paddle_truth(path)
    summary = _summary(path)
    assert summary.best_throughput() == (
        pytest.approx(truth["throughput"], rel=1e-3),
        Level.SUMMARY,
    )
    assert summary.throughput_per() is Per.JOB
    assert summary.last_loss == truth["loss"]
    assert statistics.median(summary.step_time_s.values_after_warmup) == pytest.approx(
        truth["step_time_s"], rel=1e-9
    )


def test_the_complete_run_states_what_its_steps_give() -> None:
    truth = _paddle_truth(COMPLETE)
    assert truth["stated"] == pytest.approx(truth["throughput"], rel=1e-3)  # 52.008
    assert _summary(COMPLETE).problems == []


def test_a_run_stopped_early_is_read_over_the_steps_it_ran_and_says_so() -> None:
    """Early stopping ended it at step 500 of the 1000 planned; the Trainer's 102.424 is the
    planned samples over the runtime, twice what ran."""
    truth = _paddle_truth(STOPPED_EARLY)
    assert truth["stated"] == pytest.approx(2 * truth["throughput"], rel=1e-3)
    assert _summary(STOPPED_EARLY).problems == [
        "train_samples_per_second 102.424 counts 1000 planned steps; the log's last step is "
        "500: read as 51.2122"
    ]


def test_a_complete_run_whose_last_step_falls_between_logged_ones_is_not_corrected(
    tmp_path: Path,
) -> None:
    """The Trainer logs every logging_steps (10 here): a run of 400 steps whose last logged
    one is 390 ran them all, as one whose steps/s is rounded does."""
    text = COMPLETE.read_text().splitlines(keepends=True)
    last = [n for n, line in enumerate(text) if "global_step: 400" in line]
    assert last
    between = tmp_path / "between.log"
    between.write_text("".join(line for n, line in enumerate(text) if n not in last))
    summary = _summary(between)
    assert max(summary.loss_by_step) == 390
    assert summary.problems == []
    assert summary.best_throughput() == (_paddle_truth(COMPLETE)["stated"], Level.SUMMARY)


def test_a_hugging_face_trainer_output_gives_its_samples_per_second_and_last_loss() -> None:
    text = HUGGING_FACE.read_text()
    steps = int(re.search(r"TrainOutput\(global_step=(\d+)", text)[1])
    runtime = _dict_numbers(HUGGING_FACE, "train_runtime")[0]
    stated = _dict_numbers(HUGGING_FACE, "train_samples_per_second")[0]
    steps_per_s = _dict_numbers(HUGGING_FACE, "train_steps_per_second")[0]
    assert steps_per_s * runtime == pytest.approx(steps, rel=1e-3)  # the planned steps ran
    summary = _summary(HUGGING_FACE)
    assert summary.best_throughput() == (stated, Level.SUMMARY)
    assert summary.throughput_per() is Per.JOB
    assert summary.last_loss == _dict_numbers(HUGGING_FACE, "loss")[-1] == 2.5744
    assert summary.problems == []
