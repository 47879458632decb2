"""A schematic of what flows between the parts of VISR, APT and APS (notebook 04): boxes and arrows drawn
with matplotlib, one panel per method, each part coloured by the method it comes from.

Every panel places its parts at the same spots, so that a part one method lacks leaves a gap: APS keeps
VISR's features phi, skills w, successor features psi, reward phi(s')^T w and task inference (least
squares of the task's rewards on phi), and adds APT's kNN reward, computed on h = phi(s') where APT
computes it on its own encoder's h = f(s').
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch

from aps_teach.infra.figures import METHOD_COLOURS

METHODS = ("visr", "apt", "aps")
TITLES = {"visr": "VISR", "apt": "APT", "aps": "APS: VISR's parts + APT's kNN term, on $\\phi$"}


@dataclass(frozen=True)
class Part:
    """A box: its centre (x, y) in a panel's 0-10 coordinates, its label, and the method it comes from."""

    x: float
    y: float
    label: str
    origin: str


PARTS = {
    "replay": Part(5.0, 9.3, "replay: transitions $(s, a, s')$", "both"),
    "phi": Part(2.6, 7.3, "$\\phi(s')$, unit length\ntrained by the vMF loss $-\\phi(s')^\\top w$", "visr"),
    "f": Part(2.6, 7.3, "encoder $f(s')$\ntrained by InfoNCE", "apt"),
    "w": Part(7.6, 7.3, "skill $w$, uniform on the sphere\n(redrawn every 10 steps)", "visr"),
    "knn": Part(2.6, 5.2,
                "exploration: kNN term on $h$\n$\\log(1 + \\frac{1}{k}\\sum_j \\Vert h - h^{(j)}\\Vert)$",
                "apt"),
    "exploit": Part(7.6, 5.2, "exploitation: $\\phi(s')^\\top w$", "visr"),
    "psi": Part(5.0, 3.1, "successor features $\\psi(s, a, w)$\nact on $Q = \\psi^\\top w$ (GPI)", "visr"),
    "q": Part(5.0, 3.1, "$Q(s, a)$\nact on $Q$", "apt"),
    "infer": Part(5.0, 0.9, "task inference: least squares\nof the task's rewards on $\\phi$ $\\to$ $w$",
                  "visr"),
    "finetune": Part(5.0, 0.9, "no task inference:\nfine-tune $Q$ on the task's reward", "apt"),
}
"""Every part any of the three methods has; `USES` says which each draws."""

USES = {
    "visr": ("replay", "phi", "w", "exploit", "psi", "infer"),
    "apt": ("replay", "f", "knn", "q", "finetune"),
    "aps": ("replay", "phi", "w", "knn", "exploit", "psi", "infer"),
}

EDGES = {
    "visr": (("replay", "phi", "$s'$"), ("phi", "exploit", ""), ("w", "exploit", ""),
             ("exploit", "psi", "reward"), ("w", "psi", "$w$"), ("phi", "infer", "$\\phi(s)$"),
             ("infer", "psi", "task's $w$")),
    "apt": (("replay", "f", "$s'$"), ("f", "knn", "$h = f(s')$"), ("knn", "q", "reward"),
            ("q", "finetune", "")),
    "aps": (("replay", "phi", "$s'$"), ("phi", "knn", "$h = \\phi(s')$"), ("phi", "exploit", ""),
            ("w", "exploit", ""), ("knn", "psi", "reward: sum"), ("exploit", "psi", "reward: sum"),
            ("w", "psi", "$w$"), ("phi", "infer", "$\\phi(s)$"), ("infer", "psi", "task's $w$")),
}
"""(from, to, label) of each arrow, per method; an arrow's artist has gid "edge:<from>-><to>"."""

BOX_WIDTH, BOX_HEIGHT = 4.2, 1.3


def _colour(origin: str) -> str:
    return "#dddddd" if origin == "both" else METHOD_COLOURS[origin]


