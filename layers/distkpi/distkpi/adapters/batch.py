"""AWS Batch: one job per config, single-node or multi-node parallel."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from botocore.exceptions import ClientError

from distkpi.adapters.aws import client
from distkpi.domain.planning import JobPlan
from distkpi.exceptions import LaunchError

if TYPE_CHECKING:
    from mypy_boto3_batch import BatchClient


def _env(values: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in sorted(values.items())]


class BatchLauncher:
    def __init__(
        self,
        queue: str,
        single_node_definition: str,
        multi_node_definition: str,
        batch: BatchClient | None = None,
    ) -> None:
        self.queue = queue
        self.single_node_definition = single_node_definition
        self.multi_node_definition = multi_node_definition
        self._batch = batch

    @property
    def batch(self) -> BatchClient:
        if self._batch is None:
            self._batch = cast("BatchClient", client("batch"))
        return self._batch

    def request(self, plan: JobPlan) -> dict[str, Any]:
        """The SubmitJob request for a plan (kept separate so it can be read and tested)."""
        tags = {"distkpi:run": plan.run_id, "distkpi:config": plan.config}
        if not plan.multinode:
            overrides: dict[str, Any] = {
                "environment": _env({**plan.environment, "DISTKPI_ROLE": "trainer"})
            }
            if plan.command:
                overrides["command"] = list(plan.command)
            return {
                "jobName": plan.name,
                "jobQueue": self.queue,
                "jobDefinition": self.single_node_definition,
                "containerOverrides": overrides,
                "tags": tags,
                "propagateTags": True,
            }
        node_overrides = []
        for group in plan.groups:
            container: dict[str, Any] = {
                "environment": _env({**plan.environment, "DISTKPI_ROLE": group.role})
            }
            if plan.command:
                container["command"] = list(plan.command)
            node_overrides.append({"targetNodes": group.target, "containerOverrides": container})
        return {
            "jobName": plan.name,
            "jobQueue": self.queue,
            "jobDefinition": self.multi_node_definition,
            "nodeOverrides": {"numNodes": plan.nodes, "nodePropertyOverrides": node_overrides},
            "tags": tags,
            "propagateTags": True,
        }

    def submit(self, plan: JobPlan) -> tuple[str, dict[str, Any]]:
        """Submit the plan's job: its id and the request that was sent."""
        request = self.request(plan)
        try:
            response = self.batch.submit_job(**request)
        except ClientError as exc:
            raise LaunchError(f"Batch refused job {plan.name}: {exc}") from exc
        return response["jobId"], request

    def terminate(self, job_id: str, reason: str) -> None:
        """Stop a job wherever it is (queued or running); a finished job is left as it is."""
        try:
            self.batch.terminate_job(jobId=job_id, reason=reason)
        except ClientError as exc:
            raise LaunchError(f"Batch did not terminate job {job_id}: {exc}") from exc
