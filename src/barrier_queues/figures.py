"""Figures of the paper, drawn from library results (matplotlib and seaborn: the ``[book]`` extra).

Each ``figN_*`` function takes the data it plots (a tidy DataFrame made by the
library, so that computing and restyling are separate steps) and returns the
matplotlib Figure. Every figure states its parameters in its title or legend.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

try:                                    # the plotting stack is the [book] extra: the simulator needs none of it
    import matplotlib.pyplot as plt
    import matplotlib.ticker as mticker
    import seaborn as sns
except ImportError as exc:              # pragma: no cover - exercised in an install without the extra
    raise ImportError(f"barrier_queues.figures needs matplotlib and seaborn ({exc.name} is missing): install "
                      "barrier-queues[book]") from None

from .order_stats import harmonic

#: one look for every figure of the book (seaborn's theme: readable defaults)
THEME = {"style": "whitegrid", "context": "notebook", "palette": "colorblind"}


def use_theme() -> None:
    """Apply the book's plotting theme (seaborn whitegrid, colorblind palette)."""
    sns.set_theme(**THEME)
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 150, "figure.autolayout": False})


#: the book's text column at a 1280 px wide window (px; measured in Chromium on the built book), the inline
#: figures' resolution (px per inch: figure.dpi of :func:`use_theme`), and the smallest text a reader should meet
#: there: a legend or tick label shown below ``MIN_TEXT_PX`` px is too small to read
COLUMN_PX, INLINE_DPI, MIN_TEXT_PX = 676, 100, 8.5


def legend_fontsize(fig, wanted: float = 8) -> float:
    """A legend font size (pt) for ``fig``: ``wanted``, or larger when the figure is wider than the book's text
    column, so that it still shows at least :data:`MIN_TEXT_PX` px tall once scaled to the column (with 10 %
    to spare for the room a legend or labels add around the axes)."""
    scale = min(1.0, COLUMN_PX / (1.1 * fig.get_figwidth() * INLINE_DPI))
    needed = MIN_TEXT_PX / (INLINE_DPI / 72 * scale)
    return float(max(wanted, np.ceil(needed * 2) / 2))


def _fit_title(fig, text: str, fontsize: float) -> str:
    """``text`` wrapped onto lines no wider than the figure (about 0.55 em per character): a long title would
    widen the saved figure, and so shrink everything in it once the book scales it to the text column."""
    import textwrap

    return textwrap.fill(text, width=max(20, int(fig.get_figwidth() * 72 / (0.55 * fontsize))))


def _log_y(ax) -> None:
    """Log y axis with plain tick labels (20, 30, 40 rather than 2 x 10^1)."""
    ax.set_yscale("log")
    ax.yaxis.set_minor_locator(mticker.LogLocator(base=10, subs=(2.0, 5.0)))
    plain = mticker.FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)


def _overlay(ax, x, est, ci, color, label, marker="o"):
    """Estimates with their confidence intervals as error bars; an interval the data cannot support
    (an undefined end, e.g. a 0.99 quantile of 100 jobs) is not drawn."""
    est = np.asarray(est, dtype=float)
    ci = np.asarray(list(ci), dtype=float).reshape(-1, 2)
    supported = np.isfinite(ci).all(axis=1)
    yerr = np.vstack([np.where(supported, est - ci[:, 0], 0.0), np.where(supported, ci[:, 1] - est, 0.0)])
    ax.errorbar(x, est, yerr=yerr, fmt=marker, color=color, mfc="white", ms=6, capsize=3, lw=1.2,
                label=label, zorder=5)


#: Fig. 1's width (inches) and its job labels (points): at the text column's width (:data:`COLUMN_PX`) the labels
#: show about 10 px tall; a bar shorter than FIG1_LABEL_SHARE of the time axis is left unlabelled (its colour says
#: its job), so that no label spills over its neighbours
FIG1_WIDTH, FIG1_LABEL_PT, FIG1_LABEL_SHARE = 9.0, 9, 0.03


