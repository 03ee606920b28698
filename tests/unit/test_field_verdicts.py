"""Verdicts on what the field's logs give (issue 23): a lower-is-better test accuracy, an
enforced KPI a run does not report, a run that did not reach its target."""

from distkpi.domain.accuracy import Direction
from distkpi.domain.commit_status import State
from distkpi.domain.judging.evaluation import evaluate
from distkpi.domain.judging.history import HistoryRow
from distkpi.domain.judging.settings import KPIS, VerdictSettings
from distkpi.domain.judging.statistics import KpiVerdict
from distkpi.domain.kpis.engine import ConfigKpis, ConfigStatus, RunKpis

ACCURACY_ONLY = VerdictSettings(enforced=("test_accuracy",))


def config(name: str = "1x8", **kw: object) -> ConfigKpis:
    values: dict[str, object] = {
        "gpus": 8,
        "status": ConfigStatus.OK,
        "throughput": 800.0,
        "time_to_accuracy_s": 1000.0,
        "test_accuracy": 0.058,
        "trainer_gpu_memory_mib": 12000.0,
        "pserver_gpu_memory_mib": None,
        "problems": (),
        "speedup": 1.0,
        "efficiency": 1.0,
        "converged": True,
    }
    values.update(kw)
    return ConfigKpis(name=name, **values)  # type: ignore[arg-type]


def run(*configs: ConfigKpis, direction: Direction = Direction.HIGHER) -> RunKpis:
    return RunKpis("r", "rnnt", configs[0].name, configs, direction)


def history(kpi: str, values: list[float], config: str = "1x8") -> list[HistoryRow]:
    return [
        HistoryRow(
            f"2026-11-{i + 1:02d}T00:00:00Z",
            "o/r",
            "develop",
            "rnnt",
            config,
            f"{i:040d}",
            f"r{i}",
            kpi,
            v,
        )
        for i, v in enumerate(values)
    ]


WER_HISTORY = history("test_accuracy", [0.0575, 0.0578, 0.0576, 0.0579, 0.0577, 0.0576])


def judged(evaluation: object, kpi: str) -> KpiVerdict:
    return next(j.verdict for j in evaluation.judgements if j.kpi == kpi)  # type: ignore[attr-defined]


def test_a_lower_is_better_accuracy_regresses_when_it_rises() -> None:
    worse = run(config(test_accuracy=0.070), direction=Direction.LOWER)
    result = evaluate(worse, WER_HISTORY, ACCURACY_ONLY, 0.01)
    assert judged(result, "test_accuracy") is KpiVerdict.REGRESSED
    assert result.verdict.state is State.FAILURE
    better = run(config(test_accuracy=0.050), direction=Direction.LOWER)
    result = evaluate(better, WER_HISTORY, ACCURACY_ONLY, 0.01)
    assert judged(result, "test_accuracy") is KpiVerdict.IMPROVED
    assert result.verdict.state is State.SUCCESS


def test_the_same_rise_is_an_improvement_when_higher_is_better() -> None:
    result = evaluate(run(config(test_accuracy=0.070)), WER_HISTORY, ACCURACY_ONLY, 0.01)
    assert judged(result, "test_accuracy") is KpiVerdict.IMPROVED


def test_an_enforced_kpi_not_reported_is_an_error_naming_config_and_kpi() -> None:
    settings = VerdictSettings(enforced=("throughput", "time_to_accuracy_s"))
    silent = config(throughput=None, speedup=None, efficiency=None)
    result = evaluate(run(silent), [], settings, 0.01)
    assert judged(result, "throughput") is KpiVerdict.MISSING
    assert result.verdict.state is State.ERROR
    assert result.verdict.reasons == ("1x8 throughput not reported",)
    assert result.description == "1x8 throughput not reported (enforced)"


def test_without_an_enforced_list_a_kpi_not_reported_is_judged_where_reported() -> None:
    # a suite that lists no `enforced` judges every KPI a config reports; a CPU run has no
    # GPU memory, and that is no error
    result = evaluate(run(config(trainer_gpu_memory_mib=None)), [], VerdictSettings(), 0.01)
    assert judged(result, "trainer_gpu_memory_mib") is KpiVerdict.NO_BASELINE
    assert result.verdict.state is State.SUCCESS
    stored = VerdictSettings.model_validate(VerdictSettings().model_dump(mode="json"))
    assert stored.enforced_by_suite is False
    listed = VerdictSettings.model_validate({"enforced": ["throughput"]})
    assert VerdictSettings.model_validate(listed.model_dump(mode="json")).enforced_by_suite


def test_a_kpi_that_is_not_enforced_may_be_missing() -> None:
    settings = VerdictSettings(enforced=("time_to_accuracy_s",))
    result = evaluate(run(config(throughput=None, speedup=None, efficiency=None)), [], settings, 0)
    assert result.verdict.state is State.SUCCESS


def test_pserver_memory_is_not_missing_without_pservers() -> None:
    every = VerdictSettings(enforced=KPIS)  # as a suite listing every KPI says
    result = evaluate(run(config()), [], every, 0.01)
    assert judged(result, "pserver_gpu_memory_mib") is KpiVerdict.NO_BASELINE
    assert result.verdict.state is State.SUCCESS
    with_ps = config(pservers=2)
    result = evaluate(run(with_ps), [], every, 0.01)
    assert judged(result, "pserver_gpu_memory_mib") is KpiVerdict.MISSING
    assert result.verdict.reasons == ("1x8 pserver_gpu_memory_mib not reported",)


def test_a_run_that_did_not_reach_its_target_is_a_convergence_regression() -> None:
    aborted = config(
        time_to_accuracy_s=None, converged=False, problems=("did not reach the target",)
    )
    tta = history("time_to_accuracy_s", [1000.0, 1010.0, 990.0, 1005.0, 995.0])
    settings = VerdictSettings(enforced=("throughput", "time_to_accuracy_s"))
    result = evaluate(run(aborted), tta, settings, 0.01)
    assert judged(result, "time_to_accuracy_s") is KpiVerdict.REGRESSED
    assert result.verdict.state is State.FAILURE  # never error
    result = evaluate(run(aborted), tta, VerdictSettings(enforced=("throughput",)), 0.01)
    assert result.verdict.state is State.SUCCESS


def test_the_direction_survives_storage() -> None:
    stored = run(config(), direction=Direction.LOWER).to_json()
    assert RunKpis.from_json(stored).accuracy_direction is Direction.LOWER
    older = {k: v for k, v in stored.items() if k != "accuracy_direction"}
    assert RunKpis.from_json(older).accuracy_direction is Direction.HIGHER
