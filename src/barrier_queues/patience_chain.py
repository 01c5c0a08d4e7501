"""The exact chain of a small 1-barrier FIFO system whose gangs have exponential patience (Appendix B, section 8).

Jobs of ``k`` tasks arrive at rate ``lambda``; every task runs an Exp(``mu``) time on its own worker and frees it
when it ends (one barrier: a job's tasks start together); ``s`` workers; the head of the queue starts when ``k``
workers are free (FIFO). A job that waits leaves after an Exp(``theta``) patience counted from its arrival
(``wait_budget="exp:1/theta"``, ``on_budget="leave"``): memoryless, so each waiting job leaves at rate ``theta``.

State ``(q, c)``: ``q`` jobs waiting and ``c = (c_1, ..., c_k)`` the running jobs with ``r`` tasks still running
(busy workers ``b = sum r c_r``; ``q > 0`` only while ``s - b < k``). From ``(q, c)``:

* an arrival (rate ``lambda``) starts at once if ``q = 0`` and ``s - b >= k`` (``c_k + 1``), else waits (``q + 1``;
  the queue is cut at ``max_waiting``, where the chain's mass is reported and must be negligible);
* a task of a job with ``r`` running ends (rate ``r c_r mu``): ``c_r - 1, c_{r-1} + 1`` (the job departs at
  ``r = 1``), then the waiting heads start while ``k`` workers are free;
* a waiting job leaves (rate ``q theta``): ``q - 1``.

Measures: the stationary ``pi`` (sparse LU of ``pi Q = 0``); the share of jobs lost, ``theta E[q] / lambda``; the
mean time in queue of all jobs, ``E[q] / lambda`` (Little; a lost job's ends when it leaves); and the served
jobs' mean waiting, from the chain of one tagged arrival (PASTA: it sees ``pi``): in state ``(i, c)``, ``i``
jobs ahead of it, it moves with the task ends and the starts of the jobs ahead, loses one ahead at rate
``i theta`` and leaves itself at rate ``theta``; ``u`` = P(it starts) and ``v`` = E[its wait; it starts] solve
``u = P u + p_start`` and ``v = P v + u / R`` (``P`` the jump chain, ``R`` the total rate out: the time in a
state is independent of where the chain goes next). With ``k = 1`` this is M/M/s+M (Erlang-A), checked against
its birth-death chain in the tests; with ``k > 1`` it is the oracle of the gang clocks' simulation.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ._validation import ParameterError, check_int, check_positive

#: the largest chain built (states); a small system's is a few thousand
MAX_STATES = 400_000


def _configurations(servers: int, tasks: int) -> list[tuple]:
    """Every ``c = (c_1, ..., c_k)`` with ``sum r c_r <= s``."""
    out = []
    ranges = [range(servers // r + 1) for r in range(1, tasks + 1)]
    for c in itertools.product(*ranges):
        if sum((r + 1) * n for r, n in enumerate(c)) <= servers:
            out.append(c)
    return out


def _busy(c: tuple) -> int:
    return sum((r + 1) * n for r, n in enumerate(c))


def _start_heads(q: int, c: tuple, servers: int, tasks: int) -> tuple[int, tuple, int]:
    """Start waiting heads while ``k`` workers are free: the new ``(q, c)`` and how many started."""
    started = 0
    c = list(c)
    while q > 0 and servers - _busy(c) >= tasks:
        q -= 1
        c[tasks - 1] += 1
        started += 1
    return q, tuple(c), started


def _after_end(c: tuple, r: int) -> tuple:
    """A task of a job with ``r`` (1-based) tasks running ends."""
    c = list(c)
    c[r - 1] -= 1
    if r > 1:
        c[r - 2] += 1
    return tuple(c)


def patience_chain(servers: int, tasks: int, arrival_rate: float, patience_mean: float, task_rate: float = 1.0,
                   max_waiting: int | None = None, hold: bool = False) -> dict:
    """The exact chain (module docstring) of ``servers`` workers, jobs of ``tasks`` tasks, Poisson arrivals at
    ``arrival_rate``, Exp(``task_rate``) tasks and Exp patience of mean ``patience_mean``; the queue cut at
    ``max_waiting`` jobs (default: where arrivals at rate lambda meet departures at rate q theta with 40 standard
    deviations to spare). Returns ``lost_share``, ``mean_waiting_served``, ``mean_waiting_all``, ``mean_queue``,
    ``states`` and ``cut_mass`` (the stationary mass at the cut: must be negligible).

    ``hold``: the hold discipline with exponential hold timeouts of mean ``patience_mean`` and ``on_budget
    "leave"`` instead of every waiting job's patience: only the head leaves, at rate ``theta``, and only while
    it holds (``q > 0`` and ``0 < s - b``; the free workers are all held for it); also ``held_share``, the
    share of worker time held idle, ``E[(s - b) 1{q > 0}] / s`` (default cut: 400 waiting jobs)."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    s = check_int("servers", servers, low=1, high=64)
    k = check_int("tasks", tasks, low=1, high=s)
    lam = check_positive("arrival_rate", arrival_rate)
    theta = 1.0 / check_positive("patience_mean", patience_mean)
    mu = check_positive("task_rate", task_rate)
    if max_waiting is None and hold:
        max_waiting = 400
    elif max_waiting is None:
        mean = lam / theta
        max_waiting = int(math.ceil(mean + 40 * math.sqrt(mean) + 40))
    n = check_int("max_waiting", max_waiting, low=1, high=10**6)
    configs = _configurations(s, k)
    full = [c for c in configs if s - _busy(c) < k]     # (where jobs may wait)
    count = len(configs) + n * len(full)
    if count > MAX_STATES:
        raise ParameterError(f"the chain has {count:,} states, more than {MAX_STATES:,}: a smaller system "
                             "(servers, tasks), a shorter patience or max_waiting")
    states = [(0, c) for c in configs] + [(q, c) for q in range(1, n + 1) for c in full]
    index = {x: i for i, x in enumerate(states)}
    rows, cols, rates = [], [], []

    def add(a, b, rate):
        rows.append(index[a])
        cols.append(index[b])
        rates.append(rate)

    for q, c in states:
        free = s - _busy(c)
        if q == 0 and free >= k:
            add((q, c), (0, c[:k - 1] + (c[k - 1] + 1,)), lam)
        elif q < n:
            add((q, c), (q + 1, c), lam)
        for r in range(1, k + 1):
            if c[r - 1]:
                q2, c2, _ = _start_heads(q, _after_end(c, r), s, k)
                add((q, c), (q2, c2), r * c[r - 1] * mu)
        if q and (not hold or free > 0):
            add((q, c), (q - 1, c), theta if hold else q * theta)
    size = len(states)
    rate_matrix = sp.csr_matrix((rates, (rows, cols)), shape=(size, size))
    out_rate = np.asarray(rate_matrix.sum(axis=1)).ravel()
    generator = (rate_matrix - sp.diags(out_rate)).T.tolil()
    generator[0, :] = 1.0                              # one balance equation replaced by sum(pi) = 1
    rhs = np.zeros(size)
    rhs[0] = 1.0
    pi = spla.spsolve(generator.tocsc(), rhs)
    queue = np.array([q for q, _ in states], dtype=float)
    free = np.array([s - _busy(c) for _, c in states], dtype=float)
    mean_queue = float(pi @ queue)
    cut = float(pi[queue == n].sum())
    served_wait, served = _tagged(states, index, pi, s, k, lam, theta, mu, n, hold)
    leaving = float(pi[(queue > 0) & (free > 0)].sum()) if hold else mean_queue
    out = {"lost_share": theta * leaving / lam, "mean_waiting_served": served_wait,
           "mean_waiting_all": mean_queue / lam, "mean_queue": mean_queue, "served_share": served,
           "states": size, "cut_mass": cut}
    if hold:
        out["held_share"] = float(pi @ (free * (queue > 0))) / s
    return out