def fig1_schedules(panels: list, servers: int) -> plt.Figure:
    """Fig. 1: the same jobs scheduled with 0, 1 and 2 barriers.

    ``panels`` is a list of ``(title, tasks, jobs, barriers)`` with the
    per-task and per-job tables of :func:`barrier_queues.trace`; each task is a
    bar on its worker's row, coloured by job; with 2 barriers the time a worker
    is held after its task until the job departs is hatched.
    """
    fig, axes = plt.subplots(len(panels), 1, figsize=(FIG1_WIDTH, 2.0 + 1.1 * len(panels) * servers / 4),
                             sharex=True)
    span = max(float(max(p[1].end.max(), p[2].departure.max())) for p in panels)
    n_jobs = max(int(p[2].job.max()) + 1 for p in panels)
    colors = sns.color_palette("tab10", n_colors=max(n_jobs, 3))
    for ax, (title, tasks, jobs, barriers) in zip(np.atleast_1d(axes), panels, strict=True):
        for row in tasks.itertuples():
            c = colors[row.job % len(colors)]
            ax.broken_barh([(row.start, row.end - row.start)], (row.worker - 0.4, 0.8), color=c,
                           edgecolor="black", lw=0.5)
            if row.end - row.start >= FIG1_LABEL_SHARE * span:     # a label only where it fits in its bar
                ax.text((row.start + row.end) / 2, row.worker, str(row.job + 1), ha="center",
                        va="center", fontsize=FIG1_LABEL_PT)
            dep = jobs.departure[row.job]
            if barriers == 2 and jobs.barrier[row.job] and dep > row.end:
                ax.broken_barh([(row.end, dep - row.end)], (row.worker - 0.4, 0.8), facecolor="none",
                               edgecolor=c, hatch="///", lw=0.5)
        for job in jobs.itertuples():
            ax.plot(job.arrival, servers - 0.3, "v", color=colors[job.job % len(colors)], ms=7,
                    clip_on=False)
        ax.set_yticks(range(servers))
        ax.set_yticklabels([f"w{i + 1}" for i in range(servers)])
        ax.set_ylim(-0.6, servers - 0.2)
        ax.set_title(title, fontsize=11, loc="left")
    np.atleast_1d(axes)[-1].set_xlabel("time (mean task time = 1); triangles mark job arrivals")
    fig.suptitle(f"Fig. 1: the same jobs on s = {servers} workers with 0, 1 and 2 barriers")
    fig.tight_layout()
    return fig


