"""Calibrations: `distkpi calibrate` asks for A/A paired runs of a suite at a commit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from distkpi.domain.github.webhook import Calibrate
from distkpi.domain.planning.jobs import calibration_run_id, calibration_suite, run_spec_for
from distkpi.services.ports import Counter, Deliveries, SuiteSource, no_metrics
from distkpi.services.run_launcher import Delivery, Outcome, RunLauncher, repeat_of


@dataclass
class Calibrations:
    deliveries: Deliveries
    catalog: SuiteSource
    launcher: RunLauncher
    count: Counter = no_metrics

    def calibrate(self, asked: Calibrate, delivery: str) -> Delivery:
        """``asked.jobs`` A/A paired runs of the suite at the commit, each its own run, named
        by the delivery so that a redelivery starts none twice. Their history joins the
        branch's, seeding its paired history; their status has its own context."""
        trigger = asked.trigger
        suites, broken = self.catalog.suites()
        suite = next((s for s in suites if s.name == asked.model), None)
        if suite is None or not suite.runs_for(trigger.repo):
            unreadable = [b.problem for b in broken if b.name == asked.model]
            why = f"no suite {asked.model!r} runs for {trigger.repo}"
            return Delivery(Outcome.STARTED, refused=unreadable[0] if unreadable else why)
        calibrated = calibration_suite(suite)
        if isinstance(calibrated, str):
            return Delivery(Outcome.STARTED, refused=calibrated)

        def start() -> dict[str, Any]:
            started: list[str] = []
            for job in range(1, asked.jobs + 1):
                run_id = calibration_run_id(suite.name, trigger.sha, delivery, job)
                spec = run_spec_for(run_id, trigger, calibrated, calibration=True)
                record = self.launcher.record(run_id, trigger, calibrated, spec, delivery)
                description = f"calibration: A/A job {job} of {asked.jobs}"
                if self.launcher.launch(record, calibrated, description, resume=True):
                    started.append(run_id)
            return Delivery(Outcome.STARTED, started).to_json()

        done = self.deliveries.once(delivery, start)
        if done.repeat:
            return repeat_of(done.answer)
        assert done.answer is not None
        answer = Delivery.from_json(done.answer)
        self.count("CalibrationRuns", len(answer.runs))
        return answer
