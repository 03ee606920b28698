"""The code under test holds no secret. The real `distkpi node` runs as a process with the
secrets in its environment as Batch gives them (the job role's credentials, the container
credentials URI, the clone token, the manifest key), against moto's server on 127.0.0.1;
its benchmark (tests/unit/hunter.py) hunts for them everywhere a process in its container
can look and leaves a daemon behind. No secret value may appear in the node's output, in
anything it uploaded, or in what the benchmark wrote; the daemon must be dead once the node
has exited; and the node must still have signed its manifest with its key.

Two paths: the runner as root (CI, the Batch container), which runs the code as another
user, and the runner as an ordinary user (a developer's machine), which re-executes itself
with its secrets on a pipe and makes itself non-dumpable; that test drops to a non-root
user first, so it needs root too."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from distkpi.domain.signing import signed_by
from distkpi_cli.local.codeenv import code_bin, twin_of
from distkpi_cli.node.isolation import LEASED_UIDS, _lease_dir, processes_of
from tests.conftest import git

ROOT = Path(__file__).resolve().parents[2]
HUNTER = Path(__file__).with_name("hunter.py")
BUCKET = "hunted-runs"
KEY = "hunted-manifest-key-" + "5f" * 22
SECRETS = {
    "AWS_ACCESS_KEY_ID": "ASIAHUNTEDACCESSKEY7Q",
    "AWS_SECRET_ACCESS_KEY": "hunted/secret+access/key0123456789abcdef",
    "AWS_SESSION_TOKEN": "hunted-session-token-IQoJb3JpZ2luX2VjEJr",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/hunted-4c1f-9a7e-credentials",
    "DISTKPI_GIT_TOKEN": "ghs_huntedclonetoken0123456789abcdefXY",
    "DISTKPI_MANIFEST_KEY": KEY,
}
OTHER_UID = 61999  # the developer running `distkpi node` without root (outside the leases)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="changing users needs root")


@pytest.fixture(scope="module")
def moto() -> Iterator[tuple[str, Any]]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="reader",
        aws_secret_access_key="reader",
    )
    s3.create_bucket(Bucket=BUCKET)
    yield endpoint, s3
    server.stop()


def hunting_repo(path: Path) -> str:
    """A repository whose benchmark is the hunter; its sha."""
    path.mkdir(parents=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    shutil.copy(HUNTER, path / "bench.py")
    git(path, "add", ".")
    git(path, "-c", "user.email=ci@example.com", "-c", "user.name=ci", "commit", "-qm", "hunt")
    return git(path, "rev-parse", "HEAD")


def batch_environment(
    endpoint: str, repo: Path, sha: str, work: Path, run_id: str
) -> dict[str, str]:
    """A single-node job's container environment, as the launcher and Batch give it."""
    return SECRETS | {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_BATCH_JOB_ID": "hunted-job",
        "DISTKPI_RUN_ID": run_id,
        "DISTKPI_CONFIG": "1x1",
        "DISTKPI_S3_PREFIX": f"s3://{BUCKET}/runs/{run_id}/1x1/",
        "DISTKPI_REPO": "org/hunted",
        "DISTKPI_SHA": sha,
        "DISTKPI_TRAINERS": "1",
        "DISTKPI_GPUS_PER_TRAINER": "1",
        "DISTKPI_PSERVERS": "0",
        "DISTKPI_BATCH_SIZE": "64",
        "DISTKPI_SOURCE_URL": str(repo),
        "DISTKPI_SETUP": json.dumps(["env > setup-saw.txt"]),
        "DISTKPI_COMMAND": "[]",
        "DISTKPI_NODE_ADDRESS": "127.0.0.1",
        "DISTKPI_INSTANCE_TYPE": "local",
        "DISTKPI_WORKDIR": str(work),
        "PYTHONUNBUFFERED": "1",
    }


def run_node(python: list[str], env: dict[str, str], work: Path, **user: Any) -> str:
    """`distkpi node -- python3 bench.py --daemon WORK` run to its end: what it printed."""
    done = subprocess.run(
        [
            *python,
            "-m",
            "distkpi_cli.main",
            "node",
            "--",
            "python3",
            "bench.py",
            "--daemon",
            str(work),
        ],
        env=env,
        cwd="/",
        capture_output=True,
        timeout=300,
        check=False,
        **user,
    )
    output = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
    assert done.returncode == 0, output
    return output


def uploaded(s3: Any, run_id: str) -> dict[str, bytes]:
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=f"runs/{run_id}/")["Contents"]
    return {
        o["Key"].removeprefix(f"runs/{run_id}/1x1/"): s3.get_object(Bucket=BUCKET, Key=o["Key"])[
            "Body"
        ].read()
        for o in listed
    }


