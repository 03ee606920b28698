"""One node of a benchmark job, from start to manifest.

1. its place in the job (Batch's variables and the launcher's DISTKPI_*);
2. the code under test: a checkout of DISTKPI_REPO at exactly DISTKPI_SHA, then the
   suite's setup commands in it, run as the code's user (node/isolation.py);
3. the rendezvous with the job's other nodes;
4. the command, in the checkout, as the code's user, with the documented variables only
   and the frameworks' (node/placement.py), its stdout and stderr captured to
   <role>-<rank>.log and echoed, GPU memory sampled with nvidia-smi when there is a GPU;
5. once nothing of the code is left running, those files (a log or GPU file cut at
   MAX_LOG_BYTES, node/logcap.py) and every regular file the command left in
   DISTKPI_LOG_DIR uploaded, each hashed as it is read for the upload, then, last,
   node-<i>.json with the exit code, wall time, setup time, peak RSS, the hardware
   (node/hardware.py), the problem if any, its run, config and node, and each file's sha256
   with, for its logs and GPU samples, the KPI engine's summary of the bytes uploaded
   (node/summaries.py), so the collector reads none; signed;
6. the main node waits for the others' manifests, since Batch stops them when it exits.

No environment variable's value is written to any log; no secret (the clone token, the
manifest key, AWS credentials) reaches the code's environment, and the environment dumps
Paddle's launcher leaves in its log directory are never uploaded. A command still running
at its deadline (DISTKPI_COMMAND_TIMEOUT_S), such as a parameter server no trainer ever
reached, is stopped with its whole process group.
"""

from __future__ import annotations

import io
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, BinaryIO
from urllib.parse import urlparse

from distkpi.adapters.s3_runs import S3RunStore
from distkpi.domain.contracts import MAX_LOG_BYTES, FileKind
from distkpi.domain.logs.filesummary import ENGINE_VERSION, PARSED_KINDS
from distkpi.domain.signing import HashingReader, sign
from distkpi.exceptions import ContractError, StorageError
from distkpi_cli.node.golden import NAME as GOLDEN_NAME
from distkpi_cli.node.golden import copy_golden, golden_copy
from distkpi_cli.node.hardware import Hardware, read_hardware
from distkpi_cli.node.isolation import (
    KEY_VARIABLE,
    CodeUser,
    IsolationError,
    Sandbox,
    code_environment,
    code_user,
    guard_runner,
    stop_code,
)
from distkpi_cli.node.logcap import cap_file
from distkpi_cli.node.paired import (
    DecisionWait,
    PairedPlan,
    Slot,
    ended_nodes,
    look_manifest_key,
    schedule,
)
from distkpi_cli.node.placement import Endpoint, Place, expand, framework_environment
from distkpi_cli.node.polling import pauses
from distkpi_cli.node.reach import out_of_reach
from distkpi_cli.node.rendezvous import FOLDER, free_ports, own_address, rendezvous
from distkpi_cli.node.source import NO_SOURCE, NodeProblem, get_source, run_setup
from distkpi_cli.node.summaries import describe

GPU_QUERY = ["--query-gpu=timestamp,index,memory.used", "--format=csv", "-lms", "500"]
# Paddle's launcher writes the whole environment into its --log_dir: envlog.<rank>,
# backup_env.<rank>.json, and an environ({...}) line at the top of its own log
ENVIRONMENT_DUMP_NAMES = ("envlog.", "backup_env.")
ENVIRONMENT_DUMP_LINE = b"environ({"
STOPPED = 124  # a command stopped at its deadline, as timeout(1) reports it


class UnsafeFile(Exception):
    """A file the code left that is not a regular file of its own (a link, a device, a
    fifo, another user's file): never read, never uploaded."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Upload:
    local: Path
    path: str  # relative to the config folder
    role: str
    rank: int
    kind: FileKind
    owner: int | None = None  # the uid a file the code left must belong to

    def send(self, store: S3RunStore, key: str) -> dict[str, Any]:
        """Upload it, and what the manifest says of it: the sha256 of exactly the bytes
        that were read for the upload and, for a log or GPU samples (within MAX_LOG_BYTES),
        the KPI engine's summary of those bytes (node/summaries.py)."""
        entry = {"path": self.path, "role": self.role, "rank": self.rank, "kind": self.kind}
        with open_regular(self.local, self.owner) as f:
            if self.kind in PARSED_KINDS:
                data = f.read()
                store.upload_stream(io.BytesIO(data), key)
                return entry | describe(io.BytesIO(data), self.kind)
            with HashingReader(f) as stream:
                store.upload_stream(stream, key)
                return entry | {"sha256": stream.finish()}


