"""What GitHub says of one delivery's commit, each question asked at most once, so that a
pull request's paired suites and its suites' paths share one compare request."""

from __future__ import annotations

from dataclasses import dataclass, field

from distkpi.domain.github.commits import Comparison, NoBase, pull_request_base, push_base
from distkpi.domain.github.webhook import Trigger
from distkpi.services.statuses import StatusPublisher


@dataclass
class Change:
    """The files a delivery's commit changes (for suites' `paths`) and the commit a paired
    suite measures it against: a pull request's merge base, from that same compare; a
    push's first parent. ``base``: known already (a re-run of a paired run keeps its own)."""

    statuses: StatusPublisher
    trigger: Trigger
    base: str | None = None
    _compared: bool = field(default=False, init=False, repr=False)
    _comparison: Comparison | None = field(default=None, init=False, repr=False)
    _paired_base: str | NoBase | None = field(default=None, init=False, repr=False)

    def comparison(self) -> Comparison | None:
        if not self._compared:
            self._comparison, self._compared = self.statuses.compare(self.trigger), True
        return self._comparison

    def changed_files(self) -> list[str] | None:
        """The files the commit changes; None when that cannot be known."""
        comparison = self.comparison()
        return comparison.files if comparison is not None else None

    def paired_base(self) -> str | NoBase:
        if self.base is not None:
            return self.base
        if self._paired_base is None:
            if self.trigger.event == "pull_request":
                self._paired_base = pull_request_base(self.trigger, self.comparison())
            else:
                self._paired_base = push_base(self.trigger, self.statuses.parents(self.trigger))
        return self._paired_base
