"""A small image classifier trained with PaddlePaddle's fleet API, as the seed's CE ran it.

    python infra/job/paddle/env.py run cpu infra/job/paddle/bench.py [--features N] ...

An MLP on scikit-learn's bundled 8x8 digits, widened and repeated as the reference job's
data is, so that a step is compute-bound. Its mode follows the node runner's variables:
- no parameter servers (DISTKPI_PSERVERS=0): collective data parallel in dynamic graph mode,
  gloo on CPU (NCCL on a GPU). One worker per node runs from the node runner's
  PADDLE_TRAINER_ENDPOINTS, PADDLE_CURRENT_ENDPOINT and PADDLE_TRAINER_ID; with several
  GPUs per trainer the node starts Paddle's launcher (`paddle.distributed.launch`) for one
  worker per GPU, its --log_dir (where it dumps the environment) in a temporary folder, and
  local rank 0 reports the node's throughput (its own times the node's workers);
- parameter servers: fleet's parameter-server mode from PaddleCloudRoleMaker's variables
  (TRAINING_ROLE, PADDLE_PSERVERS_IP_PORT_LIST, PADDLE_PORT, ...), GEO-SGD (the only mode
  whose synchronous path does not crash on CPU in 2.6.2; docs/tutorials/your-benchmark.md).
  The trainers meet at fleet's gloo barrier (PADDLE_GLOO_HTTP_ENDPOINT) and the first stops
  the servers.

It prints Paddle's own lines, the ones the seed's CE parsed, one per pass:
`Pass = N, Training performance = X imgs/s, Train accuracy = A, Test accuracy = B`, then
the CE `kpis` line, with :::MLLOG run_start, eval_accuracy and run_stop beside them so that
the time to accuracy can be computed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from profiling import profiled  # this folder's: python runs this file as a script

if TYPE_CHECKING:
    import paddle

Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def mllog(key: str, value: object = None, **metadata: object) -> None:
    record = {"key": key, "value": value, "time_ms": int(time.time() * 1000), "metadata": metadata}
    print(":::MLLOG " + json.dumps(record), flush=True)


def datasets(features: int, repeat: int) -> Arrays:
    """The digits, shuffled, tiled to ``features`` inputs; the training set repeated with
    small noise (as infra/job/distkpi_job/data.py makes them)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    rng = np.random.default_rng(0)
    order = rng.permutation(len(digits.data))
    x = (digits.data[order] / 16.0).astype("float32")
    y = digits.target[order].astype("int64")
    x = np.tile(x, -(-features // x.shape[1]))[:, :features]
    split = len(x) * 4 // 5
    train_x, train_y, test_x, test_y = x[:split], y[:split], x[split:], y[split:]
    noisy = [
        train_x + 0.05 * rng.standard_normal(train_x.shape, dtype="float32")
        for _ in range(repeat - 1)
    ]
    train_x = np.concatenate([train_x, *noisy])
    return train_x, np.tile(train_y, repeat), test_x, test_y


class Setting:
    def __init__(self, args: argparse.Namespace) -> None:
        env = os.environ
        self.args = args
        self.trainers = int(env.get("PADDLE_TRAINERS_NUM", "1"))  # workers, under the launcher
        self.rank = int(env.get("PADDLE_TRAINER_ID", "0"))
        self.local_workers = int(env.get("PADDLE_LOCAL_SIZE", "1"))
        self.pservers = int(env.get("DISTKPI_PSERVERS", "0"))
        self.batch = max(1, int(env.get("DISTKPI_BATCH_SIZE", "256")) // self.trainers)
        self.passes = int(env.get("DISTKPI_EPOCHS", str(args.passes)))
        fail = env.get("DISTKPI_FAIL_AT_EPOCH")
        self.fail_at = int(fail) if fail else None


def train(
    setting: Setting,
    step: Callable[[np.ndarray, np.ndarray], None],
    accuracy: Callable[[np.ndarray, np.ndarray], float],
) -> None:
    """The passes over this trainer's shard, with Paddle's per-pass line and MLLOG."""
    args = setting.args
    train_x, train_y, test_x, test_y = datasets(args.features, args.repeat)
    shard = np.arange(setting.rank, len(train_x), setting.trainers)
    print(
        f"trainer {setting.rank} of {setting.trainers}: {len(shard)} samples, batch "
        f"{setting.batch}, {setting.passes} passes",
        flush=True,
    )
    mllog("run_start")
    speeds = []
    with profiled(setting.rank) as profiler_step:  # a no-op unless DISTKPI_PROFILE_DIR is set
        for pass_id in range(setting.passes):
            order = shard[np.random.default_rng(pass_id).permutation(len(shard))]
            started, seen = time.perf_counter(), 0
            for first in range(0, len(order) - setting.batch + 1, setting.batch):
                batch = order[first : first + setting.batch]
                step(train_x[batch], train_y[batch])
                profiler_step()
                seen += len(batch)
            speed = seen * setting.local_workers / (time.perf_counter() - started)
            speeds.append(speed)
            if setting.fail_at == pass_id:
                raise RuntimeError(f"injected failure after pass {pass_id} (DISTKPI_FAIL_AT_EPOCH)")
            train_acc = accuracy(train_x[shard[:2000]], train_y[shard[:2000]])
            test_acc = accuracy(test_x, test_y)
            print(
                f"Pass = {pass_id}, Training performance = {speed:.6f} imgs/s, "
                f"Train accuracy = {train_acc:.6f}, Test accuracy = {test_acc:.6f}",
                flush=True,
            )
            mllog("eval_accuracy", round(test_acc, 6), epoch_num=pass_id)
    steady = speeds[1:] or speeds  # pass 0 warms up
    print(f"kpis\ttrain_speed\t{sum(steady) / len(steady):.6f}", flush=True)
    mllog("run_stop", status="success")


def collective(setting: Setting) -> None:
    import paddle
    import paddle.distributed as dist

    args = setting.args
    paddle.set_device("gpu" if paddle.device.is_compiled_with_cuda() else "cpu")
    if setting.trainers > 1:
        dist.init_parallel_env()
    paddle.seed(0)
    net = mlp_layers(args.features, args.hidden)
    model = paddle.DataParallel(net) if setting.trainers > 1 else net
    optimizer = paddle.optimizer.Momentum(args.lr, momentum=0.9, parameters=model.parameters())
    loss_fn = paddle.nn.CrossEntropyLoss()

    def step(x: np.ndarray, y: np.ndarray) -> None:
        loss = loss_fn(model(paddle.to_tensor(x)), paddle.to_tensor(y))
        loss.backward()  # DataParallel all-reduces the gradients
        optimizer.step()
        optimizer.clear_grad()

    def accuracy(x: np.ndarray, y: np.ndarray) -> float:
        with paddle.no_grad():
            predicted = net(paddle.to_tensor(x)).argmax(axis=1).numpy()
        return float((predicted == y).mean())

    train(setting, step, accuracy)


def mlp_layers(features: int, hidden: int) -> paddle.nn.Layer:
    import paddle

    return paddle.nn.Sequential(
        paddle.nn.Linear(features, hidden),
        paddle.nn.ReLU(),
        paddle.nn.Linear(hidden, hidden),
        paddle.nn.ReLU(),
        paddle.nn.Linear(hidden, 10),
    )


def parameter_server(setting: Setting) -> None:
    import paddle
    from paddle.distributed import fleet

    args = setting.args
    if os.environ.get("PADDLE_GLOO_HTTP_ENDPOINT"):  # the trainers' barrier at the end
        os.environ.setdefault("PADDLE_WITH_GLOO", "1")
        os.environ.setdefault("PADDLE_GLOO_RENDEZVOUS", "3")
    paddle.enable_static()
    fleet.init(fleet.PaddleCloudRoleMaker(is_collective=False))
    strategy = fleet.DistributedStrategy()
    strategy.a_sync = True
    strategy.a_sync_configs = {"k_steps": args.geo_steps}
    paddle.seed(0)
    x = paddle.static.data("x", [None, args.features], "float32")
    y = paddle.static.data("y", [None, 1], "int64")
    hidden = paddle.static.nn.fc(x, args.hidden, activation="relu")
    hidden = paddle.static.nn.fc(hidden, args.hidden, activation="relu")
    logits = paddle.static.nn.fc(hidden, 10)
    loss = paddle.mean(paddle.nn.functional.cross_entropy(logits, y))
    acc = paddle.static.accuracy(paddle.nn.functional.softmax(logits), y)
    test_program = paddle.static.default_main_program().clone(for_test=True)
    optimizer = fleet.distributed_optimizer(paddle.optimizer.SGD(args.lr), strategy)
    optimizer.minimize(loss)
    if fleet.is_server():
        print(f"pserver {fleet.server_index()} serving", flush=True)
        fleet.init_server()
        fleet.run_server()  # returns when the first trainer stops the servers
        print(f"pserver {fleet.server_index()} stopped", flush=True)
        return
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    fleet.init_worker()
    main_program = paddle.static.default_main_program()

    def step(xb: np.ndarray, yb: np.ndarray) -> None:
        exe.run(main_program, feed={"x": xb, "y": yb.reshape(-1, 1)}, fetch_list=[loss])

    def accuracy(xb: np.ndarray, yb: np.ndarray) -> float:
        (value,) = exe.run(test_program, feed={"x": xb, "y": yb.reshape(-1, 1)}, fetch_list=[acc])
        return float(np.asarray(value).mean())

    train(setting, step, accuracy)  # a trainer that fails leaves the servers to the deadline
    fleet.barrier_worker()
    if fleet.is_first_worker():
        fleet.fleet._runtime_handle._worker.stop_server()
    fleet.stop_worker()


def launch_workers(gpus: int) -> None:
    """Replace this process by Paddle's launcher, running this file once per GPU of the node
    (the node runner's per-node PADDLE_* variables left out: the launcher sets its own)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PADDLE_")}
    nodes = os.environ.get("NNODES", "1")
    args = [sys.executable, "-m", "paddle.distributed.launch", "--nnodes", nodes]
    if nodes != "1":
        args += ["--master", f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"]
        args += ["--rank", os.environ["NODE_RANK"]]
    args += ["--nproc_per_node", str(gpus), "--log_dir", tempfile.mkdtemp(prefix="paddle-launch-")]
    sys.stdout.flush()
    os.execve(sys.executable, [*args, __file__, *sys.argv[1:]], env)


def arguments(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--features", type=int, default=1024, help="input width (digits tiled)")
    p.add_argument("--hidden", type=int, default=1536, help="hidden layer width")
    p.add_argument("--repeat", type=int, default=8, help="noisy copies of the training set")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--passes", type=int, default=3, help="unless DISTKPI_EPOCHS says")
    p.add_argument("--geo-steps", type=int, default=8, help="GEO-SGD: local steps per sync")
    return p.parse_args(argv)


def main() -> int:
    # one CPU core stands in for one GPU, as in the reference job (set before paddle loads)
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CPU_NUM"):
        os.environ.setdefault(name, "1")
    setting = Setting(arguments(sys.argv[1:]))
    gpus = int(os.environ.get("DISTKPI_GPUS_PER_TRAINER", "1"))
    if setting.pservers:
        parameter_server(setting)
    elif gpus > 1 and "PADDLE_LOCAL_SIZE" not in os.environ:
        launch_workers(gpus)
    else:
        collective(setting)
    return 0


if __name__ == "__main__":
    sys.exit(main())
