"""Pictures people would rather see than read: training curves, attention over boxes.

Drawn with matplotlib (non-interactive backend), written as PNG files.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt
    return plt


def training_curve(history: Sequence[dict], path, title: str = "training the oracle through the reasoning") -> Path:
    """Loss and validation accuracy (all / open / binary) per epoch, from ``metrics.jsonl`` records."""
    plt = _pyplot()
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
    return _save(plt, fig, path)


def attention_over_boxes(boxes, width: float, height: float, attention: Sequence[float], labels: Sequence[str],
                         path, title: str) -> Path:
    """Boxes (x1, y1, x2, y2 pixels) on the image frame, filled and outlined by their attention."""
    plt = _pyplot()
    from matplotlib.patches import Rectangle
    fig, ax = plt.subplots(figsize=(7, 7 * height / max(width, 1)))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)  # image coordinates: y grows downwards
    ax.set_aspect("equal")
    cmap = plt.get_cmap("viridis")
    order = sorted(range(len(boxes)), key=lambda i: attention[i])  # the attended boxes on top
    for i in order:
        x1, y1, x2, y2 = (float(v) for v in boxes[i])
        a = float(attention[i])
        ax.add_patch(Rectangle((x1, y1), x2 - x1, y2 - y1, facecolor=cmap(a), alpha=0.15 + 0.45 * a,
                               edgecolor=cmap(a), linewidth=1 + 3 * a))
        ax.text(x1 + 2, y1 + 12, f"{labels[i]} {a:.2f}", fontsize=8, color="black",
                bbox=dict(facecolor="white", alpha=0.6, linewidth=0, pad=1))
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(0, 1))
    fig.colorbar(sm, ax=ax, fraction=0.04, label="attention α(F | x)")
    ax.set_title(title, fontsize=9)
    return _save(plt, fig, path)


def _save(plt, fig, path) -> Path:
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
