"""The KPIs of language-model training, from log summaries as the readers fill them.

The numbers are those of lines real frameworks print (quoted where used): torchtitan's
`step: 10 loss: 7.8 memory: 33.94GiB(42.81%) tps: 6,697 tflops: 312.4 mfu: 31.6%` (per
card, behind torchrun's `[rank0]:` prefix) and Megatron-LM's `elapsed time per iteration
(ms): 12137.8 | throughput per GPU (TFLOP/s/GPU): 872.5 | ... | global batch size: 1024`
(per job)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from distkpi.domain.accuracy import Direction
from distkpi.domain.contracts import ConfigSpec, NodeHardware, NodeManifest, RunSpec
from distkpi.domain.judging.evaluation import evaluate
from distkpi.domain.judging.settings import VerdictSettings
from distkpi.domain.judging.table import render_table
from distkpi.domain.kpis.engine import (
    ConfigEvidence,
    ConfigKpis,
    ConfigStatus,
    ParsedGpuMemory,
    ParsedLog,
    RunKpis,
    config_kpis,
    run_kpis,
)
from distkpi.domain.kpis.golden import golden_from, parse_golden
from distkpi.domain.kpis.gpu_peaks import peak_tflops
from distkpi.domain.logs.gpumemory import GpuMemorySummary
from distkpi.domain.logs.logsummary import LogSummary
from distkpi.domain.patterns import Per
from distkpi.exceptions import ContractError
from distkpi_cli.main import main
from tests.unit.test_cli_kpis import EXAMPLE

H100 = NodeHardware(instance_type="p5.48xlarge", gpu_model="NVIDIA H100 80GB HBM3", gpu_count=8)
A100 = NodeHardware(instance_type="p4d.24xlarge", gpu_model="NVIDIA A100-SXM4-40GB", gpu_count=8)
WHEN = datetime(2026, 11, 30, tzinfo=UTC)


def run_spec(**training: Any) -> RunSpec:
    return RunSpec.model_validate(
        {
            "schema": 1,
            "run_id": "run-1",
            "repo": "org/repo",
            "sha": "a" * 40,
            "ref": "refs/heads/main",
            "model": "llama",
            "target_accuracy": 0.5,
            "accuracy_pass": 0,
            "accuracy_tolerance": 0.01,
            "configs": [
                {
                    "name": "2x4",
                    "trainers": 2,
                    "gpus_per_trainer": 4,
                    "pservers": 0,
                    "batch_size": 8,
                    "nodes": 2,
                }
            ],
            **training,
        }
    )


def summary(**fields: Any) -> LogSummary:
    """A summary as a reader fills it: running means get their reports in order."""
    s = LogSummary(warmup_reports=1)
    for name in ("tokens_per_s", "step_time_s", "tflops_per_gpu", "mfu"):
        running = getattr(s, name)
        if name in fields:
            reports = fields.pop(name)
            if isinstance(reports, tuple):
                reports, running.per = reports
            for value in reports:
                running.add(value)
    for step, loss in fields.pop("losses", {}).items():
        s.add_loss(step, loss)
    memory = fields.pop("memory", None)
    if memory is not None:
        s.add_framework_memory(*memory)
    for name, value in fields.items():
        setattr(s, name, value)
    return s


def evidence(
    summaries: list[LogSummary],
    hardware: NodeHardware | None = H100,
    gpu_peak_mib: float | None = None,
    name: str = "2x4",
) -> ConfigEvidence:
    spec = ConfigSpec(name=name, trainers=2, gpus_per_trainer=4, pservers=0, batch_size=8, nodes=2)
    manifests = {
        node: NodeManifest.model_validate(
            {
                "schema": 1,
                "node": node,
                "exit_code": 0,
                "started_at": WHEN,
                "finished_at": WHEN,
                "files": [
                    {"path": f"trainer-{node}.log", "role": "trainer", "rank": node, "kind": "log"}
                ],
                "hardware": hardware.model_dump() if hardware else None,
            }
        )
        for node in range(2)
    }
    logs = [ParsedLog(f"trainer-{i}.log", "trainer", i, s) for i, s in enumerate(summaries)]
    memory = []
    if gpu_peak_mib is not None:
        memory = [ParsedGpuMemory("trainer-0.csv", "trainer", 0, GpuMemorySummary(gpu_peak_mib))]
    return ConfigEvidence(spec, manifests, logs, memory)


def kpis_of(summaries: list[LogSummary], run: RunSpec | None = None, **kw: Any) -> ConfigKpis:
    run = run or run_spec()
    return config_kpis(evidence(summaries, **kw), 0.5, 0, Direction.HIGHER, run=run)


def torchtitan(**more: Any) -> LogSummary:
    # steps 1..3 of `tps: 6,697 tflops: 312.4 mfu: 31.6%`, the first a slower warm-up
    fields: dict[str, Any] = {
        "tokens_per_s": [2_000.0, 6_697.0, 6_697.0],
        "tflops_per_gpu": [90.0, 312.4, 312.4],
        "step_time_s": [3.0, 1.22, 1.24],
        "losses": {1: 10.9, 2: 9.1, 3: 7.8},
    }
    return summary(**(fields | more))


def test_tokens_per_card_are_summed_over_the_job_and_samples_need_a_sequence_length() -> None:
    with_len = kpis_of([torchtitan(), torchtitan()], run_spec(seq_len=8192))
    # per card: the logs' mean (warm-up dropped) times the config's 8 GPUs
    assert with_len.value("tokens_per_s") == pytest.approx(6_697 * 8)
    assert with_len.throughput == pytest.approx(6_697 * 8 / 8192)
    assert with_len.status is ConfigStatus.OK
    without = kpis_of([torchtitan(), torchtitan()])
    assert without.throughput is None  # never a token count labelled samples
    assert (
        "throughput (samples/s) unknown: the logs state 53576 tokens/s but no sequence length "
        "(the suite's seq_len)"
    ) in without.problems


def test_a_logs_own_sequence_length_turns_tokens_into_samples() -> None:
    kpis = kpis_of([torchtitan(seq_len=4096), torchtitan(seq_len=4096)])
    assert kpis.throughput == pytest.approx(6_697 * 8 / 4096)


def test_job_level_tokens_are_taken_as_they_are() -> None:
    job = summary(tokens_per_s=([100.0, 50_000.0], Per.JOB))
    assert kpis_of([job, summary()]).value("tokens_per_s") == 50_000.0


def test_step_time_is_the_median_after_the_warm_up_and_loss_the_last_finite() -> None:
    kpis = kpis_of([torchtitan(), torchtitan(step_time_s=[3.0, 1.30, 1.20, 1.25])])
    assert kpis.value("step_time_s") == pytest.approx(1.24)  # of 1.22 1.24 1.30 1.20 1.25
    assert kpis.value("loss") == 7.8
    assert kpis.value("tflops_per_gpu") == pytest.approx(312.4)


def test_tflops_from_the_suites_flops_per_token_and_mfu_from_the_gpus_peak() -> None:
    logs = [summary(tokens_per_s=[1.0, 8_000.0]), summary(tokens_per_s=[1.0, 8_000.0])]
    kpis = kpis_of(logs, run_spec(flops_per_token=6e9, dtype="bf16"))
    # 6e9 FLOPs/token x 8,000 tokens/s per card = 48 TFLOP/s per GPU, of an H100's 989.4
    assert kpis.value("tflops_per_gpu") == pytest.approx(48.0)
    assert kpis.value("mfu") == pytest.approx(48.0 / 989.4)


def test_tflops_by_the_6n_plus_attention_rule() -> None:
    logs = [summary(tokens_per_s=[1.0, 8_000.0]), summary(tokens_per_s=[1.0, 8_000.0])]
    shape = {"params": 1e9, "layers": 16, "hidden": 2048}
    kpis = kpis_of(logs, run_spec(model_flops=shape, seq_len=1024))
    per_token = 6 * 1e9 + 12 * 16 * 2048 * 1024
    assert kpis.value("tflops_per_gpu") == pytest.approx(per_token * 8_000 / 1e12)
    assert kpis.value("mfu") is None  # no dtype: no peak to divide by


def test_an_mfu_above_1_is_a_problem_naming_both_numbers() -> None:
    logs = [summary(tflops_per_gpu=[1.0, 400.0]), summary(tflops_per_gpu=[1.0, 400.0])]
    kpis = kpis_of(logs, run_spec(dtype="bf16"), hardware=A100)
    assert kpis.value("mfu") == pytest.approx(400 / 312)
    assert (
        "MFU 1.28 is above 1 (400 TFLOP/s per GPU over the NVIDIA A100-SXM4-40GB's bf16 peak "
        "of 312): check the FLOP count or the dtype"
    ) in kpis.problems


def test_the_frameworks_own_mfu_wins() -> None:
    logs = [torchtitan(mfu=[0.1, 0.316]), torchtitan(mfu=[0.1, 0.316])]
    kpis = kpis_of(logs, run_spec(dtype="bf16"))
    assert kpis.value("mfu") == pytest.approx(0.316)


def test_a_frameworks_tflops_that_disagrees_with_its_step_time_is_a_problem() -> None:
    # Megatron: 872.5 TFLOP/s/GPU and 12,137.8 ms per iteration of 1,024 x 4,096 tokens
    megatron = summary(
        tflops_per_gpu=([872.5, 872.5], Per.CARD),
        step_time_s=([12.1378, 12.1378], Per.JOB),
        global_batch=1024,
        seq_len=4096,
    )
    # FLOPs per token that make the step time agree: 872.5e12 x 12.1378 s x 8 / 1024 / 4096
    agreeing = 872.5e12 * 12.1378 * 8 / (1024 * 4096)
    fine = kpis_of([megatron, summary()], run_spec(flops_per_token=agreeing * 1.05))
    assert not [p for p in fine.problems if "disagrees" in p]
    off = kpis_of([megatron, summary()], run_spec(flops_per_token=agreeing * 1.5))
    (problem,) = [p for p in off.problems if "disagrees" in p]
    assert problem.startswith("the framework's 872.5 TFLOP/s per GPU disagrees with its own")
    assert problem.endswith("on 8 GPU(s) is 1309 TFLOP/s per GPU")


def test_gpu_memory_from_the_frameworks_lines_and_which_one_when_both() -> None:
    own = torchtitan(memory=(34_754.6, "max reserved"))
    alone = kpis_of([own, torchtitan()])
    assert alone.trainer_gpu_memory_mib == pytest.approx(34_754.6)
    assert "trainer GPU memory is the framework's max reserved (no nvidia-smi samples)" in (
        alone.problems
    )
    both = kpis_of([own, torchtitan()], gpu_peak_mib=36_000.0)
    assert both.trainer_gpu_memory_mib == 36_000.0
    assert (
        "trainer GPU memory is nvidia-smi's peak; the framework's own says 34755 MiB (max reserved)"
    ) in both.problems


def test_the_llm_kpis_are_null_where_no_log_states_them_and_rows_only_where_measured() -> None:
    kpis = kpis_of([summary(), summary()])
    record = kpis.to_json()
    for name in ("tokens_per_s", "step_time_s", "tflops_per_gpu", "mfu", "loss"):
        assert record[name] is None
    assert record["diverged"] is False
    assert ConfigKpis.from_record({**kpis.to_record()}) == kpis
    seed = RunKpis("run-1", "llama", "2x4", (kpis,))
    assert "tokens/s" not in render_table(seed)
    llm = RunKpis("run-1", "llama", "2x4", (kpis_of([torchtitan(), torchtitan()]),))
    table = render_table(llm)
    for label in ("tokens/s", "step time (s)", "TFLOP/s per GPU", "final training loss"):
        assert label in table
    assert "MFU" not in table  # no config measured it


def test_peaks_of_the_table() -> None:
    assert peak_tflops("NVIDIA H200", "bf16") == 989.4
    assert peak_tflops("NVIDIA H100 PCIe", "bf16") == 756.5
    assert peak_tflops("Tesla V100-SXM2-16GB", "fp16") == 125.0
    assert peak_tflops("Tesla V100-SXM2-16GB", "bf16") is None
    assert peak_tflops("NVIDIA L40S", "bf16") == 362.05
    assert peak_tflops("NVIDIA B200", "bf16") == 2250.0


# -- NaN and Inf -------------------------------------------------------------------------
def _diverging() -> LogSummary:
    return torchtitan(losses={1: 10.9, 2: 9.1, 3: float("nan"), 4: float("inf")})


def test_a_nan_loss_and_a_frameworks_nan_iterations_are_problems() -> None:
    kpis = kpis_of([_diverging(), summary(nan_iterations=3)])
    assert kpis.diverged is True
    assert (
        "trainer 0 (trainer-0.log): 2 NaN or infinite training loss(es), the first at step 3"
        in (kpis.problems)
    )
    assert "trainer 1 (trainer-1.log): the framework counts 3 NaN or skipped iteration(s)" in (
        kpis.problems
    )
    assert kpis.value("loss") == 9.1  # the last finite one
    assert kpis.status is ConfigStatus.OK  # judged, never an error


@pytest.mark.parametrize("enforced", [("test_accuracy",), ("loss",), ("time_to_accuracy_s",)])
def test_under_an_enforced_convergence_kpi_a_diverged_run_fails(enforced: tuple[str, ...]) -> None:
    kpis = kpis_of([_diverging(), torchtitan()])
    run = RunKpis("run-1", "llama", "2x4", (kpis,))
    settings = VerdictSettings(enforced=enforced)
    evaluation = evaluate(run, [], settings, 0.01)
    (judged,) = [j for j in evaluation.judgements if j.kpi == enforced[0]]
    assert judged.verdict.value == "regressed"
    assert judged.why == "training diverged: NaN or infinite loss"
    assert evaluation.verdict.state.value == "failure"


def test_a_diverged_run_whose_suite_enforces_speed_only_still_passes() -> None:
    kpis = kpis_of([_diverging(), torchtitan()])
    run = RunKpis("run-1", "llama", "2x4", (kpis,))
    evaluation = evaluate(run, [], VerdictSettings(enforced=("tokens_per_s",)), 0.01)
    assert evaluation.verdict.state.value == "success"


# -- time and steps to a target training loss (suite quality: loss) ------------------------
def test_time_and_steps_to_a_target_training_loss() -> None:
    run = run_spec(quality="loss", accuracy_direction="lower", target_accuracy=8.0, accuracy_pass=0)
    kpis = kpis_of([torchtitan(), torchtitan()], run)
    # loss 10.9, 9.1, 7.8 at steps 1..3: step 3 reaches 8.0; steps timed 3.0, 1.22, 1.24 s
    assert kpis.value("steps_to_accuracy") == 3.0
    assert kpis.time_to_accuracy_s == pytest.approx(3 * (3.0 + 1.22 + 1.24) / 3)
    assert kpis.converged is True
    never = kpis_of([torchtitan(), torchtitan()], run.model_copy(update={"target_accuracy": 5.0}))
    assert never.time_to_accuracy_s is None and never.converged is False
    assert "the training loss never reached the target 5 (best 7.8)" in never.problems


def test_quality_loss_needs_a_falling_direction() -> None:
    with pytest.raises(ValueError, match="quality: loss needs accuracy_direction: lower"):
        run_spec(quality="loss")


# -- loss-curve alignment across configs (suite alignment) ---------------------------------
def _two_configs(wide_losses: dict[int, float], **training: Any) -> RunKpis:
    shape = {"trainers": 2, "gpus_per_trainer": 4, "pservers": 0, "batch_size": 8, "nodes": 2}
    run = run_spec(configs=[{"name": "base", **shape}, {"name": "wide", **shape}], **training)
    base_losses = {step: 10.0 - 0.5 * step for step in range(1, 13)}
    configs = {
        name: config_kpis(evidence([summary(losses=losses), summary()], name=name), 0.5, 0, run=run)
        for name, losses in (("base", base_losses), ("wide", wide_losses))
    }
    return run_kpis(run, configs)


def test_a_config_whose_loss_curve_leaves_the_bases_fails_an_enforced_alignment() -> None:
    # the wide config follows the base's curve to step 10, then is 5% higher at step 11
    wide = {step: 10.0 - 0.5 * step for step in range(1, 13)} | {11: 4.5 * 1.05}
    run = _two_configs(wide, alignment={"max_rel_diff": 0.02, "from_step": 2})
    config = run.config("wide")
    assert config.value("loss_alignment") == pytest.approx(0.05)
    assert config.loss_alignment_step == 11 and config.aligned is False
    assert (
        "loss curve 5.00% from the base config base's at step 11 (4.725 vs 4.5), beyond 2.00%"
    ) in config.problems
    assert run.config("base").value("loss_alignment") is None  # the curve it is measured by
    evaluation = evaluate(run, [], VerdictSettings(enforced=("loss_alignment",)), 0.01)
    aligned = [j for j in evaluation.judgements if j.kpi == "loss_alignment"]
    assert {j.config: j.verdict.value for j in aligned} == {
        "base": "no-baseline",
        "wide": "regressed",
    }
    (judged,) = [j for j in aligned if j.config == "wide"]
    assert judged.why == "beyond the suite's limit (alignment.max_rel_diff)"
    assert evaluation.verdict.state.value == "failure"
    # not enforced: reported, never failing
    relaxed = evaluate(run, [], VerdictSettings(), 0.01)
    assert relaxed.verdict.state.value == "success"


def test_alignment_counts_only_the_steps_both_ran_from_its_first_step() -> None:
    # a first step far off (before from_step) and steps the base never ran do not count
    wide = {1: 20.0, 2: 9.0, 3: 8.5, 40: 1.0}
    run = _two_configs(wide, alignment={"max_rel_diff": 0.02, "from_step": 2})
    config = run.config("wide")
    assert config.value("loss_alignment") == pytest.approx(0.0)
    assert config.aligned is True and config.loss_alignment_step in (2, 3)
    restored = ConfigKpis.from_record(config.to_record())
    assert restored.loss_curve == config.loss_curve and restored.aligned is True


# -- a golden loss curve (suite golden) ------------------------------------------------------
def test_a_golden_curve_from_runs_judges_a_config_step_by_step() -> None:
    runs = [
        {1: 10.0, 2: 9.0, 3: 8.0},
        {1: 10.2, 2: 9.1, 3: 8.1},
        {1: 9.8, 2: 8.9, 3: 7.9, 4: 7.0},  # a step the others lack is left out
    ]
    golden = golden_from(runs, 0.01)
    assert golden.to_json() == {
        "lm loss": {
            "start_step": 1,
            "end_step": 3,
            "step_interval": 1,
            "values": {"1": 10.0, "2": 9.0, "3": 8.0},
            "min": {"1": 9.8, "2": 8.9, "3": 7.9},
            "max": {"1": 10.2, "2": 9.1, "3": 8.1},
        },
        "max_rel_diff": 0.01,
        "runs": 3,
    }
    assert parse_golden(json.dumps(golden.to_json()).encode(), "golden.json") == golden
    inside = summary(losses={1: 10.25, 2: 9.0, 3: 7.85})
    within = evidence([inside, summary()])
    within.golden = golden
    kpis = config_kpis(within, 0.5, 0, run=run_spec())
    assert kpis.value("golden_loss") == pytest.approx(0.025)
    assert kpis.beyond_limits == ()
    outside = evidence([summary(losses={1: 10.0, 2: 9.5, 3: 8.0}), summary()])
    outside.golden = golden
    off = config_kpis(outside, 0.5, 0, run=run_spec())
    assert off.beyond_limits == ("golden_loss",)
    assert (
        "loss outside the golden curve at 1 step(s), the first step 2: 9.5 against 8.9..9.1 ± 1.00%"
        in (off.problems)
    )
    judged = evaluate(
        RunKpis("run-1", "llama", "2x4", (off,)),
        [],
        VerdictSettings(enforced=("golden_loss",)),
        0.01,
    )
    assert judged.verdict.state.value == "failure"


def test_a_golden_file_that_is_not_one_is_a_clear_error() -> None:
    with pytest.raises(ContractError) as raised:
        parse_golden(b'{"lm loss": {"values": {"1": "high"}}}', "suite/golden.json")
    assert str(raised.value).startswith("golden curve suite/golden.json: lm loss.start_step: ")


def test_distkpi_golden_needs_as_many_runs_with_a_loss_curve(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the seed's example run has no training loss: none of its runs can make a golden curve
    assert main(["golden", "--from", str(EXAMPLE), "--runs", "2"]) == 2
    assert capsys.readouterr().err == (
        f"distkpi golden: 2 runs asked, {EXAMPLE} has 0 with a training loss curve\n"
    )
