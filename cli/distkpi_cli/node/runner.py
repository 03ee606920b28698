"""One node of a benchmark job, from start to manifest.

1. its place in the job (Batch's variables and the launcher's DISTKPI_*);
2. the code under test: a checkout of DISTKPI_REPO at exactly DISTKPI_SHA, then the
   suite's setup commands in it;
3. the rendezvous with the job's other nodes;
4. the command, in the checkout, with the frameworks' variables (node/placement.py), its
   stdout and stderr captured to <role>-<rank>.log and echoed, GPU memory sampled with
   nvidia-smi when there is a GPU;
5. those files and every file the command left in DISTKPI_LOG_DIR uploaded, then, last,
   node-<i>.json with the exit code, wall time, setup time, peak RSS, the hardware
   (node/hardware.py) and the problem if any;
6. the main node waits for the others' manifests, since Batch stops them when it exits.

No environment variable's value is written to any log; neither the clone token nor AWS
credentials reach the command's environment, and the environment dumps Paddle's launcher
leaves in its log directory are never uploaded. A command still running at its deadline
(DISTKPI_COMMAND_TIMEOUT_S), such as a parameter server no trainer ever reached, is stopped
with its whole process group.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlparse

from distkpi.adapters.s3_runs import S3RunStore
from distkpi.domain.signing import sign
from distkpi.exceptions import ContractError, StorageError
from distkpi_cli.node.hardware import Hardware, read_hardware
from distkpi_cli.node.placement import Endpoint, Place, expand, framework_environment
from distkpi_cli.node.rendezvous import free_ports, own_address, rendezvous
from distkpi_cli.node.source import TOKEN_VARIABLE, NodeProblem, get_source, run_setup

GPU_QUERY = ["--query-gpu=timestamp,index,memory.used", "--format=csv", "-lms", "500"]
KEY_VARIABLE = "DISTKPI_MANIFEST_KEY"  # this config's signing key (domain/signing.py)
# what the command never sees: the clone token, the signing key, the job's AWS credentials
WITHHELD_VARIABLES = frozenset(
    {
        TOKEN_VARIABLE,
        KEY_VARIABLE,
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    }
)
# Paddle's launcher writes the whole environment into its --log_dir: envlog.<rank>,
# backup_env.<rank>.json, and an environ({...}) line at the top of its own log
ENVIRONMENT_DUMP_NAMES = ("envlog.", "backup_env.")
ENVIRONMENT_DUMP_LINE = b"environ({"
STOPPED = 124  # a command stopped at its deadline, as timeout(1) reports it


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Upload:
    local: Path
    path: str  # relative to the config folder
    role: str
    rank: int
    kind: str

    def entry(self) -> dict[str, Any]:
        """What the manifest says of it, with its sha256 as it is uploaded."""
        return {
            "path": self.path,
            "role": self.role,
            "rank": self.rank,
            "kind": self.kind,
            "sha256": _sha256(self.local),
        }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class NodeFiles:
    """Where a node keeps what it uploads: its log and GPU samples, and DISTKPI_LOG_DIR."""

    work: Path
    role: str
    rank: int

    @property
    def stem(self) -> str:
        return f"{self.role}-{self.rank}"

    @property
    def log(self) -> Path:
        return self.work / "logs" / f"{self.stem}.log"

    @property
    def gpu_csv(self) -> Path:
        return self.work / "logs" / f"{self.stem}.gpu.csv"

    @property
    def log_dir(self) -> Path:
        return self.work / "command-logs"

    def make(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)

    def uploads(self) -> list[Upload]:
        """What exists of them, named as the manifest names them; files the command left
        are kept for people (kind `file`), never parsed: metrics go to stdout."""
        named = [
            Upload(self.log, f"logs/{self.log.name}", self.role, self.rank, "log"),
            Upload(self.gpu_csv, f"logs/{self.gpu_csv.name}", self.role, self.rank, "gpu_memory"),
        ]
        for path in self.left_files():
            if not is_environment_dump(path):
                named.append(Upload(path, self.file_path(path), self.role, self.rank, "file"))
        return [u for u in named if u.local.exists()]

    def left_files(self) -> list[Path]:
        return [path for path in sorted(self.log_dir.rglob("*")) if path.is_file()]

    def file_path(self, path: Path) -> str:
        return f"files/{self.stem}/{path.relative_to(self.log_dir).as_posix()}"

    def note_withheld(self) -> None:
        """Say in the node's log which files the command left were environment dumps."""
        withheld = [self.file_path(p) for p in self.left_files() if is_environment_dump(p)]
        if withheld:
            with self.log.open("a") as out:
                out.write(f"distkpi node: not uploaded, environment dumps: {', '.join(withheld)}\n")


