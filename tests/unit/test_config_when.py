"""A suite's configs may say on which events they run (`when:`), so the large multi-node
configs of the seed's matrix (infra/suites/resnet50.yaml) can run on the merge, on a
labelled pull request or on a schedule, and every pull request only the small ones."""

from __future__ import annotations

import pytest

from distkpi.domain.planning.suites import Suite, parse_suite
from distkpi.exceptions import ContractError
from tests.fakes import SEED_SUITE, seed_suite_with_when


def seed_with(when: dict[str, str]) -> Suite:
    return parse_suite(seed_suite_with_when(when), "resnet50.yaml")


def configs(suite: Suite) -> list[str]:
    return [c.name for c in suite.configs]


SPLIT = {"2x8-4ps": "[push, 'label:full-matrix', schedule]", "4x8-8ps": "[push, schedule]"}


def test_without_when_every_config_runs_on_every_event() -> None:
    suite = parse_suite(SEED_SUITE.read_text(), "resnet50.yaml")
    for event in ("pull_request", "push", "schedule"):
        assert suite.for_event(event) is suite


def test_a_pull_request_runs_the_small_configs_and_a_push_all() -> None:
    suite = seed_with(SPLIT)
    assert configs(suite.for_event("pull_request")) == ["1x1", "1x8"]
    assert configs(suite.for_event("push")) == ["1x1", "1x8", "2x8-4ps", "4x8-8ps"]
    assert configs(suite.for_event("schedule")) == ["1x1", "1x8", "2x8-4ps", "4x8-8ps"]


def test_a_label_on_the_pull_request_adds_the_configs_it_names() -> None:
    suite = seed_with(SPLIT)
    labelled = suite.for_event("pull_request", ["bug", "full-matrix"])
    assert configs(labelled) == ["1x1", "1x8", "2x8-4ps"]
    # a label counts on pull requests only: a push's trigger has none
    assert configs(suite.for_event("pull_request", ["other"])) == ["1x1", "1x8"]


def test_the_base_config_runs_on_every_event() -> None:
    with pytest.raises(ContractError, match="1x1 is the base of the others' speedup"):
        seed_with({"1x1": "[push]"})


def test_an_unknown_event_is_refused_naming_it() -> None:
    with pytest.raises(ContractError, match="'nightly' is none of pull_request, push, schedule"):
        seed_with({"1x8": "[nightly]"})
    with pytest.raises(ContractError, match="'label:' is none of"):
        seed_with({"1x8": "['label:']"})
