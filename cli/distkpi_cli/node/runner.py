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

import functools
import io
import json
import os
import resource
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from pydantic import ValidationError

from distkpi.adapters.s3_runs import S3RunStore
from distkpi.domain.contracts import (
    MAX_FILES_PER_MANIFEST,
    MAX_LOG_BYTES,
    FileKind,
    NodeManifest,
    describe_errors,
)
from distkpi.domain.logs.engineversion import engine_version
from distkpi.domain.logs.filesummary import PARSED_KINDS
from distkpi.domain.logs.logformats import DEFAULT_SETTINGS, ParseSettings
from distkpi.domain.logs.parsesettings import settings_digest
from distkpi.domain.planning import jobenv
from distkpi.domain.signing import HashingReader, seal
from distkpi.exceptions import ContractError, StorageError
from distkpi_cli.node.bounded import Ended, run_bounded
from distkpi_cli.node.golden import NAME as GOLDEN_NAME
from distkpi_cli.node.golden import copy_golden, golden_copy
from distkpi_cli.node.gpusampler import gpu_sampled
from distkpi_cli.node.hardening import code_spawn, own_pid_namespace
from distkpi_cli.node.hardware import Hardware, read_hardware
from distkpi_cli.node.isolation import (
    CodeUser,
    IsolationError,
    Sandbox,
    code_environment,
    code_user,
    guard_runner,
    stop_code,
)
from distkpi_cli.node.keptfiles import (
    KeptFile,
    LeftFiles,
    LogDir,
    UnsafeFile,
    find_left,
    manifest_refuses,
    open_regular,
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
from distkpi_cli.node.polling import poll_until
from distkpi_cli.node.reach import out_of_reach
from distkpi_cli.node.rendezvous import FOLDER, free_ports, own_address, rendezvous
from distkpi_cli.node.secrets import store_maker, take_secrets, without_secrets
from distkpi_cli.node.settings import NodeSettings
from distkpi_cli.node.source import NO_SOURCE, TOKEN_VARIABLE, NodeProblem, get_source, run_setup
from distkpi_cli.node.summaries import describe
from distkpi_cli.node.walk import (
    UnsafeFolderError,
    open_folder,
    remove_owned_by,
    remove_tree,
)

# Paddle's launcher writes the whole environment into its --log_dir: envlog.<rank>,
# backup_env.<rank>.json, and an environ({...}) line at the top of its own log
MAX_PROBLEM_CHARS = 1000  # a manifest's problem (domain/contracts.py)
STOPPED = 124  # a command stopped at its deadline, as timeout(1) reports it


def note_in_log(log: Path, text: str) -> None:
    """A line of the node's own in its log; lost, as the log's other bytes, on a full disk
    (the manifest says so)."""
    try:
        with log.open("a") as out:
            out.write(f"distkpi node: {text}\n")
    except OSError:
        pass


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Upload:
    local: Path
    path: str  # relative to the config folder
    role: str
    rank: int
    kind: FileKind
    kept: KeptFile | None = None  # a file the command left, reached without a link
    # deleted after the stack's LogRetentionDays (a golden curve, which later runs read,
    # is not)
    expires: bool = True

    def send(
        self, store: S3RunStore, key: str, settings: ParseSettings = DEFAULT_SETTINGS
    ) -> dict[str, Any]:
        """Upload it, and what the manifest says of it: the sha256 of exactly the bytes
        that were sent, read to the end, and, for a log or GPU samples (within
        MAX_LOG_BYTES), the KPI engine's summary of those bytes (node/summaries.py).
        StorageError when the upload stopped short of the file's end."""
        entry = {"path": self.path, "role": self.role, "rank": self.rank, "kind": self.kind}
        with self.kept.open() if self.kept else open_regular(self.local) as f:
            if self.kind in PARSED_KINDS:
                data = f.read()
                store.upload_stream(io.BytesIO(data), key, expires=self.expires)
                return entry | describe(io.BytesIO(data), self.kind, settings)
            size = os.fstat(f.fileno()).st_size
            with HashingReader(f) as stream:
                store.upload_stream(stream, key, expires=self.expires)
                sent = stream.bytes_read
                digest = stream.finish()
            if stream.unread_bytes or sent != size:
                raise StorageError(
                    f"{self.path}: the upload stopped at {sent - stream.unread_bytes} of "
                    f"{size} bytes"
                )
            return entry | {"sha256": digest}


@dataclass(frozen=True)
class NodeFiles:
    """Where a node keeps what it uploads: its log and GPU samples (the runner's own, in
    its work dir) and DISTKPI_LOG_DIR (the code's, in its sandbox, reached through
    ``access`` without following a link)."""

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
    access: LogDir | None = None  # None: the runner's own folder, by its path

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
        """The runner's own folders; DISTKPI_LOG_DIR is the sandbox's, made before the code
        ran (nothing is made in a folder the code could have replaced)."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        if self.access is None:
            self.log_dir.mkdir(parents=True, exist_ok=True)

    def collect(self, room: int = MAX_FILES_PER_MANIFEST) -> tuple[list[Upload], LeftFiles]:
        """What exists of them, named as the manifest names them, at most ``room``; files
        the command left are kept for people (kind `file`), never parsed: metrics go to
        stdout. What is not uploaded is said in the node's log, escaped."""
        log_kind: FileKind = "log" if self.parsed else "file"
        gpu_kind: FileKind = "gpu_memory" if self.parsed else "file"
        logs = f"{self.prefix}logs/"
        named = [
            Upload(self.log, f"{logs}{self.log.name}", self.role, self.rank, log_kind),
            Upload(self.gpu_csv, f"{logs}{self.gpu_csv.name}", self.role, self.rank, gpu_kind),
        ]
        named = [u for u in named if u.local.exists()]
        left = find_left(
            self.access or LogDir(self.log_dir),
            self.owner,
            lambda relative: manifest_refuses(self.file_path(relative)),
            max(0, room - len(named)),
        )
        for kept in left.kept:
            path = self.file_path(kept.relative)
            named.append(Upload(self.log_dir, path, self.role, self.rank, "file", kept))
        for line in left.lines(self.file_path):
            note_in_log(self.log, line)
        return named, left

    def file_path(self, relative: str) -> str:
        return f"{self.prefix}files/{self.stem}/{relative}"


@dataclass
class NodeReport:
    exit_code: int = 0
    problem: str | None = None
    setup_s: float = 0.0
    started_at: str = field(default_factory=_now)
    # a paired run's files already uploaded with its looks, named again in the manifest
    sent: list[dict[str, Any]] = field(default_factory=list)


def run_command(
    args: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    files: NodeFiles,
    timeout_s: float | None = None,
    *,
    spawn: Mapping[str, Any] | None = None,
    stop_the_rest: Callable[[], None] | None = None,
    prefix: Sequence[str] = (),
) -> Ended:
    """The command run (node/bounded.py): its output appended to the node's log and echoed,
    GPU memory sampled while it runs, when nvidia-smi is there (with no secret in its
    environment). ``spawn``: how it starts (as the code's user, in a session of its own);
    ``stop_the_rest``: called once it has ended, to stop whatever it left running (which
    may hold its output open) before the rest of its output is read."""
    with gpu_sampled(files.gpu_csv):
        try:
            return run_bounded(
                args,
                cwd,
                env,
                files.log,
                timeout_s,
                spawn=spawn,
                stop_the_rest=stop_the_rest,
                prefix=prefix,
            )
        except OSError as exc:
            raise NodeProblem(f"command cannot start: {args[0]}: {exc.strerror}") from exc


@dataclass
class NodeRunner:
    env: Mapping[str, str]
    command: Sequence[str]
    store_for: Callable[[str], S3RunStore] = S3RunStore
    hardware_of: Callable[[Mapping[str, str], str], Hardware] = read_hardware
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    unsent: list[str] = field(default_factory=list, init=False)  # uploads that failed
    notes: list[str] = field(default_factory=list, init=False)  # files not read or left out
    # a paired run's base arm, in a sandbox and as a user of its own when the code has a
    # uid of its own: with the descriptor of its sandbox opened before the code ran
    base_arm: list[tuple[Sandbox, int]] = field(default_factory=list, init=False)
    # how its logs are summarised (the run's parse settings, read with the job environment)
    parse: ParseSettings = field(default=DEFAULT_SETTINGS, init=False)

    def run(self) -> int:
        place = Place.from_env(self.env)
        bucket, config_key = _bucket_and_key(place.s3_prefix)
        store = self.store_for(bucket)
        # the job environment, read once: one that is not what the launcher writes fails
        # the node in _run, said in its manifest
        settings: NodeSettings | NodeProblem
        try:
            settings = NodeSettings.from_env(self.env)
        except NodeProblem as garbled:
            settings = garbled
        read = settings if isinstance(settings, NodeSettings) else None
        self.parse = read.parse if read else DEFAULT_SETTINGS
        workdir = read.workdir if read else None
        work = Path(workdir or tempfile.mkdtemp(prefix="distkpi-node-"))
        started = self.clock()
        report = NodeReport()
        hardware = self.hardware_of(self.env, place.role)
        try:
            user = code_user(self.env)
            made = Sandbox.make(user)
            # the sandbox as it is now, before the code can replace any of it
            sandbox_fd: int | None = open_folder(made.root)
            sandbox: Sandbox | None = made
        except (IsolationError, UnsafeFolderError) as exc:
            user, sandbox = CodeUser(os.getuid(), os.getgid(), separate=False), None
            sandbox_fd = None
            report.exit_code, report.problem = 1, f"cannot isolate the code: {exc}"
        files = NodeFiles(
            work,
            place.role,
            place.role_rank,
            sandbox.log_dir if sandbox else work / "no-sandbox",
            user.uid if user.separate else None,
            # a paired run's measured logs are its pairs'; this one holds the setups
            parsed=read is None or read.paired is None,
            access=LogDir(sandbox.log_dir, sandbox_fd, Path("logs")) if sandbox else None,
        )
        files.make()
        if sandbox is not None:
            self._run_to_its_end(
                place, store, config_key, settings, files=files, sandbox=sandbox, report=report
            )
        golden = _golden_upload(files)
        uploads, left = files.collect(MAX_FILES_PER_MANIFEST - len(report.sent) - len(golden))
        uploads += golden
        notes = [*self.notes, *_left_notes("", left)]
        if notes and report.problem is None:
            report.problem = "; ".join(notes)
        manifest = self._manifest(place, report, self.clock() - started, hardware)
        manifest |= self._summary_settings()
        key = read.signing_key if read else None
        self._upload(store, config_key, place, uploads, manifest, key=key, sent=report.sent)
        report.exit_code = manifest["exit_code"]
        if sandbox is not None and sandbox_fd is not None:
            self.base_arm.append((sandbox, sandbox_fd))
        for box, fd in self.base_arm:  # every sandbox, the head's last
            os.close(fd)
            remove_tree(box.root)
            if box.user.lease is not None:  # a leased uid is the next node's: clean it
                remove_owned_by(box.user.uid)
            box.user.release()
        user.release()
        # a failed main node fails the job when it exits: nothing to wait for
        if place.is_main and place.num_nodes > 1 and report.exit_code == 0:
            wait_s = read.node_wait_s if read else NodeSettings.DEFAULT_NODE_WAIT_S
            self._wait_for_others(store, config_key, place, wait_s)
        return report.exit_code

    def _run_to_its_end(
        self,
        place: Place,
        store: S3RunStore,
        config_key: str,
        settings: NodeSettings | NodeProblem,
        *,
        files: NodeFiles,
        sandbox: Sandbox,
        report: NodeReport,
    ) -> None:
        """``_run``, whatever it raises said in the report and the log; then nothing of the
        code left running, before its files are read."""
        try:
            if isinstance(settings, NodeProblem):
                raise settings
            self._run(
                place, store, config_key, settings, files=files, sandbox=sandbox, report=report
            )
        except NodeProblem as problem:
            code = STOPPED if isinstance(problem, Stopped) else report.exit_code or 1
            report.exit_code, report.problem = code, problem.problem
            note_in_log(files.log, f"{problem.problem}\n{problem.detail}")
            print(f"distkpi node: {problem.problem}", file=sys.stderr)
        except Exception as exc:  # never a node that ends with nothing uploaded
            report.exit_code = report.exit_code or 1
            report.problem = f"the node failed: {type(exc).__name__}: {exc}"
            note_in_log(files.log, traceback.format_exc())
        finally:
            self._stop_code(sandbox.user, report)
            for other, _ in self.base_arm:
                self._stop_code(other.user, report)

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
        settings: NodeSettings,
        *,
        files: NodeFiles,
        sandbox: Sandbox,
        report: NodeReport,
    ) -> None:
        setup_started = self.clock()
        plan = settings.paired
        url = settings.source_url or f"https://github.com/{place.repo}.git"
        if plan is not None and url == NO_SOURCE:
            raise NodeProblem("a paired run needs a source to check out both commits from")
        git_env = without_secrets(self.env, keep={TOKEN_VARIABLE})
        source = get_source(url, place.sha, place.repo, sandbox.src, git_env)
        if place.is_main:
            _keep_golden(self.env, source, files)
        sources, boxes = {"b": source}, {"b": sandbox}
        if plan is not None:
            boxes["a"] = self._base_arm_sandbox(sandbox)
            sources["a"] = get_source(url, plan.base_sha, place.repo, boxes["a"].src, git_env)
            for slot in schedule(plan):  # made before the hand-over, so they are the code's
                _run_log_dir(boxes[slot.arm], slot).mkdir(mode=0o700, parents=True)
                if settings.profile_steps is not None:
                    (_run_log_dir(boxes[slot.arm], slot) / jobenv.PROFILE_FOLDER).mkdir(0o700)
        for box in {id(b): b for b in boxes.values()}.values():
            box.hand_over()  # checked out by the runner (the token is its), then the code's
        bases = {arm: code_environment(self.env, box) for arm, box in boxes.items()}
        prefix, refused = own_pid_namespace(sandbox.user)
        if refused is not None:
            note_in_log(files.log, f"the code shares the runner's pid namespace: {refused}")
        setup = settings.setup
        command = self._reachable_command(setup, settings.suite_command, bases["b"], sandbox.user)
        for arm in sorted(sources):
            user = boxes[arm].user
            run_setup(
                setup,
                sources[arm],
                bases[arm],
                files.log,
                code_spawn(user, settings.max_tasks),
                timeout_s=settings.setup_timeout_s,
                stop_the_rest=functools.partial(stop_code, user),
                prefix=prefix,
            )
        report.setup_s = self.clock() - setup_started
        ones = {
            arm: _OneRun(self, settings, place, store, config_key, box, bases[arm], command, prefix)
            for arm, box in boxes.items()
        }
        if plan is None:
            report.exit_code = ones["b"].run(source, files, FOLDER)
            return
        self._run_pairs(plan, ones, sources, files, report, settings=settings)

    def _reachable_command(
        self,
        setup: Sequence[Any],
        suite_command: list[Any] | NodeProblem,
        base: Mapping[str, str],
        user: CodeUser,
    ) -> list[Any]:
        """The command to run, once the code's user is known to reach every program the
        setup and the command start (node/reach.py); NodeProblem naming what it cannot."""
        if self.command:
            command = list(self.command)
        elif isinstance(suite_command, NodeProblem):
            raise suite_command
        else:
            command = suite_command
        if not command:
            raise NodeProblem("no command: the suite names none and none was given after --")
        if unreachable := out_of_reach(base, [*setup, command], user):
            raise NodeProblem(unreachable)
        return command

    def _base_arm_sandbox(self, head: Sandbox) -> Sandbox:
        """The base arm's sandbox, another than the head's: its own checkout, home and
        temporary folder, so that what the head's setup installs (`pip install --user`,
        `pip install -e .` into ~/.local) is not what the base imports. When the code has a
        uid of its own, the base arm has another, leased, so that neither arm can write the
        other's (a rewrite of ../a); not root, both run as the runner's user, which a
        hostile head can still reach across."""
        try:
            user = code_user({}) if head.user.separate else head.user  # root: a leased uid
            box = Sandbox.make(user)
            self.base_arm.append((box, open_folder(box.root)))
        except (IsolationError, UnsafeFolderError) as exc:
            raise NodeProblem(f"cannot isolate the base arm: {exc}") from exc
        return box

    def _run_pairs(
        self,
        plan: PairedPlan,
        ones: Mapping[str, _OneRun],
        sources: Mapping[str, Path],
        files: NodeFiles,
        report: NodeReport,
        *,
        settings: NodeSettings,
    ) -> None:
        """The plan's runs in order, each pair's files and look manifest sent once the pair
        is done, then the collector's decision awaited: a stop ends the sequence. A run that
        fails ends it too (the config fails with that run's exit code)."""
        one = ones["b"]
        place, store, config_key = one.place, one.store, one.config_key
        waiting = DecisionWait(
            store,
            config_key,
            place.run_id,
            place.config,
            settings.signing_key,
            settings.decision_wait_s,
            settings.decision_poll_s,
            self.clock,
            self.sleep,
        )
        arms: dict[str, dict[str, Any]] = {}
        done: list[NodeFiles] = []
        began = _now()  # when the pair under way started
        for slot in schedule(plan):
            if slot.pair is not None and not slot.closes_pair:
                began = _now()
            box = ones[slot.arm].sandbox
            log_dir = _run_log_dir(box, slot)
            slot_files = replace(
                files,
                log_dir=log_dir,
                owner=box.user.uid if box.user.separate else None,
                prefix=slot.prefix,
                parsed=slot.pair is not None,
                access=files.access
                and LogDir(log_dir, self._sandbox_fd(box, files.access), Path("runs", slot.name)),
            )
            slot_files.make()
            started = self.clock()
            done.append(slot_files)
            try:
                code = ones[slot.arm].run(sources[slot.arm], slot_files, f"{FOLDER}run-{slot.seq}/")
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

    def _sandbox_fd(self, box: Sandbox, head: LogDir) -> int | None:
        """The descriptor of ``box`` opened before the code ran: the base arm's own, else
        the head's sandbox's."""
        own = [fd for other, fd in self.base_arm if other is box]
        return own[0] if own else head.base_fd

    def _send_all(
        self, store: S3RunStore, config_key: str, runs: Sequence[NodeFiles]
    ) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = []
        for run in runs:
            uploads, left = run.collect(MAX_FILES_PER_MANIFEST - len(entries))
            self.notes += _left_notes(run.prefix, left)
            entries += self._send(store, config_key, uploads)
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
        fields = {
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
            "engine_version": engine_version(),
            **self._summary_settings(),
        }
        look = seal(one.settings.signing_key, as_contract(fields))
        key = look_manifest_key(one.config_key, pair, one.place.index)
        one.store.put_bytes(key, json.dumps(look).encode())

    def _summary_settings(self) -> dict[str, str]:
        """What a manifest says of the settings its summaries were made with."""
        digest = settings_digest(self.parse)
        return {} if digest is None else {"summary_settings": digest}

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
            "engine_version": engine_version(),
        }
        if report.problem:
            manifest["problem"] = _problem(report.problem)
        return manifest

    def _upload(
        self,
        store: S3RunStore,
        config_key: str,
        place: Place,
        uploads: list[Upload],
        manifest: dict[str, Any],
        *,
        key: str | None,
        sent: Sequence[dict[str, Any]] = (),
    ) -> None:
        """The files first, the manifest last, naming each file's sha256 (and those ``sent``
        before, with a paired run's looks) and signed with the config's key: the collector
        counts a node when its manifest lands, and reads what it names."""
        manifest["files"] = [*sent, *self._send(store, config_key, uploads)]
        if self.unsent:
            said = [manifest.get("problem"), f"not uploaded: {'; '.join(self.unsent)}"]
            manifest["problem"] = _problem("; ".join(p for p in said if p))
            manifest["exit_code"] = manifest["exit_code"] or 1
        record = as_contract(manifest)
        manifest["exit_code"] = record["exit_code"]
        record = seal(key, record)
        store.put_bytes(f"{config_key}node-{place.index}.json", json.dumps(record).encode())

    def _send(
        self, store: S3RunStore, config_key: str, uploads: list[Upload]
    ) -> list[dict[str, Any]]:
        """Each upload's manifest entry; one that cannot be read or sent whole is left out,
        and said in ``unsent`` (the manifest's problem)."""
        entries = []
        for upload in uploads:
            try:
                cut = cap_file(upload.local, MAX_LOG_BYTES) if upload.kind != "file" else None
                entry = upload.send(store, config_key + upload.path, self.parse)
            except UnsafeFile:  # checked before (find_left); nothing of the code runs now
                continue
            except (StorageError, OSError) as exc:
                self.unsent.append(f"{upload.path}: {exc}")
                continue
            entries.append(entry | ({"truncated_bytes": cut} if cut else {}))
        return entries

    def _wait_for_others(
        self, store: S3RunStore, config_key: str, place: Place, wait_s: float
    ) -> None:
        """Batch stops every other node of a multi-node job when the main node exits."""
        others = {f"node-{n}.json" for n in range(place.num_nodes) if n != place.index}
        missing = set(others)

        def all_in() -> bool | None:
            try:
                listed = set(store.list_names(config_key))
            except StorageError:
                listed = set()
            missing.clear()
            missing.update(others - listed)
            return True if not missing else None

        if poll_until(all_in, wait_s, 2.0, clock=self.clock, sleep=self.sleep) is None:
            print(f"distkpi node: {sorted(missing)} did not report", file=sys.stderr)


