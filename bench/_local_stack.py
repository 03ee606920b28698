"""What the benchmarks on the local stack share: moto's server in a process of its own on
127.0.0.1. A module, not a script (its leading underscore keeps it out of the smoke runs)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import requests


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def moto_server(tries: int = 200) -> tuple[subprocess.Popen[bytes], str]:
    """moto's server started, and its endpoint once it answers (``tries`` times 0.1 s)."""
    port = free_port()
    binary = Path(sys.executable).parent / "moto_server"
    proc = subprocess.Popen(
        [str(binary), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(tries):
        try:
            requests.get(f"{endpoint}/moto-api/", timeout=1)
            return proc, endpoint
        except requests.ConnectionError:
            time.sleep(0.1)
    proc.terminate()
    raise SystemExit("moto_server did not start")
