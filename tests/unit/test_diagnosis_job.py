"""The diagnosis job: when a suite asks for one, what it runs, and what it is called."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from distkpi.domain.planning.suites import DiagnoseWhen, parse_suite
from distkpi.exceptions import ContractError

ROOT = Path(__file__).resolve().parents[2]
SUITE = (ROOT / "infra" / "suites" / "resnet50.yaml").read_text()


def with_diagnose(text: str) -> str:
    return SUITE + text


def test_a_suite_diagnoses_regressions_in_five_steps_by_default() -> None:
    suite = parse_suite(SUITE, "resnet50.yaml")
    assert suite.diagnose.on is DiagnoseWhen.REGRESSION
    assert suite.diagnose.steps == 5


@pytest.mark.parametrize(
    ("text", "on", "steps"),
    [
        ("diagnose: {on: always, steps: 3}\n", DiagnoseWhen.ALWAYS, 3),
        ("diagnose:\n  on: never\n", DiagnoseWhen.NEVER, 5),
        ('diagnose: {"on": regression, steps: 50}\n', DiagnoseWhen.REGRESSION, 50),
    ],
)
def test_a_suite_may_ask_for_it_always_or_never(text: str, on: DiagnoseWhen, steps: int) -> None:
    # `on:` unquoted is YAML 1.1's boolean true as a key: read as the field all the same
    suite = parse_suite(with_diagnose(text), "resnet50.yaml")
    assert (suite.diagnose.on, suite.diagnose.steps) == (on, steps)


@pytest.mark.parametrize(
    ("diagnose", "error"),
    [
        ({"on": "sometimes"}, "diagnose.on: Input should be 'regression', 'always' or 'never'"),
        ({"steps": 0}, "diagnose.steps: Input should be greater than or equal to 1"),
        ({"steps": 51}, "diagnose.steps: Input should be less than or equal to 50"),
        ({"step": 5}, "diagnose.step: Extra inputs are not permitted"),
    ],
)
def test_a_bad_diagnose_field_names_the_file_and_field(diagnose: Any, error: str) -> None:
    text = with_diagnose(yaml.safe_dump({"diagnose": diagnose}))
    with pytest.raises(ContractError, match=r"resnet50\.yaml: invalid suite") as caught:
        parse_suite(text, "resnet50.yaml")
    assert error in str(caught.value)
