"""Slow, obviously-correct reference implementations used only by the tests.

They share no code with the library, so agreement is evidence for both.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
from scipy import stats


def gth_stationary(q: np.ndarray) -> np.ndarray:
    """Stationary distribution of a small dense generator by the GTH algorithm.

    Grassmann-Taksar-Heyman state reduction (as in QuantEcon's ``gth_solve``):
    subtraction-free, so accurate to machine precision on small chains.
    """
    a = np.array(q, dtype=float)
    n = a.shape[0]
    np.fill_diagonal(a, 0.0)
    for k in range(n - 1):
        scale = a[k, k + 1:].sum()
        a[k + 1:, k] /= scale
        a[k + 1:, k + 1:] += np.outer(a[k + 1:, k], a[k, k + 1:])
    x = np.zeros(n)
    x[n - 1] = 1.0
    for k in range(n - 2, -1, -1):
        x[k] = x[k + 1:] @ a[k + 1:, k]
    return x / x.sum()


def simulate_backlogged_starts(servers: int, tasks: int, needed: int, horizon: float,
                               seed: int, batches: int = 40, warmup: float = 50.0):
    """Job start rate of an always-backlogged 1-barrier (s,k,l) system.

    Event-by-event with a heap of task end times (Exp(1) tasks). A job starts
    whenever at least k workers are idle; when l of its tasks have ended the
    job departs and its other tasks are killed (their workers freed at once).
    Returns (mean start rate, half-width of a 99 % batch-means CI).
    """
    rng = np.random.default_rng(seed)
    idle = servers
    heap: list[tuple[float, int]] = []
    done: dict[int, int] = {}      # job -> completed tasks
    running: dict[int, int] = {}   # job -> running tasks (0 once departed)
    next_job = 0
    starts: list[float] = []
    t = 0.0

    def start_jobs(now):
        nonlocal idle, next_job
        while idle >= tasks:
            job = next_job
            next_job += 1
            done[job], running[job] = 0, tasks
            idle -= tasks
            for x in rng.exponential(1.0, tasks):
                heapq.heappush(heap, (now + x, job))
            starts.append(now)

    start_jobs(0.0)
    while t < horizon:
        t, job = heapq.heappop(heap)
        if running[job] == 0:       # a killed straggler: its worker is already free
            continue
        running[job] -= 1
        done[job] += 1
        idle += 1
        if done[job] == needed:     # departure: kill the rest
            idle += running[job]
            running[job] = 0
        start_jobs(t)
    times = np.asarray(starts)
    edges = np.linspace(warmup, horizon, batches + 1)
    counts = np.histogram(times, edges)[0] / np.diff(edges)
    half = stats.t.ppf(0.995, batches - 1) * counts.std(ddof=1) / math.sqrt(batches)
    return counts.mean(), half