def _tagged(states, index, pi, s, k, lam, theta, mu, n, hold=False) -> tuple[float, float]:
    """The served jobs' mean waiting and the share served, from the tagged arrival's chain (module
    docstring): its states ``(i, c)`` are the waiting states' own (``i`` ahead of it, ``i < n``). With ``hold``
    only the holding head leaves: a job ahead when ``i > 0``, the tagged one itself when ``i = 0``, each at
    ``theta`` while workers are free."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    waiting = [(q, c) for q, c in states if s - _busy(c) < k and q < n]   # (i ahead, c), the tagged one waits
    at = {x: j for j, x in enumerate(waiting)}
    rows, cols, probs = [], [], []
    start = np.zeros(len(waiting))
    total = np.zeros(len(waiting))
    for j, (i, c) in enumerate(waiting):
        moves = []
        for r in range(1, k + 1):
            if c[r - 1]:
                q2, c2, _ = _start_heads(i + 1, _after_end(c, r), s, k)   # (the tagged job counted in the queue)
                moves.append(((q2, c2), r * c[r - 1] * mu))
        holding = s - _busy(c) > 0
        ahead = (theta if holding and i else 0.0) if hold else i * theta
        own = (theta if holding and not i else 0.0) if hold else theta
        rate_out = sum(rate for _, rate in moves) + ahead + own
        total[j] = rate_out
        for (q2, c2), rate in moves:
            if q2 == 0:                                 # the tagged job itself started
                start[j] += rate / rate_out
            else:
                rows.append(j)
                cols.append(at[(q2 - 1, c2)])
                probs.append(rate / rate_out)
        if ahead:
            rows.append(j)
            cols.append(at[(i - 1, c)])
            probs.append(ahead / rate_out)
    size = len(waiting)
    jump = sp.csr_matrix((probs, (rows, cols)), shape=(size, size))
    system = (sp.identity(size, format="csc") - jump).tocsc()
    u = spla.spsolve(system, start)
    v = spla.spsolve(system, u / total)
    served, weighted = 0.0, 0.0
    for x, p in zip(states, pi, strict=True):           # PASTA: the arrival sees pi
        q, c = x
        if q == 0 and s - _busy(c) >= k:
            served += p                                 # starts at once: waits 0
        elif q < n:
            j = at[(q, c)]
            served += p * u[j]
            weighted += p * v[j]
    return weighted / served, served


__all__ = ["MAX_STATES", "patience_chain"]
