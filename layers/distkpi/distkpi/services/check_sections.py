"""What a run's check run says below its KPI table, beside its verdict: the sections later
events add (why it changed, how its bisection ended, who accepted it). Each event re-posts
the check run whole, so each post gathers every section the run has by then: an accept
after a diagnosis keeps the diagnosis, a bisection that ends after an accept keeps both."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from distkpi.domain.github.acceptance import accepted_markdown
from distkpi.services.ports import Bisections, RunFolders

if TYPE_CHECKING:
    from distkpi.domain.bisect.plan import Bisection
    from distkpi.domain.records import RunRecord


@dataclass
class CheckSections:
    store: RunFolders
    bisections: Bisections | None
    report_url: Callable[[str], str | None]
    web_url: str = "https://github.com"

    def of(
        self,
        run: RunRecord,
        *,
        bisection: Bisection | None = None,
        diagnosis: Sequence[str] | None = None,
    ) -> str:
        """The run's sections, in that order; ``bisection`` and ``diagnosis`` (its lines):
        what the event being told knows already, else read (the run's stored diagnoses,
        the bisection of a branch's run)."""
        from distkpi.domain.bisect.texts import bisection_markdown
        from distkpi.domain.github.diagnosis_texts import diagnosis_markdown

        lines = list(diagnosis) if diagnosis is not None else self._diagnosis(run)
        bisection = bisection or self._bisection(run)
        parts = [diagnosis_markdown(lines, self.report_url(run.run_id))]
        if bisection is not None:
            parts.append(
                bisection_markdown(bisection, web_url=self.web_url, report_url=self.report_url)
            )
        if run.accepted is not None:
            parts.append(accepted_markdown(run.accepted))
        return "".join(parts)

    def _diagnosis(self, run: RunRecord) -> list[str]:
        return stored_diagnosis_lines(self.store, run)

    def _bisection(self, run: RunRecord) -> Bisection | None:
        """The bisection of the run's regression once it has ended (found or not)."""
        from distkpi.domain.bisect.plan import BisectState

        t = run.trigger
        if self.bisections is None or not t.of_branch:
            return None
        found = self.bisections.get(t.repo, t.branch, run.model, run.first_run_id)
        ended = (BisectState.FOUND, BisectState.INCONCLUSIVE)
        return found if found is not None and found.state in ended else None


def stored_diagnosis_lines(store: RunFolders, run: RunRecord) -> list[str]:
    """One line per config of the run that its diagnosis job stored a diagnosis of (read
    from the run's folder); none before its diagnosis job is done, or when it had none."""
    from distkpi.domain.github.diagnosis_texts import diagnosis_lines
    from distkpi.domain.kpis.runfolder import stored_diagnoses

    if run.evaluation is None:
        return []
    names = [c.name for c in run.spec.configs]
    return diagnosis_lines(run.evaluation, stored_diagnoses(store.run(run.run_id), names))