def fig2_stability_vs_parallelism(curve: pd.DataFrame, sim: pd.DataFrame | None = None) -> plt.Figure:
    """Fig. 2: max stable utilization vs k/s (left) and vs k (right), 1- and 2-barrier.

    ``curve`` is :func:`barrier_queues.stability_curve` output for several s,
    all k and barriers 1 and 2 (conventional, l = k). ``sim`` (optional) holds
    simulation estimates: columns ``servers, tasks, barriers, rho_max,
    rho_max_ci`` (drawn with their CIs).
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
    if sim is not None:
        for (s, b), d in sim.groupby(["servers", "barriers"]):
            label = f"simulation, s = {s}, {b}-barrier (95% CI)"
            _overlay(axes[0], d.tasks / s, d.rho_max, d.rho_max_ci, colors[s], label,
                     "o" if b == 1 else "s")
            _overlay(axes[1], d.tasks, d.rho_max, d.rho_max_ci, colors[s], None, "o" if b == 1 else "s")
    axes[0].set_xlabel("parallelism ratio k / s")
    axes[1].set_xlabel("tasks per job k")
    axes[1].set_xscale("log", base=2)
    axes[0].set_ylabel(r"max stable utilization $\rho_{\max}$")
    axes[0].set_title("vs k/s: 1-barrier (solid), 2-barrier (dashed)")
    axes[1].set_title("vs k (2-barrier sawtooth where k does not divide s)")
    for ax in axes:
        ax.set_ylim(0, 1.02)
    fig.suptitle("Fig. 2: stability of conventional barrier systems (exponential tasks)")
    _legend_below(fig, axes)   # outside the data (the curves fill the lower left)
    return fig


def _legend_below(fig, axes) -> None:
    """One legend for all panels, below them (outside the data), then a tight layout that leaves it room.

    Labels shared by several panels appear once; the room is measured in inches (1.6 lines of the legend's font
    per row), so tall stacked figures do not lose a fixed fraction of their height."""
    handles = {}
    for ax in np.atleast_1d(axes).ravel():
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, h)
    labels = list(handles)
    ncol = min(4, len(labels)) or 1
    size = legend_fontsize(fig, 8)
    fig.legend([handles[lab] for lab in labels], labels, loc="lower center", ncol=ncol, fontsize=size, frameon=False)
    rows = -(-len(labels) // ncol)
    fig.tight_layout(rect=(0, (1.6 * size / 72 * rows + 0.1) / fig.get_figheight(), 1, 1))


def _stacked(panels: int, width: float = 7.5, height: float = 3.2, columns: int = 1, **kwargs):
    """``panels`` rows of ``columns`` panels each, sized for a book page (about 7.5 in wide): three or more
    panels side by side would shrink below readable text."""
    fig, axes = plt.subplots(panels, columns, figsize=(width, height * panels + 0.9), squeeze=False, **kwargs)
    return fig, axes if columns > 1 else axes[:, 0]


def _skl_panel(ax, curve: pd.DataFrame, conventional: float, title: str, conventional_label: str,
              sim: pd.DataFrame | None = None):
    palette = sns.color_palette()
    ax.plot(curve.needed, curve.rho_max, "-", color=palette[0], label=r"total $\rho_{\max}$")
    ax.plot(curve.needed, curve.rho_useful, "-", color=palette[1], label=r"useful $\rho_{useful}$")
    if sim is not None:
        _overlay(ax, sim.needed, sim.rho_max, sim.rho_max_ci, palette[0], "total, simulation (95% CI)")
        _overlay(ax, sim.needed, sim.rho_useful, sim.rho_useful_ci, palette[1],
                 "useful, simulation (95% CI)", "s")
    ax.axhline(conventional, color="black", ls="--", lw=1.2, label=conventional_label)
    ax.set_xlabel("tasks needed l (the other k - l are killed)")
    ax.set_title(title, fontsize=11)
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=legend_fontsize(ax.figure, 9))


def fig3_two_barrier_redundancy(left: pd.DataFrame, right: pd.DataFrame, left_title: str,
                                right_title: str, left_sim: pd.DataFrame | None = None,
                                right_sim: pd.DataFrame | None = None) -> plt.Figure:
    """Fig. 3: 2-barrier (s,k,l) total and useful max utilization vs l.

    ``left`` (exponential tasks) and ``right`` (bimodal tasks) are
    :func:`barrier_queues.stability_curve` outputs over l for one (s, k);
    ``*_sim`` optional saturated-simulation estimates (``needed, rho_max,
    rho_max_ci, rho_useful, rho_useful_ci``).
    """
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    for ax, curve, title, sim in ((axes[0], left, left_title, left_sim),
                                  (axes[1], right, right_title, right_sim)):
        conventional = curve.loc[curve.needed == curve.tasks, "rho_max"].item()
        _skl_panel(ax, curve, conventional, title, "conventional (l = k)", sim)
    axes[0].set_ylabel("max stable utilization")
    fig.suptitle("Fig. 3: 2-barrier (s,k,l) systems")
    fig.tight_layout()
    return fig


def fig4_one_barrier_redundancy(curve: pd.DataFrame, two_barrier: pd.DataFrame | None = None,
                                sim: pd.DataFrame | None = None) -> plt.Figure:
    """Fig. 4: 1-barrier (s,k,l) total and useful max utilization vs l (CTMC).

    ``curve`` is :func:`barrier_queues.stability_curve` output over l for one
    (s, k) with barriers = 1; ``two_barrier`` (optional) the same for
    barriers = 2, drawn for comparison; ``sim`` optional saturated-simulation
    estimates as in :func:`fig3_two_barrier_redundancy`.
    """
    s, k = int(curve.servers.iloc[0]), int(curve.tasks.iloc[0])
    conventional = curve.loc[curve.needed == k, "rho_max"].item()
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    _skl_panel(ax, curve, conventional, f"s = {s}, k = {k}, exponential tasks (mu = 1)",
               "conventional 1-barrier (l = k)", sim)
    if two_barrier is not None:
        ax.plot(two_barrier.needed, two_barrier.rho_useful, ":", color="gray",
                label="useful, 2-barrier (exact)")
        ax.legend(fontsize=legend_fontsize(fig, 9))
    ax.set_ylabel("max stable utilization")
    fig.suptitle("Fig. 4: 1-barrier (s,k,l) systems: CTMC (lines) and simulation (points)")
    fig.tight_layout()
    return fig


def _quantile_panel(ax, x, table: pd.DataFrame, quantity: str, color, label: str, forms=("gigi", "gg")):
    """Bound lines (GI|GI solid, G|G dotted) and simulation points with CIs for one quantity."""
    if quantity == "service":
        ax.plot(x, table["service_bound"], "-", color=color, label=f"{label} bound")
        _overlay(ax, x, table["execution_sim"], table["execution_sim_ci"], color, f"{label} simulation", "^")
        return
    styles = {"gigi": "-", "gg": ":"}
    for form in forms:
        ax.plot(x, table[f"{quantity}_bound_{form}"], styles[form], color=color,
                label=f"{label} bound ({'GI|GI' if form == 'gigi' else 'G|G'})")
    _overlay(ax, x, table[f"{quantity}_sim"], table[f"{quantity}_sim_ci"], color, f"{label} simulation",
             "o" if quantity == "sojourn" else "s")


def fig5_hybrid(x, table: pd.DataFrame, title: str) -> plt.Figure:
    """Fig. 5: quantiles of waiting, sojourn and service time vs the barrier fraction p."""
    fig, ax = plt.subplots(figsize=(8, 5))
    palette = sns.color_palette()
    for quantity, color in (("sojourn", palette[0]), ("waiting", palette[1]), ("service", palette[2])):
        _quantile_panel(ax, x, table, quantity, color, quantity)
    ax.set_xlabel("fraction of barrier jobs p")
    ax.set_ylabel("quantile (time, mean task time = 1)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=legend_fontsize(fig, 8), ncol=2)
    fig.suptitle("Fig. 5: hybrid systems, bounds and simulation")
    fig.tight_layout()
    return fig


def fig6_heterogeneous(examples: list, title: str) -> plt.Figure:
    """Fig. 6: quantiles vs the fraction of large jobs for bimodal pmfs of k.

    ``examples`` is a list of ``(label, x, table)``, one panel each.
    """
    fig, axes = plt.subplots(1, len(examples), figsize=(6 * len(examples), 4.8), sharey=False)
    palette = sns.color_palette()
    for ax, (label, x, table) in zip(np.atleast_1d(axes), examples, strict=True):
        for quantity, color in (("sojourn", palette[0]), ("waiting", palette[1]), ("service", palette[2])):
            _quantile_panel(ax, x, table, quantity, color, quantity)
        ax.set_xlabel("fraction of large jobs")
        ax.set_title(label, fontsize=10)
    np.atleast_1d(axes)[0].set_ylabel("quantile (time, mean task time = 1)")
    fig.suptitle(f"Fig. 6: heterogeneous parallelism, {title}")
    _legend_below(fig, axes)   # outside the data
    return fig


def _parallelism_figure(table: pd.DataFrame, columns: dict, titles: dict, spark, spark_columns: dict,
                        suptitle: str, bounds: bool) -> plt.Figure:
    """Two panels (sojourn, waiting) vs k/s, one colour per utilization."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    utils = sorted(table["utilization"].unique())
    palette = dict(zip(utils, sns.color_palette(n_colors=len(utils)), strict=True))
    for ax, quantity in zip(axes, ("sojourn", "waiting"), strict=True):
        col = columns[quantity]
        for u in utils:
            d = table[table.utilization == u]
            if bounds:
                ax.plot(d["k/s"], d[f"{quantity}_bound_gigi"], "-", color=palette[u], label=f"rho = {u}: bound")
            else:
                ax.plot(d["k/s"], d[col], "-", color=palette[u], lw=1, alpha=0.6)
            _overlay(ax, d["k/s"], d[col], d[f"{col}_ci"], palette[u], f"rho = {u}: simulation")
            if spark is not None:
                sd = spark[spark.utilization == u]
                ax.plot(sd["k/s"], sd[spark_columns[quantity]], "*", color=palette[u], ms=11,
                        label=f"rho = {u}: Spark")
        _log_y(ax)
        ax.set_xlabel("parallelism ratio k / s (task mean s / k)")
        ax.set_title(titles[quantity], fontsize=10)
    axes[0].set_ylabel("time (seconds with the Spark scaling)")
    fig.suptitle(suptitle)
    _legend_below(fig, axes)   # outside the data (the curves rise into every corner)
    return fig


