"""The readers of today's language-model training logs (domain/logs/readers/), on short
excerpts of the frameworks' own output (tests/data/llm/README.md says where each comes
from); every expected number follows from the excerpt's lines."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from distkpi.domain.accuracy import Direction
from distkpi.domain.logs.logformats import ParseSettings, parse_log
from distkpi.domain.logs.logsummary import Level, LogSummary, Per
from distkpi.domain.logs.normalise import normalise
from distkpi.domain.logs.readers.base import Reader
from distkpi.domain.logs.registry import NEEDLES, READERS, Registry

DATA = Path(__file__).resolve().parents[1] / "data" / "llm"


def read(name: str, settings: ParseSettings | None = None) -> LogSummary:
    with (DATA / name).open("rb") as log:
        return parse_log(log, settings or ParseSettings())


def read_text(text: str, settings: ParseSettings | None = None) -> LogSummary:
    return parse_log(io.BytesIO(text.encode()), settings or ParseSettings())


def test_megatron_samples_per_s_is_the_global_batch_over_the_iteration_time() -> None:
    out = read("megatron.log")
    times = [3.9027, 0.6894, 0.6454, 0.6135, 0.6244]  # the first dropped as warm-up
    assert out.step_time_s.mean == pytest.approx(sum(times[1:]) / 4)
    assert out.best_throughput() == (
        pytest.approx(sum(32 / t for t in times[1:]) / 4),
        Level.INTERVAL,
    )
    assert out.throughput_per() is Per.JOB
    assert out.tflops_per_gpu.mean == pytest.approx((1.0 + 1.1 + 1.2 + 1.2) / 4)
    assert out.global_batch == 32
    # every iteration was skipped by the fp16 loss scaler: counted apart, and no loss
    assert (out.skipped_iterations, out.nan_iterations, out.last_loss) == (5, 0, None)
    assert (out.framework_memory_mib, out.framework_memory_kind) == (
        623.57861328125,
        "max allocated",
    )


def test_megatron_deepspeed_behind_torchruns_default_prefix() -> None:
    out = read("megatron_deepspeed.log")
    assert out.loss_by_step == {10: 10.10967, 20: 8.861832}
    assert out.step_time_s.kept == [7.2310, 5.3551]
    # the log's own `samples per second: 17.927` is the same global batch / iteration time
    assert out.best_throughput() == (pytest.approx(96 / 5.3551), Level.INTERVAL)
    assert round(96 / 5.3551, 3) == 17.927
    assert out.tflops_per_gpu.kept == [101.54, 137.10]


def test_torchtitan_tps_with_thousands_separators_is_per_device() -> None:
    out = read("torchtitan.log")
    assert out.tokens_per_s.kept == [3502, 177138, 189694]
    assert out.tokens_per_s.per is Per.CARD
    assert out.tokens_per_s.mean == (177138 + 189694) / 2
    assert out.tflops_per_gpu.mean == pytest.approx((96.17 + 102.99) / 2)
    assert out.mfu.kept == pytest.approx([0.0019, 0.0972, 0.1041])
    assert out.loss_by_step == {1: 8.1661, 2: 6.1098, 3: 4.7947}
    assert out.framework_memory_mib == pytest.approx(2.49 * 1024)
    assert out.framework_memory_kind == "max reserved"
    assert out.best_throughput() is None  # tokens are never samples


def test_torchtitans_coloured_line() -> None:
    # metrics.py colours each field: `{color.red}step: ...{color.blue}tps: {round(tps):,}`
    line = (
        "[rank0]:\x1b[31mstep:  2  \x1b[32mloss:  6.1098  \x1b[33mgrad_norm:  4.6416  "
        "\x1b[34mmemory:  2.49GiB(3.14%)  \x1b[34mtps: 177,138  \x1b[36mtflops: 96.17  "
        "\x1b[32mmfu: 9.72%\x1b[39m\n"
    )
    out = read_text(line)
    assert out.tokens_per_s.kept == [177138]
    assert out.loss_by_step == {2: 6.1098}


def test_deepspeed_curr_samples_per_sec_is_the_jobs() -> None:
    out = read("deepspeed.log")
    assert out.best_throughput() == (pytest.approx(111.33670009091573), Level.ITERATION)
    assert out.throughput_per() is Per.JOB
    assert out.framework_memory_mib == pytest.approx(6.12 * 1024)
    assert out.framework_memory_kind == "max allocated"
    # the Trainer's loss dicts between DeepSpeed's lines: no step number, the last kept
    assert (out.last_loss, out.loss_by_step) == (0.5003, {})


def test_deepspeeds_skipped_steps_are_its_cumulative_count() -> None:
    out = read("deepspeed_cifar.log")
    assert out.skipped_iterations == 10
    assert out.best_throughput() == (pytest.approx(5892.428132408464), Level.ITERATION)


@pytest.mark.parametrize(
    ("line", "direction", "accuracy"),
    [
        # DeepSpeed-Chat step 1 and step 2 (training/utils, main.py of each step)
        ("ppl: 2.6923718452453613, loss: 0.9904", Direction.LOWER, 2.6923718452453613),
        # a perplexity is lower is better whatever the run states: the line fixes it
        ("ppl: 2.6923718452453613, loss: 0.9904", Direction.HIGHER, 2.6923718452453613),
        # random-LTD's gpt_finetuning example prints a dict
        (
            "'step':1047, 'ppl': 23.9859276900444, 'seq_len': 1024, "
            "'consume layer-tokens': 15732736",
            Direction.HIGHER,
            23.9859276900444,
        ),
        (
            "chosen_last_scores (higher is better) : 2.7, rejected_last_scores (lower is "
            "better) : 1.1, acc (higher is better) : 0.65",
            Direction.HIGHER,
            0.65,
        ),
        ("Accuracy of the network on the 10000 test images: 57 %", Direction.HIGHER, 0.57),
    ],
)
def test_deepspeed_examples_evaluations(
    line: str, direction: Direction, accuracy: float | None
) -> None:
    out = read_text(line + "\n", ParseSettings(direction=direction))
    assert out.last_accuracy == accuracy


def test_a_perplexity_line_fixes_the_logs_direction() -> None:
    out = read_text("ppl: 1.8085135221481323\n")
    assert out.direction is Direction.LOWER


def test_deepspeed_chats_tflops_is_read_and_its_samples_per_sec_is_not_the_jobs() -> None:
    # DeepSpeed-Chat step 2 DPO (dschat/utils/perf.py print_throughput), rank 0's micro batch
    line = (
        "Model Parameters: 0.331 B, Latency: 0.27s, TFLOPs: 1.02, Samples/sec: 7.28, "
        "Time/seq 0.14s, Batch Size: 2, Sequence Length: 512\n"
    )
    out = read_text(line)
    assert out.tflops_per_gpu.kept == [1.02]
    assert out.best_throughput() is None


def test_megatron_deepspeeds_interval_rate_wins_over_deepspeeds_timer_in_the_same_log() -> None:
    # Megatron-DeepSpeed's token-dropping run: the engine's timer before Megatron's line
    text = (
        "[2022-10-28 23:48:58,643] [INFO] [timer.py:198:stop] 0/10, "
        "RunningAvgSamplesPerSec=446.08298723123164, CurrSamplesPerSec=440.9095860530664, "
        "MemAllocated=1.64GB, MaxMemAllocated=5.66GB\n"
        " iteration       10/ 1716613 | consumed samples:         2560 | consumed tokens:  "
        "    5242880 | elapsed time per iteration (ms): 849.6 | learning rate: 5.308E-07 | "
        "global batch size:   256 | lm loss: 1.069056E+01 | loss scale: 2048.0 | number of "
        "skipped iterations:   0 | number of nan iterations:   0 |\n"
    )
    out = read_text(text)
    assert out.best_throughput() == (pytest.approx(256 / 0.8496), Level.INTERVAL)
    # consumed tokens / consumed samples = 2048 tokens per sample
    assert out.tokens_per_s.kept == [pytest.approx(256 * 2048 / 0.8496)]
    assert out.tokens_per_s.per is Per.JOB


def test_maxtexts_rates_are_total_work_over_total_time() -> None:
    # MaxText under asynchronous dispatch: a step timed 0.01 s reports 60x the rate
    text = "".join(
        f"completed step: {n}, seconds: {s}, TFLOP/s/device: {t}, Tokens/s/device: {k}, "
        f"total_weights: 65536, loss: 12.9{n}\n"
        for n, s, t, k in [
            (0, 30.0, 1.0, 100.0),
            (1, 1.2, 200.0, 13000.0),
            (2, 0.01, 12000.0, 780000.0),
        ]
    )
    out = read_text(text)
    assert out.tokens_per_s.mean == pytest.approx((13000.0 * 1.2 + 780000.0 * 0.01) / 1.21)
    assert out.tflops_per_gpu.mean == pytest.approx((200.0 * 1.2 + 12000.0 * 0.01) / 1.21)
    assert out.last_loss == 12.92


def test_mllog_train_loss_is_the_training_loss() -> None:
    # MLPerf v4.0 Llama 2 70B LoRA (JuniperNetworks), mlperf_logging_utils.py
    line = (
        ':::MLLOG {"namespace": "", "time_ms": 1715157702566, "event_type": "POINT_IN_TIME", '
        '"key": "train_loss", "value": 1.2826, "metadata": {"file": "mlperf_logging_utils.py", '
        '"lineno": 102, "samples_count": 3760}}\n'
    )
    out = read_text(line)
    assert (out.last_loss, out.loss_by_step, out.last_accuracy) == (1.2826, {}, None)


def test_hugging_face_trainer() -> None:
    out = read("huggingface.log")
    assert out.accuracy_by_pass == {2: 0.8406862745098039, 3: 0.8382352941176471}
    assert out.best_throughput() == (25.132, Level.SUMMARY)
    assert out.throughput_per() is Per.JOB
    assert out.last_loss == 0.28


def test_an_evaluation_loss_is_the_quality_only_of_a_lower_is_better_run() -> None:
    line = "{'eval_loss': 1.423, 'eval_perplexity': 4.15, 'eval_runtime': 3.5}\n"
    assert read_text(line).last_accuracy is None
    assert read_text(line, ParseSettings(direction=Direction.LOWER)).last_accuracy == 1.423


def test_trainer_log_metrics_table() -> None:
    text = "  eval_accuracy           =     0.47\n  train_samples_per_second =      8.021\n"
    out = read_text(text)
    assert out.last_accuracy == 0.47
    assert out.best_throughput() == (8.021, Level.SUMMARY)


def test_paddlenlp_trainer() -> None:
    out = read("paddlenlp.log")
    assert out.loss_by_step == {1: 12.0635252, 2: 12.05887604}
    assert out.best_throughput() == (4.6305, Level.SUMMARY)  # train_samples_per_second
    assert out.throughput[Level.ITERATION].kept == [0.8682, 3.913]
    assert out.tokens_per_s.kept == [889.0448, 4006.9441]  # the run's `ips:` total left out
    assert out.tflops_per_gpu.kept == [2.77, 12.49]
    assert out.step_time_s.kept == pytest.approx([1 / 0.8682, 1 / 3.913])
    assert out.framework_memory_mib == pytest.approx(12.307440280914307 * 1024)
    assert out.last_accuracy is None  # test_loss is not an accuracy


def test_paddle_ips_in_tokens_is_tokens_never_samples() -> None:
    out = read_text("Effective Tokens per second: 4741.68\nips: 4741.68 tokens/s\n")
    assert out.best_throughput() is None
    assert out.tokens_per_s.kept == [4741.68]
    assert out.tokens_per_s.per is Per.CARD


def test_paddle_gpt_step_line_in_tokens_is_per_card() -> None:
    # PaddleFleetX's GPT docs, an 8-card run's first step: ips is ips_total over the cards
    line = (
        "[2022-08-15 08:36:12,563] [    INFO] - global step 1, epoch: 0, batch: 0, loss: "
        "11.255846024, avg_reader_cost: 0.10940 sec, avg_batch_cost: 4.78177 sec, speed: 0.21 "
        "step/s, ips_total: 13705 tokens/s, ips: 1713 tokens/s, learning rate: 5.55556e-09\n"
    )
    out = read_text(line)
    assert out.tokens_per_s.kept == [1713]
    assert round(13705 / 8) == 1713
    assert out.loss_by_step == {1: 11.255846024}
    assert out.best_throughput() is None


def test_maxtext() -> None:
    out = read("maxtext.log")
    assert out.step_time_s.kept == [131.474]
    assert out.tflops_per_gpu.kept == [314.530]
    assert out.tokens_per_s.kept == [124.618]
    assert out.loss_by_step == {10: 4.453}


# -- prefixes -------------------------------------------------------------------------------

MAXTEXT = (DATA / "maxtext.log").read_text().strip()


@pytest.mark.parametrize(
    "prefix",
    [
        "[rank0]:",
        "[rank12]: ",
        "[default3]: ",
        "0: ",
        " 3: ",
        "12: [rank0]:",
        "[1,0]<stdout>:",
        "\x1b[32m",
    ],
)
def test_launcher_prefixes_are_stripped(prefix: str) -> None:
    assert normalise(prefix + MAXTEXT) == MAXTEXT
    assert read_text(prefix + MAXTEXT + "\n").loss_by_step == {10: 4.453}


def test_a_line_that_only_starts_with_a_number_is_left_as_it_is() -> None:
    line = "10  images/sec: 430.1 +/- 0.0 (jitter = 0.0)  7.0"
    assert normalise(line) == line


# -- NaN and Inf ----------------------------------------------------------------------------


def test_a_nan_loss_is_counted_and_the_evaluations_around_it_are_read() -> None:
    # fluid_benchmark's per-pass line (`Pass: %d, Loss: %f, Test Accuracy: %f`), the loss
    # printed by %f as `nan` once training diverged
    text = (
        "Pass: 0, Loss: 2.302585 , Test Accuracy: 0.113500\n"
        "Pass: 1, Loss: nan , Test Accuracy: 0.098000\n"
        "Pass: 2, Loss: nan , Test Accuracy: 0.098000\n"
    )
    out = read_text(text)
    assert out.accuracy_by_pass == {0: 0.1135, 1: 0.098, 2: 0.098}
    assert out.nonfinite_losses == 2


@pytest.mark.parametrize("text", ["NAN", "nan", "-nan", "INF", "-inf"])
def test_megatron_nan_loss_and_nan_iterations(text: str) -> None:
    # the Megatron-DeepSpeed line above with its loss as `{:.6E}` prints a NaN or an
    # infinity, and the interval's NaN count Megatron then reports
    line = (
        f"iteration       30/ 3125000 | consumed samples:         2880 | elapsed time per "
        f"iteration (s): 5.6192 | global batch size:    96 | lm loss: {text} | "
        f"number of skipped iterations:   1 | number of nan iterations:   1 |\n"
    )
    out = read_text(line * 2)
    assert (out.nonfinite_losses, out.first_nonfinite_step, out.nan_iterations) == (2, 30, 2)
    assert out.loss_by_step == {}


def test_torchtitan_nan_loss() -> None:
    # the excerpt's step 3 as torchtitan prints a NaN loss (`{loss:7.4f}`: `    nan`)
    line = (
        "[rank0]:step:  4  loss:     nan  memory:  2.49GiB(3.14%)  tps: 189,694  "
        "tflops: 102.99  mfu: 10.41%\n"
    )
    out = read_text(line)
    assert (out.nonfinite_losses, out.first_nonfinite_step) == (1, 4)


def test_hugging_face_nan_loss() -> None:
    out = read_text("{'loss': nan, 'grad_norm': nan, 'learning_rate': 1e-05, 'epoch': 0.5}\n")
    assert out.nonfinite_losses == 1


# -- the registry ---------------------------------------------------------------------------


def test_every_readers_needles_are_the_scanners() -> None:
    assert {n for r in READERS for n in r.needles} == set(NEEDLES)
    assert len({r.name for r in READERS}) == len(READERS)


def test_a_new_family_is_a_reader_in_the_registry_and_nothing_else() -> None:
    def fake(line: str, out: LogSummary) -> bool:
        at = line.find("fake tps=")
        if at == -1:
            return False
        out.tokens_per_s.add(float(line[at + len("fake tps=") :]))
        return True

    registry = Registry((*READERS, Reader("fake", (b"fake tps=",), fake)))
    text = b"noise\n[rank0]:fake tps=12.5\nnoise\n"
    assert parse_log(io.BytesIO(text), ParseSettings(), registry).tokens_per_s.kept == [12.5]
    assert parse_log(io.BytesIO(text), ParseSettings()).tokens_per_s.kept == []