@dataclass(frozen=True)
class _OneRun:
    """What every run of the command on this node shares: a run is a rendezvous (the
    barrier with the job's other nodes, with fresh ports), then the command in a checkout,
    as the code's user, until it exits or its deadline."""

    runner: NodeRunner
    settings: NodeSettings
    place: Place
    store: S3RunStore
    config_key: str
    sandbox: Sandbox
    base: Mapping[str, str]
    command: Sequence[Any]
    prefix: Sequence[str] = ()  # what runs it in a pid namespace of its own (not root)

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
            self.settings.rendezvous_s,
            key=self.settings.signing_key,
            clock=runner.clock,
            sleep=runner.sleep,
            folder=folder,
        )
        code_env = dict(self.base) | framework_environment(
            self.place, endpoints, str(source), str(files.log_dir)
        )
        if self.settings.profile_steps is not None:  # a diagnosis job: traces, with its files
            code_env[jobenv.PROFILE_DIR] = str(files.log_dir / jobenv.PROFILE_FOLDER)
        try:
            args = expand(self.command, code_env)
        except ContractError as exc:
            raise NodeProblem(str(exc)) from exc
        timeout_s = self.settings.command_timeout_s
        ended = run_command(
            args,
            source,
            code_env,
            files,
            timeout_s,
            spawn=code_spawn(self.sandbox.user, self.settings.max_tasks),
            stop_the_rest=lambda: stop_code(self.sandbox.user),
            prefix=self.prefix,
        )
        if ended.note is not None:
            note_in_log(files.log, ended.note)
        if ended.code is None:
            raise Stopped(f"command still running at its deadline of {timeout_s:g}s; stopped")
        if ended.log_error is not None:
            raise NodeProblem(ended.log_error)
        return ended.code


