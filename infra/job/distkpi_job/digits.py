"""scikit-learn's 8x8 digits (1,797 images and their labels), read from the file that
scikit-learn ships them in: importing sklearn.datasets to load them imports scipy too, a
second of every worker's start for 60 kB of numbers."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np


def load() -> tuple[np.ndarray, np.ndarray]:
    """(pixels 0..16 as float64, shape (1797, 64); labels as int64), as load_digits gives."""
    spec = importlib.util.find_spec("sklearn")
    if spec is not None and spec.origin is not None:
        shipped = Path(spec.origin).parent / "datasets" / "data" / "digits.csv.gz"
        if shipped.is_file():
            table = np.loadtxt(shipped, delimiter=",")
            return table[:, :-1], table[:, -1].astype(np.int64)
    from sklearn.datasets import load_digits  # a scikit-learn that keeps them elsewhere

    digits = load_digits()
    return digits.data, digits.target
