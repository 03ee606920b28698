"""The real `distkpi node` (as root, as on Batch) against a benchmark written to break it:
each test commits what a hostile merge request would, runs the node to its end against
moto's server on 127.0.0.1, and checks what it uploaded. Every one must end with a manifest
signed with the config's key that says what happened, and an exit code that agrees with it."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from distkpi.domain.contracts import MAX_FILES_PER_MANIFEST, MAX_LOG_BYTES, NodeManifest
from distkpi.domain.signing import signed_by
from distkpi_cli.node.isolation import processes_of
from tests.conftest import git
from tests.unit.test_isolation import (
    KEY,
    SECRETS,
    batch_environment,
    moto,
    python_for,
    uploaded,
)

__all__ = ["moto"]  # the module's fixture: moto's server and a client of it
ATTACKER_UID = 61997  # the developer running `distkpi node` without root (outside the leases)

# every attack runs the real node (seconds each): `make slow`, which CI runs beside `make test`
pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="changing users needs root"),
    pytest.mark.slow,
]


def attacking_repo(path: Path, files: dict[str, str]) -> str:
    """A repository holding ``files``; its sha."""
    path.mkdir(parents=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    for name, text in files.items():
        (path / name).write_text(textwrap.dedent(text))
    git(path, "add", ".")
    git(path, "-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-qm", "x")
    return git(path, "rev-parse", "HEAD")


def node(
    python: list[str], command: list[str], env: dict[str, str], **user: Any
) -> subprocess.CompletedProcess[bytes]:
    """`distkpi node -- COMMAND` as a job starts it (stdin closed), run to its end, as root
    or as the ordinary user ``user`` names."""
    return subprocess.run(
        [*python, "-m", "distkpi_cli.main", "node", "--", *command],
        env=env,
        cwd="/",
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=300,
        check=False,
        **user,
    )


def run_attack(
    moto: tuple[str, Any],
    tmp_path: Path,
    run_id: str,
    files: dict[str, str],
    command: list[str],
    setup: list[str] | None = None,
    *,
    as_uid: int | None = None,
    **extra: str,
) -> tuple[int, str, dict[str, bytes], dict[str, Any]]:
    """`distkpi node -- COMMAND` in a checkout of ``files``, run to its end (as root, or as
    the ordinary user ``as_uid``, who must own ``tmp_path``): its exit code, its output, what
    it uploaded, and its manifest (checked signed and valid)."""
    endpoint, s3 = moto
    repo, work = tmp_path / "repo", tmp_path / "work"
    sha = attacking_repo(repo, files)
    env = batch_environment(endpoint, repo, sha, work, run_id) | extra
    env["DISTKPI_SETUP"] = json.dumps(setup or [])
    python = [sys.executable]
    user: dict[str, Any] = {}
    if as_uid is not None:
        work.mkdir()
        for path in [tmp_path, work, repo, *repo.rglob("*")]:
            os.lchown(path, as_uid, as_uid)
        python, more = python_for(as_uid, tmp_path)
        env |= more
        user = {"user": as_uid, "group": as_uid, "extra_groups": []}
    done = node(python, command, env, **user)
    output = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
    objects = uploaded(s3, run_id)
    assert "node-0.json" in objects, output
    manifest = json.loads(objects["node-0.json"])
    assert signed_by(KEY, manifest), "the manifest is not signed with the config's key"
    NodeManifest.model_validate(manifest)
    assert manifest["exit_code"] == done.returncode, output
    return done.returncode, output, objects, manifest


@pytest.mark.parametrize("as_uid", [None, ATTACKER_UID], ids=["root", "ordinary-user"])
def test_no_child_of_the_runner_holds_a_secret(
    moto: tuple[str, Any], tmp_path: Path, as_uid: int | None
) -> None:
    """Given an nvidia-smi and a git on the runner's PATH that write down their environment
    (what the code reads of /proc/<pid>/environ of a process of its user), when the node
    checks out, probes the hardware and samples the GPU, then neither holds a secret (git
    only the clone token, as an HTTP header). Not root, the runner holds its secrets in no
    process environment at all after it re-executes, so nothing it starts inherits one."""
    if as_uid is not None:
        tmp_path = Path(tempfile.mkdtemp(prefix="distkpi-attack-"))
        tmp_path.chmod(0o755)
    spies = tmp_path / "spies"
    spies.mkdir()
    if as_uid is not None:  # where they write down what they saw
        os.lchown(spies, as_uid, as_uid)
    real_git = shutil.which("git")
    for name, then in (("nvidia-smi", "sleep 1"), ("git", f'exec {real_git} "$@"')):
        spy = spies / name
        spy.write_text(f'#!/bin/sh\nenv >> "{spies}/{name}.env"\n{then}\n')
        spy.chmod(0o755)
    path = f"{spies}:/usr/local/bin:/usr/bin:/bin"
    try:
        code, _, _, manifest = run_attack(
            moto,
            tmp_path,
            f"spied-{as_uid or 0}",
            {"bench.py": "print('ok')\n"},
            ["python3", "bench.py"],
            as_uid=as_uid,
            PATH=path,
        )
        assert code == 0 and manifest["exit_code"] == 0
        for name in ("nvidia-smi", "git"):
            seen = (spies / f"{name}.env").read_text()
            assert "PATH=" in seen, f"{name} never ran"
            for secret, value in SECRETS.items():
                assert value not in seen, f"{secret} in the environment of {name}"
    finally:
        if as_uid is not None:
            shutil.rmtree(tmp_path, ignore_errors=True)


def test_a_kept_file_over_8_mib_is_uploaded_whole(moto: tuple[str, Any], tmp_path: Path) -> None:
    """Given a benchmark that keeps a 9 MiB file, then the object uploaded is all of it,
    and the sha256 the manifest signs is of those bytes."""
    writer = """
        import os
        data = bytes(range(256)) * (9 * 4096)
        open(os.path.join(os.environ["DISTKPI_LOG_DIR"], "big.bin"), "wb").write(data)
    """
    code, _, objects, manifest = run_attack(
        moto, tmp_path, "big", {"bench.py": writer}, ["python3", "bench.py"]
    )
    sent = objects["files/trainer-0/big.bin"]
    assert code == 0 and len(sent) == 9 * 2**20
    entry = next(f for f in manifest["files"] if f["path"] == "files/trainer-0/big.bin")
    assert entry["sha256"] == hashlib.sha256(sent).hexdigest()


def test_a_setup_that_leaves_a_process_behind_does_not_hang_the_node(
    moto: tuple[str, Any], tmp_path: Path
) -> None:
    """Given a setup that starts `sleep 600 &` (holding the output pipe open), then the
    setup ends, its leftover is killed and the command runs."""
    code, _, objects, _ = run_attack(
        moto,
        tmp_path,
        "background",
        {"bench.py": "print('the command ran')\n"},
        ["python3", "bench.py"],
        setup=["sleep 600 & echo setup done"],
    )
    log = objects["logs/trainer-0.log"].decode()
    assert code == 0 and "setup done" in log and "the command ran" in log


def test_a_setup_past_its_deadline_is_stopped_and_said(
    moto: tuple[str, Any], tmp_path: Path
) -> None:
    code, _, objects, manifest = run_attack(
        moto,
        tmp_path,
        "slow-setup",
        {"bench.py": "print('never')\n"},
        ["python3", "bench.py"],
        setup=["echo started; sleep 600"],
        DISTKPI_SETUP_TIMEOUT_S="2",
    )
    assert code == 1
    assert manifest["problem"].startswith("setup failed: echo started; sleep 600 still running")
    assert "never" not in objects["logs/trainer-0.log"].decode()


FORK_BOMB = """
    import os, time
    with open(os.path.join(os.environ["DISTKPI_LOG_DIR"], "who.txt"), "w") as who:
        who.write(f"uid {os.getuid()}\\n")
    children = 0
    while True:
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            os.setsid()
            time.sleep(600)
            os._exit(0)
        children += 1
    print("forked", children, flush=True)
