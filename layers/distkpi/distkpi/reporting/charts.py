"""The report's charts as PNG bytes, drawn with matplotlib's Agg backend (no display)."""

from __future__ import annotations

import io
from collections.abc import Sequence

from distkpi.domain.judging.history import HistoryRow, series
from distkpi.domain.judging.statistics import Judgement
from distkpi.domain.kpis.engine import RunKpis


def _png(figure: object) -> bytes:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")  # type: ignore[attr-defined]
    plt.close(figure)  # type: ignore[arg-type]
    return buffer.getvalue()


def _pyplot():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def speedup_chart(run: RunKpis) -> bytes | None:
    """Speedup against GPUs, beside ideal linear scaling from the base config; None when no
    config reported one (no empty axes)."""
    points = sorted(
        ((c.gpus, c.speedup, c.name) for c in run.configs if c.speedup is not None),
        key=lambda p: p[0],
    )
    if not points:
        return None
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(5.5, 3.6))
    base_gpus = min((c.gpus for c in run.configs), default=1)
    top = max((c.gpus for c in run.configs), default=1)
    axes.plot([base_gpus, top], [1, top / base_gpus], "--", color="grey", label="ideal (linear)")
    # the line joins one config per GPU count (the first listed); the others are points
    first: dict[int, float] = {}
    for gpus, speedup, _ in points:
        first.setdefault(gpus, speedup)
    axes.plot(list(first), list(first.values()), "-", color="tab:blue")
    axes.plot(
        [p[0] for p in points], [p[1] for p in points], "o", color="tab:blue", label="this run"
    )
    for gpus, speedup, name in points:
        axes.annotate(
            f"{name}\n{speedup:.2f}x",
            (gpus, speedup),
            textcoords="offset points",
            xytext=(4, -14),
            fontsize=7,
        )
    axes.margins(y=0.15)  # room for the labels under the lowest point
    axes.set_xlabel("GPUs")
    axes.set_ylabel("speedup")
    axes.set_title(f"{run.model}: speedup vs GPUs")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    return _png(figure)


def throughput_history_chart(
    run: RunKpis,
    history: Sequence[HistoryRow],
    configs: Sequence[str],
    judgements: Sequence[Judgement] = (),
    *,
    repeats: bool = False,
) -> bytes | None:
    """Throughput of each given config over the baseline's runs (one panel each, as their
    scales differ by the number of GPUs), with this run as a star at the end and the range
    its verdict allowed shaded (below it: a regression). A config with neither history nor
    a throughput of its own gets no panel; None when none has one. ``repeats``: every run of
    a commit drawn, as a `count_repeats` suite judges them."""
    drawn = []
    for config in configs:
        hardware = next((c.hardware for c in run.configs if c.name == config), None)
        values = series(history, config, "throughput", hardware=hardware, repeats=repeats)
        current = next((c.throughput for c in run.configs if c.name == config), None)
        if values or current is not None:
            drawn.append((config, values, current))
    if not drawn:
        return None
    plt = _pyplot()
    from matplotlib.ticker import MaxNLocator

    figure, panels = plt.subplots(len(drawn), 1, figsize=(6.5, 2.4 * len(drawn)), squeeze=False)
    for axes, (config, values, current) in zip(panels[:, 0], drawn, strict=True):
        axes.plot(range(len(values)), values, ".-", color="tab:blue", label="history")
        if current is not None:
            axes.plot(
                [len(values)], [current], "*", markersize=12, color="tab:orange", label="this run"
            )
        judged = next((j for j in judgements if j.config == config and j.kpi == "throughput"), None)
        if judged is not None and judged.low is not None and judged.high is not None:
            axes.axhspan(
                judged.low, judged.high, color="tab:green", alpha=0.12, label="allowed range"
            )
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        axes.set_title(f"{config}: throughput (samples/s)", fontsize=9)
        axes.grid(alpha=0.3)
        axes.legend(fontsize=7, loc="best")
    panels[-1, 0].set_xlabel("run (oldest to newest)")
    figure.tight_layout()
    return _png(figure)