def fig7_parallelism(table: pd.DataFrame, servers: int, quantile: float, spark=None) -> plt.Figure:
    """Fig. 7: sojourn (left) and waiting (right) quantiles vs k/s at several utilizations.

    ``table`` has columns ``utilization, k/s`` and those of
    :func:`barrier_queues.planning.bounds_versus_simulation`. ``spark``
    (optional) holds measured Spark points (``utilization, k/s, sojourn_spark,
    waiting_spark``).
    """
    return _parallelism_figure(
        table, {"sojourn": "sojourn_sim", "waiting": "waiting_sim"},
        {q: f"{q} time, {quantile:g} quantile" for q in ("sojourn", "waiting")}, spark,
        {"sojourn": "sojourn_spark", "waiting": "waiting_spark"},
        f"Fig. 7: pure barrier jobs on s = {servers} workers: the U-shape and the best k", bounds=True)


def fig8_means(table: pd.DataFrame, servers: int, spark=None) -> plt.Figure:
    """Fig. 8: mean sojourn (left) and waiting (right) time vs k/s (simulation)."""
    return _parallelism_figure(
        table, {"sojourn": "mean_sojourn", "waiting": "mean_waiting"},
        {q: f"mean {q} time" for q in ("sojourn", "waiting")}, spark,
        {"sojourn": "mean_sojourn_spark", "waiting": "mean_waiting_spark"},
        f"Fig. 8: pure barrier jobs on s = {servers} workers: means", bounds=False)


def fig9_overhead(samples, model, fit=None, title: str = "") -> plt.Figure:
    """Fig. 9: histogram of measured blocking overhead with the model PDF (eq. 42) over it.

    ``samples`` in seconds; ``model`` and the optional maximum-likelihood
    ``fit`` are :class:`barrier_queues.overhead.OverheadModel` s.
    """
    x = np.asarray(samples, dtype=float)
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    top = max(model.revive, fit.revive if fit is not None else 0.0, float(x.max()))
    ax.hist(x, bins=np.linspace(0, top, 21), density=True, color=sns.color_palette()[0], alpha=0.55,
            edgecolor="white", label=f"Spark, {x.size} blocked jobs")
    t = np.linspace(0, top, 400)
    ax.plot(t, model.pdf(t), "-", color="black", lw=2,
            label=f"min(U(0, R), Exp(lambda)), R = {model.revive:g} s, lambda = {model.rate:.3g}/s")
    if fit is not None:
        ax.plot(t, fit.pdf(t), "--", color=sns.color_palette()[3], lw=1.8,
                label=f"maximum likelihood: R = {fit.revive:.3g} s, lambda = {fit.rate:.3g}/s")
    ax.set_xlabel("blocking overhead: launch minus the moment k executors were free (s)")
    ax.set_ylabel("density")
    ax.legend(fontsize=legend_fontsize(fig, 8))
    ax.set_title(f"Fig. 9: Spark's blocking overhead{', ' + title if title else ''}", fontsize=10)
    fig.tight_layout()
    return fig