def assert_nothing_found(output: str, objects: dict[str, bytes], daemon_uid: int) -> None:
    """No secret anywhere; the hunt was real; the runner was out of reach; nothing left."""
    log = objects["logs/trainer-0.log"].decode()
    found = objects["files/trainer-0/found.txt"].decode()
    for name, value in SECRETS.items():
        assert value not in output, f"{name} in the node's output"
        for path, content in objects.items():
            assert value.encode() not in content, f"{name} in the uploaded {path}"
    parent = next(line.split()[1] for line in log.splitlines() if line.startswith("parent "))
    hunter_own = [line for line in log.splitlines() if line.startswith("reached /proc/")]
    assert hunter_own, "the hunter read no /proc/<pid>/environ at all"
    assert f"reached /proc/{parent}/environ" not in log  # the runner's environment
    assert f"reached /proc/{parent}/mem" not in log and f"reached /proc/{parent}/maps" not in log
    assert "DISTKPI_LOG_DIR" in found  # it did read its own environment
    daemon = int(objects["files/trainer-0/daemon.pid"])
    assert not Path(f"/proc/{daemon}").exists() or _zombie(daemon)
    with held(daemon_uid):
        assert processes_of(daemon_uid) == []
    manifest = json.loads(objects["node-0.json"])
    assert signed_by(KEY, manifest) and manifest["exit_code"] == 0


@contextlib.contextmanager
def held(uid: int) -> Iterator[None]:
    """The lease of ``uid``, as a node takes it, once no node holds it: a node beside this
    test (another test's, a user's `distkpi local`) may have leased the uid the moment the
    node under test released it, and its processes are its own. A node leases a uid only
    when no process runs as it, and kills every one of them before it lets it go, so once
    this test holds it, any process of it is one the node under test left."""
    if not LEASED_UIDS.start <= uid < LEASED_UIDS.stop:
        yield
        return
    with open(_lease_dir() / str(uid), "ab") as lease:
        fcntl.flock(lease, fcntl.LOCK_EX)
        yield


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_as_root_the_code_runs_as_another_user_and_finds_no_secret(
    moto: tuple[str, Any], tmp_path: Path
) -> None:
    endpoint, s3 = moto
    repo = tmp_path / "hunted"
    sha = hunting_repo(repo)
    work = tmp_path / "work"
    env = batch_environment(endpoint, repo, sha, work, "hunt-root")
    output = run_node([sys.executable], env, work)
    objects = uploaded(s3, "hunt-root")
    log = objects["logs/trainer-0.log"].decode()
    uid = int(next(line for line in log.splitlines() if line.startswith("uid ")).split()[1])
    assert_nothing_found(output, objects, uid)
    assert uid != 0


def python_for(uid: int, base: Path) -> tuple[list[str], dict[str, str]]:
    """This interpreter, or (when it is where another user cannot enter, such as a clone
    under root's home) the readable twin of its environment that `distkpi local` gives the
    code's user, with a copy of this checkout's packages in ``base``."""
    probe = [sys.executable, "-c", "import distkpi_cli, boto3"]
    try:
        ran = subprocess.run(probe, user=uid, group=uid, capture_output=True, check=False)
        if ran.returncode == 0:
            return [sys.executable], {}
    except PermissionError:
        pass
    packages = base / "packages"
    for package in (ROOT / "cli" / "distkpi_cli", ROOT / "layers" / "distkpi" / "distkpi"):
        shutil.copytree(package, packages / package.name, ignore=shutil.ignore_patterns("*.pyc"))
    return [str(Path(code_bin()) / "python")], {"PYTHONPATH": str(packages)}


def test_as_an_ordinary_user_the_runner_hides_its_secrets_and_the_code_finds_none(
    moto: tuple[str, Any],
) -> None:
    endpoint, s3 = moto
    base = Path(tempfile.mkdtemp(prefix="distkpi-hunt-"))
    try:
        base.chmod(0o755)
        repo, work = base / "hunted", base / "work"
        sha = hunting_repo(repo)
        work.mkdir()
        for path in [base, *repo.rglob("*"), repo, work]:
            os.lchown(path, OTHER_UID, OTHER_UID)
        python, extra = python_for(OTHER_UID, base)
        env = batch_environment(endpoint, repo, sha, work, "hunt-user") | extra
        output = run_node(python, env, work, user=OTHER_UID, group=OTHER_UID, extra_groups=[])
        assert_nothing_found(output, uploaded(s3, "hunt-user"), OTHER_UID)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow  # links a whole environment: `make slow`
def test_the_codes_user_runs_this_environments_readable_twin_and_its_console_scripts() -> None:
    """What `distkpi local` gives the code's user when this environment is where it cannot
    enter (a clone under root's home): made here whatever the clone's folder, and reused."""
    twin = twin_of(Path(sys.prefix))
    assert twin_of(Path(sys.prefix)) == twin
    site = next(twin.glob("lib/python*/site-packages"))
    assert not list(site.glob("__editable__*"))  # they point back into the clone
    own = Path(sysconfig.get_paths()["purelib"])
    assert (site / "torch" / "__init__.py").read_bytes() == (
        own / "torch" / "__init__.py"
    ).read_bytes()
    as_other = {"user": OTHER_UID, "group": OTHER_UID, "extra_groups": [], "cwd": "/"}
    env = {"PATH": f"{twin / 'bin'}:/usr/bin:/bin", "HOME": "/nonexistent"}
    ran = subprocess.run(
        ["python", "-c", "import sys, torch; print(sys.prefix)"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        **as_other,
    )
    assert ran.returncode == 0 and ran.stdout.strip() == str(twin), ran.stderr
    ran = subprocess.run(
        ["torchrun", "--help"], env=env, capture_output=True, text=True, check=False, **as_other
    )
    assert ran.returncode == 0 and ran.stdout.startswith("usage: torchrun"), ran.stderr
