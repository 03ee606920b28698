"""Who a suite's alerts mention and which of its results alert at all: its `owners:`, else
its repository's CODEOWNERS at the commit (domain/github/codeowners.py) for its `paths:`;
its `alert:`. Asking GitHub costs one to three contents requests per alert; a failure
leaves the alert without owners (logged and counted), never without the alert."""

from __future__ import annotations

from dataclasses import dataclass

from aws_lambda_powertools import Logger

from distkpi.domain.github.codeowners import LOCATIONS, mentions, owners_for, parse
from distkpi.domain.planning.suites import AlertSettings, Suite
from distkpi.exceptions import GitHubError
from distkpi.services.ports import Counter, GitHub, SuiteSource, no_metrics

logger = Logger(child=True)


@dataclass
class SuiteOwners:
    github: GitHub
    catalog: SuiteSource
    count: Counter = no_metrics

    def suite(self, name: str) -> Suite | None:
        suites, _ = self.catalog.suites()
        return next((s for s in suites if s.name == name), None)

    def alerting(self, name: str) -> AlertSettings:
        found = self.suite(name)
        return found.alert if found is not None else AlertSettings()

    def of(self, repo: str, sha: str, name: str) -> tuple[str, ...]:
        """The suite's owners as mentions (`@login`, `@org/team`)."""
        suite = self.suite(name)
        if suite is not None and suite.owners:
            return mentions(suite.owners)
        try:
            for location in LOCATIONS:
                text = self.github.file_text(repo, location, sha)
                if text is not None:
                    codeowners = parse(text)
                    if codeowners.problems:
                        logger.info("CODEOWNERS lines skipped", problems=list(codeowners.problems))
                    return mentions(owners_for(codeowners, suite.paths if suite else None))
        except GitHubError as exc:
            logger.error("CODEOWNERS not read", extra={"repo": repo, "error": str(exc)})
            self.count("OwnersLookupFailures")
        return ()
