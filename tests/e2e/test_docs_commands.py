"""The commands the tutorials and how-to guides show, run as a reader would type them, in
a fresh clone of this checkout, and what they print checked against what the pages show
(tests/docs_pages.py says how blocks are marked and compared). The `run` blocks run in
make test's e2e tier, the `slow` ones (`make demo`, training of one's own) in make slow.

The clone has no virtual environment of its own: `distkpi` and `torchrun` come from this
one (on the PATH), and `make` is given this one (`VENV=`) and told it is up to date (`-o`),
so `make demo` runs the demo rather than installing again."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs_pages import PAGES, ROOT, Block, blocks, mismatch

pytestmark = pytest.mark.e2e

COMMAND_TIMEOUT_S = 1200


def _pages(slow: bool) -> list[Path]:
    wanted = ("slow", "slow illustrative") if slow else ("run",)
    return [p for p in PAGES if any(b.kind in wanted for b in blocks(p))]


def _environment(tmp_path: Path) -> dict[str, str]:
    venv = Path(sys.executable).parent.parent
    wrappers = tmp_path / "bin"
    wrappers.mkdir()
    make = wrappers / "make"
    real_make = subprocess.run(
        ["bash", "-c", "command -v make"], capture_output=True, text=True, check=True
    ).stdout.strip()
    make.write_text(f'#!/bin/sh\nexec {real_make} VENV={venv} -o {venv}/.installed "$@"\n')
    make.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISTKPI_STATE",))}
    env["PATH"] = f"{wrappers}{os.pathsep}{venv / 'bin'}{os.pathsep}{env['PATH']}"
    return env


def _run_page(page: Path, kinds: tuple[str, ...], tmp_path: Path) -> None:
    clone = tmp_path / "distkpi"
    subprocess.run(["git", "clone", "--quiet", "--shared", str(ROOT), str(clone)], check=True)
    env = _environment(tmp_path)
    cwd = clone
    where = tmp_path / "cwd"
    for block in blocks(page):
        if block.kind == "file":
            target = clone / block.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text)
            continue
        if block.kind not in kinds:
            continue
        for command in block.commands:
            cwd = _run(block, command.line, command.output, cwd, where, env)


def _run(
    block: Block, line: str, shown: list[str], cwd: Path, where: Path, env: dict[str, str]
) -> Path:
    script = f"cd {shlex.quote(str(cwd))} && {{ {line}\n}}; rc=$?; pwd > {where}; exit $rc"
    done = subprocess.run(
        ["bash", "-c", script],
        check=False,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
    )
    assert done.returncode == 0, f"{block.where}: `{line}` exited {done.returncode}:\n{done.stdout}"
    if "illustrative" not in block.kind:
        why = mismatch(shown, done.stdout, exact=block.kind == "run")
        assert why is None, (
            f"{block.where}: `{line}` printed what the page does not show: {why}\n{done.stdout}"
        )
    return Path(where.read_text().strip())


@pytest.mark.parametrize("page", _pages(slow=False), ids=lambda p: p.stem)
def test_the_pages_quick_commands_print_what_they_show(page: Path, tmp_path: Path) -> None:
    _run_page(page, ("run",), tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages(slow=True), ids=lambda p: p.stem)
def test_the_tutorials_and_guides_run_as_written(page: Path, tmp_path: Path) -> None:
    _run_page(page, ("run", "slow", "slow illustrative"), tmp_path)
