"""The packing ceiling: the most jobs per unit time any discipline can start when gangs must fit on nodes.

Model (Appendix B, section 4's stability ceiling, with the nodes of :mod:`barrier_queues.nodes`): ``s`` workers
in ``N = s / G`` nodes of ``G``. A job holds pieces of nodes together for a time: a gang of ``k`` tasks that
holds all its workers until one instant (2 barriers, or one shared time) takes ``w = k // G`` whole nodes and
``r = k mod G`` workers of one more node, all for its held time ``H``; a task that holds its worker alone (a
plain job's task, a task of a gang with 1 barrier) is a piece of size 1 held for its own time. Jobs arrive at
rate ``lambda``; a share ``p_i`` of them brings item ``i`` (a piece of size ``z_i`` held for mean ``h_i``, ``m_i``
copies). Over a long run each node spends a share of its time in each *configuration* ``n`` (a multiset of piece
sizes with ``sum z n_z <= G``); with ``y_n`` nodes' worth of time in configuration ``n`` (``sum y_n <= N``) the
pieces of size ``z`` are held on ``sum_n y_n n_z`` node-slots on average, which must carry the offered
``lambda D_z``, ``D_z = sum_{i: z_i = z} p_i m_i h_i`` (Little's law). So

    lambda_pack = N / min { sum_n y_n : sum_n y_n n_z >= D_z for every z, y >= 0 },

the configuration LP of cutting stock (Gilmore and Gomory 1961): an upper bound for every discipline, placement
and order of starts (none can hold more pieces at once than fit), met only by a perfect packer. Without nodes it
is the same LP with one node of ``G = s``: ``lambda_pack = s / E[held]`` when every width divides ``s`` (the
holding ceiling of :func:`barrier_queues.stability.holding_ceiling`), and lower when one does not (``k = 3`` on
``s = 8``: 6 of 8 workers, 0.75). One width ``k <= G`` on nodes: ``N floor(G / k) / h``.

The LP is solved by column generation: the restricted problem by scipy's HiGHS (``scipy.optimize.linprog``),
each new configuration by an unbounded integer knapsack over the LP's duals (a dynamic program over ``0..G``
written here: exact in integers, ``O(G x sizes)``, where a general integer solver would bring tolerances).
"""

from __future__ import annotations

import math

import numpy as np

from ._validation import ParameterError, check_int

#: the column generation stops when no configuration improves the LP by more than this (relative)
PRICING_TOLERANCE = 1e-9
#: the most configurations it adds before giving up (each round adds one)
MAX_ROUNDS = 10_000


def _demands(items, servers: int, g: int) -> dict[int, float]:
    """``D_z`` per piece size ``z`` (node-slot time per arriving job) from ``(share, k, held, copies)`` items."""
    demand: dict[int, float] = {}
    for share, k, held, copies in items:
        k = check_int("k", k, low=1, high=servers)
        if not (share >= 0 and held >= 0 and copies >= 0) or not math.isfinite(share * held * copies):
            raise ParameterError(f"packing items need finite shares, held times and copies >= 0 (got {share!r}, "
                                 f"{held!r}, {copies!r} for k = {k})")
        whole, rest = divmod(k, g)
        for size, count in ((g, whole), (rest, 1)):
            if size and count and share * held * copies > 0:
                demand[size] = demand.get(size, 0.0) + share * held * copies * count
    return demand


def _best_configuration(prices: np.ndarray, sizes: list[int], g: int) -> tuple[float, list[int]]:
    """The unbounded knapsack ``max sum_z prices_z n_z`` with ``sum_z z n_z <= g``, ``n`` integer: its value and
    the counts (a dynamic program over the capacity, the first size that improves kept)."""
    value = [0.0] * (g + 1)
    choice = [-1] * (g + 1)
    for cap in range(1, g + 1):
        value[cap], choice[cap] = value[cap - 1], -1
        for j, z in enumerate(sizes):
            if z <= cap and value[cap - z] + prices[j] > value[cap] + 1e-15:
                value[cap], choice[cap] = value[cap - z] + prices[j], j
    counts, cap = [0] * len(sizes), g
    while cap > 0:
        if choice[cap] < 0:
            cap -= 1
            continue
        counts[choice[cap]] += 1
        cap -= sizes[choice[cap]]
    return value[g], counts


