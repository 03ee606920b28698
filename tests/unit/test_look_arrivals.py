"""A paired config's look arrivals as the table counts them: each node's look manifest of a
pair is an idempotent, atomic ADD to the config's set for that pair (a redelivered event
counts once), read back with the config; a node the config does not have is refused."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from moto import mock_aws

from distkpi.adapters.dynamo import DynamoTable, RunRepository
from distkpi.exceptions import NotFoundError
from distkpi_cli.local.template import table_definition
from tests.unit.test_retention import make_run, template  # noqa: F401 (a fixture)


@pytest.fixture
def runs(template: dict[str, Any]) -> Any:  # noqa: F811
    with mock_aws():
        resource = boto3.resource("dynamodb", region_name="us-east-1")
        resource.meta.client.create_table(**table_definition(template, "RunsTable", "runs"))
        repository = RunRepository(DynamoTable("runs", resource.Table("runs")))
        assert repository.create(make_run("r1"), {"1x1": 3})
        yield repository


def test_arrivals_are_counted_per_pair_once_each(runs: RunRepository) -> None:
    assert runs.add_look_arrival("r1", "1x1", 1, 2).look_arrivals == {1: frozenset({2})}
    runs.add_look_arrival("r1", "1x1", 1, 0)
    again = runs.add_look_arrival("r1", "1x1", 1, 0)  # the same event, delivered twice
    assert again.look_arrivals == {1: frozenset({0, 2})}
    runs.add_look_arrival("r1", "1x1", 2, 1)
    record = runs.config("r1", "1x1")
    assert record is not None
    assert record.look_arrivals == {1: frozenset({0, 2}), 2: frozenset({1})}
    assert record.looks == {} and record.nodes_reported == frozenset()


def test_an_arrival_of_no_node_of_the_config_is_refused(runs: RunRepository) -> None:
    with pytest.raises(NotFoundError):
        runs.add_look_arrival("r1", "1x1", 1, 3)
    with pytest.raises(NotFoundError):
        runs.add_look_arrival("r1", "2x8", 1, 0)
    assert runs.config("r1", "1x1").look_arrivals == {}  # type: ignore[union-attr]