def open_regular(path: Path, owner: int | None = None) -> BinaryIO:
    """``path`` opened for reading if it is a regular file (not a link, whatever it points
    to), and ``owner``'s when given; UnsafeFile otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UnsafeFile(f"{exc.strerror}") from exc
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or (owner is not None and info.st_uid != owner):
        os.close(fd)
        raise UnsafeFile("not a regular file of the code's user")
    return os.fdopen(fd, "rb")


@dataclass(frozen=True)
class NodeFiles:
    """Where a node keeps what it uploads: its log and GPU samples (the runner's own, in
    its work dir) and DISTKPI_LOG_DIR (the code's, in its sandbox)."""

    work: Path
    role: str
    rank: int
    log_dir: Path
    owner: int | None = None  # the code's uid, when it is not the runner's
    # a paired run's files of one run go under pair-<p>/<arm>/ (warmup/ for the warm-up)
    prefix: str = ""
    # whether its log and GPU samples are parsed for KPIs (not a warm-up's, nor the setup
    # log of a paired run)
    parsed: bool = True

    @property
    def stem(self) -> str:
        return f"{self.role}-{self.rank}"

    @property
    def log(self) -> Path:
        return self.work / self.prefix / "logs" / f"{self.stem}.log"

    @property
    def gpu_csv(self) -> Path:
        return self.work / self.prefix / "logs" / f"{self.stem}.gpu.csv"

    def make(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)

    def uploads(self) -> list[Upload]:
        """What exists of them, named as the manifest names them; files the command left
        are kept for people (kind `file`), never parsed: metrics go to stdout."""
        log_kind: FileKind = "log" if self.parsed else "file"
        gpu_kind: FileKind = "gpu_memory" if self.parsed else "file"
        logs = f"{self.prefix}logs/"
        named = [
            Upload(self.log, f"{logs}{self.log.name}", self.role, self.rank, log_kind),
            Upload(self.gpu_csv, f"{logs}{self.gpu_csv.name}", self.role, self.rank, gpu_kind),
        ]
        named = [u for u in named if u.local.exists()]
        for path in self.kept_files():
            left = Upload(path, self.file_path(path), self.role, self.rank, "file", self.owner)
            named.append(left)
        return named

    def kept_files(self) -> list[Path]:
        """What the command left that is uploaded: neither an environment dump nor anything
        but a regular file of the code's own."""
        return [p for p in self.left_files() if not self.is_environment_dump(p) and self.safe(p)]

    def safe(self, path: Path) -> bool:
        try:
            open_regular(path, self.owner).close()
        except UnsafeFile:
            return False
        return True

    def left_files(self) -> list[Path]:
        """Every file under DISTKPI_LOG_DIR, and every link to a folder (never followed)."""
        found = []
        for folder, dirs, names in os.walk(self.log_dir, followlinks=False):
            found += [Path(folder, name) for name in names]
            found += [Path(folder, d) for d in dirs if Path(folder, d).is_symlink()]
        return sorted(found)

    def file_path(self, path: Path) -> str:
        return f"{self.prefix}files/{self.stem}/{path.relative_to(self.log_dir).as_posix()}"

    def is_environment_dump(self, path: Path) -> bool:
        if path.name.startswith(ENVIRONMENT_DUMP_NAMES):
            return True
        try:
            with open_regular(path, self.owner) as f:
                return f.readline(4096).lstrip().startswith(ENVIRONMENT_DUMP_LINE)
        except (UnsafeFile, OSError):  # the upload says so, as for any such file
            return False

    def note_withheld(self) -> None:
        """Say in the node's log which files the command left are not uploaded: environment
        dumps, and links or other files that are not regular files of the code's."""
        dumps, unsafe = [], []
        for path in self.left_files():
            if self.is_environment_dump(path):
                dumps.append(self.file_path(path))
            elif not self.safe(path):
                unsafe.append(self.file_path(path))
        with self.log.open("a") as out:
            if dumps:
                out.write(f"distkpi node: not uploaded, environment dumps: {', '.join(dumps)}\n")
            if unsafe:
                out.write(
                    "distkpi node: not uploaded, not regular files of the code's: "
                    f"{', '.join(unsafe)}\n"
                )


@dataclass
class NodeReport:
    exit_code: int = 0
    problem: str | None = None
    setup_s: float = 0.0
    started_at: str = field(default_factory=_now)
    # a paired run's files already uploaded with its looks, named again in the manifest
    sent: list[dict[str, Any]] = field(default_factory=list)


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
    *,
    spawn: Mapping[str, Any] | None = None,
    stop_the_rest: Callable[[], None] | None = None,
) -> int | None:
    """The command's exit code, or None when it was still running at ``timeout_s`` and
    was stopped (its process group: SIGTERM, then SIGKILL). Its output is appended to the
    node's log and echoed; GPU memory sampled while it runs, when nvidia-smi is there.
    ``spawn``: how it starts (as the code's user, in a session of its own);
    ``stop_the_rest``: called once it has ended, to stop whatever it left running (which
    may hold its output open) before the rest of its output is read."""
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
                **(spawn or {"start_new_session": True}),  # its own group, stopped as one
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
        if stop_the_rest is not None:
            stop_the_rest()
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
        started = self.clock()
        report = NodeReport()
        hardware = self.hardware_of(self.env, place.role)
        try:
            user = code_user(self.env)
            sandbox: Sandbox | None = Sandbox.make(user)
        except IsolationError as exc:
            user, sandbox = CodeUser(os.getuid(), os.getgid(), separate=False), None
            report.exit_code, report.problem = 1, f"cannot isolate the code: {exc}"
        files = NodeFiles(
            work,
            place.role,
            place.role_rank,
            sandbox.log_dir if sandbox else work / "no-sandbox",
            user.uid if user.separate else None,
            # a paired run's measured logs are its pairs'; this one holds the setups
            parsed="DISTKPI_PAIRED" not in self.env,
        )
        files.make()
        if sandbox is not None:
            try:
                self._run(place, store, config_key, files=files, sandbox=sandbox, report=report)
            except NodeProblem as problem:
                code = STOPPED if isinstance(problem, Stopped) else report.exit_code or 1
                report.exit_code, report.problem = code, problem.problem
                with files.log.open("a") as out:
                    out.write(f"distkpi node: {problem.problem}\n{problem.detail}\n")
                print(f"distkpi node: {problem.problem}", file=sys.stderr)
            finally:  # nothing of the code left running before its files are read
                self._stop_code(sandbox.user, report)
        files.note_withheld()
        manifest = self._manifest(place, report, self.clock() - started, hardware)
        uploads = files.uploads() + _golden_upload(files)
        self._upload(store, config_key, place, uploads, manifest, sent=report.sent)
        if sandbox is not None:
            sandbox.remove()
        user.release()
        # a failed main node fails the job when it exits: nothing to wait for
        if place.is_main and place.num_nodes > 1 and report.exit_code == 0:
            self._wait_for_others(store, config_key, place)
        return report.exit_code

    @staticmethod
    def _stop_code(user: CodeUser, report: NodeReport) -> None:
        try:
            stop_code(user)
        except IsolationError as exc:
            report.exit_code, report.problem = report.exit_code or 1, str(exc)

    def _run(
        self,
        place: Place,
        store: S3RunStore,
        config_key: str,
        *,
        files: NodeFiles,
        sandbox: Sandbox,
        report: NodeReport,
    ) -> None:
        setup_started = self.clock()
        plan = PairedPlan.from_env(self.env)
        url = self.env.get("DISTKPI_SOURCE_URL") or f"https://github.com/{place.repo}.git"
        if plan is not None and url == NO_SOURCE:
            raise NodeProblem("a paired run needs a source to check out both commits from")
        source = get_source(url, place.sha, place.repo, sandbox.src, self.env)
        if place.is_main:
            _keep_golden(self.env, source, files)
        sources = {"b": source}
        if plan is not None:
            sources["a"] = get_source(url, plan.base_sha, place.repo, sandbox.root / "a", self.env)
            for slot in schedule(plan):  # made before the hand-over, so they are the code's
                _run_log_dir(sandbox, slot).mkdir(mode=0o700, parents=True)
        sandbox.hand_over()  # checked out by the runner (the token is its), then the code's
        base = code_environment(self.env, sandbox)
        spawn = sandbox.user.popen_kwargs()
        setup = _json_list(self.env, "DISTKPI_SETUP")
        command = list(self.command) or _json_list(self.env, "DISTKPI_COMMAND")
        if not command:
            raise NodeProblem("no command: the suite names none and none was given after --")
        if unreachable := out_of_reach(base, [*setup, command], sandbox.user):
            raise NodeProblem(unreachable)
        for arm in sorted(sources):
            run_setup(setup, sources[arm], base, files.log, spawn)
        report.setup_s = self.clock() - setup_started
        one = _OneRun(self, place, store, config_key, sandbox, base, command)
        if plan is None:
            report.exit_code = one.run(source, files, FOLDER)
            return
        self._run_pairs(plan, one, sources, files, report)

    def _run_pairs(
        self,
        plan: PairedPlan,
        one: _OneRun,
        sources: Mapping[str, Path],
        files: NodeFiles,
        report: NodeReport,
    ) -> None:
        """The plan's runs in order, each pair's files and look manifest sent once the pair
        is done, then the collector's decision awaited: a stop ends the sequence. A run that
        fails ends it too (the config fails with that run's exit code)."""
        place, store, config_key = one.place, one.store, one.config_key
        waiting = DecisionWait(
            store,
            config_key,
            place.run_id,
            place.config,
            self.env.get(KEY_VARIABLE),
            float(self.env.get("DISTKPI_DECISION_WAIT_S", "900")),
            float(self.env.get("DISTKPI_DECISION_POLL_S", "2")),
            self.clock,
            self.sleep,
        )
        arms: dict[str, dict[str, Any]] = {}
        done: list[NodeFiles] = []
        began = _now()  # when the pair under way started
        for slot in schedule(plan):
            if slot.pair is not None and not slot.closes_pair:
                began = _now()
            slot_files = replace(
                files,
                log_dir=_run_log_dir(one.sandbox, slot),
                prefix=slot.prefix,
                parsed=slot.pair is not None,
            )
            slot_files.make()
            started = self.clock()
            done.append(slot_files)
            try:
                code = one.run(sources[slot.arm], slot_files, f"{FOLDER}run-{slot.seq}/")
            except NodeProblem:  # what ran is still sent, for people to see
                report.sent += self._send_all(store, config_key, done)
                raise
            arms[slot.arm] = {"exit_code": code, "wall_s": round(self.clock() - started, 3)}
            if code != 0:
                report.exit_code = code
                report.problem = f"{slot.name}: the command exited {code}"
                report.sent += self._send_all(store, config_key, done)
                return
            if slot.pair is None:
                report.sent += self._send_all(store, config_key, done)
                done = []
            if not slot.closes_pair:
                continue
            assert slot.pair is not None
            entries = self._send_all(store, config_key, done)
            report.sent += entries
            done = []
            self._send_look(one, slot.pair, entries, arms, began)
            if slot.pair == plan.max_pairs:
                return
            decision = waiting.decision(
                slot.pair, lambda: ended_nodes(store, config_key, place.num_nodes)
            )
            with files.log.open("a") as out:
                out.write(
                    f"distkpi node: after pair {slot.pair}: {decision.decision}: {decision.why}\n"
                )
            if decision.decision == "stop":
                return

    def _send_all(
        self, store: S3RunStore, config_key: str, runs: Sequence[NodeFiles]
    ) -> list[dict[str, Any]]:
        entries = []
        for run in runs:
            run.note_withheld()
            entries += self._send(store, config_key, run.uploads())
        return entries

    def _send_look(
        self,
        one: _OneRun,
        pair: int,
        entries: list[dict[str, Any]],
        arms: Mapping[str, Mapping[str, Any]],
        began: str,
    ) -> None:
        """pair-<p>/node-<i>.json: the pair's files (already sent) and how each arm ended,
        signed like the node's manifest; the collector judges the look when every node's is
        in."""
        look = {
            "schema": 1,
            "run_id": one.place.run_id,
            "config": one.place.config,
            "node": one.place.index,
            "pair": pair,
            "arms": {arm: dict(run) for arm, run in arms.items()},
            "exit_code": 0,
            "started_at": began,
            "finished_at": _now(),
            "files": entries,
            "engine_version": ENGINE_VERSION,
        }
        if signing_key := self.env.get(KEY_VARIABLE):
            look = sign(signing_key, look)
        key = look_manifest_key(one.config_key, pair, one.place.index)
        one.store.put_bytes(key, json.dumps(look).encode())

    @staticmethod
    def _manifest(
        place: Place, report: NodeReport, wall_s: float, hardware: Hardware
    ) -> dict[str, Any]:
        kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        manifest: dict[str, Any] = {
            "schema": 1,
            "run_id": place.run_id,  # what it is for, inside what is signed
            "config": place.config,
            "node": place.index,
            "exit_code": report.exit_code,
            "started_at": report.started_at,
            "finished_at": _now(),
            "files": [],
            "peak_host_rss_mib": round(kib / 1024, 1),
            "wall_s": round(wall_s, 3),
            "setup_s": round(report.setup_s, 3),
            "hardware": hardware.to_json(),
            "engine_version": ENGINE_VERSION,
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
        *,
        sent: Sequence[dict[str, Any]] = (),
    ) -> None:
        """The files first, the manifest last, naming each file's sha256 (and those ``sent``
        before, with a paired run's looks) and signed with the config's key: the collector
        counts a node when its manifest lands, and reads what it names."""
        manifest["files"] = [*sent, *self._send(store, config_key, uploads)]
        if signing_key := self.env.get(KEY_VARIABLE):
            manifest = sign(signing_key, manifest)
        key = f"{config_key}node-{place.index}.json"
        store.put_bytes(key, json.dumps(manifest).encode())

    @staticmethod
    def _send(store: S3RunStore, config_key: str, uploads: list[Upload]) -> list[dict[str, Any]]:
        entries = []
        for upload in uploads:
            cut = cap_file(upload.local, MAX_LOG_BYTES) if upload.kind != "file" else None
            try:
                entry = upload.send(store, config_key + upload.path)
            except UnsafeFile:  # checked before (kept_files); nothing of the code runs now
                continue
            entries.append(entry | ({"truncated_bytes": cut} if cut else {}))
        return entries

    def _wait_for_others(self, store: S3RunStore, config_key: str, place: Place) -> None:
        """Batch stops every other node of a multi-node job when the main node exits."""
        others = {f"node-{n}.json" for n in range(place.num_nodes) if n != place.index}
        until = self.clock() + float(self.env.get("DISTKPI_NODE_WAIT_S", "900"))
        pause = pauses(2.0)
        while True:
            try:
                missing = others - set(store.list_names(config_key))
            except StorageError:
                missing = others
            if not missing or self.clock() >= until:
                if missing:
                    print(f"distkpi node: {sorted(missing)} did not report", file=sys.stderr)
                return
            self.sleep(next(pause))


