"""The FIFO multiserver-job queue of a one-or-all workload: exact stability limits and exact mean waiting.

A one-or-all workload (Olliaro, Ajmone Marsan, Balsamo & Marin, Performance
Evaluation 2023; Appendix B, section 4) has jobs of two kinds on ``s``
workers: a share ``1 - beta`` needs one worker, a share ``beta`` needs all
``s``. Jobs arrive as a Poisson stream of rate ``lambda`` and are served in
strict FIFO order (``scheduling="fcfs"``: the head waits until it fits and
blocks everything behind it). Two service models:

* **shared time** (MJQM's multiserver job, ``JobClass(shared=True)``): a job
  holds its workers for one Exp(``mu``) time;
* **independent tasks** (the paper's 1-barrier job): each of the ``k`` tasks
  runs an Exp(``mu``) time and frees its worker when it ends.

:func:`one_or_all_limit` gives the largest stable arrival rate of either;
:func:`one_or_all_fifo` solves the shared-time queue exactly (a CTMC in
which the state is what the scheduler knows: the jobs in service, the number
waiting, and the kind of the blocked head; the kinds behind the head are
independent of everything, so they are drawn when a job reaches the head).
It is the independent check of the simulators (and of MJQM's numbers) on
this workload: the truncation at ``max_queue`` waiting jobs is reported and
refused if it holds more than ``tol`` of the mass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

from ._validation import ParameterError, check_int, check_positive
from .order_stats import harmonic

#: the largest number of CTMC states one_or_all_fifo builds (memory and LU fill-in guard)
MAX_STATES = 400_000


def _check(servers, beta, mu):
    s = check_int("servers", servers, low=1)
    if not isinstance(beta, int | float) or not 0.0 < float(beta) < 1.0 or math.isnan(beta):
        raise ParameterError(f"beta must be a share with 0 < beta < 1 (got {beta!r})")
    return s, float(beta), check_positive("mu", mu, "(services per unit time)")


def one_or_all_limit(servers: int, beta: float, mu: float = 1.0, shared: bool = True) -> float:
    """Largest stable arrival rate (jobs per unit time) of FIFO one-or-all.

    ``shared=True`` (one Exp(mu) time per job): ``(1 + E[G]) / E[C]`` with
    ``E[G] = (1 - beta) / beta`` and ``E[C] = 1/mu + sum_g beta (1 - beta)^g
    (max(g - s, 0) / (s mu) + H_min(g, s) / mu)`` (Olliaro et al. 2023): a
    cycle of the backlogged queue is a big job's service followed by the
    ``g`` small jobs before the next big one, which must drain before it
    starts. ``shared=False`` (independent Exp(mu) tasks, 1 barrier):
    ``s mu / (1 - beta + beta s H_s)`` (Appendix B, section 4).

    Examples
    --------
    >>> round(one_or_all_limit(32, 0.1), 4)
    3.0261
    """
    s, beta, mu = _check(servers, beta, mu)
    if not shared:
        return s * mu / (1.0 - beta + beta * s * harmonic(s))
    eg = (1.0 - beta) / beta
    # the terms fall geometrically: stop when the remaining tail is below 1e-16 of the sum
    g_max = s + int(math.ceil(math.log(1e-16) / math.log1p(-beta))) + 1
    g = np.arange(g_max + 1)
    weights = beta * (1.0 - beta) ** g
    h = np.array([harmonic(min(int(x), s)) for x in g])
    ec = 1.0 / mu + float(np.sum(weights * (np.maximum(g - s, 0) / (s * mu) + h / mu)))
    return (1.0 + eg) / ec


@dataclass(frozen=True)
class OneOrAllFifo:
    """Exact stationary means of the shared-time FIFO one-or-all queue (times in units of 1/mu's unit).

    ``mean_waiting`` is over all jobs, ``mean_waiting_small`` and
    ``mean_waiting_big`` per kind (Little's law on the numbers waiting);
    ``truncated_mass`` is the stationary probability of the largest queue
    length kept (arrivals there are lost), a bound on the truncation's effect.
    """

    servers: int
    beta: float
    arrival_rate: float
    mu: float
    mean_waiting: float
    mean_waiting_small: float
    mean_waiting_big: float
    mean_sojourn: float
    utilization: float
    max_queue: int
    truncated_mass: float
    states: int


class _Chain:
    """States: level 0 holds (i smalls in service) or (a big job in service); a level q >= 1 adds q waiting
    jobs and the kind of the head, which is blocked (a big head waits for every small to end)."""

    def __init__(self, s: int, max_queue: int):
        self.s, self.q_max = s, max_queue
        self.index: dict[tuple[int, int, int, int], int] = {}
        for i in range(s + 1):
            self._add((i, 0, 0, -1))
        self._add((0, 1, 0, -1))
        for q in range(1, max_queue + 1):
            self._add((0, 1, q, 0))
            self._add((0, 1, q, 1))
            self._add((s, 0, q, 0))
            for i in range(1, s + 1):
                self._add((i, 0, q, 1))

    def _add(self, state):
        self.index[state] = len(self.index)

    def settle(self, i: int, b: int, q: int, h: int, beta: float, p: float, out: list):
        """Start what FIFO starts from (i, b, q, head h), revealing each new head's kind; appends
        (probability, state) to out."""
        while q > 0:
            if h == 0 and b == 0 and i < self.s:
                i, q = i + 1, q - 1
            elif h == 1 and b == 0 and i == 0:
                b, q = 1, q - 1
            else:
                out.append((p, (i, b, q, h)))
                return
            if q > 0:                       # the next job reaches the head: its kind is drawn now
                self.settle(i, b, q, 1, beta, p * beta, out)
                h, p = 0, p * (1.0 - beta)
        out.append((p, (i, b, 0, -1)))

    def generator(self, lam: float, mu: float, beta: float) -> sp.csr_matrix:
        rows, cols, vals = [], [], []

        def move(src: int, rate: float, targets: list):
            for p, state in targets:
                dst = self.index[state]
                if dst != src and p > 0.0:
                    rows.append(src)
                    cols.append(dst)
                    vals.append(rate * p)

        for (i, b, q, h), src in self.index.items():
            if q < self.q_max:              # an arrival (lost at the truncation level)
                out: list = []
                if q == 0:
                    self.settle(i, b, 1, 0, beta, 1.0 - beta, out)
                    self.settle(i, b, 1, 1, beta, beta, out)
                else:
                    out.append((1.0, (i, b, q + 1, h)))
                move(src, lam, out)
            if i > 0:                       # one of i small jobs ends
                out = []
                self.settle(i - 1, b, q, h, beta, 1.0, out)
                move(src, i * mu, out)
            if b:                           # the big job ends
                out = []
                self.settle(0, 0, q, h, beta, 1.0, out)
                move(src, mu, out)
        n = len(self.index)
        q_off = sp.coo_matrix((vals, (rows, cols)), shape=(n, n)).tocsr()
        q_off.sum_duplicates()
        return (q_off - sp.diags(np.asarray(q_off.sum(axis=1)).ravel())).tocsr()


def _stationary(generator: sp.csr_matrix) -> np.ndarray:
    """``pi Q = 0, sum(pi) = 1`` by sparse LU with ``pi`` of the empty system (state 0) fixed at 1 and its
    balance equation dropped: anchoring a likely state keeps the solution's scale sane (anchoring the last state,
    the fullest queue, would put it near 1e-300 and lose the rest to rounding)."""
    q_t = generator.T.tocsc()
    x = spsolve(q_t[1:, 1:].tocsc(), -q_t[1:, 0].toarray().ravel(), permc_spec="COLAMD")
    pi = np.maximum(np.concatenate([[1.0], x]), 0.0)
    return pi / pi.sum()


def one_or_all_fifo(servers: int, beta: float, arrival_rate: float, mu: float = 1.0,
                    max_queue: int | None = None, tol: float = 1e-10) -> OneOrAllFifo:
    """Exact mean waiting of the shared-time FIFO one-or-all queue (MJQM's ``oneOrAll`` input).

    Solves the CTMC described in :class:`_Chain` with at most ``max_queue``
    waiting jobs (default: doubled from 256 until the mass at the truncation
    level is below ``tol``), by sparse LU (:func:`_stationary`).
    Refuses a rate at or above :func:`one_or_all_limit`, and a truncation the
    state guard (``MAX_STATES``) does not allow.

    Examples
    --------
    >>> r = one_or_all_fifo(4, 0.5, 0.5)
    >>> r.truncated_mass < 1e-10
    True
    """
    s, beta, mu = _check(servers, beta, mu)
    lam = check_positive("arrival_rate", arrival_rate, "(jobs per unit time)")
    limit = one_or_all_limit(s, beta, mu)
    if lam >= limit:
        raise ParameterError(f"arrival_rate must be below the FIFO stability limit {limit:.6g} of one-or-all "
                             f"with servers = {s}, beta = {beta:g}, mu = {mu:g} (got {lam:g})")
    q_max = 256 if max_queue is None else check_int("max_queue", max_queue, low=1)
    while True:
        states = (s + 2) + q_max * (s + 3)
        if states > MAX_STATES:
            raise ParameterError(f"max_queue must keep the chain within {MAX_STATES:,} states: with servers = {s} "
                                 f"that is max_queue <= {(MAX_STATES - s - 2) // (s + 3)} (got {q_max}; the load "
                                 f"{lam / limit:.4f} of the limit needs more)")
        chain = _Chain(s, q_max)
        pi = _stationary(chain.generator(lam, mu, beta))
        keys = np.array(list(chain.index), dtype=np.int64)
        i, b, q, h = keys.T
        top = float(pi[q == q_max].sum())
        if top <= tol or max_queue is not None:
            break
        q_max *= 2
    accepted = lam * (1.0 - top)
    # waiting jobs: the head's kind is known; the q - 1 behind it are small with probability 1 - beta each
    small_waiting = float(pi @ np.where(q > 0, (h == 0) + (q - 1) * (1.0 - beta), 0.0))
    big_waiting = float(pi @ np.where(q > 0, (h == 1) + (q - 1) * beta, 0.0))
    busy = float(pi @ (i + s * b)) / s
    w = (small_waiting + big_waiting) / accepted
    return OneOrAllFifo(s, beta, lam, mu, w, small_waiting / (accepted * (1.0 - beta)),
                        big_waiting / (accepted * beta), w + 1.0 / mu, busy, q_max, top, int(pi.size))


__all__ = ["MAX_STATES", "OneOrAllFifo", "one_or_all_fifo", "one_or_all_limit"]
