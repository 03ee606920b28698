"""What `distkpi calibrate` (and `distkpi local calibrate`) reports: a branch's A/A runs read
back from the table by key, split into the noise's parts by calibration.calibrate, as a
table or as Calibration.to_json()."""

from __future__ import annotations

from dataclasses import dataclass

from distkpi.adapters.dynamo import DynamoTable, HistoryRepository, RunRepository
from distkpi.domain.judging.settings import VerdictSettings
from distkpi.exceptions import CalibrationError
from distkpi_cli.calibration import AaJobs, Calibration, aa_jobs_of, calibrate


@dataclass(frozen=True)
class Report:
    calibration: Calibration
    aa: AaJobs
    repo: str
    branch: str
    model: str


def calibration_report(
    table: DynamoTable,
    repo: str,
    branch: str,
    model: str,
    *,
    drop: float = 0.25,
    settings: VerdictSettings | None = None,
) -> Report:
    """The A/A runs of (repo, branch, model) and their calibration at the suite's verdict
    settings (``settings``, else those stored with the newest A/A run)."""
    records = list(HistoryRepository(table).history(repo, branch, model))
    aa = aa_jobs_of(records)
    where = f"{model} on {repo} {branch}"
    if len(aa.runs) < 2:
        raise CalibrationError(
            f"{len(aa.runs)} A/A job(s) of {where}: nothing can be split, the allocation's "
            "part of the noise needs 2 jobs or more (distkpi calibrate --start --jobs N)"
        )
    if not aa.jobs:
        raise CalibrationError(
            f"{len(aa.runs)} A/A job(s) of {where}, but no KPI of any config has two jobs "
            "with two runs of it: nothing can be split"
        )
    if settings is None:
        newest = RunRepository(table).get(aa.runs[-1])
        if newest is None:
            raise CalibrationError(f"run {aa.runs[-1]} is in the history but not in the table")
        settings = newest.verdict_settings
    return Report(calibrate(aa.jobs, settings, drop), aa, repo, branch, model)


def render(report: Report) -> str:
    """The components per config and KPI (with how many A/A jobs each is of), then the
    designs at the drop, the favoured one last."""
    cal = report.calibration
    lines = [
        f"calibration of {report.model} on {report.repo} {report.branch}: "
        f"{len(report.aa.runs)} A/A job(s)",
        "",
        f"{'config':12s} {'kpi':24s} {'total CV':>9s} {'allocation':>11s} {'within CV':>10s} "
        f"{'jobs':>5s}",
    ]
    for config, kpis in cal.components.items():
        for kpi, c in kpis.items():
            lines.append(
                f"{config:12s} {kpi:24s} {c.total_cv:9.1%} {c.allocation_share:11.0%} "
                f"{c.within_cv:10.1%} {c.jobs:5d}"
            )
    for (config, kpi), jobs in sorted(report.aa.unsplit.items()):
        lines.append(f"{config:12s} {kpi:24s} not split: {jobs} job(s) with two runs of it")
    lines.append("")
    if not cal.designs:
        lines.append("no config reported throughput: the designs cannot be ranked")
        return "\n".join(lines)
    lines.append(
        f"a {cal.drop:.0%} throughput drop in one config, at a false-failure rate of "
        f"{cal.false_failure_rate:.2%} a run:"
    )
    for d in cal.designs:
        lines.append(
            f"  {d.design:8s} catches {d.catch_rate:6.1%} at {d.runs_per_config:.2f} runs per "
            "config per commit"
        )
    lines.append(f"favoured: {cal.favoured}")
    return "\n".join(lines)
