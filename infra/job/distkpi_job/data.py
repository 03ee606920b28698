"""Training data that ships inside scikit-learn: the 8x8 digits, widened and repeated.

Each sample's 64 pixels are tiled to ``features`` inputs and the training set repeated
``repeat`` times with small noise, so that one step is compute-bound, not Python-bound.
"""

from __future__ import annotations

import torch

from distkpi_job import digits


def datasets(features: int, repeat: int) -> tuple[torch.Tensor, ...]:
    pixels, labels = digits.load()
    x = torch.tensor(pixels, dtype=torch.float32) / 16.0
    y = torch.tensor(labels, dtype=torch.long)
    g = torch.Generator().manual_seed(0)
    order = torch.randperm(len(x), generator=g)
    x, y = x[order], y[order]
    tiles = -(-features // x.shape[1])
    x = x.repeat(1, tiles)[:, :features]
    split = len(x) * 4 // 5
    train_x, train_y, test_x, test_y = x[:split], y[:split], x[split:], y[split:]
    noisy = [train_x + 0.05 * torch.randn(train_x.shape, generator=g) for _ in range(repeat - 1)]
    train_x = torch.cat([train_x, *noisy])
    train_y = train_y.repeat(repeat)
    return train_x, train_y, test_x, test_y


def model(features: int, hidden: int) -> torch.nn.Module:
    torch.manual_seed(0)  # every worker and pserver starts from the same parameters
    return torch.nn.Sequential(
        torch.nn.Linear(features, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, 10),
    )


def accuracy(net: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return float((net(x).argmax(dim=1) == y).float().mean())
