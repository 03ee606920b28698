"""argparse types whose refusals name what to give: `argument --commits: 0: give a whole
number of 1 or more`, never argparse's `invalid _fault value`."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """A whole number of 1 or more."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of 1 or more")
    return value


def fault(text: str) -> tuple[str, int, int]:
    """CONFIG:NODE:EPOCH, e.g. 1x2:0:0: that node of that config crashes after that epoch."""
    parts = text.rsplit(":", 2)
    if len(parts) == 3 and parts[0] and parts[1].isdigit() and parts[2].isdigit():
        return parts[0], int(parts[1]), int(parts[2])
    raise argparse.ArgumentTypeError(
        f"{text!r}: give CONFIG:NODE:EPOCH, e.g. 1x2:0:0 (node 0 of config 1x2 crashes "
        "after epoch 0)"
    )
