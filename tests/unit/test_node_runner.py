"""`distkpi node` on each node of a job: the code under test at exactly its commit, setup,
rendezvous, the frameworks' variables, the command's logs and the manifest last. Every node
of a job runs at once, in threads, against moto's S3 in-process; each command is a real
process run in a real git checkout."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from distkpi.domain.logs.engineversion import engine_version
from distkpi.domain.logs.filesummary import summarize, summary_from_json
from distkpi.domain.logs.logformats import ParseSettings
from distkpi.domain.logs.logsummary import Level
from distkpi.domain.logs.parsesettings import settings_digest, settings_to_json
from distkpi.domain.patterns import DeclaredMetrics
from distkpi.domain.signing import sign, signed_by
from distkpi_cli.node.runner import NodeRunner
from tests.conftest import git
from tests.unit.conftest import BUCKET

SECRET = "super-secret-value-never-logged"
TOKEN = "ghs_token_never_logged"
WATCHED = [
    *("DISTKPI_ROLE", "DISTKPI_ROLE_RANK", "DISTKPI_NODE_INDEX", "DISTKPI_NUM_NODES"),
    *("DISTKPI_TRAINERS", "DISTKPI_PSERVERS", "DISTKPI_GPUS_PER_TRAINER", "DISTKPI_BATCH_SIZE"),
    *("DISTKPI_SOURCE_DIR", "DISTKPI_LOG_DIR", "MASTER_ADDR", "MASTER_PORT", "NNODES"),
    *("NODE_RANK", "NPROC_PER_NODE", "TRAINING_ROLE", "PADDLE_TRAINERS_NUM", "PADDLE_TRAINER_ID"),
    *("PADDLE_TRAINER_ENDPOINTS", "PADDLE_PSERVERS_IP_PORT_LIST", "PADDLE_CURRENT_ENDPOINT"),
    *("POD_IP", "PADDLE_PORT", "PADDLE_GLOO_HTTP_ENDPOINT", "DISTKPI_GIT_TOKEN"),
    *("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "DISTKPI_MANIFEST_KEY"),
]
# the benchmark: what it sees, where it runs, and which commit's file it found
DUMP = (
    "import json, os, pathlib, sys\n"
    f"watched = {WATCHED!r}\n"
    "seen = {k: os.environ[k] for k in watched if k in os.environ}\n"
    "seen['cwd'] = os.getcwd()\n"
    "seen['version'] = pathlib.Path('version.txt').read_text().strip()\n"
    "seen['built'] = pathlib.Path('built.txt').read_text().strip()\n"
    "pathlib.Path(os.environ['DISTKPI_LOG_DIR'], 'seen.json').write_text(json.dumps(seen))\n"
    "print('Pass = 0, Training performance = 10 imgs/s, Test accuracy = 0.5')\n"
    "sys.exit(int(os.environ.get('DISTKPI_EXIT_WITH', '0')))\n"
)


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str, str]:
    return make_repo(tmp_path / "bench")


def make_repo(path: Path) -> tuple[Path, str, str]:
    """A repository with two commits: (path, first sha, second sha = the branch tip)."""
    path.mkdir()
    git(path, "init", "--quiet", "--initial-branch=main")
    git(path, "config", "user.email", "ci@example.com")
    git(path, "config", "user.name", "ci")
    (path / "bench.py").write_text(DUMP)
    (path / "version.txt").write_text("one\n")
    git(path, "add", ".")
    git(path, "commit", "--quiet", "-m", "one")
    first = git(path, "rev-parse", "HEAD")
    (path / "version.txt").write_text("two\n")
    git(path, "commit", "--quiet", "-am", "two")
    return path, first, git(path, "rev-parse", "HEAD")


def node_env(
    source: Path, sha: str, work: Path, node: int, trainers: int, pservers: int, **extra: str
) -> dict[str, str]:
    nodes = trainers + pservers
    env = {
        "PATH": "/usr/bin:/bin",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "DISTKPI_RUN_ID": "r1",
        "DISTKPI_CONFIG": "c",
        "DISTKPI_S3_PREFIX": f"s3://{BUCKET}/runs/r1/c/",
        "DISTKPI_REPO": "org/bench",
        "DISTKPI_SHA": sha,
        "DISTKPI_TRAINERS": str(trainers),
        "DISTKPI_GPUS_PER_TRAINER": "2",
        "DISTKPI_PSERVERS": str(pservers),
        "DISTKPI_BATCH_SIZE": "64",
        "DISTKPI_SOURCE_URL": str(source),
        "DISTKPI_SETUP": json.dumps([["sh", "-c", "cat version.txt > built.txt"]]),
        "DISTKPI_COMMAND": "[]",
        "DISTKPI_NODE_ADDRESS": "127.0.0.1",
        "DISTKPI_WORKDIR": str(work / f"node-{node}"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "DISTKPI_GIT_TOKEN": TOKEN,
        "DISTKPI_RENDEZVOUS_S": "30",
        "DISTKPI_NODE_WAIT_S": "30",
    }
    if nodes > 1:
        env |= {
            "AWS_BATCH_JOB_NODE_INDEX": str(node),
            "AWS_BATCH_JOB_NUM_NODES": str(nodes),
            "AWS_BATCH_JOB_MAIN_NODE_INDEX": "0",
        }
        if node:
            env["AWS_BATCH_JOB_MAIN_NODE_PRIVATE_IPV4_ADDRESS"] = "127.0.0.1"
    return env | extra


def run_job(
    repo: Path, sha: str, work: Path, trainers: int, pservers: int = 0, **extra: str
) -> list[int]:
    nodes = trainers + pservers
    envs = [node_env(repo, sha, work, n, trainers, pservers, **extra) for n in range(nodes)]
    with ThreadPoolExecutor(nodes) as pool:
        return list(pool.map(lambda env: NodeRunner(env, ["python3", "bench.py"]).run(), envs))


def manifest(s3: Any, node: int) -> dict[str, Any]:
    key = f"runs/r1/c/node-{node}.json"
    return json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())  # type: ignore[no-any-return]


def uploaded(s3: Any, path: str) -> str:
    return s3.get_object(Bucket=BUCKET, Key=f"runs/r1/c/{path}")["Body"].read().decode()  # type: ignore[no-any-return]


def seen(s3: Any, node: int) -> dict[str, str]:
    (entry,) = [f for f in manifest(s3, node)["files"] if f["path"].endswith("seen.json")]
    assert entry["kind"] == "file"
    return json.loads(uploaded(s3, entry["path"]))  # type: ignore[no-any-return]


@pytest.mark.parametrize(("trainers", "pservers"), [(1, 0), (2, 0), (2, 1)])
def test_each_node_gets_the_environment_contract(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path, trainers: int, pservers: int
) -> None:
    path, _, tip = repo
    assert run_job(path, tip, tmp_path / "work", trainers, pservers) == [0] * (trainers + pservers)
    views = [seen(s3, n) for n in range(trainers + pservers)]
    ports = {n: v["PADDLE_PORT"] for n, v in enumerate(views)}
    endpoints = [f"127.0.0.1:{ports[n]}" for n in range(trainers + pservers)]
    for node, view in enumerate(views):
        role = "trainer" if node < trainers else "pserver"
        rank = node if role == "trainer" else node - trainers
        assert view["DISTKPI_ROLE"] == role and view["DISTKPI_ROLE_RANK"] == str(rank)
        assert view["DISTKPI_NODE_INDEX"] == str(node)
        assert view["DISTKPI_NUM_NODES"] == str(trainers + pservers)
        assert (view["DISTKPI_TRAINERS"], view["DISTKPI_PSERVERS"]) == (
            str(trainers),
            str(pservers),
        )
        assert (view["DISTKPI_GPUS_PER_TRAINER"], view["DISTKPI_BATCH_SIZE"]) == ("2", "64")
        assert view["cwd"] == view["DISTKPI_SOURCE_DIR"]  # the checkout is the working dir
        assert (view["version"], view["built"]) == ("two", "two")  # what setup left is there
        assert (view["MASTER_ADDR"], view["MASTER_PORT"]) == ("127.0.0.1", ports[0])
        assert view["TRAINING_ROLE"] == role.upper()
        assert view["PADDLE_TRAINERS_NUM"] == str(trainers)
        assert view["PADDLE_TRAINER_ENDPOINTS"] == ",".join(endpoints[:trainers])
        assert view["PADDLE_PSERVERS_IP_PORT_LIST"] == ",".join(endpoints[trainers:])
        assert view["PADDLE_CURRENT_ENDPOINT"] == endpoints[node]
        assert view["POD_IP"] == "127.0.0.1"
        if role == "trainer":
            assert (view["NNODES"], view["NODE_RANK"], view["NPROC_PER_NODE"]) == (
                str(trainers),
                str(rank),
                "2",
            )
            assert view["PADDLE_TRAINER_ID"] == str(rank)
        else:
            assert not {"NNODES", "NODE_RANK", "NPROC_PER_NODE", "PADDLE_TRAINER_ID"} & set(view)
        assert "DISTKPI_GIT_TOKEN" not in view  # the clone token never reaches the command
        assert not {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} & set(view)  # nor credentials
        if pservers:  # fleet's gloo store, on pserver 0's spare port
            address, port = view["PADDLE_GLOO_HTTP_ENDPOINT"].split(":")
            assert address == "127.0.0.1" and port not in ports.values()
            assert view["PADDLE_GLOO_HTTP_ENDPOINT"] == views[0]["PADDLE_GLOO_HTTP_ENDPOINT"]
        else:
            assert "PADDLE_GLOO_HTTP_ENDPOINT" not in view
        entries = {f["path"]: f for f in manifest(s3, node)["files"]}
        log = f"logs/{role}-{rank}.log"
        assert entries[log]["kind"] == "log" and "Training performance" in uploaded(s3, log)
        assert manifest(s3, node)["exit_code"] == 0 and "problem" not in manifest(s3, node)


def test_the_checkout_is_the_exact_commit_not_the_branch_tip(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    path, first, _ = repo
    assert run_job(path, first, tmp_path / "work", 1) == [0]
    assert seen(s3, 0)["version"] == "one"


def test_a_commit_that_is_not_in_the_repository_fails_the_node(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    path, _, _ = repo
    assert run_job(path, "f" * 40, tmp_path / "work", 1) == [1]
    assert manifest(s3, 0)["problem"] == f"commit {'f' * 40} not found in org/bench"


def test_a_failing_setup_command_fails_the_node_and_the_command_never_runs(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    path, _, tip = repo
    setup = json.dumps(["echo compiling the world; exit 3"])
    assert run_job(path, tip, tmp_path / "work", 1, DISTKPI_SETUP=setup) == [1]
    got = manifest(s3, 0)
    assert got["problem"] == "setup failed: echo compiling the world; exit 3 exited 3"
    log = uploaded(s3, "logs/trainer-0.log")
    assert "compiling the world" in log and "Training performance" not in log
    assert not [f for f in got["files"] if f["path"].endswith("seen.json")]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the code as another user")
def test_what_the_codes_user_cannot_reach_fails_the_node_before_its_setup(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    path, _, tip = repo
    closed = Path(tempfile.mkdtemp())  # mode 700, as `mktemp -d` makes it
    try:
        cache = closed / "cache"
        limits = {"DISTKPI_CACHE_DIR": str(cache), "DISTKPI_RUN_AS_UID": "61998"}
        codes = run_job(path, tip, tmp_path / "work", 1, **limits)
    finally:
        shutil.rmtree(closed)
    assert codes == [1]
    assert manifest(s3, 0)["problem"] == (
        f"the code's user (distkpi-code-61998) cannot reach {cache} to use DISTKPI_CACHE_DIR: "
        f"{closed} is closed to other users; put it in a folder every user can enter, "
        "or set DISTKPI_RUN_AS_UID to a user who can reach it"
    )
    log = uploaded(s3, "logs/trainer-0.log")
    assert "cat version.txt" not in log and "Training performance" not in log


def test_a_rendezvous_nobody_comes_to_fails_the_node_naming_the_absent(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    path, _, tip = repo
    env = node_env(path, tip, tmp_path / "work", 0, 3, 0, DISTKPI_RENDEZVOUS_S="5")
    env["DISTKPI_NODE_WAIT_S"] = "0"
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    runner = NodeRunner(env, ["python3", "bench.py"], clock=lambda: now[0], sleep=sleep)
    assert runner.run() == 1
    assert manifest(s3, 0)["problem"] == "rendezvous: node(s) 1, 2 never showed up in 5s"


def test_a_crashing_command_is_its_exit_code_with_its_output(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    path, _, tip = repo
    assert run_job(path, tip, tmp_path / "work", 1, DISTKPI_EXIT_WITH="7") == [7]
    assert manifest(s3, 0)["exit_code"] == 7 and "problem" not in manifest(s3, 0)
    assert manifest(s3, 0)["wall_s"] >= manifest(s3, 0)["setup_s"] >= 0


def test_no_value_of_the_environment_reaches_what_the_node_writes(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    path, _, tip = repo
    setup = json.dumps(["echo building"])
    run_job(path, tip, tmp_path / "work", 2, 1, DISTKPI_SETUP=setup, DISTKPI_EXIT_WITH="1")
    for node in range(3):
        for entry in manifest(s3, node)["files"]:
            if entry["kind"] != "file":  # seen.json is the command's own dump
                text = uploaded(s3, entry["path"])
                assert SECRET not in text and TOKEN not in text
        assert SECRET not in json.dumps(manifest(s3, node))


def test_the_suites_command_runs_unless_one_is_given_and_a_bad_one_is_a_problem(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    path, _, tip = repo
    suite_command = json.dumps(["python3", "bench.py"])
    env = node_env(path, tip, tmp_path / "a", 0, 1, 0, DISTKPI_COMMAND=suite_command)
    assert NodeRunner(env, []).run() == 0
    assert seen(s3, 0)["version"] == "two"
    env = node_env(path, tip, tmp_path / "b", 0, 1, 0, DISTKPI_COMMAND="python3 bench.py")
    assert NodeRunner(env, []).run() == 1
    assert manifest(s3, 0)["problem"] == "DISTKPI_COMMAND is not a JSON list"


def test_a_command_still_running_at_its_deadline_is_stopped_with_its_children(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    # a parameter server that no trainer ever reaches, with a helper process of its own
    path, _, tip = repo
    env = node_env(path, tip, tmp_path / "work", 0, 1, 0, DISTKPI_COMMAND_TIMEOUT_S="2")
    serve = 'sleep 600 & echo $! > "$DISTKPI_LOG_DIR/helper.pid"; echo serving; sleep 600'
    assert NodeRunner(env, ["sh", "-c", serve]).run() == 124
    got = manifest(s3, 0)
    assert (got["exit_code"], got["problem"]) == (
        124,
        "command still running at its deadline of 2s; stopped",
    )
    assert "serving" in uploaded(s3, "logs/trainer-0.log")
    helper = int(uploaded(s3, "files/trainer-0/helper.pid"))
    assert subprocess.run(
        ["ps", "-o", "stat=", "-p", str(helper)], capture_output=True, text=True, check=False
    ).stdout.strip() in ("", "Z")


LAUNCHER = (  # what Paddle's launcher leaves in its --log_dir, here DISTKPI_LOG_DIR
    "import os, pathlib\n"
    "d = pathlib.Path(os.environ['DISTKPI_LOG_DIR'])\n"
    "d.joinpath('envlog.0').write_text(''.join(f'{k}={v}\\n' for k, v in os.environ.items()))\n"
    "d.joinpath('backup_env.0.json').write_text(repr(dict(os.environ)))\n"
    "d.joinpath('default.abc.log').write_text(f'{os.environ}\\nLAUNCH INFO Pod completed\\n')\n"
    "d.joinpath('workerlog.0').write_text('Pass = 0, Training performance = 10 imgs/s\\n')\n"
)


def test_environment_dumps_left_by_paddles_launcher_are_not_uploaded(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    path, _, tip = repo
    env = node_env(path, tip, tmp_path / "work", 0, 1, 0, DISTKPI_SOME_SETTING="visible-to-the-job")
    assert NodeRunner(env, ["python3", "-c", LAUNCHER]).run() == 0
    files = [f["path"] for f in manifest(s3, 0)["files"] if f["kind"] == "file"]
    assert files == ["files/trainer-0/workerlog.0"]
    log = uploaded(s3, "logs/trainer-0.log")
    assert "not uploaded, environment dumps: files/trainer-0/backup_env.0.json" in log
    for entry in manifest(s3, 0)["files"]:
        assert "visible-to-the-job" not in uploaded(s3, entry["path"])


def test_manifests_and_rendezvous_records_are_signed_and_name_each_files_digest(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    path, _, tip = repo
    key = "k" * 64
    assert run_job(path, tip, tmp_path / "work", 1, 1, DISTKPI_MANIFEST_KEY=key) == [0, 0]
    for node in (0, 1):
        got = manifest(s3, node)
        assert signed_by(key, got) and not signed_by("another config's key", got)
        for entry in got["files"]:
            content = s3.get_object(Bucket=BUCKET, Key=f"runs/r1/c/{entry['path']}")["Body"].read()
            assert entry["sha256"] == hashlib.sha256(content).hexdigest()
        record = json.loads(uploaded(s3, f"rendezvous/node-{node}.endpoint"))
        assert signed_by(key, record)
    assert "DISTKPI_MANIFEST_KEY" not in seen(s3, 0)  # the command never sees the key


def test_a_rendezvous_record_not_signed_with_the_configs_key_fails_the_node(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    # another job writes node 1's record, pointing node 0 at an address of its choosing
    path, _, tip = repo
    forged = {"node": 1, "address": "203.0.113.9", "port": 4242, "spare_port": 4243}
    s3.put_object(
        Bucket=BUCKET, Key="runs/r1/c/rendezvous/node-1.endpoint", Body=json.dumps(forged)
    )
    env = node_env(path, tip, tmp_path / "work", 0, 2, 0, DISTKPI_MANIFEST_KEY="k" * 64)
    env["DISTKPI_NODE_WAIT_S"] = "0"
    assert NodeRunner(env, ["python3", "bench.py"]).run() == 1
    assert manifest(s3, 0)["problem"] == (
        "rendezvous: node 1's record is not signed with this config's key"
    )


@pytest.mark.parametrize(
    ("signed_for", "found"),
    [
        ({"run_id": "r1", "config": "c", "node": 0}, "node 0 of config c of run r1"),
        ({"run_id": "r1", "config": "other", "node": 1}, "node 1 of config other of run r1"),
        ({"run_id": "r0", "config": "c", "node": 1}, "node 1 of config c of run r0"),
    ],
)
def test_a_signed_rendezvous_record_copied_from_another_node_config_or_run_fails_the_node(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path, signed_for: dict[str, Any], found: str
) -> None:
    # a genuine record (here signed with the same key, the worst case) stored as node 1's
    path, _, tip = repo
    key = "k" * 64
    record = sign(key, {**signed_for, "address": "203.0.113.9", "port": 4242, "spare_port": 1})
    s3.put_object(
        Bucket=BUCKET, Key="runs/r1/c/rendezvous/node-1.endpoint", Body=json.dumps(record)
    )
    env = node_env(path, tip, tmp_path / "work", 0, 2, 0, DISTKPI_MANIFEST_KEY=key)
    env["DISTKPI_NODE_WAIT_S"] = "0"
    assert NodeRunner(env, ["python3", "bench.py"]).run() == 1
    assert manifest(s3, 0)["problem"] == (
        f"rendezvous: rendezvous/node-1.endpoint is signed for {found}, "
        "not node 1 of c of r1: copied"
    )


def test_the_manifest_says_its_run_config_and_node_inside_what_is_signed(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    path, _, tip = repo
    key = "k" * 64
    assert run_job(path, tip, tmp_path / "work", 1, DISTKPI_MANIFEST_KEY=key) == [0]
    got = manifest(s3, 0)
    assert (got["run_id"], got["config"], got["node"]) == ("r1", "c", 0)
    assert not signed_by(key, {**got, "run_id": "r2"})


def test_links_fifos_and_other_users_files_the_command_leaves_are_not_uploaded(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    # the code points the runner (root) at what only root may read, or at what never ends
    path, _, tip = repo
    secret = tmp_path / "roots-own.txt"
    secret.write_text(SECRET)
    leave = (
        'cd "$DISTKPI_LOG_DIR" && ln -s /proc/1/environ environ-of-init && '
        f"ln -s {secret} roots-own && mkfifo never-ends && mkdir d && ln -s / d/everything && "
        "echo kept > kept.txt"
    )
    env = node_env(path, tip, tmp_path / "work", 0, 1, 0)
    assert NodeRunner(env, ["sh", "-c", leave]).run() == 0
    files = [f["path"] for f in manifest(s3, 0)["files"] if f["kind"] == "file"]
    assert files == ["files/trainer-0/kept.txt"]
    log = uploaded(s3, "logs/trainer-0.log")
    assert "not uploaded, not regular files of the code's: " in log
    for name in ("environ-of-init", "roots-own", "never-ends", "d/everything"):
        assert f"files/trainer-0/{name}" in log
    assert SECRET not in log


TRAINS = (  # a benchmark printing Paddle's per-pass lines and leaving a file for people
    "import os, pathlib\n"
    "for n, speed in enumerate((90, 110, 120)):\n"
    "    print(f'Pass = {n}, Training performance = {speed} imgs/s, Train accuracy = 0.5, "
    "Test accuracy = 0.{n + 6}', flush=True)\n"
    "pathlib.Path(os.environ['DISTKPI_LOG_DIR'], 'workerlog.0').write_text('Pass = 0\\n')\n"
)


def test_the_manifest_holds_the_engines_summary_of_each_log_it_names(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    path, _, tip = repo
    key = "k" * 64
    env = node_env(path, tip, tmp_path / "work", 0, 1, 0, DISTKPI_MANIFEST_KEY=key)
    assert NodeRunner(env, ["python3", "-c", TRAINS]).run() == 0
    got = manifest(s3, 0)
    assert signed_by(key, got) and got["engine_version"] == engine_version()
    entries = {entry["path"]: entry for entry in got["files"]}
    log = entries["logs/trainer-0.log"]
    content = s3.get_object(Bucket=BUCKET, Key="runs/r1/c/logs/trainer-0.log")["Body"].read()
    summary = summary_from_json("log", log["summary"])
    assert summary == summarize("log", io.BytesIO(content))
    assert summary.best_throughput() == (115.0, Level.PASS) and summary.accuracy_at(2) == 0.8
    # a file the command left is kept for people: digested, never parsed
    left = entries["files/trainer-0/workerlog.0"]
    assert left["kind"] == "file" and "summary" not in left and len(left["sha256"]) == 64


def test_a_suites_own_parse_settings_make_the_summaries_and_the_manifest_names_them(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    """DISTKPI_PARSE_SETTINGS (the launcher's, from the suite): the node summarises its log
    with the suite's pattern and warm-up, and its signed manifest names their digest, so
    that the collector takes those summaries instead of reading the log."""
    path, _, tip = repo
    settings = ParseSettings(
        warmup_reports=0,
        metrics=DeclaredMetrics.model_validate(
            {"throughput": {"pattern": "performance = (?P<value>[0-9]+) imgs/s", "per": "process"}}
        ),
    )
    variable = json.dumps(settings_to_json(settings))
    key = "k" * 64
    env = node_env(
        path,
        tip,
        tmp_path / "work",
        0,
        1,
        0,
        DISTKPI_MANIFEST_KEY=key,
        DISTKPI_PARSE_SETTINGS=variable,
    )
    assert NodeRunner(env, ["python3", "-c", TRAINS]).run() == 0
    got = manifest(s3, 0)
    assert signed_by(key, got) and got["summary_settings"] == settings_digest(settings)
    log = {entry["path"]: entry for entry in got["files"]}["logs/trainer-0.log"]
    content = s3.get_object(Bucket=BUCKET, Key="runs/r1/c/logs/trainer-0.log")["Body"].read()
    summary = summary_from_json("log", log["summary"])
    assert summary == summarize("log", io.BytesIO(content), settings)
    assert summary.best_throughput() == (pytest.approx((90 + 110 + 120) / 3), Level.ITERATION)


def test_a_garbled_distkpi_parse_settings_fails_the_node_naming_it(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    path, _, tip = repo
    env = node_env(path, tip, tmp_path / "work", 0, 1, 0, DISTKPI_PARSE_SETTINGS="[1]")
    assert NodeRunner(env, ["python3", "-c", TRAINS]).run() == 1
    got = manifest(s3, 0)
    assert got["problem"].startswith("DISTKPI_PARSE_SETTINGS: parse settings are not")
    assert "summary_settings" not in got


def test_an_empty_distkpi_paired_is_an_unpaired_run_whose_log_is_parsed(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path
) -> None:
    """Given DISTKPI_PAIRED set to the empty string (what a script that clears it leaves),
    then the run is unpaired in every respect: its log goes up as a log, with the engine's
    summary, not as a file nobody parses."""
    path, _, tip = repo
    env = node_env(path, tip, tmp_path / "work", 0, 1, 0, DISTKPI_PAIRED="")
    assert NodeRunner(env, ["python3", "-c", TRAINS]).run() == 0
    entries = {entry["path"]: entry for entry in manifest(s3, 0)["files"]}
    log = entries["logs/trainer-0.log"]
    assert log["kind"] == "log" and summary_from_json("log", log["summary"]).best_throughput() == (
        115.0,
        Level.PASS,
    )


def test_a_log_over_the_cap_is_cut_at_a_line_and_the_manifest_says_how_much(
    s3: Any, repo: tuple[Path, str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("distkpi_cli.node.runner.MAX_LOG_BYTES", 64 * 1024)
    path, _, tip = repo
    env = node_env(path, tip, tmp_path / "work", 0, 1, 0)
    flood = "for i in range(20000): print(f'line {i:06d} ' + 'x' * 20)"  # 33 bytes a line
    assert NodeRunner(env, ["python3", "-c", flood]).run() == 0
    (entry,) = [f for f in manifest(s3, 0)["files"] if f["kind"] == "log"]
    log = uploaded(s3, entry["path"]).encode()
    assert len(log) <= 64 * 1024 and log.endswith(b"\n")
    before = log[: log.index(b"line 000000")]  # what the node wrote before the command's
    kept = log.count(b"\nline ") + log.startswith(b"line ")
    assert entry["truncated_bytes"] == (20000 - kept) * 33
    assert len(before) + kept * 33 == len(log)