def fig_sync_delays(delays: pd.DataFrame, poll: float = 1.0, title: str = "") -> plt.Figure:
    """``barrier()`` delay beyond the last arrival against each task's lag behind it.

    Points: measured tasks (the last to arrive at lag 0). Lines: Spark's
    polling loop, ``poll - (lag mod poll)``, and the paper's description
    (uniform on ``[0, poll]`` for all tasks but the last, which leaves at once).
    """
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    palette = sns.color_palette()
    early, last = delays[~delays.is_last], delays[delays.is_last]
    ax.plot(early.lag, early.excess, "o", ms=3, alpha=0.5, color=palette[0], label="measured, earlier tasks")
    ax.plot(last.lag, last.excess, "D", ms=4, alpha=0.6, color=palette[3], label="measured, last task")
    lag = np.linspace(0, max(float(delays.lag.max()), poll) * 1.02, 2000)
    ax.plot(lag, poll - np.mod(lag, poll), "-", color="black", lw=1.2, label="Spark's polling loop")
    ax.fill_between([1e-3, lag[-1]], 0, poll, color=palette[2], alpha=0.12, label="paper: U(0, 1 s)")
    ax.plot([0], [0], "x", color=palette[2], ms=9, mew=2, label="paper: last task at once")
    ax.set_xlabel("lag behind the last task to arrive, T_last - T (s)")
    ax.set_ylabel("release minus last arrival (s)")
    ax.legend(fontsize=legend_fontsize(fig, 8), loc="upper right")
    ax.set_title(_fit_title(fig, f"barrier() synchronisation delay{', ' + title if title else ''}", 10), fontsize=10)
    fig.tight_layout()
    return fig


def fig78_spark(table: pd.DataFrame, quantile: float, bounds: pd.DataFrame | None = None,
                title: str = "") -> plt.Figure:
    """Figs. 7-8 for real Spark: quantiles (top) and means (bottom) of sojourn and waiting time vs k/s.

    ``table`` is :func:`barrier_queues.spark_analysis.compare_with_simulation`
    (sources ``Spark``, ``plain``, ``paper overhead``, ``event overhead``,
    each with 95 % intervals; one line style per ``utilization``);
    ``bounds`` (optional) has ``utilization, k/s, sojourn_bound,
    waiting_bound`` for the quantile panels. Simulated systems without a
    steady state (``stable`` False) get an upward mark at the top of the
    panel instead of numbers that only grow with the run; Spark runs without
    one are drawn, crossed.
    """
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.5), sharex=True)
    palette = sns.color_palette()
    sources = [("Spark", palette[3], "*", 0.0), ("plain", palette[0], "o", -0.012),
               ("paper overhead", palette[1], "s", 0.012), ("event overhead", palette[2], "^", 0.024)]
    utils = sorted(table.utilization.unique())
    styles = dict(zip(utils, ["--", "-", ":", "-."], strict=False))
    for row, (kind, prefix, suffix) in enumerate((("quantile", "", "_q"), ("mean", "mean_", ""))):
        for col, quantity in enumerate(("sojourn", "waiting")):
            ax = axes[row, col]
            name = f"{prefix}{quantity}{suffix}"
            unstable = []
            spark_crossed = False
            for u in utils:
                for source, color, marker, dx in sources:
                    d = table[(table.source == source) & (table.utilization == u)].sort_values("k/s")
                    label = ("real Spark" if source == "Spark" else f"simulation, {source}") if u == utils[-1] else None
                    lost = ~d.stable.astype(bool) if "stable" in d else np.zeros(len(d), dtype=bool)
                    if source == "Spark":             # measured: drawn, and crossed where no steady state
                        crossed = d[lost]
                        ax.plot(crossed["k/s"] + dx, crossed[name], "x", color="black", ms=10, mew=1.5, zorder=6,
                                label="Spark run without steady state" if len(crossed) and not spark_crossed
                                else None)
                        spark_crossed = spark_crossed or bool(len(crossed))
                        lost = np.zeros(len(d), dtype=bool)
                    d_ok = d[~lost]
                    _overlay(ax, d_ok["k/s"] + dx, d_ok[name], d_ok[f"{name}_ci"], color, label, marker)
                    ax.plot(d_ok["k/s"] + dx, d_ok[name], styles[u], color=color, lw=0.9, alpha=0.6)
                    unstable.extend((x, color, marker) for x in d[lost]["k/s"] + dx)
                if bounds is not None and row == 0:
                    b = bounds[bounds.utilization == u] if "utilization" in bounds else bounds
                    ax.plot(b["k/s"], b[f"{quantity}_bound"], styles[u], color="grey", lw=1.5,
                            label=f"bound (GI|GI), rho = {u:g}")
            if len(utils) > 1:
                for u in utils:
                    ax.plot([], [], styles[u], color="black", lw=0.9, label=f"rho = {u:g}" if row + col == 0 else None)
            _log_y(ax)
            for i, (x, color, marker) in enumerate(unstable):      # no steady state: a mark at the top
                ax.plot([x], [0.97], marker, color=color, ms=7, transform=ax.get_xaxis_transform(), clip_on=False,
                        label="simulation unstable (no steady state)" if i == 0 and row + col == 0 else None)
                ax.annotate("", (x, 1.0), (x, 0.93), xycoords=ax.get_xaxis_transform(),
                            arrowprops={"arrowstyle": "->", "color": color, "lw": 1})
            what = f"{quantile:g} quantile" if kind == "quantile" else "mean"
            ax.set_title(f"{quantity} time, {what}", fontsize=10)
            if row == 1:
                ax.set_xlabel("parallelism ratio k / s (task mean s / k seconds)")
        axes[row, 0].set_ylabel("seconds")
    fig.suptitle(_fit_title(fig, f"Figs. 7-8 with real Spark{': ' + title if title else ''}", 12))
    _legend_below(fig, axes)   # outside the data
    return fig


