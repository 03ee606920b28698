"""`distkpi calibrate`'s command line: what each unusable argument gets, before anything is
asked of GitHub or of the table."""

from __future__ import annotations

from pathlib import Path

import pytest

from distkpi_cli.main import main

SHA = "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"
WHERE = ["--repo", "PaddlePaddle/Paddle", "--model", "resnet50"]


def _not_a_commit(rev: str) -> str:
    return (
        f"distkpi calibrate: --sha {rev}: not a commit of {Path.cwd()}: give a revision "
        "(HEAD, a branch, HEAD~1) or a unique sha prefix\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--start"],
            "distkpi calibrate: --start needs --sha: the commit to measure (a sha or a git "
            "revision)\n",
        ),
        (["--start", "--sha", SHA[:10]], _not_a_commit(SHA[:10])),
        (["--start", "--sha", SHA.upper()], _not_a_commit(SHA.upper())),
        (
            ["--start", "--sha", SHA],
            "distkpi calibrate: --start needs $GITHUB_TOKEN: a token that may write to --repo\n",
        ),
        (
            ["--start", "--sha", "HEAD"],
            "distkpi calibrate: --start needs $GITHUB_TOKEN: a token that may write to --repo\n",
        ),
        (
            [],
            "distkpi calibrate: no table: give --table or set TABLE_NAME (the stack's "
            "RunsTableName), or --local\n",
        ),
    ],
)
def test_an_unusable_command_line_is_a_usage_error_saying_why(
    argv: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.delenv("TABLE_NAME", raising=False)
    assert main(["calibrate", *WHERE, *argv]) == 2
    assert capsys.readouterr().err == message


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--jobs", "0"], "argument --jobs: '0': give a whole number from 1 to 20 (A/A jobs)"),
        (["--jobs", "21"], "argument --jobs: '21': give a whole number from 1 to 20 (A/A jobs)"),
        (["--jobs", "x"], "argument --jobs: 'x': give a whole number from 1 to 20 (A/A jobs)"),
        (
            ["--drop", "1.5"],
            "argument --drop: '1.5': give a share of the throughput between 0 and 1, e.g. 0.25",
        ),
        (
            ["--drop", "half"],
            "argument --drop: 'half': give a share of the throughput between 0 and 1, e.g. 0.25",
        ),
    ],
)
def test_a_number_out_of_range_is_refused_by_the_parser(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate", *WHERE, "--start", "--sha", SHA, *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: distkpi calibrate ")
    assert err.splitlines()[-1] == f"distkpi calibrate: {message}"


def test_local_calibrate_refuses_a_number_of_jobs_out_of_range(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["local", "calibrate", "--jobs", "0"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1] == (
        "distkpi local: argument --jobs: '0': give a whole number from 1 to 20 (A/A jobs)"
    )
