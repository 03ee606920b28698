"""The usual mistakes at the command line: each gets one line on stderr naming the input and
what to do, and exit 2; with --json also one JSON document on stdout, `{"error": ...}`."""

from __future__ import annotations

import argparse
import io
import json
import os
from pathlib import Path
from typing import Any

import boto3
import pytest

import distkpi
from distkpi_cli.local.demo import LocalResult, print_result
from distkpi_cli.local.handlers import project_root
from distkpi_cli.main import build_parser, leaf_parser, main

ROOT = Path(__file__).resolve().parents[2]
LOCAL_SUITE = ROOT / "infra" / "suites" / "local.yaml"


def last_line(err: str) -> str:
    return err.splitlines()[-1]


def test_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"distkpi {distkpi.__version__}\n"


@pytest.mark.parametrize(
    ("argv", "usage", "message"),
    [
        (
            ["local", "--fail", "bogus"],
            "usage: distkpi local ",
            "distkpi local: argument --fail: 'bogus': give CONFIG:NODE:EPOCH, e.g. 1x2:0:0 "
            "(node 0 of config 1x2 crashes after epoch 0)",
        ),
        (
            ["local", "--fail", "1x2:zero:0"],
            "usage: distkpi local ",
            "distkpi local: argument --fail: '1x2:zero:0': give CONFIG:NODE:EPOCH, e.g. 1x2:0:0 "
            "(node 0 of config 1x2 crashes after epoch 0)",
        ),
        (
            ["local", "--commits", "0"],
            "usage: distkpi local ",
            "distkpi local: argument --commits: '0': give a whole number of 1 or more",
        ),
        (
            ["kpis", "examples/seed-run", "--bogus"],
            "usage: distkpi kpis ",
            "distkpi kpis: unrecognized arguments: --bogus",
        ),
        (
            ["baseline", "resets", "--repo", "a/b", "--model", "m", "--bogus"],
            "usage: distkpi baseline resets ",
            "distkpi baseline resets: unrecognized arguments: --bogus",
        ),
        (
            ["history", "--repo", "a/b", "--model", "m", "--limit", "0"],
            "usage: distkpi history ",
            "distkpi history: argument --limit: '0': give a whole number of 1 or more",
        ),
        (
            ["nosuch"],
            "usage: distkpi ",
            "distkpi: argument COMMAND: invalid choice: 'nosuch' (choose from 'kpis', 'local', "
            "'node', 'judge', 'history', 'baseline', 'calibrate', 'report', 'runs', 'site', "
            "'bisections', 'regressions', 'accept', 'golden', 'diagnose')",
        ),
    ],
)
def test_a_refused_command_line_shows_its_own_usage_then_one_line(
    argv: list[str], usage: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(usage)
    assert last_line(captured.err) == message


def test_a_refused_command_line_with_json_prints_one_json_document(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["local", "--json", "--commits", "0"]) == 2
    out = capsys.readouterr().out
    assert json.loads(out) == {
        "error": "distkpi local: argument --commits: '0': give a whole number of 1 or more"
    }


def _subcommands(
    parser: argparse.ArgumentParser,
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.append((sub.prog, sub))
                found += _subcommands(sub)
    return found


def test_a_command_line_builds_its_own_command_only_and_the_same_parser_for_it() -> None:
    whole = dict(_subcommands(build_parser()))
    commands = [prog.split()[1] for prog in whole if len(prog.split()) == 2]
    assert len(commands) == 15
    for command in commands:
        own = _subcommands(build_parser(command))
        assert [prog for prog, _ in own if len(prog.split()) == 2] == [f"distkpi {command}"]
        for prog, parser in own:
            assert parser.format_help() == whole[prog].format_help()
    assert build_parser("bogus").format_help() == build_parser().format_help()


def test_every_command_has_a_description_and_every_option_help_with_its_default() -> None:
    for prog, parser in _subcommands(build_parser()):
        assert parser.description, prog
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            assert action.help, (prog, action.dest)
            has_default = action.default is not None and not isinstance(action.default, bool)
            if has_default:
                assert "(default: %(default)s)" in action.help, (prog, action.dest)


def test_the_help_of_an_option_says_its_default(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["history", "--help"])
    assert "the history's branch (default: develop)" in " ".join(capsys.readouterr().out.split())


def _bad_suite(tmp_path: Path) -> Path:
    """The local suite with a typo, as a person makes it: `target_acuracy`."""
    path = tmp_path / "typo.yaml"
    text = LOCAL_SUITE.read_text()
    assert "target_accuracy:" in text
    path.write_text(text.replace("target_accuracy:", "target_acuracy:", 1))
    return path


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_an_invalid_suite_is_one_line_naming_the_path_given(
    tmp_path: Path, dry_run: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _bad_suite(tmp_path)
    assert main(["local", "--suite", str(suite), *dry_run]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"distkpi local: {suite}: invalid suite: target_accuracy: Field required; "
        "target_acuracy: Extra inputs are not permitted\n"
    )


def test_a_suite_that_is_not_yaml_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "broken.yaml"
    suite.write_text("name: x\nconfigs: [1x1\n")
    assert main(["local", "--suite", str(suite), "--dry-run"]) == 2
    assert capsys.readouterr().err == (
        f"distkpi local: {suite}: not valid YAML: expected ',' or ']', but got '<stream end>' "
        "at line 3, column 1\n"
    )


def test_a_missing_suite_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["local", "--suite", "/nonexistent.yaml"]) == 2
    assert capsys.readouterr().err == (
        "distkpi local: /nonexistent.yaml: cannot be read: No such file or directory\n"
    )


def test_an_unknown_sha_with_json_is_one_json_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["local", "--sha", "nonexistent", "--json"]) == 2
    captured = capsys.readouterr()
    message = (
        f"distkpi local: --sha nonexistent: not a commit of {project_root()}: give a revision "
        "(HEAD, a branch, HEAD~1) or a unique sha prefix"
    )
    assert json.loads(captured.out) == {"error": message}
    assert captured.err == message + "\n"


def test_an_unknown_push_from_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["local", "--push-from", "no-such-branch"]) == 2
    assert capsys.readouterr().err == (
        f"distkpi local: --push-from no-such-branch: not a commit of {project_root()}: give a "
        "revision (HEAD, a branch, HEAD~1) or a unique sha prefix\n"
    )


