"""What the code's user (another uid than the runner's, as when `distkpi node` runs as root)
cannot reach is named in one line before the code starts: a folder of mode 700 above a
program its command starts, a script's interpreter, a cache or a PYTHONPATH folder."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from distkpi_cli.node.isolation import CodeUser
from distkpi_cli.node.reach import out_of_reach

OTHER = CodeUser(os.getuid() + 4242, os.getgid() + 4242, separate=True)
ADVICE = (
    "is closed to other users; put it in a folder every user can enter, "
    "or set DISTKPI_RUN_AS_UID to a user who can reach it"
)


@pytest.fixture
def closed() -> Iterator[Path]:
    """A folder as `mktemp -d` makes it (mode 700) in the system's temporary folder."""
    folder = Path(tempfile.mkdtemp())
    yield folder

    shutil.rmtree(folder)


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_a_python_in_a_closed_folder_is_named_with_what_to_do(closed: Path) -> None:
    python = executable(closed / "venv" / "bin" / "python3", "#!/bin/sh\n")
    env = {"PATH": f"{python.parent}:/usr/bin:/bin"}
    assert out_of_reach(env, [["python3", "bench.py"]], OTHER) == (
        f"the code's user (distkpi-code-{OTHER.uid}) cannot reach {python} to run: "
        f"{closed} {ADVICE}"
    )


def test_a_console_script_whose_interpreter_is_out_of_reach_is_named(closed: Path) -> None:
    """torchrun in an open folder, its `#!` naming a python under a closed one."""
    python = executable(closed / "bin" / "python3", "#!/bin/sh\n")
    opened = Path(tempfile.mkdtemp())
    try:
        opened.chmod(0o755)
        executable(opened / "torchrun", f"#!{python}\nimport sys\n")
        env = {"PATH": f"{opened}:/usr/bin:/bin"}
        assert out_of_reach(env, [["torchrun", "--nproc-per-node", "2", "x.py"]], OTHER) == (
            f"the code's user (distkpi-code-{OTHER.uid}) cannot reach {python} to run: "
            f"{closed} {ADVICE}"
        )
    finally:
        shutil.rmtree(opened)


def test_a_cache_or_pythonpath_in_a_closed_folder_is_named(closed: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "DISTKPI_CACHE_DIR": str(closed / "cache")}
    assert out_of_reach(env, [["true"]], OTHER) == (
        f"the code's user (distkpi-code-{OTHER.uid}) cannot reach {closed / 'cache'} to use "
        f"DISTKPI_CACHE_DIR: {closed} {ADVICE}"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": f"/usr/lib:{closed}"}
    assert out_of_reach(env, [["true"]], OTHER) == (
        f"the code's user (distkpi-code-{OTHER.uid}) cannot reach {closed} to import from "
        f"PYTHONPATH: {closed} {ADVICE}"
    )


def test_what_every_user_reaches_or_the_code_as_this_user_is_not_named(closed: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "DISTKPI_CACHE_DIR": "/usr/share"}
    assert out_of_reach(env, [["sh", "-c", "true"], "echo setup"], OTHER) is None
    python = executable(closed / "bin" / "python3", "#!/bin/sh\n")
    same = CodeUser(os.getuid(), os.getgid(), separate=False)
    assert out_of_reach({"PATH": str(python.parent)}, [["python3"]], same) is None