class Stopped(NodeProblem):
    """The command was still running at its deadline."""

    exit_code = STOPPED


def as_contract(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A node or look manifest as the collector's model reads it (domain/contracts.py,
    `NodeManifest`): what the node writes is what the collector checks. One that breaks the
    contract (a hardware probe's problem over its length, say) is written with the reason
    as its problem, exit code 1 and no files, rather than refused whole by the collector."""
    try:
        return NodeManifest.model_validate(fields).to_json()
    except ValidationError as exc:
        said = f"the node's manifest breaks the contract: {describe_errors(exc)}"
        kept = {k: fields[k] for k in _ALWAYS_VALID if k in fields}
        failed = kept | {"exit_code": fields.get("exit_code") or 1, "problem": _problem(said)}
        return NodeManifest.model_validate(failed | {"files": []}).to_json()


# what a manifest holds that the node makes itself, always within the contract
_ALWAYS_VALID = ("schema", "run_id", "config", "node", "pair", "started_at", "finished_at")


def _keep_golden(env: Mapping[str, str], source: Path, files: NodeFiles) -> None:
    """The suite's golden curve, copied from the checkout before the code runs
    (node/golden.py); why not, in the node's log."""
    why = copy_golden(env, source, files.work)
    if why:
        note_in_log(files.log, why)


def _golden_upload(files: NodeFiles) -> list[Upload]:
    copy = golden_copy(files.work)
    if copy is None:
        return []
    return [Upload(copy, GOLDEN_NAME, files.role, files.rank, "file", expires=False)]


def _run_log_dir(sandbox: Sandbox, slot: Slot) -> Path:
    """DISTKPI_LOG_DIR of one run of a paired run: its own, empty when it starts."""
    return sandbox.root / "runs" / slot.name


def _left_notes(prefix: str, left: LeftFiles) -> list[str]:
    """What a manifest's problem says of the files a run left: only a DISTKPI_LOG_DIR that
    is no folder any more (replaced by a link) fails the config; files left out by the
    manifest's rules (names, room) are named in the log alone."""
    run = f"{prefix.rstrip('/')}: " if prefix else ""
    return [f"{run}DISTKPI_LOG_DIR not read: {left.unreadable}"] if left.unreadable else []


def _problem(text: str) -> str:
    """A manifest's problem, within what the contract takes."""
    return text if len(text) <= MAX_PROBLEM_CHARS else f"{text[: MAX_PROBLEM_CHARS - 3]}..."


def _bucket_and_key(prefix: str) -> tuple[str, str]:
    url = urlparse(prefix)
    return url.netloc, url.path.lstrip("/")


def main(command: Sequence[str]) -> int:
    """`distkpi node [-- COMMAND...]`: the command, else the suite's (DISTKPI_COMMAND)."""
    guard_runner(command)
    # from here on no process the runner starts inherits a secret: they live in its mapping
    secrets = take_secrets(os.environ)
    env = dict(os.environ) | secrets
    return NodeRunner(env, list(command), store_for=store_maker(env)).run()
