"""Pictures people would rather see than read: training curves, attention over boxes (one
step or every step of a program), grouped bars.

Drawn with matplotlib (non-interactive backend), written as PNG files.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

_CMAP = "viridis"


def pyplot():
    """matplotlib's pyplot on the file-only backend."""
    import matplotlib
    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt
    return plt


def training_curve(history: Sequence[dict], path, title: str = "training the oracle through the reasoning") -> Path:
    """Loss and validation accuracy (all / open / binary) per epoch, from ``metrics.jsonl`` records."""
    plt = pyplot()
    epochs = [h["epoch"] + 1 for h in history]
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    ax_loss.plot(epochs, [h["train_loss"] for h in history], marker="o", color="tab:red")
    ax_loss.set(xlabel="epoch", ylabel="training loss (answer NLL)", title="loss")
    for key, label in (("val_accuracy", "all"), ("val_open", "open"), ("val_binary", "binary")):
        values = [h.get(key) for h in history]
        if any(v is not None for v in values):
            ax_acc.plot(epochs, [100 * v if v is not None else float("nan") for v in values], marker="o", label=label)
    ax_acc.set(xlabel="epoch", ylabel="validation accuracy (%)", title="accuracy", ylim=(0, 100))
    ax_acc.legend()
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    return save_figure(plt, fig, path)


def learning_curves(curves: dict[str, Sequence[tuple[float, Optional[float]]]], path,
                    title: str = "learning to answer: validation accuracy against training time",
                    levels: Optional[dict[str, float]] = None) -> Path:
    """One line per way of learning: ``name -> [(seconds, accuracy in [0, 1] or None), ...]``;
    ``levels``: ``name -> accuracy``, each a dashed horizontal line (a bound no training reaches)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, points in curves.items():
        kept = [(t, a) for t, a in points if a is not None]
        if kept:
            ax.plot([t for t, _ in kept], [100 * a for _, a in kept], marker="o", label=name)
    for name, accuracy in (levels or {}).items():
        ax.axhline(100 * accuracy, linestyle="--", color="black", label=name)
    ax.set(xlabel="seconds of training and validation (one torch thread)", ylabel="validation accuracy (%)",
           title=title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")  # clear of the bounds drawn at the top
    return save_figure(plt, fig, path)


def attention_over_boxes(boxes, width: float, height: float, attention: Sequence[float], labels: Sequence[str],
                         path, title: str) -> Path:
    """Boxes (x1, y1, x2, y2 pixels) on the image frame, filled and outlined by their attention."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 7 * height / max(width, 1)))
    _draw_boxes(ax, boxes, width, height, attention, labels)
    fig.colorbar(plt.cm.ScalarMappable(cmap=plt.get_cmap(_CMAP), norm=plt.Normalize(0, 1)), ax=ax, fraction=0.04,
                 label="attention α(F | x)")
    ax.set_title(title, fontsize=9)
    return save_figure(plt, fig, path)


def attention_steps(boxes, width: float, height: float, steps: Sequence[tuple[str, Sequence[float]]],
                    labels: Sequence[str], path, title: str, columns: int = 3) -> Path:
    """One panel per reasoning step: ``steps`` are ``(step title, attention per box)`` in the
    order the program computes them, drawn as :func:`attention_over_boxes` draws one."""
    if not steps:
        raise ValueError("attention_steps: no step to draw")
    plt = pyplot()
    columns = min(columns, len(steps))
    rows = -(-len(steps) // columns)
    panel = 4.2
    fig, axes = plt.subplots(rows, columns, figsize=(panel * columns, panel * rows * height / max(width, 1) + 1.0),
                             squeeze=False)
    for k, ax in enumerate(axes.flat):
        if k >= len(steps):
            ax.axis("off")
            continue
        step_title, attention = steps[k]
        _draw_boxes(ax, boxes, width, height, attention, labels, fontsize=6)
        ax.set_title(f"{k + 1}. {step_title}", fontsize=8)
        ax.tick_params(labelsize=6)
    fig.suptitle(title, fontsize=9)
    return save_figure(plt, fig, path)


def grouped_bars(categories: Sequence[str], series: dict[str, Sequence[Optional[float]]], path, xlabel: str,
                 ylabel: str, title: str, notes: Sequence[str] = ()) -> Path:
    """Bars per category, one colour per series (``None``: no bar); ``notes`` are written
    under the category names (e.g. how many questions each holds)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(categories) * max(1, len(series)) / 2), 4.5))
    width = 0.8 / max(1, len(series))
    for s, (name, values) in enumerate(series.items()):
        xs = [c + (s - (len(series) - 1) / 2) * width for c in range(len(categories))]
        heights = [float("nan") if v is None else v for v in values]
        bars = ax.bar(xs, heights, width=width, label=name)
        for bar, v in zip(bars, values):
            if v is not None:
                ax.text(bar.get_x() + bar.get_width() / 2, v + 1, f"{v:.0f}", ha="center", fontsize=7)
    names = [f"{c}\n{n}" for c, n in zip(categories, notes)] if notes else list(categories)
    ax.set_xticks(range(len(categories)), names, fontsize=8)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title, ylim=(0, 128))  # room above 100 for the legend
    ax.set_yticks(range(0, 101, 20))
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8, loc="upper center", ncol=2)
    return save_figure(plt, fig, path)


def _draw_boxes(ax, boxes, width: float, height: float, attention: Sequence[float], labels: Sequence[str],
                fontsize: int = 8) -> None:
    from matplotlib.patches import Rectangle
    import matplotlib.pyplot as plt
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)  # image coordinates: y grows downwards
    ax.set_aspect("equal")
    cmap = plt.get_cmap(_CMAP)
    order = sorted(range(len(boxes)), key=lambda i: attention[i])  # the attended boxes on top
    for i in order:
        x1, y1, x2, y2 = (float(v) for v in boxes[i])
        a = float(attention[i])
        ax.add_patch(Rectangle((x1, y1), x2 - x1, y2 - y1, facecolor=cmap(a), alpha=0.15 + 0.45 * a,
                               edgecolor=cmap(a), linewidth=1 + 3 * a))
        ax.text(x1 + 2, y1 + 12, f"{labels[i]} {a:.2f}", fontsize=fontsize, color="black",
                bbox=dict(facecolor="white", alpha=0.6, linewidth=0, pad=1))


def save_figure(plt, fig, path) -> Path:
    """Write ``fig`` as a PNG at ``path`` (its folder made if missing), close it, return the path."""
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
