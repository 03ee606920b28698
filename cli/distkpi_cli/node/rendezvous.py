"""Every node of a job learns every other's address and port. Batch tells each node only
the main node's address, but parameter servers and trainers need each other's: each node
publishes its own under the config's rendezvous/ folder and waits, up to a deadline, for
the others'. A record is JSON named node-<i>.endpoint: not .json, so that its upload does
not wake the collector, whose EventBridge rule takes only keys `runs/*/node-*.json`."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Mapping

from distkpi.adapters.s3_runs import S3RunStore
from distkpi.domain.kpis.runfolder import node_index
from distkpi.domain.planning import jobenv
from distkpi.domain.signing import BoundElsewhere, Unsealed, seal, unseal
from distkpi.exceptions import NotFoundError
from distkpi_cli.node.placement import Endpoint, Place
from distkpi_cli.node.polling import poll_until
from distkpi_cli.node.source import NodeProblem

FOLDER = "rendezvous/"
SUFFIX = ".endpoint"


def record_name(node: int) -> str:
    return f"node-{node}{SUFFIX}"


def record_index(name: str) -> int | None:
    """The node of a record's name (node-<i>.endpoint, i canonical), else None."""
    stem = name.removesuffix(SUFFIX)
    return node_index(f"{stem}.json") if stem != name else None


def own_address(env: Mapping[str, str]) -> str:
    """This node's address as the others reach it (DISTKPI_NODE_ADDRESS overrides)."""
    return env.get(jobenv.NODE_ADDRESS) or socket.gethostbyname(socket.gethostname())


def free_ports(address: str, count: int) -> list[int]:
    """``count`` different ports free on ``address`` now (held together while chosen)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind((address if address != "0.0.0.0" else "", 0))
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def rendezvous(
    store: S3RunStore,
    config_key: str,
    place: Place,
    own: Endpoint,
    deadline_s: float,
    *,
    key: str | None = None,
    poll_s: float = 1.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    folder: str = FOLDER,
) -> dict[int, Endpoint]:
    """Every node's endpoint, this one's included; NodeProblem naming the nodes that never
    showed up by the deadline, or whose record is not signed with the config's ``key``.
    ``config_key`` is runs/<run>/<config>/; ``folder`` the rendezvous' inside it (a paired
    run meets again before each run, in rendezvous/run-<k>/). A node whose final manifest
    is in has ended and will not come."""
    if place.num_nodes == 1:
        return {place.index: own}
    name = folder
    folder = config_key + folder
    record = {
        "run_id": place.run_id,  # where it belongs, inside what is signed
        "config": place.config,
        "node": place.index,
        "address": own.address,
        "port": own.port,
        "spare_port": own.spare_port,
    }
    store.put_bytes(f"{folder}{record_name(place.index)}", json.dumps(seal(key, record)).encode())
    missing: list[int] = []

    def everyone() -> dict[int, Endpoint] | None:
        present = {i for i in map(record_index, store.list_names(folder)) if i is not None}
        missing[:] = [n for n in range(place.num_nodes) if n not in present]
        if not missing:
            return {
                n: _endpoint(store, folder, name, place, n, key=key) for n in range(place.num_nodes)
            }
        final = {node_index(name) for name in store.list_names(config_key)}
        ended = [n for n in missing if n in final]
        if ended:
            names = ", ".join(map(str, ended))
            raise NodeProblem(f"rendezvous: node(s) {names} ended before {name}")
        return None

    endpoints = poll_until(everyone, deadline_s, poll_s, clock=clock, sleep=sleep)
    if endpoints is None:
        names = ", ".join(map(str, missing))
        raise NodeProblem(f"rendezvous: node(s) {names} never showed up in {deadline_s:g}s")
    return endpoints


def _endpoint(
    store: S3RunStore, folder: str, where: str, place: Place, node: int, *, key: str | None
) -> Endpoint:
    name = f"{where}{record_name(node)}"
    try:
        data = json.loads(store.read_bytes(f"{folder}{record_name(node)}"))
        try:
            record = unseal(key, data, run_id=place.run_id, config=place.config, node=node)
        except BoundElsewhere as copied:
            found = copied.found
            raise NodeProblem(
                f"rendezvous: {name} is signed for node {found['node']} of config "
                f"{found['config']} of run {found['run_id']}, not node {node} of "
                f"{place.config} of {place.run_id}: copied"
            ) from copied
        except Unsealed as unsealed:
            if not isinstance(data, dict):
                raise TypeError("not a JSON object") from unsealed
            raise NodeProblem(
                f"rendezvous: node {node}'s record is not signed with this config's key"
            ) from unsealed
        spare = record.get("spare_port")
        return Endpoint(
            node, str(record["address"]), int(record["port"]), int(spare) if spare else None
        )
    except (NotFoundError, ValueError, KeyError, TypeError) as exc:
        raise NodeProblem(f"rendezvous: node {node}'s record is unreadable") from exc
