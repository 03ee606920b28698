import io

import pytest

from distkpi.domain.logs.gpumemory import parse_gpu_memory


def peak(text: str) -> float | None:
    return parse_gpu_memory(io.BytesIO(text.encode())).peak_mib


@pytest.mark.parametrize(
    "text",
    [
        "timestamp, index, memory.used [MiB]\n"
        "2025/11/30 00:00:00.000, 0, 11000 MiB\n2025/11/30 00:00:01.000, 1, 12000 MiB\n",
        "2025/11/30 00:00:00.000, 0, 11000 MiB\n2025/11/30 00:00:01.000, 1, 12000 MiB\n",
        "timestamp, index, memory.used\n2025/11/30 00:00:00.000, 0, 11000\n0000, 1, 12000\n",
        "2025/11/30 00:00:00.000, 0, 11000\n2025/11/30 00:00:01.000, 1, 12000\n",
        "pid, process_name, used_memory [MiB]\n4242, python, 12000 MiB\n4243, python, 9 MiB\n",
        "used_memory [MiB]\n12000 MiB\n",
        "12000\n",
        "memory.used [MiB], index\n12000 MiB, 0\n11 MiB, 1\n",
    ],
)
def test_formats(text: str) -> None:
    assert peak(text) == 12000.0


def test_gib_units() -> None:
    assert peak("1.5 GiB\n") == 1536.0


def test_unreadable_lines_are_counted() -> None:
    out = parse_gpu_memory(io.BytesIO(b"0, 1, [N/A]\n0, 1, 12 MiB\n"))
    assert out.peak_mib == 12.0
    assert out.problems == ["1 GPU memory line(s) not understood"]


def test_no_samples() -> None:
    out = parse_gpu_memory(io.BytesIO(b"timestamp, index, memory.used [MiB]\n"))
    assert out.peak_mib is None
    assert "no GPU memory samples" in out.problems
