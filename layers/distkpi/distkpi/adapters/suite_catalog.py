"""The suites deployed in the bucket (suites/*.yaml), read on every delivery so that a new
suite needs no redeploy of the functions."""

from __future__ import annotations

from distkpi.adapters.s3_runs import S3RunStore
from distkpi.domain.layout import SUITES
from distkpi.domain.planning.suites import BrokenSuite, Suite, parse_deployed_suites


class SuiteCatalog:
    def __init__(self, store: S3RunStore, prefix: str = SUITES) -> None:
        self.store = store
        self.prefix = prefix

    def suites(self) -> tuple[list[Suite], list[BrokenSuite]]:
        """The valid suites, and the files set aside with what is wrong with each."""
        names = [n for n in self.store.list_names(self.prefix) if n.endswith((".yaml", ".yml"))]
        return parse_deployed_suites(
            ((name, self.store.read_bytes(self.prefix + name)) for name in names), self.prefix
        )
