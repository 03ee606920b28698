"""The reference job's training data is scikit-learn's digits, as load_digits gives them,
though it reads them without importing sklearn.datasets (and scipy with it)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from sklearn.datasets import load_digits

from tests.fakes import ROOT

JOB = ROOT / "infra" / "job"


def test_the_digits_are_load_digits_own() -> None:
    sys.path.insert(0, str(JOB))
    try:
        from distkpi_job import digits
    finally:
        sys.path.remove(str(JOB))
    pixels, labels = digits.load()
    expected = load_digits()
    assert pixels.shape == (1797, 64) and pixels.dtype == expected.data.dtype
    assert np.array_equal(pixels, expected.data) and np.array_equal(labels, expected.target)


def test_reading_them_imports_neither_sklearn_datasets_nor_scipy() -> None:
    check = (
        "import sys; from distkpi_job import digits; digits.load(); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'scipy', 'sklearn'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", check],
        env={"PYTHONPATH": str(JOB)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "[]"
