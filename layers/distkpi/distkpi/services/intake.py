"""The webhook's whole work on a delivery that may start runs: claimed once and queued for
the launcher with its body (kept in the bucket first only when too big for a message), so
GitHub is answered in a few milliseconds whatever the delivery starts
(docs/explanation/scale.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools import Logger

from distkpi.domain.github.deliveries import QueuedDelivery
from distkpi.domain.layout import delivery_key
from distkpi.services.ports import Counter, Deliveries, RunFolders, WorkQueue, no_metrics

logger = Logger(child=True)

# the webhook's claim on a delivery is apart from the launcher's (which covers starting
# its runs): a delivery queued once is started once
QUEUED = "queued:"


@dataclass
class DeliveryIntake:
    deliveries: Deliveries
    store: RunFolders
    queue: WorkQueue
    count: Counter = no_metrics

    def accept(self, delivery: str, event: str, body: bytes) -> bool:
        """Record and queue the delivery once; False for a repeat (GitHub's redelivery of
        one queued already, or one another invocation is queuing now). What raises
        releases the claim, so GitHub's redelivery queues it then."""

        def record() -> dict[str, Any]:
            queued = QueuedDelivery.of(delivery, event, body, delivery_key(delivery))
            if queued.key is not None:
                self.store.put_bytes(queued.key, body)
            self.queue.send(queued.to_json())
            return queued.receipt()

        done = self.deliveries.once(QUEUED + delivery, record)
        if done.repeat:
            logger.info("delivery queued before; not again")
            return False
        self.count("DeliveriesQueued")
        logger.info("delivery queued", key=(done.answer or {}).get("key", "in the message"))
        return True