def is_environment_dump(path: Path) -> bool:
    if path.name.startswith(ENVIRONMENT_DUMP_NAMES):
        return True
    try:
        with path.open("rb") as f:
            return f.readline(4096).lstrip().startswith(ENVIRONMENT_DUMP_LINE)
    except OSError:  # unreadable: the upload says so, as for any file
        return False


@dataclass
class NodeReport:
    exit_code: int = 0
    problem: str | None = None
    setup_s: float = 0.0
    started_at: str = field(default_factory=_now)


def _tee(stream: IO[bytes], log: IO[bytes], echo: IO[bytes] | None) -> None:
    for line in iter(stream.readline, b""):
        log.write(line)
        log.flush()
        if echo is not None:
            echo.write(line)
            echo.flush()


def run_command(
    args: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    files: NodeFiles,
    timeout_s: float | None = None,
) -> int | None:
    """The command's exit code, or None when it was still running at ``timeout_s`` and
    was stopped (its process group: SIGTERM, then SIGKILL). Its output is appended to the
    node's log and echoed; GPU memory sampled while it runs, when nvidia-smi is there."""
    log, gpu_csv = files.log, files.gpu_csv
    sampler = None
    if shutil.which("nvidia-smi"):
        gpu = gpu_csv.open("wb")
        sampler = subprocess.Popen(["nvidia-smi", *GPU_QUERY], stdout=gpu)
    echo = getattr(sys.stdout, "buffer", None)
    with log.open("ab") as out:
        try:
            proc = subprocess.Popen(
                list(args),
                cwd=cwd,
                env=dict(env),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, stopped as one
            )
        except OSError as exc:
            raise NodeProblem(f"command cannot start: {args[0]}: {exc.strerror}") from exc
        assert proc.stdout is not None
        tee = threading.Thread(target=_tee, args=(proc.stdout, out, echo), daemon=True)
        tee.start()
        code: int | None
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop_group(proc)
            code = None
        tee.join(timeout=30)
    if sampler is not None:
        sampler.terminate()
        sampler.wait(timeout=10)
        gpu.close()
    return code


def _stop_group(proc: subprocess.Popen[bytes], grace_s: float = 10.0) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            continue