def fig_same_length(table: pd.DataFrame, title: str = "") -> plt.Figure:
    """Each Spark run (a row) against simulated runs of its own length from empty: the simulations' central 95 %
    range (bar) and median (tick), Spark's mean (star; filled where it lies outside the range). Waiting (left)
    and sojourn (right), log time axis. ``table`` from :func:`barrier_queues.spark_analysis.same_length`."""
    runs = list(dict.fromkeys(table.run))
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.25 * len(runs) + 1.6), sharey=True)
    palette = sns.color_palette()
    for ax, metric in zip(axes, ("waiting", "sojourn"), strict=True):
        d = table[table.metric == metric].set_index("run").loc[runs]
        y = np.arange(len(runs))
        low = np.maximum(d["same-length low"], 1e-3)
        ax.hlines(y, low, np.maximum(d["same-length high"], 1e-3), color=palette[0], lw=5, alpha=0.4,
                  label="simulated runs of the same length: central 95 %")
        ax.plot(np.maximum(d["same-length median"], 1e-3), y, "|", color=palette[0], ms=12, mew=2,
                label="their median")
        out = ~d.inside.to_numpy()
        spark = np.maximum(d.Spark.to_numpy(), 1e-3)
        ax.plot(spark[~out], y[~out], "*", color=palette[3], mfc="white", ms=10, label="Spark (inside)")
        ax.plot(spark[out], y[out], "*", color=palette[3], ms=11, label="Spark (outside)")
        ax.set_xscale("log")
        lo_, hi_ = ax.get_xlim()
        decades = np.log10(hi_ / lo_)
        ax.xaxis.set_major_locator(mticker.LogLocator(base=10, subs=(1.0,) if decades > 2.5 else (1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(mticker.NullFormatter())
        ax.set_xlabel(f"mean {metric} time (s)")
        ax.set_title(f"{metric}: {int((~out).sum())} of {len(runs)} runs inside", fontsize=10)
    axes[0].set_yticks(np.arange(len(runs)), runs, fontsize=legend_fontsize(fig, 8))
    axes[0].invert_yaxis()
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=legend_fontsize(fig, 8), ncol=4, loc="lower center",
               frameon=False)   # outside the data
    fig.suptitle(_fit_title(fig, f"Spark runs against simulated runs of the same length{': ' + title if title else ''}",
                            11), fontsize=11)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def fig3_gain_grid(grid: pd.DataFrame, mark=None) -> plt.Figure:
    """Fig. 3 (right), extended: the useful-utilization gain of the best l over a grid of bimodal laws.

    ``grid`` from :func:`barrier_queues.stability.bimodal_gain_grid`; cells
    with a gain of 2.5-3.5 ("about three times") are outlined, ``mark`` =
    (p, ratio) frames the law drawn in Fig. 3.
    """
    pivot = grid.pivot(index="p", columns="ratio", values="gain")
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    sns.heatmap(np.log10(pivot), ax=ax, cmap="viridis", annot=pivot.round(1).to_numpy(), fmt="",
                cbar_kws={"label": "log10 gain"})
    for i, p in enumerate(pivot.index):
        for j, r in enumerate(pivot.columns):
            g = pivot.loc[p, r]
            if 2.5 <= g <= 3.5:
                ax.add_patch(plt.Rectangle((j, i), 1, 1, fill=False, edgecolor="white", lw=2.5))
            if mark is not None and np.isclose(p, mark[0]) and np.isclose(r, mark[1]):
                ax.add_patch(plt.Rectangle((j, i), 1, 1, fill=False, edgecolor="red", lw=2.5, ls="--"))
    ax.set_xlabel("rate ratio r (slow tasks are r times slower)")
    ax.set_ylabel("probability p of a fast task")
    ax.set_xticklabels([f"{r:g}" for r in pivot.columns])
    ax.set_yticklabels([f"{p:g}" for p in pivot.index], rotation=0)
    ax.set_title("Useful-load gain of the best l over l = k, 2-barrier s = k = 10\n"
                 "white: about three times (2.5-3.5); red dashes: the law of Fig. 3", fontsize=10)
    fig.tight_layout()
    return fig


def fig_form_ratio(ratios: pd.DataFrame, servers: int, quantile: float) -> plt.Figure:
    """The G|G bound over the GI|GI bound (sojourn and waiting quantiles) vs k/s, one line per load."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    utils = sorted(ratios.utilization.unique())
    palette = dict(zip(utils, sns.color_palette(n_colors=len(utils)), strict=True))
    for ax, metric in zip(axes, ("sojourn", "waiting"), strict=True):
        for u in utils:
            d = ratios[ratios.utilization == u]
            ax.plot(d["k/s"], d[f"{metric}_ratio"], "o-", color=palette[u], ms=4, label=f"rho = {u}")
        ax.axhline(1.0, color="gray", lw=0.8)
        ax.set_xlabel("parallelism ratio k / s (task mean s / k)")
        ax.set_title(f"{metric} time, {quantile:g} quantile bound", fontsize=10)
    axes[0].set_ylabel("G|G bound / GI|GI bound")
    axes[0].legend(fontsize=legend_fontsize(fig, 8))
    fig.suptitle(f"The two forms of Theorem 1, pure barrier jobs on s = {servers} workers")
    fig.tight_layout()
    return fig


def fig_partial_frontier(table: pd.DataFrame, servers: int, tasks: int) -> plt.Figure:
    """Partial barriers: 2-barrier useful-utilization limit against tasks completed per job, one panel per law.

    ``table`` has columns ``law, kind`` (fixed, knee, timeout), ``policy``, ``E[L] completed`` and ``rho_useful``.
    """
    laws = list(dict.fromkeys(table.law))
    fig, axes = _stacked(len(laws))
    palette = sns.color_palette()
    for ax, law in zip(axes, laws, strict=True):
        d = table[table.law == law]
        fixed = d[d.kind == "fixed"].sort_values("E[L] completed")
        ax.plot(fixed["E[L] completed"], fixed.rho_useful, "o-", color=palette[0], ms=4, label="fixed l = 1..k")
        t = d[d.kind == "timeout"]
        ax.plot(t["E[L] completed"], t.rho_useful, "^", color=palette[2], ms=7, label="timeout T")
        knee = d[d.kind == "knee"]
        ax.plot(knee["E[L] completed"], knee.rho_useful, "*", color=palette[3], ms=16, label="knee detector")
        ax.set_ylabel("max stable useful\nutilization (2-barrier)")
        ax.set_title(law, fontsize=10)
    axes[-1].set_xlabel("tasks completed per job E[L]")
    fig.suptitle(f"Partial barriers on s = {servers} workers, k = {tasks}:\nuseful work against completed tasks")
    _legend_below(fig, axes)
    return fig


def fig_sampling_stability(table: pd.DataFrame) -> plt.Figure:
    """Batch sampling: max stable utilization against k/s, one panel per s, one line per probe ratio d,
    with the central queue's exact limit (eq. 5) for comparison."""
    servers = sorted(table.servers.unique())
    fig, axes = _stacked(len(servers), sharex=True, sharey=True)
    ds = sorted(table.d.unique())
    palette = dict(zip(ds, sns.color_palette("viridis", n_colors=len(ds)), strict=True))
    for ax, s in zip(axes, servers, strict=True):
        d_s = table[table.servers == s].sort_values("tasks")
        first = d_s[d_s.d == ds[0]]
        ax.plot(first["k/s"], first["rho_max central"], "k-", lw=2, label="central FIFO queue (exact)")
        for d in ds:
            dd = d_s[d_s.d == d]
            ax.plot(dd["k/s"], dd["rho_max sampling"], "o--", color=palette[d], ms=5, label=f"batch sampling d = {d:g}")
        ax.set_xscale("log", base=2)
        ax.set_ylabel("max stable utilization")
        ax.set_title(f"s = {s}", fontsize=10)
    axes[-1].set_xlabel("k / s")
    fig.suptitle("Barrier jobs without a central queue:\nthe stability limit of batch sampling")
    _legend_below(fig, axes)
    return fig


def fig_sampling_sojourn(table: pd.DataFrame, utilization: float) -> plt.Figure:
    """Batch sampling: 0.99 sojourn quantile and held share against k, per s, central queue for comparison."""
    servers = sorted(table.servers.unique())
    fig, axes = _stacked(len(servers), width=9.0, height=3.0, columns=2, sharex="row")
    axes = axes.T            # axes[0, j]: the quantile of s = servers[j]; axes[1, j]: its held share
    placements = list(dict.fromkeys(table.placement))
    palette = dict(zip(placements, ["black"] + sns.color_palette("viridis", n_colors=len(placements) - 1),
                       strict=True))
    for j, s in enumerate(servers):
        d_s = table[table.servers == s]
        for p in placements:
            d = d_s[d_s.placement == p].sort_values("tasks")
            style = "-" if p == "central" else "o--"
            axes[0, j].plot(d.tasks, d["sojourn q0.99"], style, color=palette[p], ms=5, label=p)
            if p != "central":
                axes[1, j].plot(d.tasks, d["held share"], style, color=palette[p], ms=5, label=p)
        _log_y(axes[0, j])
        axes[0, j].set_title(f"s = {s}, rho = {utilization}: sojourn", fontsize=10)
        axes[1, j].set_title(f"s = {s}, rho = {utilization}: held capacity", fontsize=10)
        axes[0, j].set_ylabel("sojourn time, 0.99 quantile")
        axes[1, j].set_ylabel("share of capacity held idle")
        for ax in axes[:, j]:
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:g}"))
    for ax in axes[:, -1]:
        ax.set_xlabel("tasks per job k")
    fig.suptitle("Barrier jobs without a central queue: sojourn times and held capacity at equal load")
    _legend_below(fig, axes)
    return fig


def fig_phase_plan(plans: dict, max_share: float) -> plt.Figure:
    """The phase planner: sync share of the job time against m, one line per k (``plans``: k -> plan_phases)."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    palette = sns.color_palette(n_colors=len(plans))
    for color, (k, plan) in zip(palette, plans.items(), strict=True):
        c = plan["curve"]
        axes[0].plot(c.phases, c.mean_job_spark, "o-", color=color, ms=4, label=f"k = {k}, Spark barrier()")
        axes[0].plot(c.phases, c.mean_job_ideal, ":", color=color)
        axes[1].plot(c.phases, c.sync_share, "o-", color=color, ms=4, label=f"k = {k}")
        best = plan["recommended"]["phases"]
        axes[1].plot([best], c.loc[c.phases == best, "sync_share"], "s", color=color, ms=9, mfc="none")
    axes[1].axhline(max_share, color="gray", ls="--", lw=1)
    axes[0].set_ylabel("mean job time (s); dotted: ideal barrier")
    axes[1].set_ylabel("sync share 1 - E[D ideal] / E[D Spark]")
    for ax in axes:
        ax.set_xlabel("phases m (the same work split into m)")
    axes[0].legend(fontsize=legend_fontsize(fig, 8))
    axes[1].legend(fontsize=legend_fontsize(fig, 8))
    fig.suptitle("How many barrier() phases before the sync cost dominates (Exp(1) work per task, P = 1 s)")
    fig.tight_layout()
    return fig


def fig_spark_saturation(table: pd.DataFrame) -> plt.Figure:
    """Spark's stability limit from saturated runs against the model (eq. 5) and the event-overhead simulation."""
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    palette = sns.color_palette()
    d = table.sort_values("k")
    x = d.k / d.s
    ax.plot(x, d["model rho_max"], "-", color="black", label="model (eq. 5): no overhead")
    sim_rho = d["event-overhead simulation"] * d["model rho_max"] / d["model lambda_max (eq. 5)"]
    ax.plot(x, sim_rho, "^--", color=palette[2], label="simulation, event-accurate overhead")
    scale = d["model rho_max"] / d["model lambda_max (eq. 5)"]
    ci = np.asarray(list(d["Spark 95% CI"]), dtype=float) * scale.to_numpy()[:, None]
    _overlay(ax, x, d["Spark rho_max"], ci, palette[3], "real Spark (saturated run)", "*")
    ax.set_xlabel("parallelism ratio k / s (task mean s / k seconds)")
    ax.set_ylabel("max stable utilization")
    ax.set_title(f"Spark's stability region, s = {int(d.s.iloc[0])} single-core executors", fontsize=10)
    ax.legend(fontsize=legend_fontsize(fig, 8))
    fig.tight_layout()
    return fig



def _drawn_labels(axis) -> list:
    """The tick labels matplotlib draws on ``axis`` (major and minor: a log axis's minor labels count), with
    text, inside the view interval."""
    lo, hi = sorted(axis.get_view_interval())
    out = []
    for ticks in (axis.get_major_ticks(), axis.get_minor_ticks()):
        for tick in ticks:
            for label in (tick.label1, tick.label2):
                if (label.get_visible() and label.get_text().strip() and tick.get_visible()
                        and lo - 1e-12 * (abs(lo) + 1) <= tick.get_loc() <= hi + 1e-12 * (abs(hi) + 1)):
                    out.append(label)
    return out


def figure_problems(fig) -> list[str]:
    """What a reader of the book would trip over in ``fig``, as sentences (empty: none): tick labels that
    overlap on any axis (major and minor together), and legend or tick text that shows smaller than
    :data:`MIN_TEXT_PX` once the figure is scaled to the text column (:data:`COLUMN_PX` at
    :data:`INLINE_DPI`)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width_px = fig.get_tightbbox(renderer).width * INLINE_DPI            # the inline image, bbox_inches="tight"
    scale = min(1.0, COLUMN_PX / width_px)
    problems = []
    for n, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        name = f"panel {n + 1}" + (f" ({ax.get_title()!r})" if ax.get_title() else "")
        for which, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            labels = _drawn_labels(axis)
            boxes = [label.get_window_extent(renderer) for label in labels]
            pairs = [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes))
                     if min(boxes[i].x1, boxes[j].x1) - max(boxes[i].x0, boxes[j].x0) > 1
                     and min(boxes[i].y1, boxes[j].y1) - max(boxes[i].y0, boxes[j].y0) > 1]
            if pairs:
                i, j = pairs[0]
                problems.append(f"{name}: {which} tick labels {labels[i].get_text()!r} and {labels[j].get_text()!r} "
                                f"overlap ({len(pairs)} overlapping pair(s))")
            for label in labels[:1]:
                shown = label.get_fontsize() * INLINE_DPI / 72 * scale
                if shown < MIN_TEXT_PX:
                    problems.append(f"{name}: {which} tick labels show {shown:.1f} px tall at the column's width "
                                    f"(at least {MIN_TEXT_PX})")
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    for legend in legends:
        texts = [t for t in legend.get_texts() if t.get_text()]
        if texts and legend.get_visible():
            shown = texts[0].get_fontsize() * INLINE_DPI / 72 * scale
            if shown < MIN_TEXT_PX:
                problems.append(f"a legend's text shows {shown:.1f} px tall at the column's width (at least "
                                f"{MIN_TEXT_PX}): a larger font or a narrower figure")
    return problems
