"""Settings of the Lambda functions, validated once from the environment at the entry point."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from distkpi.exceptions import ContractError


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    table_name: Annotated[str, Field(alias="TABLE_NAME", min_length=1)]
    bucket_name: Annotated[str, Field(alias="BUCKET_NAME", min_length=1)]
    github_token_secret_id: Annotated[str, Field(alias="GITHUB_TOKEN_SECRET_ID", min_length=1)]
    github_api_url: Annotated[str, Field(alias="GITHUB_API_URL")] = "https://api.github.com"
    report_base_url: Annotated[str | None, Field(alias="REPORT_BASE_URL")] = None
    webhook_secret_id: Annotated[str | None, Field(alias="WEBHOOK_SECRET_ID")] = None
    job_queue: Annotated[str | None, Field(alias="JOB_QUEUE")] = None
    single_node_job_definition: Annotated[str | None, Field(alias="SINGLE_NODE_JOB_DEFINITION")] = (
        None
    )
    multi_node_job_definition: Annotated[str | None, Field(alias="MULTI_NODE_JOB_DEFINITION")] = (
        None
    )
    branches: Annotated[tuple[str, ...], Field(alias="BRANCHES")] = ("develop",)
    suites_prefix: Annotated[str, Field(alias="SUITES_PREFIX")] = "suites/"
    github_retries: Annotated[int, Field(alias="GITHUB_RETRIES", ge=0)] = 4
    github_backoff_s: Annotated[float, Field(alias="GITHUB_BACKOFF_S", ge=0)] = 0.5
    github_timeout_s: Annotated[float, Field(alias="GITHUB_TIMEOUT_S", gt=0)] = 10.0
    # the webhook's GitHub calls, in all, per delivery; unset: no bound but the timeouts
    github_budget_s: Annotated[float | None, Field(alias="GITHUB_BUDGET_S", gt=0)] = None
    run_timeout_s: Annotated[int, Field(alias="RUN_TIMEOUT_S", ge=0)] = 8 * 3600
    cancel_superseded: Annotated[bool, Field(alias="CANCEL_SUPERSEDED_RUNS")] = True

    @field_validator("branches", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(b.strip() for b in value.split(",") if b.strip())
        return value

    @field_validator("report_base_url", "webhook_secret_id", "job_queue", mode="before")
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return None if value == "" else value


def load_settings(environ: Mapping[str, str]) -> Settings:
    try:
        return Settings.model_validate(dict(environ))
    except ValidationError as exc:
        missing = ", ".join(str(e["loc"][0]) for e in exc.errors())
        raise ContractError(f"invalid settings: {missing}") from exc
