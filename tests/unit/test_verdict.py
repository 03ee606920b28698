"""The verdict and the 140-character headline GitHub shows."""

import pytest

from distkpi.domain.commit_status import State
from distkpi.domain.judging.table import render_table
from distkpi.domain.judging.verdict import decide, describe
from distkpi.domain.kpis.engine import ConfigKpis, ConfigStatus, RunKpis


def config(name: str, gpus: int, **kw: object) -> ConfigKpis:
    values: dict[str, object] = {
        "status": ConfigStatus.OK,
        "throughput": 100.0 * gpus,
        "time_to_accuracy_s": 600.0,
        "test_accuracy": 0.7,
        "trainer_gpu_memory_mib": 12000.0,
        "pserver_gpu_memory_mib": None,
        "problems": (),
        "speedup": 0.62 * gpus,
        "efficiency": 0.62,
        "accuracy_delta": 0.0004,
    }
    values.update(kw)
    return ConfigKpis(name=name, gpus=gpus, **values)  # type: ignore[arg-type]


def run(*configs: ConfigKpis) -> RunKpis:
    return RunKpis("r", "resnet50", configs[0].name, configs)


def test_golden_success_description() -> None:
    result = run(
        config("1x1", 1, speedup=1.0, efficiency=1.0, accuracy_delta=0.0),
        config("4x8", 32, speedup=19.8),
    )
    verdict = decide(result, 0.001)
    assert verdict.state is State.SUCCESS
    assert describe(result, verdict) == "32 GPUs 19.8x, eff 0.62, TTA 600s, acc Δ0.0004: ok"


def test_misaligned_accuracy_is_a_failure() -> None:
    result = run(config("1x1", 1), config("4x8", 32, accuracy_delta=-0.002))
    verdict = decide(result, 0.001)
    assert verdict.state is State.FAILURE
    assert describe(result, verdict).endswith("4x8 acc Δ-0.0020 > 0.001")


def test_a_failed_config_is_an_error_that_says_why() -> None:
    broken = config(
        "2x8",
        16,
        status=ConfigStatus.FAILED,
        throughput=None,
        problems=("node 1 exited with code 137",),
    )
    verdict = decide(run(config("1x1", 1), broken), 0.001)
    assert verdict.state is State.ERROR
    assert (
        describe(run(config("1x1", 1), broken), verdict)
        == "2x8 failed: node 1 exited with code 137"
    )


def test_descriptions_never_pass_140_characters() -> None:
    broken = config("2x8", 16, status=ConfigStatus.INCOMPLETE, problems=("x" * 500,))
    text = describe(run(config("1x1", 1), broken), decide(run(config("1x1", 1), broken), 0.001))
    assert len(text) == 140 and text.endswith("…")


def test_golden_description_with_the_delta_to_the_baseline() -> None:
    from distkpi.domain.judging.statistics import Judgement, KpiVerdict

    result = run(
        config("1x1", 1, speedup=1.0, efficiency=1.0, accuracy_delta=0.0),
        config("4x8", 32, speedup=19.8),
    )
    speedup = Judgement("4x8", "speedup", 19.8, 20.41, 19.0, 21.8, KpiVerdict.PASS)
    verdict = decide(result, 0.001, [speedup])
    assert (
        describe(result, verdict, [speedup])
        == "32 GPUs 19.8x (-3%), eff 0.62, TTA 600s, acc Δ0.0004: ok"
    )


def test_an_enforced_regression_is_a_failure_that_names_it() -> None:
    from distkpi.domain.judging.statistics import Judgement, KpiVerdict

    result = run(config("1x1", 1, accuracy_delta=0.0), config("4x8", 32))
    slower = Judgement("4x8", "throughput", 2400.0, 3200.0, 3000.0, 3400.0, KpiVerdict.REGRESSED)
    never = Judgement(
        "4x8",
        "time_to_accuracy_s",
        None,
        600.0,
        None,
        None,
        KpiVerdict.REGRESSED,
        "never reached the target",
    )
    verdict = decide(result, 0.001, [slower, never])
    assert verdict.state is State.FAILURE
    assert describe(result, verdict, [slower, never]).endswith(
        ": 4x8 tput -25%; 4x8 TTA never reached the target"
    )


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0.07, "TTA 0.07s"), (2.44, "TTA 2.4s"), (9.96, "TTA 10s"), (600.4, "TTA 600s")],
)
def test_a_short_time_to_accuracy_keeps_two_digits(seconds: float, shown: str) -> None:
    result = run(
        config("1x1", 1, speedup=1.0, efficiency=1.0, accuracy_delta=0.0),
        config("1x2", 2, speedup=1.6, efficiency=0.8, time_to_accuracy_s=seconds),
    )
    verdict = decide(result, 0.001)
    assert describe(result, verdict) == f"2 GPUs 1.6x, eff 0.80, {shown}, acc Δ0.0004: ok"
    table = render_table(result).splitlines()
    row = next(line for line in table if line.startswith("time to accuracy (s)"))
    assert row.split()[-1] == shown.removeprefix("TTA ").removesuffix("s")