def draw_method(ax, method: str) -> None:
    """Draw `method`'s parts (`USES`) and arrows (`EDGES`) on `ax`, each box coloured by its origin (grey:
    the replay, which every method has). Boxes carry gid "part:<name>"."""
    if method not in USES:
        raise ValueError(f"no schematic for method {method!r}; known: {', '.join(METHODS)}")
    ax.set(xlim=(-0.8, 10.6), ylim=(0, 10.1))
    ax.set_axis_off()
    ax.set_title(TITLES[method], fontsize=11)
    for name in USES[method]:
        part = PARTS[name]
        box = FancyBboxPatch((part.x - BOX_WIDTH / 2, part.y - BOX_HEIGHT / 2), BOX_WIDTH, BOX_HEIGHT,
                             boxstyle="round,pad=0.05,rounding_size=0.2", facecolor=_colour(part.origin),
                             alpha=0.25, edgecolor=_colour(part.origin), linewidth=1.5, gid=f"part:{name}")
        ax.add_patch(box)
        ax.text(part.x, part.y, part.label, ha="center", va="center", fontsize=7.5, gid=f"label:{name}")
    for start, end, label in EDGES[method]:
        a, b = PARTS[start], PARTS[end]
        # leave and enter through the box edges facing each other; bend the arrows that would cross a box
        sy = -1 if b.y < a.y else 1
        source = (a.x + (b.x - a.x) * 0.25, a.y + sy * BOX_HEIGHT / 2)
        target = (b.x - (b.x - a.x) * 0.25, b.y - sy * BOX_HEIGHT / 2)
        bend = "arc3,rad=-0.35" if (start, end) == ("w", "psi") else \
            "arc3,rad=0.35" if (start, end) == ("phi", "infer") else "arc3,rad=0"
        if (start, end) == ("phi", "infer"):
            source, target = (a.x - BOX_WIDTH / 2, a.y), (b.x - BOX_WIDTH / 2, b.y)
        if (start, end) == ("w", "psi"):
            source, target = (a.x + BOX_WIDTH / 2, a.y), (b.x + BOX_WIDTH / 2, b.y)
        arrow = ax.annotate("", xy=target, xytext=source,
                            arrowprops={"arrowstyle": "-|>", "color": "#444444", "lw": 1.2,
                                        "connectionstyle": bend, "shrinkA": 0, "shrinkB": 0})
        arrow.set_gid(f"edge:{start}->{end}")
        if label:
            mx, my = (source[0] + target[0]) / 2, (source[1] + target[1]) / 2
            offset = {("phi", "infer"): -0.9, ("w", "psi"): 1.5, ("infer", "psi"): 0.0}.get((start, end), 0.0)
            ax.text(mx + offset, my, label, ha="center", va="center", fontsize=7, color="#333333",
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})


def data_flow(method: str | None = None):
    """One panel per method of `METHODS` (or only `method`'s), left to right: what flows between the
    features phi (or APT's encoder f), the skill w, the two reward terms (phi(s')^T w, and the kNN term
    log(1 + mean distance to the k nearest particles h^(j)) on h), the successor features psi (or APT's Q),
    the replay, and task inference (w = argmin_w sum_t (r_t - phi(s_t)^T w)^2). Returns the figure."""
    methods = METHODS if method is None else (method,)
    for name in methods:
        if name not in USES:
            raise ValueError(f"no schematic for method {name!r}; known: {', '.join(METHODS)}")
    fig, axes = plt.subplots(1, len(methods), figsize=(5.2 * len(methods), 5.6), squeeze=False)
    for ax, name in zip(axes[0], methods, strict=True):
        draw_method(ax, name)
    fig.suptitle("What flows between the parts (box colour: the method a part comes from; "
                 "blue VISR, green APT, grey both)", fontsize=10)
    fig.tight_layout()
    return fig