def packing_ceiling(items, servers: int, node_size: int | None = None) -> float:
    """``lambda_pack`` (jobs per unit time, the module docstring's LP) for ``items``, an iterable of ``(share,
    k, held)`` or ``(share, k, held, copies)``: a share of the jobs that holds ``copies`` (default 1) gangs of
    ``k`` workers together for mean time ``held`` each; ``node_size`` G (None: no nodes, one node of
    ``servers``). ``inf`` when nothing is held."""
    from scipy.optimize import linprog

    s = check_int("servers", servers, low=1, high=10_000_000)
    g = s if node_size is None else check_int("node_size", node_size, low=1, high=s)
    if s % g:
        raise ParameterError(f"node_size must divide servers (got {g} with {s} servers)")
    demand = _demands([(*i, 1) if len(i) == 3 else tuple(i) for i in items], s, g)
    if not demand:
        return math.inf
    sizes = sorted(demand)
    need = np.array([demand[z] for z in sizes])
    columns = [[g // z if j == i else 0 for j in range(len(sizes))] for i, z in enumerate(sizes)]
    for _ in range(MAX_ROUNDS):
        a = np.array(columns, dtype=float).T
        res = linprog(np.ones(len(columns)), A_ub=-a, b_ub=-need, bounds=(0, None), method="highs")
        if res.status != 0:
            raise ParameterError(f"the packing LP did not solve: {res.message}")
        prices = -np.asarray(res.ineqlin.marginals)
        value, counts = _best_configuration(prices, sizes, g)
        if value <= 1 + PRICING_TOLERANCE or counts in columns:
            return float((s // g) / res.fun)
        columns.append(counts)
    raise ParameterError(f"the packing LP did not converge in {MAX_ROUNDS:,} configurations")


def held_items(system) -> list[tuple[float, int, float, float]] | None:
    """The items of a system (``(share, k, held, copies)``, :func:`packing_ceiling`): a barrier job that holds
    its gang together (2 barriers with the fixed release, or a shared time) is one gang of ``k`` held ``E[D]``
    (``D`` the release time, the largest task time with every task needed) or ``E[T]``; a plain job's task,
    ``k`` copies of size 1 held ``E[X]``. None when a gang's workers are not held together (1 barrier and no
    shared time), or the held time is not known (overhead, phases, another release rule)."""
    from .release import release_law

    if system.overhead is not None or system.phases > 1:
        return None
    items = []
    if system.workload is not None:
        from .order_stats import order_stat_mean

        for c in system.workload:
            law = system.class_law(c)
            mean = float(law.mean())
            if not c.barrier:
                items.append((c.share, 1, mean, c.tasks))
            elif c.shared:
                items.append((c.share, c.tasks, mean, 1))
            elif system.barriers == 2:
                items.append((c.share, c.tasks, float(order_stat_mean(law, c.tasks, c.tasks)), 1))
            else:
                return None
        return items
    from .rules import service_rule

    p = system.barrier_fraction
    if p > 0 and (system.barriers != 2 or service_rule(system).law != "barrier_queues.release:release_law"):
        return None
    for k, pk in zip(system.ks, system.pk, strict=True):
        k = int(k)
        if p > 0:
            items.append((pk * p, k, float(release_law(system, k).mean_departure), 1))
        if p < 1:
            items.append((pk * (1 - p), 1, float(system.mean_task), k))
    return items


def system_packing_ceiling(system, node_size: int | None = None) -> float | None:
    """:func:`packing_ceiling` of a system on its own nodes (``node_size``: another G, or the system's; None
    for neither: no nodes); None when :func:`held_items` is."""
    items = held_items(system)
    if items is None:
        return None
    return packing_ceiling(items, system.servers, node_size if node_size is not None else system.node_size)


def width_mix(jobs, servers: int) -> list[dict]:
    """Job classes of a log's rigid gangs for a drawn model of it: one class per width ``k <= servers`` with
    the log's share of jobs of that width, and one shared exponential time of that width's mean runtime (a
    stated choice: the log's widths and mean held times, exponential times). ``jobs``: a trace's job table
    (``tasks``, ``runtime``)."""
    kept = jobs[jobs.tasks <= servers]
    if kept.empty:
        raise ParameterError(f"no job of the log fits on {servers} workers")
    by = kept.groupby("tasks").runtime.agg(["size", "mean"])
    return [{"share": float(row["size"] / len(kept)), "tasks": int(k), "shared": True,
             "task_dist": f"exponential:rate={1.0 / float(row['mean']):.17g}", "name": f"k={int(k)}"}
            for k, row in by.iterrows()]


def fragmentation(system, node_size: int, jobs: int = 100_000, replications: int = 8, seed: int = 0):
    """What nodes of ``node_size`` cost a system without them, as held load ``lambda E[held] / s`` (1: every
    worker held all the time): the packing ceiling (any discipline, exact) and FIFO's limit (a saturated run
    of ``replications x jobs``, its 95 % t interval cut at the packing ceiling, which no run passes in the long
    run; FIFO starts in arrival order, so its saturated start rate is its stability limit), without nodes and
    with them. A table: one row per limit, the columns ``no nodes``,
    ``nodes``, their intervals and ``lost`` (the share of the limit without nodes that nodes take)."""
    import pandas as pd

    from .load import mean_held
    from .saturated import saturated_throughput

    plain = system.replace(node_size=None, scheduling="fcfs", arrival_rate=None)
    held = mean_held(plain) / plain.servers
    rows = []
    ceilings = [system_packing_ceiling(plain), system_packing_ceiling(plain, node_size)]
    if None not in ceilings:
        rows.append({"limit": "packing ceiling (any discipline)", "no nodes": ceilings[0] * held,
                     "no nodes low": ceilings[0] * held, "no nodes high": ceilings[0] * held,
                     "nodes": ceilings[1] * held, "nodes low": ceilings[1] * held, "nodes high": ceilings[1] * held})
    row = {"limit": "fcfs (saturated)"}
    for name, g, ceiling in (("no nodes", None, ceilings[0]), ("nodes", node_size, ceilings[1])):
        est = saturated_throughput(plain.replace(node_size=g), jobs=jobs, replications=replications, seed=seed,
                                   workers=1, progress=False)
        low, high = est["lambda_max_ci"]
        high = high if ceiling is None else min(high, ceiling)
        row |= {name: est["lambda_max"] * held, f"{name} low": low * held, f"{name} high": high * held}
    rows.append(row)
    table = pd.DataFrame(rows)
    table["lost"] = 1 - table["nodes"] / table["no nodes"]
    return table


__all__ = ["fragmentation", "held_items", "packing_ceiling", "system_packing_ceiling", "width_mix"]
