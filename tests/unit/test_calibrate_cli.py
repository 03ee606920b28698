"""`distkpi calibrate`'s command line: what each unusable argument gets, before anything is
asked of GitHub or of the table."""

from __future__ import annotations

import pytest

from distkpi_cli.main import main

SHA = "9f4e1c2b7a6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"
WHERE = ["--repo", "PaddlePaddle/Paddle", "--model", "resnet50"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--start"], "--start needs --sha, the commit's full 40-digit lower-case hex sha"),
        (["--start", "--sha", SHA[:10]], "--start needs --sha"),
        (["--start", "--sha", SHA.upper()], "--start needs --sha"),
        (["--start", "--sha", SHA], "--start needs $GITHUB_TOKEN"),
        ([], "no table: give --table or set TABLE_NAME"),
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
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--jobs", "0"], "argument --jobs: 0: from 1 to 20 A/A jobs"),
        (["--jobs", "21"], "argument --jobs: 21: from 1 to 20 A/A jobs"),
        (["--drop", "1.5"], "argument --drop: 1.5: a share of the throughput between 0 and 1"),
        (["--drop", "0"], "argument --drop: 0: a share of the throughput between 0 and 1"),
    ],
)
def test_a_number_out_of_range_is_refused_by_the_parser(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["calibrate", *WHERE, "--start", "--sha", SHA, *argv])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_local_calibrate_refuses_a_number_of_jobs_out_of_range(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["local", "calibrate", "--jobs", "0"])
    assert "argument --jobs: 0: from 1 to 20 A/A jobs" in capsys.readouterr().err