"""


def test_a_setsid_fork_bomb_ends_at_the_cap_and_is_killed(
    moto: tuple[str, Any], tmp_path: Path
) -> None:
    """Given a benchmark that forks setsid'd sleepers until it cannot fork any more (the
    code's process cap), then the node kills them all without forking as that uid itself,
    and uploads its manifest."""
    code, _, objects, _ = run_attack(
        moto,
        tmp_path,
        "bomb",
        {"bench.py": FORK_BOMB},
        ["python3", "bench.py"],
        DISTKPI_CODE_MAX_TASKS="40",
    )
    log = objects["logs/trainer-0.log"].decode()
    forked = int(next(line for line in log.splitlines() if line.startswith("forked")).split()[1])
    assert code == 0 and 0 < forked < 40
    uid = int(next(f for f in _status_lines(objects) if f.startswith("uid")).split()[1])
    assert processes_of(uid) == []


def _status_lines(objects: dict[str, bytes]) -> list[str]:
    return objects["files/trainer-0/who.txt"].decode().splitlines()


def test_deep_folders_and_hostile_names_are_walked_and_listed(
    moto: tuple[str, Any], tmp_path: Path
) -> None:
    """Given a benchmark that leaves 1,100 nested folders in DISTKPI_LOG_DIR and in its
    home, names that are not UTF-8 or hold a backslash, a newline or a control character,
    a path over 1,024 bytes, and 300 files, then the node uploads what the manifest takes
    (256 entries at most) and lists the rest escaped in its log."""
    writer = r"""
        import os
        logs, home = os.environ["DISTKPI_LOG_DIR"], os.environ["HOME"]
        for top in (logs, home):
            fd = os.open(top, os.O_RDONLY)
            for _ in range(1100):
                os.mkdir("d", dir_fd=fd)
                deeper = os.open("d", os.O_RDONLY, dir_fd=fd)
                os.close(fd)
                fd = deeper
            os.close(fd)
        for name in (b"not-utf8-\xff", b"back\\slash", b"new\nline", b"bell\x07"):
            open(os.path.join(os.fsencode(logs), name), "w").write("x")
        long = os.path.join(logs, *["n" * 200] * 5)
        os.makedirs(long)
        open(os.path.join(long, "f"), "w").write("x")
        os.mkdir(os.path.join(logs, "many"))
        for n in range(300):
            open(os.path.join(logs, "many", f"{n:03}.txt"), "w").write(str(n))
        print("left them", flush=True)
    """
    code, _, objects, manifest = run_attack(
        moto, tmp_path, "names", {"bench.py": writer}, ["python3", "bench.py"]
    )
    log = objects["logs/trainer-0.log"].decode()
    assert "left them" in log
    assert len(manifest["files"]) == MAX_FILES_PER_MANIFEST
    assert code == 0 and "problem" not in manifest  # a benchmark may leave many files
    for shown in ("not-utf8-\\xff", "back\\\\slash", "new\\nline", "bell\\x07"):
        assert shown in log, shown
    assert "deeper than 32 folders" in log
    assert "over the manifest's room for files" in log and "many/299.txt" in log


def test_a_line_of_any_length_is_read_in_chunks_and_the_log_capped(
    moto: tuple[str, Any], tmp_path: Path
) -> None:
    """Given a benchmark that prints one line longer than a log's cap, then the log on disk
    stops at the cap (less room for the runner's own lines), and says how much it
    dropped."""
    printer = f"""
        import sys
        chunk = b"x" * (1 << 20)
        for _ in range({MAX_LOG_BYTES // 2**20 + 8}):
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.write(b"\\n")
    """
    code, _, objects, _ = run_attack(
        moto, tmp_path, "long-line", {"bench.py": printer}, ["python3", "bench.py"]
    )
    log = objects["logs/trainer-0.log"]
    assert code == 0 and len(log) <= MAX_LOG_BYTES
    dropped = (MAX_LOG_BYTES // 2**20 + 8) * 2**20 + 1 - (MAX_LOG_BYTES - 2**16)
    assert log.endswith(
        f"distkpi node: output past {MAX_LOG_BYTES - 2**16} bytes not kept: "
        f"{dropped} byte(s)\n".encode()
    )


def test_a_log_dir_replaced_by_a_link_is_not_followed(
    moto: tuple[str, Any], tmp_path: Path
) -> None:
    """Given a benchmark that replaces DISTKPI_LOG_DIR by a link to a folder only root
    reads, then the node reads nothing there and says so."""
    secret_folder = tmp_path / "root-only"
    secret_folder.mkdir(mode=0o700)
    (secret_folder / "root-secret-name.txt").write_text("root's own\n")
    linker = f"""
        import os
        logs = os.environ["DISTKPI_LOG_DIR"]
        os.rename(logs, logs + ".moved")
        os.symlink({str(secret_folder)!r}, logs)
    """
    code, _, objects, manifest = run_attack(
        moto, tmp_path, "linked", {"bench.py": linker}, ["python3", "bench.py"]
    )
    assert not any("root-secret-name" in k for k in objects)
    assert b"root-secret-name" not in objects["logs/trainer-0.log"]
    assert manifest["problem"].startswith("DISTKPI_LOG_DIR not read")
    assert code == 0  # the command itself succeeded; the manifest says what was not read


def test_the_code_reads_no_terminal_gains_no_privilege_has_a_cap_and_leaves_nothing(
    moto: tuple[str, Any], tmp_path: Path
) -> None:
    prober = """
        import os, resource, sys
        status = open("/proc/self/status").read().splitlines()
        nnp = next(line for line in status if line.startswith("NoNewPrivs"))
        soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
        out = open(os.path.join(os.environ["DISTKPI_LOG_DIR"], "who.txt"), "w")
        out.write(f"uid {os.getuid()}\\n{nnp.split()[1]}\\nnproc {soft}\\n")
        out.write(f"stdin {sys.stdin.read()!r} {os.path.realpath('/proc/self/fd/0')}\\n")
        for folder in ("/tmp", "/dev/shm"):  # for the next holder of this uid to find
            if os.path.isdir(folder):
                open(f"{folder}/left-by-{os.getuid()}", "w").write("a note for the next run")
    """
    code, _, objects, _ = run_attack(
        moto,
        tmp_path,
        "probed",
        {"bench.py": prober},
        ["python3", "bench.py"],
        DISTKPI_CODE_MAX_TASKS="512",
    )
    lines = _status_lines(objects)
    assert code == 0
    assert lines[1:] == ["1", "nproc 512", "stdin '' /dev/null"]
    uid = lines[0].split()[1]
    assert not Path(f"/tmp/left-by-{uid}").exists()
    assert not Path(f"/dev/shm/left-by-{uid}").exists()


@pytest.fixture
def small_disk(tmp_path: Path) -> Any:
    """A folder on a tmpfs of 256 KiB of its own (skipped where mounting is refused)."""
    disk = tmp_path / "small-disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_a_full_disk_is_drained_and_said(
    moto: tuple[str, Any], tmp_path: Path, small_disk: Path
) -> None:
    """Given a node whose work dir (its log) is on a disk that fills up while the command
    prints 4 MiB, then the command still runs to its end (its output drained, never
    blocking), and the manifest says the log could not be written."""
    printer = """
        import sys
        for n in range(4096):
            print(f"{n:06} " + "y" * 1000)
        print("the end", file=sys.stderr)
    """
    code, _, objects, manifest = run_attack(
        moto,
        tmp_path,
        "full-disk",
        {"bench.py": printer},
        ["python3", "bench.py"],
        DISTKPI_WORKDIR=str(small_disk / "work"),
    )
    assert code == 1
    assert manifest["problem"].startswith("the node's log cannot be written: No space left")
    assert 0 < len(objects["logs/trainer-0.log"]) <= 256 * 1024


def test_a_head_that_points_runs_at_a_root_folder_gets_nothing_made_there(
    moto: tuple[str, Any], tmp_path: Path
) -> None:
    """Given a paired run whose head's setup replaces the sandbox's runs/ folder by a link
    to a folder only root may write, then the runner makes nothing there (each run's
    DISTKPI_LOG_DIR was made before the code ran, and is reached without a link)."""
    root_only = tmp_path / "root-only"
    root_only.mkdir(mode=0o700)
    repo = tmp_path / "repo"
    base_sha = attacking_repo(repo, {"bench.py": "print('measured')\n", "setup.sh": "true\n"})
    runs = "../../runs"  # the checkout is the sandbox's src/src
    relink = f"[ -L {runs} ] || {{ mv {runs} {runs}.moved && ln -s {root_only} {runs}; }}\n"
    (repo / "setup.sh").write_text(relink)
    git(repo, "-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-qam", "head")
    head_sha = git(repo, "rev-parse", "HEAD")
    endpoint, s3 = moto
    work = tmp_path / "work"
    env = batch_environment(endpoint, repo, head_sha, work, "relinked") | {
        "DISTKPI_SETUP": json.dumps(["sh setup.sh"]),
        "DISTKPI_PAIRED": json.dumps({"max_pairs": 1, "warmup": False}),
        "DISTKPI_BASE_SHA": base_sha,
    }
    done = node([sys.executable], ["python3", "bench.py"], env)
    manifest = json.loads(uploaded(s3, "relinked")["node-0.json"])
    assert list(root_only.iterdir()) == []
    assert signed_by(KEY, manifest) and manifest["exit_code"] == done.returncode
    # the base arm has a sandbox of its own: only the head's runs were linked away
    assert manifest["problem"].startswith("pair-1/b: DISTKPI_LOG_DIR not read")


def test_a_paired_head_reaches_neither_the_base_arms_checkout_nor_its_home(
    moto: tuple[str, Any], tmp_path: Path
) -> None:
    """Given a paired run whose head's setup installs into its home (as `pip install
    --user` does) and rewrites every checkout it can find of the base arm, then the base
    arm runs its own code, with a home the head never wrote: each arm is a user of its own,
    in a sandbox of its own."""
    repo = tmp_path / "repo"
    base_bench = """
        import os
        home = os.environ["HOME"]
        print("I am the base; its home holds the head's install:", os.path.exists(home + "/head"))
    """
    base_sha = attacking_repo(repo, {"bench.py": base_bench, "setup.sh": "true\n"})
    (repo / "setup.sh").write_text(
        'touch "$HOME/head"\n'
        "for f in /tmp/distkpi-code-*/src/src/bench.py /tmp/distkpi-code-*/a/src/bench.py "
        '../../a/src/bench.py; do [ "$f" -ef bench.py ] || '
        'echo \'print("owned by the head")\' > "$f"; done\n'
        "true\n"
    )
    (repo / "bench.py").write_text("print('I am the head')\n")
    git(repo, "-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-qam", "head")
    head_sha = git(repo, "rev-parse", "HEAD")
    endpoint, s3 = moto
    env = batch_environment(endpoint, repo, head_sha, tmp_path / "work", "two-arms") | {
        "DISTKPI_SETUP": json.dumps(["sh setup.sh"]),
        "DISTKPI_PAIRED": json.dumps({"max_pairs": 1, "warmup": False}),
        "DISTKPI_BASE_SHA": base_sha,
    }
    done = node([sys.executable], ["python3", "bench.py"], env)
    objects = uploaded(s3, "two-arms")
    manifest = json.loads(objects["node-0.json"])
    assert signed_by(KEY, manifest) and manifest["exit_code"] == done.returncode == 0
    base_log = objects["pair-1/a/logs/trainer-0.log"].decode()
    assert "I am the base; its home holds the head's install: False" in base_log
    assert "owned by the head" not in base_log
    assert "I am the head" in objects["pair-1/b/logs/trainer-0.log"].decode()


def test_as_an_ordinary_user_a_paired_heads_install_is_not_what_the_base_imports(
    moto: tuple[str, Any],
) -> None:
    """Given a paired run on the non-root path (a developer's machine) whose head's setup
    installs its package into its home, as `pip install -e .` does into ~/.local, then the
    base arm imports the base's own package from its own checkout and home: each arm has
    a sandbox of its own even where both run as the same user (no malice needed: the
    README's own setup made a 30% slower head measure as fast as its base)."""
    base = Path(tempfile.mkdtemp(prefix="distkpi-attack-"))
    try:
        base.chmod(0o755)
        repo, work = base / "repo", base / "work"
        bench = """
            import os, sys
            sys.path.insert(0, os.path.join(os.environ["HOME"], "site"))
            sys.path.append(os.getcwd())
            import speed
            print("speed", speed.SPEED, "from", os.path.relpath(speed.__file__, os.environ["HOME"]))
        """
        setup = 'mkdir -p "$HOME/site" && cp speed.py "$HOME/site/"\n'
        base_sha = attacking_repo(
            repo, {"bench.py": bench, "speed.py": "SPEED = 100\n", "setup.sh": setup}
        )
        (repo / "speed.py").write_text("SPEED = 70\n")
        git(repo, "-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-qam", "head")
        head_sha = git(repo, "rev-parse", "HEAD")
        work.mkdir()
        for path in [base, work, repo, *repo.rglob("*")]:
            os.lchown(path, ATTACKER_UID, ATTACKER_UID)
        python, more = python_for(ATTACKER_UID, base)
        endpoint, s3 = moto
        env = (
            batch_environment(endpoint, repo, head_sha, work, "own-homes")
            | more
            | {
                "DISTKPI_SETUP": json.dumps(["sh setup.sh"]),
                "DISTKPI_PAIRED": json.dumps({"max_pairs": 1, "warmup": False}),
                "DISTKPI_BASE_SHA": base_sha,
            }
        )
        as_attacker = {"user": ATTACKER_UID, "group": ATTACKER_UID, "extra_groups": []}
        done = node(python, ["python3", "bench.py"], env, **as_attacker)
        output = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
        objects = uploaded(s3, "own-homes")
        manifest = json.loads(objects["node-0.json"])
        assert signed_by(KEY, manifest) and manifest["exit_code"] == done.returncode == 0, output
        assert "speed 100 from site/speed.py" in objects["pair-1/a/logs/trainer-0.log"].decode()
        assert "speed 70 from site/speed.py" in objects["pair-1/b/logs/trainer-0.log"].decode()
    finally:
        shutil.rmtree(base, ignore_errors=True)


RUNNER_KILLER = """
    import os, signal, time
    mine = os.getuid()
    killed = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = open(f"/proc/{entry}/cmdline", "rb").read()
            uid = int(open(f"/proc/{entry}/status").read().split("Uid:")[1].split()[0])
        except (OSError, IndexError, ValueError):
            continue
        if uid == mine and b"distkpi_cli.main" in cmdline:
            try:
                os.kill(int(entry), signal.SIGKILL)
                killed.append(entry)
            except OSError as exc:
                print("cannot kill", entry, exc.strerror, flush=True)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(600)  # to read the next node's environment, were it still here
        os._exit(0)
    print("killed", killed, flush=True)
"""


def test_as_an_ordinary_user_the_code_can_neither_kill_its_runner_nor_outlive_it(
    moto: tuple[str, Any], tmp_path: Path
) -> None:
    """Given a benchmark, run as the runner's own user, that SIGKILLs every `distkpi node`
    process of its uid it finds in /proc and leaves a setsid daemon, then the runner lives
    on (the code is in a pid namespace of its own, where those pids name nothing), uploads
    its manifest, and nothing of the code outlives it."""
    base = Path(tempfile.mkdtemp(prefix="distkpi-attack-"))
    try:
        base.chmod(0o755)
        code, output, objects, manifest = run_attack(
            moto,
            base,
            "runner-killer",
            {"bench.py": RUNNER_KILLER},
            ["python3", "bench.py"],
            as_uid=ATTACKER_UID,
        )
        log = objects["logs/trainer-0.log"].decode()
        if "the code shares the runner's pid namespace" in log:
            pytest.skip("this machine refuses unprivileged pid namespaces")
        assert code == 0 and manifest["exit_code"] == 0, output
        assert "cannot kill" in log and "killed []" in log
        assert processes_of(ATTACKER_UID) == []
    finally:
        shutil.rmtree(base, ignore_errors=True)