@dataclass(frozen=True)
class _OneRun:
    """What every run of the command on this node shares: a run is a rendezvous (the
    barrier with the job's other nodes, with fresh ports), then the command in a checkout,
    as the code's user, until it exits or its deadline."""

    runner: NodeRunner
    place: Place
    store: S3RunStore
    config_key: str
    sandbox: Sandbox
    base: Mapping[str, str]
    command: Sequence[Any]

    def run(self, source: Path, files: NodeFiles, folder: str) -> int:
        """The command's exit code (STOPPED at its deadline, with a NodeProblem)."""
        env, runner = self.runner.env, self.runner
        address = own_address(env)
        own = Endpoint(self.place.index, address, *free_ports(address, 2))
        endpoints = rendezvous(
            self.store,
            self.config_key,
            self.place,
            own,
            float(env.get("DISTKPI_RENDEZVOUS_S", "600")),
            key=env.get(KEY_VARIABLE),
            clock=runner.clock,
            sleep=runner.sleep,
            folder=folder,
        )
        code_env = dict(self.base) | framework_environment(
            self.place, endpoints, str(source), str(files.log_dir)
        )
        try:
            args = expand(self.command, code_env)
        except ContractError as exc:
            raise NodeProblem(str(exc)) from exc
        timeout_s = float(env.get("DISTKPI_COMMAND_TIMEOUT_S", "7200"))
        code = run_command(
            args,
            source,
            code_env,
            files,
            timeout_s,
            spawn=self.sandbox.user.popen_kwargs(),
            stop_the_rest=lambda: stop_code(self.sandbox.user),
        )
        if code is None:
            raise Stopped(f"command still running at its deadline of {timeout_s:g}s; stopped")
        return code


class Stopped(NodeProblem):
    """The command was still running at its deadline."""

    exit_code = STOPPED


def _keep_golden(env: Mapping[str, str], source: Path, files: NodeFiles) -> None:
    """The suite's golden curve, copied from the checkout before the code runs
    (node/golden.py); why not, in the node's log."""
    why = copy_golden(env, source, files.work)
    if why:
        with files.log.open("a") as out:
            out.write(f"distkpi node: {why}\n")


def _golden_upload(files: NodeFiles) -> list[Upload]:
    copy = golden_copy(files.work)
    return [Upload(copy, GOLDEN_NAME, files.role, files.rank, "file")] if copy else []


def _run_log_dir(sandbox: Sandbox, slot: Slot) -> Path:
    """DISTKPI_LOG_DIR of one run of a paired run: its own, empty when it starts."""
    return sandbox.root / "runs" / slot.name


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
    guard_runner(command)
    return NodeRunner(os.environ, list(command)).run()
