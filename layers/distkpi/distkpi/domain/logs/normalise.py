"""What launchers and terminals add to a line, taken off before any reader sees it:
terminal colour codes (torchtitan colours its step line), torchrun's `[rank0]:` and
`[default0]:` (`--tee`/`--log-line-prefix`), Slurm's `srun --label` `0: ` and Open MPI's
`--tag-output` `[1,0]<stdout>:`, alone or nested."""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*+[A-Za-z]")
_PREFIX = r"\d{1,6}+: |\[(?:rank|default)\d{1,6}+\]:|\[\d{1,6}+,\d{1,6}+\]<std(?:out|err)>:"
_PREFIXES = re.compile(rf"(?:[ \t]*+(?:{_PREFIX}))++[ \t]*+")
_PREFIX_STARTS = frozenset(" \t[0123456789")


def normalise(line: str) -> str:
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if line[:1] in _PREFIX_STARTS and (m := _PREFIXES.match(line)):
        line = line[m.end() :]
    return line
