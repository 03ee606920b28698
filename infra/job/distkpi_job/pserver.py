"""Parameter servers over torch.distributed.rpc: each holds every pservers-th tensor."""

from __future__ import annotations

import threading

import torch
from torch.distributed import rpc

from distkpi_job.data import model
from distkpi_job.mllog import MLLog

_PARAMS: dict[int, torch.Tensor] = {}
_LOCK = threading.Lock()
_SERVED = [0]


def pull() -> dict[int, torch.Tensor]:
    with _LOCK:
        return {i: t.clone() for i, t in _PARAMS.items()}


def push(grads: dict[int, torch.Tensor], lr: float) -> None:
    with _LOCK:
        for index, grad in grads.items():
            _PARAMS[index].sub_(grad, alpha=lr)
        _SERVED[0] += 1


def serve(
    ps_index: int,
    pservers: int,
    trainer_workers: int,
    *,
    features: int,
    hidden: int,
    master: str,
    log: MLLog,
) -> None:
    """Hold this shard until every trainer has shut RPC down."""
    torch.set_num_threads(1)
    for index, param in enumerate(model(features, hidden).parameters()):
        if index % pservers == ps_index:
            _PARAMS[index] = param.detach().clone()
    log.info(f"pserver {ps_index}: holding {len(_PARAMS)} tensor(s)")
    options = rpc.TensorPipeRpcBackendOptions(init_method=f"tcp://{master}", rpc_timeout=600)
    rpc.init_rpc(
        f"ps{ps_index}",
        rank=trainer_workers + ps_index,
        world_size=trainer_workers + pservers,
        rpc_backend_options=options,
    )
    rpc.shutdown()
    log.info(f"pserver {ps_index}: applied {_SERVED[0]} update(s)")