def test_a_run_that_started_nothing_prints_the_statuses_not_a_traceback() -> None:
    status = {
        "sha": "a" * 40,
        "context": "distkpi/local",
        "state": "error",
        "description": "suites/local.yaml: invalid suite",
        "target_url": None,
    }
    out = io.StringIO()
    print_result(LocalResult([status], [], [], 0, 0.1), out)
    assert out.getvalue() == (
        "no run started; statuses GitHub received:\n"
        "  distkpi/local    error    suites/local.yaml: invalid suite\n"
    )


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """A shell that has never been given AWS settings (and no instance to ask)."""
    for name in (
        "AWS_DEFAULT_REGION",
        "AWS_REGION",
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    return monkeypatch


ON_AWS = ["history", "--repo", "a/b", "--model", "m", "--table", "T"]


def test_aws_without_a_region_is_one_line(
    no_aws: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(ON_AWS) == 2
    assert capsys.readouterr().err == (
        "distkpi history: no AWS region: set AWS_DEFAULT_REGION (or a region in ~/.aws/config "
        "for AWS_PROFILE) to the stack's region, or use --local\n"
    )


def test_aws_without_credentials_is_one_line_and_one_json_error(
    no_aws: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    no_aws.setenv("AWS_DEFAULT_REGION", "us-east-1")
    message = (
        "distkpi runs: no AWS credentials: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY (`aws configure` writes a profile), or use --local"
    )
    assert main(["runs", "--repo", "a/b", "--sha", "abc1234", "--table", "T", "--json"]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"error": message}
    assert captured.err == message + "\n"


def test_parquet_without_pyarrow_is_refused_with_the_install_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name == "pyarrow" else real(name)
    )
    out = tmp_path / "h.parquet"
    assert main([*ON_AWS, "--format", "parquet", "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        "distkpi history: --format parquet needs pyarrow, which is not installed: "
        "pip install 'distkpi[analysis]'\n"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--format", "parquet"], "--format parquet writes a file: give --out FILE"),
        (
            ["--out", "/nonexistent/h.csv"],
            "--out /nonexistent/h.csv: no folder /nonexistent to write it in",
        ),
    ],
)
def test_history_refuses_an_output_it_cannot_write_before_reading_the_table(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*ON_AWS, *argv]) == 2
    assert capsys.readouterr().err == f"distkpi history: {message}\n"


def test_a_refusal_is_prefixed_by_the_command_that_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # `distkpi node`'s own positional is named `command`: the prefix is never its value
    parser = build_parser()
    args = parser.parse_args(["node", "--", "python", "train.py"])
    assert leaf_parser(parser, args).prog == "distkpi node"
    monkeypatch.delenv("TABLE_NAME", raising=False)
    assert main(["baseline", "resets", "--repo", "a/b", "--model", "m"]) == 2
    assert capsys.readouterr().err == (
        "distkpi baseline resets: no table: give --table or set TABLE_NAME (the stack's "
        "RunsTableName), or --local\n"
    )


def test_judge_without_pandas_is_refused_with_the_install_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name == "pandas" else real(name)
    )
    history = tmp_path / "h.csv"
    assert main(["judge", str(ROOT / "examples" / "seed-run"), "--history", str(history)]) == 2
    assert capsys.readouterr().err == (
        "distkpi judge: --history needs pandas, which is not installed: "
        "pip install 'distkpi[analysis]'\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["site"], "give --out DIR (or --rebuild with --out DIR or --bucket B)"),
        (
            ["site", "--out", "x", "--bucket", "b"],
            "--bucket is where --rebuild writes: give --rebuild, or --out alone",
        ),
        (["site", "--rebuild"], "--rebuild writes to one place: give --out DIR or --bucket B"),
        (
            ["site", "--rebuild", "--out", "x", "--bucket", "b"],
            "--rebuild writes to one place: give --out DIR or --bucket B",
        ),
    ],
)
def test_site_says_where_it_writes_before_reading_the_table(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--table", "no-such-table"]) == 2
    assert capsys.readouterr().err == f"distkpi site: {message}\n"


def _no_state(state: Path) -> str:
    return (
        f"no local state: no `distkpi local up` is running for {state}, and the folder does "
        "not exist (run `distkpi local` first, or give --state)"
    )


def _foreign_state(state: Path) -> str:
    state.mkdir()
    (state / "state.json").write_text('{"format": 0}')
    return (
        f"state folder {state}: it is in state format 0; this distkpi reads 1. Keep it and "
        "find out why, or start from empty state with --fresh (which deletes it)"
    )


@pytest.mark.parametrize(
    ("argv", "prepare"),
    [
        (["history", "--repo", "a/b", "--model", "m", "--local", "--state"], _no_state),
        (["runs", "--repo", "a/b", "--sha", "HEAD", "--local", "--state"], _foreign_state),
        (["local", "--dry-run", "--state"], _foreign_state),
    ],
)
def test_an_unusable_state_folder_is_bad_input_for_every_command(
    argv: list[str], prepare: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    message = f"distkpi {argv[0]}: {prepare(state)}"
    assert main([*argv, str(state)]) == 2
    assert capsys.readouterr().err == message + "\n"
    if argv[0] != "history":  # which has no --json
        assert main([*argv, str(state), "--json"]) == 2
        captured = capsys.readouterr()
        assert json.loads(captured.out) == {"error": message}
        assert captured.err == message + "\n"


def test_a_state_folder_in_use_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from distkpi_cli.local.state import StateFolder

    state = StateFolder(tmp_path / "state")
    state.path.mkdir()
    with state.locked():
        assert (
            main(["runs", "--repo", "a/b", "--sha", "HEAD", "--local", "--state", str(state.path)])
            == 2
        )
    assert capsys.readouterr().err == (
        f"distkpi runs: state folder {state.path} is in use by distkpi pid {os.getpid()}; "
        "wait for it to finish, or give another --state\n"
    )