@dataclass
class NodeRunner:
    env: Mapping[str, str]
    command: Sequence[str]
    store_for: Callable[[str], S3RunStore] = S3RunStore
    hardware_of: Callable[[Mapping[str, str], str], Hardware] = read_hardware
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep

    def run(self) -> int:
        place = Place.from_env(self.env)
        bucket, config_key = _bucket_and_key(place.s3_prefix)
        store = self.store_for(bucket)
        work = Path(self.env.get("DISTKPI_WORKDIR") or tempfile.mkdtemp(prefix="distkpi-node-"))
        files = NodeFiles(work, place.role, place.role_rank)
        files.make()
        started = self.clock()
        report = NodeReport()
        hardware = self.hardware_of(self.env, place.role)
        try:
            self._run(place, store, config_key, files, report)
        except NodeProblem as problem:
            report.exit_code, report.problem = report.exit_code or 1, problem.problem
            with files.log.open("a") as out:
                out.write(f"distkpi node: {problem.problem}\n{problem.detail}\n")
        files.note_withheld()
        manifest = self._manifest(place, report, self.clock() - started, hardware)
        self._upload(store, config_key, place, files.uploads(), manifest)
        # a failed main node fails the job when it exits: nothing to wait for
        if place.is_main and place.num_nodes > 1 and report.exit_code == 0:
            self._wait_for_others(store, config_key, place)
        return report.exit_code

    def _run(
        self, place: Place, store: S3RunStore, config_key: str, files: NodeFiles, report: NodeReport
    ) -> None:
        base = {k: v for k, v in self.env.items() if k not in WITHHELD_VARIABLES}
        setup_started = self.clock()
        url = self.env.get("DISTKPI_SOURCE_URL") or f"https://github.com/{place.repo}.git"
        source = get_source(url, place.sha, place.repo, files.work, self.env)
        run_setup(_json_list(self.env, "DISTKPI_SETUP"), source, base, files.log)
        report.setup_s = self.clock() - setup_started
        address = own_address(self.env)
        own = Endpoint(place.index, address, *free_ports(address, 2))
        deadline = float(self.env.get("DISTKPI_RENDEZVOUS_S", "600"))
        endpoints = rendezvous(
            store,
            config_key,
            place,
            own,
            deadline,
            key=self.env.get(KEY_VARIABLE),
            clock=self.clock,
            sleep=self.sleep,
        )
        env = base | framework_environment(place, endpoints, str(source), str(files.log_dir))
        command = list(self.command) or _json_list(self.env, "DISTKPI_COMMAND")
        if not command:
            raise NodeProblem("no command: the suite names none and none was given after --")
        try:
            args = expand(command, env)
        except ContractError as exc:
            raise NodeProblem(str(exc)) from exc
        timeout_s = float(self.env.get("DISTKPI_COMMAND_TIMEOUT_S", "7200"))
        code = run_command(args, source, env, files, timeout_s)
        if code is None:
            report.exit_code = STOPPED
            raise NodeProblem(f"command still running at its deadline of {timeout_s:g}s; stopped")
        report.exit_code = code

    @staticmethod
    def _manifest(
        place: Place, report: NodeReport, wall_s: float, hardware: Hardware
    ) -> dict[str, Any]:
        kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        manifest: dict[str, Any] = {
            "schema": 1,
            "node": place.index,
            "exit_code": report.exit_code,
            "started_at": report.started_at,
            "finished_at": _now(),
            "files": [],
            "peak_host_rss_mib": round(kib / 1024, 1),
            "wall_s": round(wall_s, 3),
            "setup_s": round(report.setup_s, 3),
            "hardware": hardware.to_json(),
        }
        if report.problem:
            manifest["problem"] = report.problem
        return manifest

    def _upload(
        self,
        store: S3RunStore,
        config_key: str,
        place: Place,
        uploads: list[Upload],
        manifest: dict[str, Any],
    ) -> None:
        """The files first, the manifest last, naming each file's sha256 and signed with the
        config's key: the collector counts a node when its manifest lands, and reads what
        it names."""
        entries = []
        for upload in uploads:
            entries.append(upload.entry())
            store.upload_file(str(upload.local), config_key + upload.path)
        manifest["files"] = entries
        if signing_key := self.env.get(KEY_VARIABLE):
            manifest = sign(signing_key, manifest)
        key = f"{config_key}node-{place.index}.json"
        store.put_bytes(key, json.dumps(manifest).encode())

    def _wait_for_others(self, store: S3RunStore, config_key: str, place: Place) -> None:
        """Batch stops every other node of a multi-node job when the main node exits."""
        others = {f"node-{n}.json" for n in range(place.num_nodes) if n != place.index}
        until = self.clock() + float(self.env.get("DISTKPI_NODE_WAIT_S", "900"))
        while True:
            try:
                missing = others - set(store.list_names(config_key))
            except StorageError:
                missing = others
            if not missing or self.clock() >= until:
                if missing:
                    print(f"distkpi node: {sorted(missing)} did not report", file=sys.stderr)
                return
            self.sleep(2.0)


def _bucket_and_key(prefix: str) -> tuple[str, str]:
    url = urlparse(prefix)
    return url.netloc, url.path.lstrip("/")


def _json_list(env: Mapping[str, str], name: str) -> list[Any]:
    """A JSON list the launcher put in ``name`` (the suite's command or setup)."""
    try:
        value = json.loads(env.get(name) or "[]")
    except ValueError as exc:
        raise NodeProblem(f"{name} is not a JSON list") from exc
    if not isinstance(value, list):
        raise NodeProblem(f"{name} is not a JSON list")
    return value


def main(command: Sequence[str]) -> int:
    """`distkpi node [-- COMMAND...]`: the command, else the suite's (DISTKPI_COMMAND)."""
    return NodeRunner(os.environ, list(command)).run()
