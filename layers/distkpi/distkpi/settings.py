"""Each function's settings, validated from its environment when its container starts: a
missing or bad variable fails the first invocation with the variable's name, not a
delivery hours later when the variable is first used."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from distkpi.domain.contracts import describe_errors
from distkpi.domain.github.trust import DEFAULT_TRUSTED, AllowedSources, TrustSettings
from distkpi.domain.planning.sizing import Sizing
from distkpi.exceptions import ContractError

Text = Annotated[str, Field(min_length=1)]


def _split(value: object) -> object:
    """A comma-separated list, as CloudFormation passes one."""
    if isinstance(value, str):
        return tuple(b.strip() for b in value.split(",") if b.strip())
    return value


class FunctionSettings(BaseModel):
    """What every function needs: the table, the bucket and GitHub."""

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    table_name: Annotated[Text, Field(alias="TABLE_NAME")]
    bucket_name: Annotated[Text, Field(alias="BUCKET_NAME")]
    github_token_secret_id: Annotated[Text, Field(alias="GITHUB_TOKEN_SECRET_ID")]
    # the master secret each config's manifest key is derived from (domain/signing.py)
    manifest_secret_id: Annotated[Text, Field(alias="MANIFEST_SECRET_ID")]
    github_api_url: Annotated[str, Field(alias="GITHUB_API_URL")] = "https://api.github.com"
    report_base_url: Annotated[str | None, Field(alias="REPORT_BASE_URL")] = None
    github_retries: Annotated[int, Field(alias="GITHUB_RETRIES", ge=0)] = 4
    github_backoff_s: Annotated[float, Field(alias="GITHUB_BACKOFF_S", ge=0)] = 0.5
    github_timeout_s: Annotated[float, Field(alias="GITHUB_TIMEOUT_S", gt=0)] = 10.0
    # lasting, private report links: the webhook's Function URL (its /reports route), and
    # the key they are signed with (domain/github/report_links.py)
    reports_url: Annotated[str | None, Field(alias="REPORTS_URL")] = None
    report_link_secret_id: Annotated[str | None, Field(alias="REPORT_LINK_SECRET_ID")] = None
    # the topic told of regressions on configured branches
    alert_topic_arn: Annotated[str | None, Field(alias="ALERT_TOPIC_ARN")] = None
    # a GitHub App's id and private key (JSON): check runs instead of commit statuses
    github_app_secret_id: Annotated[str | None, Field(alias="GITHUB_APP_SECRET_ID")] = None
    # a secret holding Slack's incoming-webhook URL: alerts go to that channel too
    chat_webhook_secret_id: Annotated[str | None, Field(alias="CHAT_WEBHOOK_SECRET_ARN")] = None
    # the chat's rate limit: messages per suite and hour (services/chat.py)
    chat_messages_per_hour: Annotated[int, Field(alias="CHAT_MESSAGES_PER_HOUR", ge=1)] = 6
    # the webhook's GitHub calls, in all, per delivery; unset: no bound but the timeouts
    github_budget_s: Annotated[float | None, Field(alias="GITHUB_BUDGET_S", gt=0)] = None
    # days a run's items (run, configs, jobs) are kept (the table's TTL), as its logs and
    # traces are in the bucket (LogRetentionDays); unset: kept for ever. The history stays.
    retention_days: Annotated[int | None, Field(alias="RETENTION_DAYS", ge=1)] = None
    # GitHub writes per installation: a burst, then one per interval, under GitHub's limit
    # of a minute and of an hour (github_limits.py)
    github_write_interval_s: Annotated[float, Field(alias="GITHUB_WRITE_INTERVAL_S", ge=0)] = 1.0
    github_write_burst: Annotated[int, Field(alias="GITHUB_WRITE_BURST", ge=1)] = 15
    github_write_hour_interval_s: Annotated[
        float, Field(alias="GITHUB_WRITE_HOUR_INTERVAL_S", ge=0)
    ] = 7.5
    github_write_hour_burst: Annotated[int, Field(alias="GITHUB_WRITE_HOUR_BURST", ge=1)] = 20
    # the longest a paced write or a throttled request waits (a budget may bound it more)
    github_max_wait_s: Annotated[float, Field(alias="GITHUB_MAX_WAIT_S", ge=0)] = 60.0

    @field_validator(
        "report_base_url",
        "github_budget_s",
        "retention_days",
        "github_app_secret_id",
        "reports_url",
        "report_link_secret_id",
        "alert_topic_arn",
        "chat_webhook_secret_id",
        mode="before",
    )
    @classmethod
    def _empty_is_none(cls, value: object) -> object:
        return None if value == "" else value

    @property
    def github_web_url(self) -> str:
        """Where people read repositories: github.com, or a GitHub Enterprise host."""
        api = self.github_api_url.rstrip("/")
        if api == "https://api.github.com":
            return "https://github.com"
        return api.removesuffix("/api/v3")


class BatchSettings(FunctionSettings):
    """Functions that submit or stop Batch jobs."""

    job_queue: Annotated[Text, Field(alias="JOB_QUEUE")]
    single_node_job_definition: Annotated[Text, Field(alias="SINGLE_NODE_JOB_DEFINITION")]
    multi_node_job_definition: Annotated[Text, Field(alias="MULTI_NODE_JOB_DEFINITION")]
    suites_prefix: Annotated[str, Field(alias="SUITES_PREFIX")] = "suites/"
    # the compute environment, as the stack sizes it (template.yaml's parameters)
    instance_types: Annotated[tuple[str, ...], Field(alias="INSTANCE_TYPES", min_length=1)] = (
        "p4d.24xlarge",
    )
    pserver_instance_type: Annotated[str | None, Field(alias="PSERVER_INSTANCE_TYPE")] = (
        "c6i.4xlarge"
    )
    max_vcpus: Annotated[int, Field(alias="MAX_VCPUS", ge=1)] = 512
    vcpus_per_gpu: Annotated[int, Field(alias="VCPUS_PER_GPU", ge=1)] = Sizing.vcpus_per_gpu
    memory_mib_per_gpu: Annotated[int, Field(alias="MEMORY_MIB_PER_GPU", ge=1)] = (
        Sizing.memory_mib_per_gpu
    )
    pserver_vcpus: Annotated[int, Field(alias="PSERVER_VCPUS", ge=1)] = Sizing.pserver_vcpus
    pserver_memory_mib: Annotated[int, Field(alias="PSERVER_MEMORY_MIB", ge=1)] = (
        Sizing.pserver_memory_mib
    )
    # SubmitJob calls a second per container (adapters/pacing.py): the launcher's reserved
    # concurrency times its rate stays under Batch's 50 a second for the account
    submit_jobs_per_s: Annotated[float, Field(alias="SUBMIT_JOBS_PER_S", gt=0)] = 2.0
    submit_throttle_retries: Annotated[int, Field(alias="SUBMIT_THROTTLE_RETRIES", ge=0)] = 6
    submit_throttle_backoff_s: Annotated[float, Field(alias="SUBMIT_THROTTLE_BACKOFF_S", ge=0)] = (
        0.5
    )
    # the job queue has a fair-share scheduling policy: each job names its repository's share
    fair_share: Annotated[bool, Field(alias="FAIR_SHARE")] = False

    @field_validator("instance_types", mode="before")
    @classmethod
    def _split_types(cls, value: object) -> object:
        return _split(value)

    @field_validator("pserver_instance_type", mode="before")
    @classmethod
    def _none_when_empty(cls, value: object) -> object:
        return None if value == "" else value

    @property
    def sizing(self) -> Sizing:
        return Sizing(
            self.vcpus_per_gpu, self.memory_mib_per_gpu, self.pserver_vcpus, self.pserver_memory_mib
        )


class AdmissionSettings(FunctionSettings):
    """What decides whether a delivery starts anything: the webhook answers by it, the
    launcher decides by it again before it starts runs."""

    branches: Annotated[tuple[str, ...], Field(alias="BRANCHES")] = ("develop",)
    trusted_associations: Annotated[tuple[str, ...], Field(alias="TRUSTED_ASSOCIATIONS")] = (
        DEFAULT_TRUSTED
    )
    approval_label: Annotated[Text, Field(alias="APPROVAL_LABEL")] = "ok-to-test"
    run_drafts: Annotated[bool, Field(alias="RUN_DRAFTS")] = False
    # who may start runs at all (domain/github/trust.AllowedSources): unset, nobody
    allowed_repositories: Annotated[tuple[str, ...], Field(alias="ALLOWED_REPOSITORIES")] = ()
    allowed_installations: Annotated[tuple[int, ...], Field(alias="ALLOWED_INSTALLATIONS")] = ()

    @property
    def trust(self) -> TrustSettings:
        return TrustSettings(
            frozenset(self.trusted_associations), self.approval_label, self.run_drafts
        )

    @property
    def allowed(self) -> AllowedSources:
        return AllowedSources(self.allowed_repositories, self.allowed_installations)

    @field_validator(
        "branches",
        "trusted_associations",
        "allowed_repositories",
        "allowed_installations",
        mode="before",
    )
    @classmethod
    def _split_lists(cls, value: object) -> object:
        return _split(value)


class WebhookSettings(AdmissionSettings):
    """The webhook verifies, claims, records and enqueues: it submits nothing."""

    webhook_secret_id: Annotated[Text, Field(alias="WEBHOOK_SECRET_ID")]
    # the launcher's queue (template.yaml's DeliveryQueue)
    delivery_queue_url: Annotated[Text, Field(alias="DELIVERY_QUEUE_URL")]


class LauncherSettings(AdmissionSettings, BatchSettings):
    """The launcher behind the delivery queue: plans the runs and submits their jobs."""

    cancel_superseded: Annotated[bool, Field(alias="CANCEL_SUPERSEDED_RUNS")] = True


class DeadlineSettings(BatchSettings):
    """The deadlines function, which settles the overdue runs the sweeper hands it."""

    # a run's time from when its first job starts (Batch's RUNNING)
    run_timeout_s: Annotated[int, Field(alias="RUN_TIMEOUT_S", ge=0)] = 8 * 3600
    # a run's time in the job queue before any of its jobs starts, bounded apart
    queue_wait_s: Annotated[int, Field(alias="QUEUE_WAIT_S", ge=0)] = 24 * 3600


class SweeperSettings(DeadlineSettings):
    # where overdue runs go to be settled (template.yaml's OverdueRunQueue)
    overdue_queue_url: Annotated[Text, Field(alias="OVERDUE_QUEUE_URL")]


S = TypeVar("S", bound=FunctionSettings)


def load_settings(model: type[S], environ: Mapping[str, str]) -> S:
    """``model`` from the environment; ContractError naming each missing or bad variable."""
    try:
        return model.model_validate(dict(environ))
    except ValidationError as exc:
        raise ContractError(f"invalid settings: {describe_errors(exc)}") from exc
