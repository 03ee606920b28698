"""Each function's settings are its own: what one needs and lacks fails its first event with
the variable's name; what only another function needs is not asked of it."""

import pytest

from distkpi.exceptions import ContractError
from distkpi.settings import (
    FunctionSettings,
    LauncherSettings,
    SweeperSettings,
    WebhookSettings,
    load_settings,
)

COMMON = {
    "TABLE_NAME": "t",
    "BUCKET_NAME": "b",
    "GITHUB_TOKEN_SECRET_ID": "s",
    "MANIFEST_SECRET_ID": "m",
}
BATCH = {"JOB_QUEUE": "q", "SINGLE_NODE_JOB_DEFINITION": "d1", "MULTI_NODE_JOB_DEFINITION": "d2"}


def test_the_webhook_names_every_variable_it_lacks() -> None:
    with pytest.raises(ContractError) as raised:
        load_settings(WebhookSettings, {"TABLE_NAME": "t"})
    for name in ("BUCKET_NAME", "WEBHOOK_SECRET_ID", "DELIVERY_QUEUE_URL"):
        assert name in str(raised.value)
    # it submits no job: Batch's names are the launcher's
    assert "JOB_QUEUE" not in str(raised.value)


def test_the_launcher_names_every_variable_it_lacks() -> None:
    with pytest.raises(ContractError) as raised:
        load_settings(LauncherSettings, {"TABLE_NAME": "t"})
    for name in ("BUCKET_NAME", "JOB_QUEUE", "MULTI_NODE_JOB_DEFINITION"):
        assert name in str(raised.value)
    assert "WEBHOOK_SECRET_ID" not in str(raised.value)


def test_the_collector_needs_neither_the_webhook_secret_nor_batch() -> None:
    settings = load_settings(FunctionSettings, COMMON)
    assert settings.table_name == "t" and settings.github_budget_s is None


def test_a_bad_value_is_named_with_why() -> None:
    with pytest.raises(ContractError, match="RUN_TIMEOUT_S: Input should be a valid integer"):
        load_settings(
            SweeperSettings, {**COMMON, **BATCH, "OVERDUE_QUEUE_URL": "u", "RUN_TIMEOUT_S": "soon"}
        )


def test_branches_are_a_comma_separated_list() -> None:
    environ = {**COMMON, "WEBHOOK_SECRET_ID": "w", "DELIVERY_QUEUE_URL": "u"}
    environ["BRANCHES"] = "develop, release/2.6"
    assert load_settings(WebhookSettings, environ).branches == ("develop", "release/2.6")
    assert load_settings(LauncherSettings, {**environ, **BATCH}).branches == (
        "develop",
        "release/2.6",
    )
