"""Figures of the paper, drawn from library results.

Each ``figN_*`` function takes the data it plots (a tidy DataFrame made by the
library, so that computing and restyling are separate steps) and returns the
matplotlib Figure. Every figure states its parameters in its title or legend.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd
import seaborn as sns

from .order_stats import harmonic

#: one look for every figure of the book (seaborn's theme: readable defaults)
THEME = {"style": "whitegrid", "context": "notebook", "palette": "colorblind"}


def use_theme() -> None:
    """Apply the book's plotting theme (seaborn whitegrid, colorblind palette)."""
    sns.set_theme(**THEME)
    plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 150, "figure.autolayout": False})


def _log_y(ax) -> None:
    """Log y axis with plain tick labels (20, 30, 40 rather than 2 x 10^1)."""
    ax.set_yscale("log")
    ax.yaxis.set_minor_locator(mticker.LogLocator(base=10, subs=(2.0, 5.0)))
    plain = mticker.FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)


def _overlay(ax, x, est, ci, color, label, marker="o"):
    """Simulation estimates with their confidence intervals as error bars."""
    est = np.asarray(est, dtype=float)
    ci = np.asarray(list(ci), dtype=float).reshape(-1, 2)
    yerr = np.vstack([est - ci[:, 0], ci[:, 1] - est])
    ax.errorbar(x, est, yerr=yerr, fmt=marker, color=color, mfc="white", ms=6, capsize=3, lw=1.2,
                label=label, zorder=5)


def fig1_schedules(panels: list, servers: int) -> plt.Figure:
    """Fig. 1: the same jobs scheduled with 0, 1 and 2 barriers.

    ``panels`` is a list of ``(title, tasks, jobs, barriers)`` with the
    per-task and per-job tables of :func:`barrier_queues.trace`; each task is a
    bar on its worker's row, coloured by job; with 2 barriers the time a worker
    is held after its task until the job departs is hatched.
    """
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 2.0 + 1.1 * len(panels) * servers / 4),
                             sharex=True)
    n_jobs = max(int(p[2].job.max()) + 1 for p in panels)
    colors = sns.color_palette("tab10", n_colors=max(n_jobs, 3))
    for ax, (title, tasks, jobs, barriers) in zip(np.atleast_1d(axes), panels, strict=True):
        for row in tasks.itertuples():
            c = colors[row.job % len(colors)]
            ax.broken_barh([(row.start, row.end - row.start)], (row.worker - 0.4, 0.8), color=c,
                           edgecolor="black", lw=0.5)
            ax.text((row.start + row.end) / 2, row.worker, str(row.job + 1), ha="center",
                    va="center", fontsize=8)
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
        axes[0].legend(fontsize=8, loc="lower left")
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
    ax.legend(fontsize=9)


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
        ax.legend(fontsize=9)
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
    ax.legend(fontsize=8, ncol=2)
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
    np.atleast_1d(axes)[0].legend(fontsize=7, ncol=2)
    fig.suptitle(f"Fig. 6: heterogeneous parallelism, {title}")
    fig.tight_layout()
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
    axes[0].legend(fontsize=8)
    fig.suptitle(suptitle)
    fig.tight_layout()
    return fig


def fig7_parallelism(table: pd.DataFrame, servers: int, quantile: float, spark=None) -> plt.Figure:
    """Fig. 7: sojourn (left) and waiting (right) quantiles vs k/s at several utilizations.

    ``table`` has columns ``utilization, k/s`` and those of
    :func:`barrier_queues.bounds.bounds_versus_simulation`. ``spark``
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
    ax.legend(fontsize=8)
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
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title(f"barrier() synchronisation delay{', ' + title if title else ''}", fontsize=10)
    fig.tight_layout()
    return fig


def fig78_spark(table: pd.DataFrame, quantile: float, bounds: pd.DataFrame | None = None,
                title: str = "") -> plt.Figure:
    """Figs. 7-8 for real Spark: quantiles (top) and means (bottom) of sojourn and waiting time vs k/s.

    ``table`` is :func:`barrier_queues.spark_analysis.compare_with_simulation`
    (sources ``Spark``, ``plain``, ``paper overhead``, ``event overhead``,
    each with 95 % intervals; one line style per ``utilization``);
    ``bounds`` (optional) has ``utilization, k/s, sojourn_bound,
    waiting_bound`` for the quantile panels.
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
            for u in utils:
                for source, color, marker, dx in sources:
                    d = table[(table.source == source) & (table.utilization == u)].sort_values("k/s")
                    label = ("real Spark" if source == "Spark" else f"simulation, {source}") if u == utils[-1] else None
                    _overlay(ax, d["k/s"] + dx, d[name], d[f"{name}_ci"], color, label, marker)
                    ax.plot(d["k/s"] + dx, d[name], styles[u], color=color, lw=0.9, alpha=0.6)
                if bounds is not None and row == 0:
                    b = bounds[bounds.utilization == u] if "utilization" in bounds else bounds
                    ax.plot(b["k/s"], b[f"{quantity}_bound"], styles[u], color="grey", lw=1.5,
                            label=f"bound (GI|GI), rho = {u:g}")
            if len(utils) > 1:
                for u in utils:
                    ax.plot([], [], styles[u], color="black", lw=0.9, label=f"rho = {u:g}" if row + col == 0 else None)
            _log_y(ax)
            what = f"{quantile:g} quantile" if kind == "quantile" else "mean"
            ax.set_title(f"{quantity} time, {what}", fontsize=10)
            if row == 1:
                ax.set_xlabel("parallelism ratio k / s (task mean s / k seconds)")
        axes[row, 0].set_ylabel("seconds")
    axes[0, 0].legend(fontsize=7, ncol=2)
    fig.suptitle(f"Figs. 7-8 with real Spark{': ' + title if title else ''}")
    fig.tight_layout()
    return fig
