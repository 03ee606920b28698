"""Each GitHub delivery done once, with Powertools' idempotency on the stack's table.

A claim is in progress while the invocation that made it runs: it expires with that
invocation's remaining time (``expire_with``), so a function killed at its timeout leaves a
claim that GitHub's redelivery takes over once the time is up. A claim whose work raised is
deleted at once (Powertools). A finished claim keeps the delivery's answer for a week, and a
repeat is given that answer instead of doing the work again; a repeat while the claim is in
progress is given none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
)

from distkpi.adapters import aws
from distkpi.domain.github.deliveries import Once

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord
    from aws_lambda_powertools.utilities.typing import LambdaContext

DELIVERY_TTL_S = 7 * 24 * 3600
CLAIMS_PK = "DELIVERY"  # one partition, the hashed delivery id as the sort key
REPEAT = "repeat"


def _repeated(response: Any, idempotent_data: DataRecord) -> Any:
    """Powertools calls this only for a stored answer: mark it as a repeat's."""
    del idempotent_data
    return {**response, REPEAT: True}


class DeliveryClaims:
    def __init__(self, table_name: str, client: Any | None = None) -> None:
        self.store = DynamoDBPersistenceLayer(
            table_name=table_name,
            key_attr="PK",
            sort_key_attr="SK",
            static_pk_value=CLAIMS_PK,
            expiry_attr="expires_at",  # the table's TTL attribute
            status_attr="claim_status",
            data_attr="answer",
            boto3_client=client or aws.client("dynamodb"),
        )
        self.config = IdempotencyConfig(
            event_key_jmespath="id",
            expires_after_seconds=DELIVERY_TTL_S,
            use_local_cache=False,
            response_hook=_repeated,
        )

    def expire_with(self, context: LambdaContext) -> None:
        """Claims made from now on expire with this invocation's remaining time."""
        self.config.register_lambda_context(context)

    def once(self, delivery: str, work: Callable[[], dict[str, Any]]) -> Once:
        @idempotent_function(
            data_keyword_argument="claim", persistence_store=self.store, config=self.config
        )
        def start(claim: dict[str, str]) -> dict[str, Any]:
            del claim
            return {"answer": work(), REPEAT: False}

        try:
            done = start(claim={"id": delivery})
        except IdempotencyAlreadyInProgressError:
            return Once(None, repeat=True)  # claimed by an invocation that may still run
        return Once(done["answer"], bool(done[REPEAT]))
