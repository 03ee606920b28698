"""What the code's user cannot reach, said before the code starts.

As root the code runs as another user (node/isolation.py), which cannot enter a folder
closed to other users (root's home, a `mktemp -d` folder, both mode 700): a Python, a
console script or a cache given to it from there fails deep inside the suite's command
("Permission denied", "No module named 'torch'"). The node checks the executables its setup
and command start (and a script's interpreter), each folder of PYTHONPATH and
DISTKPI_CACHE_DIR, by their modes for that user (the owner's, group's or others' bits; ACLs
are not read), and names the first one out of reach in one line.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from distkpi.domain.planning import jobenv
from distkpi_cli.node.isolation import CodeUser

FOLDER_VARIABLES = (jobenv.CACHE_DIR,)
PATH_LIST_VARIABLES = ("PYTHONPATH",)


def _allowed(info: os.stat_result, user: CodeUser, bits: tuple[int, int, int]) -> bool:
    if info.st_uid == user.uid:
        return bool(info.st_mode & bits[0])
    if info.st_gid == user.gid:
        return bool(info.st_mode & bits[1])
    return bool(info.st_mode & bits[2])


SEARCH = (stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH)
READ = (stat.S_IRUSR, stat.S_IRGRP, stat.S_IROTH)


def closed_folder(path: Path, user: CodeUser) -> Path | None:
    """The first folder above ``path`` (links followed) that ``user`` cannot enter."""
    real = Path(os.path.realpath(path))
    for folder in reversed(real.parents):
        try:
            if not _allowed(folder.stat(), user, SEARCH):
                return folder
        except OSError:
            return None
    return None


def _interpreter(script: Path, path_list: str) -> Path | None:
    """The program a `#!` script names (through /usr/bin/env, found on ``path_list``)."""
    try:
        with open(script, "rb") as f:
            first = f.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env" and len(words) > 1:
        found = shutil.which(words[1], path=path_list)
        return Path(found) if found else None
    return Path(words[0])


def _programs(commands: Iterable[Sequence[str] | str], path_list: str) -> list[Path]:
    """The absolute programs these commands start first, and their scripts' interpreters
    (a word relative to the checkout is the code's own)."""
    programs: list[Path] = []
    for command in commands:
        if isinstance(command, str) or not command:
            continue
        word = str(command[0])
        if "/" in word and not word.startswith("/"):
            continue
        found = shutil.which(word, path=path_list)
        if found is None:
            continue  # the command says so itself
        programs.append(Path(found))
        if (interpreter := _interpreter(Path(found), path_list)) is not None:
            programs.append(interpreter)
    return programs


def out_of_reach(
    env: Mapping[str, str], commands: Iterable[Sequence[str] | str], user: CodeUser
) -> str | None:
    """One line naming what ``user`` (the code's, another than this one) cannot reach of
    what ``env`` and ``commands`` give it, and what to do; None when it reaches them all."""
    if not user.separate:
        return None
    wanted = [(p, "run") for p in _programs(commands, env.get("PATH", ""))]
    for name in FOLDER_VARIABLES:
        if env.get(name):
            wanted.append((Path(env[name]), f"use {name}"))
    for name in PATH_LIST_VARIABLES:
        wanted += [(Path(p), f"import from {name}") for p in env.get(name, "").split(":") if p]
    for path, why in wanted:
        closed = closed_folder(path, user)
        if closed is None and path.exists():
            runs = path.is_dir() or why == "run"
            if not _allowed(path.stat(), user, SEARCH if runs else READ):
                closed = path
        if closed is not None:
            return (
                f"the code's user ({user.name}) cannot reach {path} to {why}: {closed} is "
                "closed to other users; put it in a folder every user can enter, or set "
                "DISTKPI_RUN_AS_UID to a user who can reach it"
            )
    return None
