"""The code under test: the repository checked out at exactly the commit, then the suite's
setup commands run in it. A failure is a NodeProblem that says which step and shows the
end of its output; the command is then never run."""

from __future__ import annotations

import base64
import os
import shlex
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from distkpi.domain.planning import jobenv
from distkpi_cli.node.bounded import run_bounded

NO_SOURCE = "none"
OUTPUT_TAIL_LINES = 20
TOKEN_VARIABLE = jobenv.GIT_TOKEN


class NodeProblem(Exception):
    """Why the node could not run its command, in a line a person acts on; ``detail`` is the
    end of the failing step's output, for the node's log."""

    def __init__(self, problem: str, detail: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.detail = detail


def _tail(output: str) -> str:
    return "\n".join(output.splitlines()[-OUTPUT_TAIL_LINES:])


def _git_environment(env: Mapping[str, str]) -> dict[str, str]:
    """git's environment: a read-only token, when there is one, goes in as an HTTP header
    through git's config variables, never on a command line or in a log."""
    out = {k: v for k, v in env.items() if k != TOKEN_VARIABLE}
    out |= {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    token = env.get(TOKEN_VARIABLE)
    if token:
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        out |= {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "http.extraHeader",
            "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
        }
    return out


def _git(
    args: Sequence[str], cwd: Path, env: Mapping[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=dict(env), capture_output=True, text=True, check=False
    )


def check_out(url: str, sha: str, repo: str, into: Path, env: Mapping[str, str]) -> None:
    """``into`` holds the repository at exactly ``sha`` (detached, not a branch tip)."""
    into.mkdir(parents=True, exist_ok=True)
    git_env = _git_environment(env)
    _git(["init", "--quiet"], into, git_env)
    fetched = _git(["fetch", "--quiet", "--depth", "1", url, sha], into, git_env)
    if fetched.returncode != 0:  # servers that refuse a bare sha: fetch everything
        fetched = _git(["fetch", "--quiet", url, "+refs/*:refs/remotes/origin/*"], into, git_env)
        if fetched.returncode != 0:
            raise NodeProblem(f"checkout failed: cannot fetch {repo}", _tail(fetched.stderr))
    checked = _git(["checkout", "--quiet", "--detach", sha], into, git_env)
    if checked.returncode != 0:
        raise NodeProblem(f"commit {sha} not found in {repo}", _tail(checked.stderr))


def run_setup(
    commands: Sequence[str | Sequence[str]],
    cwd: Path,
    env: Mapping[str, str],
    log: Path,
    spawn: Mapping[str, Any] | None = None,
    *,
    timeout_s: float | None = None,
    stop_the_rest: Callable[[], None] | None = None,
    prefix: Sequence[str] = (),
) -> None:
    """Each setup command in the checkout (node/bounded.py: ``timeout_s`` each, whatever it
    left running stopped by ``stop_the_rest`` once it has ended), its output appended to
    ``log``; the first that fails stops the node. ``spawn``: how its processes start (as
    the code's user, node/isolation.py)."""
    for command in commands:
        args = ["sh", "-c", command] if isinstance(command, str) else list(command)
        shown = command if isinstance(command, str) else shlex.join(command)
        with log.open("ab") as out:
            out.write(f"$ {shown}\n".encode(errors="replace"))
        start = log.stat().st_size
        try:
            ended = run_bounded(
                args,
                cwd,
                env,
                log,
                timeout_s,
                spawn=spawn,
                stop_the_rest=stop_the_rest,
                echo=False,
                prefix=prefix,
            )
        except OSError as exc:
            raise NodeProblem(f"setup failed: {shown} cannot start: {exc.strerror}") from exc
        if ended.note is not None:
            with log.open("ab") as out:
                out.write(f"distkpi node: {ended.note}\n".encode())
        if ended.code is None:
            raise NodeProblem(
                f"setup failed: {shown} still running at its deadline of {timeout_s:g}s; stopped",
                _tail_of(log, start),
            )
        if ended.code != 0:
            detail = _tail_of(log, start)
            raise NodeProblem(f"setup failed: {shown} exited {ended.code}", detail)
        if ended.log_error is not None:
            raise NodeProblem(f"setup: {ended.log_error}")


def _tail_of(log: Path, start: int, most: int = 1 << 16) -> str:
    """The last lines of what ``log`` holds past ``start``."""
    try:
        with log.open("rb") as f:
            f.seek(max(start, f.seek(0, 2) - most))
            return _tail(f.read().decode(errors="replace"))
    except OSError:
        return ""


def get_source(url: str, sha: str, repo: str, work: Path, env: Mapping[str, str]) -> Path:
    """The directory the command runs in: a checkout of ``sha``, or (source none) the
    image's working directory."""
    if url == NO_SOURCE:
        return Path(os.getcwd())
    source = work / "src"
    check_out(url, sha, repo, source, env)
    return source
