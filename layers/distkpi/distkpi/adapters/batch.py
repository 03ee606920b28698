"""AWS Batch: one job per config, single-node or multi-node parallel."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from distkpi.adapters.aws import client, error_code
from distkpi.adapters.pacing import TokenBucket
from distkpi.domain.planning import jobenv
from distkpi.domain.planning.jobs import JobPlan, NodeGroup
from distkpi.domain.records import FoundJob
from distkpi.exceptions import LaunchError, SubmitThrottledError

if TYPE_CHECKING:
    from mypy_boto3_batch import BatchClient


def _env(values: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in sorted(values.items())]


KEY_VARIABLE = jobenv.MANIFEST_KEY
# what a stored request holds in its place: the job's key is derived again where needed
WITHHELD_KEY = "(withheld: derived from the stack's manifest secret)"


def without_key(request: Mapping[str, Any]) -> dict[str, Any]:
    """A SubmitJob request as it is kept (the JOB# item): the manifest key withheld."""
    kept = json.loads(json.dumps(request))
    containers = [kept.get("containerOverrides", {})] + [
        o.get("containerOverrides", {})
        for o in kept.get("nodeOverrides", {}).get("nodePropertyOverrides", [])
    ]
    for container in containers:
        for variable in container.get("environment", []):
            if variable["name"] == KEY_VARIABLE:
                variable["value"] = WITHHELD_KEY
    return kept


# Batch refuses a SubmitJob request larger than this (its service quotas)
MAX_REQUEST_BYTES = 30 * 1024
# Batch's answer when the account passes 50 SubmitJob a second (a quota that cannot be raised)
THROTTLED = "TooManyRequestsException"


def backoff_s(attempt: int, base_s: float, cap_s: float = 20.0) -> float:
    """Full jitter: a random wait up to base * 2^attempt (capped), so that launchers
    throttled together do not come back together."""
    return random.uniform(0, min(cap_s, base_s * 2**attempt))


def _container(plan: JobPlan, group: NodeGroup) -> dict[str, Any]:
    """One node group's container overrides: its role, command and resources."""
    container: dict[str, Any] = {"environment": _env({**plan.environment, jobenv.ROLE: group.role})}
    if plan.command:
        container["command"] = list(plan.command)
    if group.request is not None:
        container["resourceRequirements"] = group.request.resource_requirements()
    return container


_REGISTERED = (
    "jobDefinitionName",
    "type",
    "parameters",
    "retryStrategy",
    "propagateTags",
    "timeout",
    "tags",
    "platformCapabilities",
    "containerProperties",
    "nodeProperties",
)


def _image_of(definition: Mapping[str, Any]) -> str | None:
    if "containerProperties" in definition:
        return str(definition["containerProperties"].get("image"))
    ranges = definition.get("nodeProperties", {}).get("nodeRangeProperties", [])
    return str(ranges[0]["container"].get("image")) if ranges else None


def _with_image(definition: Mapping[str, Any], image: str) -> dict[str, Any]:
    """A RegisterJobDefinition request: ``definition`` as it is, running ``image``."""
    request = {k: definition[k] for k in _REGISTERED if k in definition}
    if "containerProperties" in request:
        request["containerProperties"] = {**request["containerProperties"], "image": image}
    elif "nodeProperties" not in request:
        raise ValueError(f"{definition.get('jobDefinitionName')} shows no container")
    else:
        nodes = request["nodeProperties"]
        request["nodeProperties"] = {
            **nodes,
            "nodeRangeProperties": [
                {**r, "container": {**r["container"], "image": image}}
                for r in nodes["nodeRangeProperties"]
            ],
        }
    return request


def _gpus(container: Mapping[str, Any]) -> int:
    wanted = container.get("resourceRequirements", [])
    return sum(int(r["value"]) for r in wanted if r.get("type") == "GPU")


def gpus_requested(request: Mapping[str, Any]) -> int:
    """The GPUs a SubmitJob request asks for, over all its nodes."""
    if "nodeOverrides" not in request:
        return _gpus(request.get("containerOverrides", {}))
    total = 0
    for override in request["nodeOverrides"]["nodePropertyOverrides"]:
        first, _, last = override["targetNodes"].partition(":")
        total += (int(last) - int(first) + 1) * _gpus(override.get("containerOverrides", {}))
    return total


class BatchLauncher:
    def __init__(
        self,
        queue: str,
        single_node_definition: str,
        multi_node_definition: str,
        batch: BatchClient | None = None,
        *,
        fair_share: bool = False,
        pace: TokenBucket | None = None,
        throttle_retries: int = 6,
        throttle_backoff_s: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.queue = queue
        # the queue has a fair-share scheduling policy: every job names its share (and a
        # queue without one refuses a job that does)
        self.fair_share = fair_share
        self.pace = pace
        self.throttle_retries = throttle_retries
        self.throttle_backoff_s = throttle_backoff_s
        self.sleep = sleep
        self.submitted = 0  # SubmitJob calls answered, throttled ones included
        self.single_node_definition = single_node_definition
        self.multi_node_definition = multi_node_definition
        self._batch = batch
        self._for_image: dict[tuple[str, str], str] = {}

    @property
    def batch(self) -> BatchClient:
        if self._batch is None:
            self._batch = cast("BatchClient", client("batch"))
        return self._batch

    def definition(self, base: str, image: str | None) -> str:
        """``base``, or the revision of it that runs ``image``: registered the first time an
        image is asked for, found again afterwards (also by a later container)."""
        if image is None:
            return base
        if (base, image) not in self._for_image:
            self._for_image[(base, image)] = self._revision_with(base, image)
        return self._for_image[(base, image)]

    def _revision_with(self, base: str, image: str) -> str:
        try:
            (current,) = self.batch.describe_job_definitions(jobDefinitions=[base])[
                "jobDefinitions"
            ]
            name = current["jobDefinitionName"]
            revisions = self.batch.get_paginator("describe_job_definitions").paginate(
                jobDefinitionName=name, status="ACTIVE"
            )
            for page in revisions:
                for revision in page["jobDefinitions"]:
                    if _image_of(revision) == image:
                        return revision["jobDefinitionArn"]
            return self.batch.register_job_definition(**_with_image(current, image))[
                "jobDefinitionArn"
            ]
        except (ClientError, ValueError) as exc:
            raise LaunchError(f"no job definition for image {image}: {exc}") from exc

    def request(self, plan: JobPlan) -> dict[str, Any]:
        """The SubmitJob request for a plan (kept separate so it can be read and tested)."""
        tags = {"distkpi:run": plan.run_id, "distkpi:config": plan.config}
        # the job queue's scheduling policy shares it among repositories
        share = {"shareIdentifier": plan.share} if self.fair_share and plan.share else {}
        # a multi-node job's timeout applies to the whole job
        timeout = {"timeout": {"attemptDurationSeconds": plan.timeout_s}} if plan.timeout_s else {}
        if not plan.multinode:
            return {
                "jobName": plan.name,
                "jobQueue": self.queue,
                "jobDefinition": self.definition(self.single_node_definition, plan.image),
                "containerOverrides": _container(plan, plan.groups[0]),
                **timeout,
                **share,
                "tags": tags,
                "propagateTags": True,
            }
        node_overrides = []
        for group in plan.groups:
            override = {"targetNodes": group.target, "containerOverrides": _container(plan, group)}
            if group.request is not None and group.request.instance_type:
                override["instanceTypes"] = [group.request.instance_type]
            node_overrides.append(override)
        return {
            "jobName": plan.name,
            "jobQueue": self.queue,
            "jobDefinition": self.definition(self.multi_node_definition, plan.image),
            "nodeOverrides": {"numNodes": plan.nodes, "nodePropertyOverrides": node_overrides},
            **timeout,
            **share,
            "tags": tags,
            "propagateTags": True,
        }

    def submit(self, plan: JobPlan) -> tuple[str, dict[str, Any]]:
        """Submit the plan's job: its id and the request that was sent, as it is kept (the
        `JOB#` item outlives the job): with its manifest key withheld."""
        request = self.request(plan)
        size = len(json.dumps(request).encode())
        if size > MAX_REQUEST_BYTES:
            raise LaunchError(
                f"job {plan.name}: its SubmitJob request is {size} bytes; Batch takes at most "
                f"{MAX_REQUEST_BYTES}"
            )
        response = self._submit_paced(plan.name, request)
        return response["jobId"], without_key(request)

    def find(self, plan: JobPlan) -> FoundJob | None:
        """The plan's job if one was submitted already (SubmitJob takes no idempotency key: a
        launcher may have died after Batch took it and before its id was kept), with the
        request as ``submit`` answers it and the job's status, start and reason; found by
        its name in the queue and its run and config tags."""
        try:
            ids = [
                job["jobId"]
                for page in self.batch.get_paginator("list_jobs").paginate(
                    jobQueue=self.queue, filters=[{"name": "JOB_NAME", "values": [plan.name]}]
                )
                for job in page["jobSummaryList"]
                if job["jobName"] == plan.name
            ]
            found = self.batch.describe_jobs(jobs=ids[:100])["jobs"] if ids else []
        except ClientError as exc:
            raise LaunchError(f"Batch did not list the jobs named {plan.name}: {exc}") from exc
        request = self.request(plan)
        for job in found:
            if request["tags"].items() <= job.get("tags", {}).items():
                return FoundJob(
                    job["jobId"],
                    without_key(request),
                    str(job.get("status", "")),
                    started_at=_iso(job.get("startedAt")),
                    reason=job.get("statusReason"),
                )
        return None

    def _submit_paced(self, name: str, request: dict[str, Any]) -> Any:
        """SubmitJob at this container's pace; throttled, again after a jittered backoff,
        up to ``throttle_retries`` times, then SubmitThrottledError (the delivery is then
        retried as a whole: its runs resume with the configs never submitted)."""
        for attempt in range(self.throttle_retries + 1):
            if self.pace is not None:
                self.pace.take()
            try:
                response = self.batch.submit_job(**request)
            except ClientError as exc:
                if error_code(exc) != THROTTLED:
                    raise LaunchError(f"Batch refused job {name}: {exc}") from exc
                if attempt == self.throttle_retries:
                    raise SubmitThrottledError(
                        f"Batch throttled job {name} {attempt + 1} times: {exc}"
                    ) from exc
                self.sleep(backoff_s(attempt, self.throttle_backoff_s))
                continue
            self.submitted += 1
            return response
        raise AssertionError("unreachable")  # pragma: no cover

    def terminate(self, job_id: str, reason: str) -> None:
        """Stop a job wherever it is (queued or running); a finished job is left as it is."""
        try:
            self.batch.terminate_job(jobId=job_id, reason=reason)
        except ClientError as exc:
            raise LaunchError(f"Batch did not terminate job {job_id}: {exc}") from exc


def _iso(epoch_ms: object) -> str | None:
    """Batch's epoch milliseconds as the run items write times (ISO, milliseconds, UTC)."""
    if not isinstance(epoch_ms, int | float) or isinstance(epoch_ms, bool):
        return None
    at = datetime.fromtimestamp(epoch_ms / 1000, UTC)
    return at.isoformat(timespec="milliseconds")
