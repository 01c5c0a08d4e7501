"""Figures of the paper, drawn from library results.

Each ``figN_*`` function takes the data it plots (a tidy DataFrame made by the
library, so that computing and restyling are separate steps) and returns the
matplotlib Figure. Every figure states its parameters in its title or legend.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from .order_stats import harmonic

#: one look for every figure of the book (seaborn's theme: readable defaults)
THEME = {"style": "whitegrid", "context": "notebook", "palette": "colorblind"}


def use_theme() -> None:
    """Apply the book's plotting theme (seaborn whitegrid, colorblind palette)."""
    sns.set_theme(**THEME)
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 150, "figure.autolayout": False})


def fig2_stability_vs_parallelism(curve: pd.DataFrame) -> plt.Figure:
    """Fig. 2: max stable utilization vs k/s (left) and vs k (right), 1- and 2-barrier.

    ``curve`` is :func:`barrier_queues.stability_curve` output for several s,
    all k and barriers 1 and 2 (conventional, l = k).
    """
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    servers = sorted(curve["servers"].unique())
    colors = dict(zip(servers, sns.color_palette(n_colors=len(servers)), strict=True))
    for s in servers:
        for b, style in ((1, "-"), (2, "--")):
            d = curve[(curve.servers == s) & (curve.barriers == b)].sort_values("tasks")
            label = f"s = {s}, {b}-barrier"
            axes[0].plot(d.tasks / s, d.rho_max, style, color=colors[s], label=label)
            axes[1].plot(d.tasks, d.rho_max, style, color=colors[s], label=label)
    k = sorted(curve["tasks"].unique())
    axes[1].plot(k, [1 / harmonic(int(x)) for x in k], ":", color="black", lw=1.5,
                 label=r"$1/H_k$ (2-barrier, $k \mid s$)")
    axes[0].set_xlabel("parallelism ratio k / s")
    axes[1].set_xlabel("tasks per job k")
    axes[1].set_xscale("log", base=2)
    axes[0].set_ylabel(r"max stable utilization $\rho_{\max}$")
    axes[0].set_title("vs k/s: 1-barrier (solid), 2-barrier (dashed)")
    axes[1].set_title("vs k (2-barrier sawtooth where k does not divide s)")
    axes[1].legend(fontsize=8, ncol=2, loc="lower left")
    for ax in axes:
        ax.set_ylim(0, 1.02)
    fig.suptitle("Fig. 2: stability of conventional barrier systems (exponential tasks)")
    fig.tight_layout()
    return fig


def _skl_panel(ax, curve: pd.DataFrame, conventional: float, title: str, conventional_label: str):
    ax.plot(curve.needed, curve.rho_max, "o-", label=r"total $\rho_{\max}$")
    ax.plot(curve.needed, curve.rho_useful, "s-", label=r"useful $\rho_{useful}$")
    ax.axhline(conventional, color="black", ls="--", lw=1.2, label=conventional_label)
    ax.set_xlabel("tasks needed l (the other k - l are killed)")
    ax.set_title(title, fontsize=11)
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=9)


def fig3_two_barrier_redundancy(left: pd.DataFrame, right: pd.DataFrame, left_title: str,
                                right_title: str) -> plt.Figure:
    """Fig. 3: 2-barrier (s,k,l) total and useful max utilization vs l.

    ``left`` (exponential tasks) and ``right`` (bimodal tasks) are
    :func:`barrier_queues.stability_curve` outputs over l for one (s, k).
    """
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for ax, curve, title in ((axes[0], left, left_title), (axes[1], right, right_title)):
        conventional = curve.loc[curve.needed == curve.tasks, "rho_max"].item()
        _skl_panel(ax, curve, conventional, title, "conventional (l = k)")
    axes[0].set_ylabel("max stable utilization")
    fig.suptitle("Fig. 3: 2-barrier (s,k,l) systems")
    fig.tight_layout()
    return fig


def fig4_one_barrier_redundancy(curve: pd.DataFrame, two_barrier: pd.DataFrame | None = None
                                ) -> plt.Figure:
    """Fig. 4: 1-barrier (s,k,l) total and useful max utilization vs l (CTMC).

    ``curve`` is :func:`barrier_queues.stability_curve` output over l for one
    (s, k) with barriers = 1; ``two_barrier`` (optional) the same for
    barriers = 2, drawn for comparison.
    """
    s, k = int(curve.servers.iloc[0]), int(curve.tasks.iloc[0])
    conventional = curve.loc[curve.needed == k, "rho_max"].item()
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    _skl_panel(ax, curve, conventional, f"s = {s}, k = {k}, exponential tasks (mu = 1)",
               "conventional 1-barrier (l = k)")
    if two_barrier is not None:
        ax.plot(two_barrier.needed, two_barrier.rho_useful, "x:", color="gray",
                label="useful, 2-barrier")
        ax.legend(fontsize=9)
    ax.set_ylabel("max stable utilization")
    fig.suptitle("Fig. 4: 1-barrier (s,k,l) systems from the backlogged CTMC")
    fig.tight_layout()
    return fig
