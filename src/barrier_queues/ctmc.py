"""The CTMC of an always-backlogged 1-barrier (s,k,l) system (paper section II-D).

A running job has between ``k-l+1`` and ``k`` running tasks. The state is the
vector ``n = (n_{k-l+1}, ..., n_k)`` with ``n_j`` the number of running jobs
that have exactly ``j`` running tasks; busy workers ``b(n) = sum_j j n_j``
(paper eq. 18). Only backlogged states occur: ``s - b(n) < k`` (eqs. 19-20).

From state ``n``, one task of a ``j``-job ends at rate ``j n_j mu``:

1. ``j > k-l+1``: ``n_j -= 1, n_{j-1} += 1`` (one worker freed);
2. ``j = k-l+1``: the job's l-th completion: it departs and frees all ``j``
   workers (one finished, ``j-1`` killed);
3. then, if ``s - b >= k``, the head-of-line job starts: ``n_k += 1`` (at most
   one start per transition).

These are the paper's transition types (i)-(iv). The maximum job throughput
``lambda_max`` is the stationary rate of transitions in which a job starts.

Implementation: the feasible set (restricted integer partitions) is
enumerated column by column with numpy (no per-state Python loop), each state
gets a mixed-radix integer key, all transitions of all states are computed as
key arithmetic and located with one ``searchsorted``; states reachable from
``n_k = floor(s/k)`` are kept (scipy.sparse.csgraph). ``pi Q = 0`` is solved
by a structured iteration (:func:`_stationary_by_levels`) that needs a few
dozen sparse sweeps even at 10^6 states, where sparse LU (kept as the
independent check, :func:`stationary_distribution`) runs out of time and
memory through fill-in. Chains of at most 2,000 states (the paper's, and
every stability check of a simulation that can run quickly) are built and
solved with numpy alone, a dense LU of the same equations: importing
scipy.sparse took longer than the whole solve.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ._validation import ParameterError, check_int, check_positive
from .order_stats import exp_server_time_per_job

if TYPE_CHECKING:
    import scipy.sparse as sp

#: default refusal threshold for the number of feasible states (memory guard)
MAX_STATES = 12_000_000
#: chains of at most this many states are kept and solved dense (numpy, LAPACK's LU): importing scipy.sparse
#: takes far longer than building and solving such a chain (timing: CHANGELOG; the stability check of a
#: simulation of an (s,k,l) system with exponential tasks solves one)
DENSE_MAX_STATES = 2_000


#: count_feasible_states refuses when l x s exceeds this (its dynamic programme is O(l s))
MAX_COUNT_WORK = 500_000_000


def count_feasible_states(servers: int, tasks: int, needed: int | None = None) -> int:
    """Number of feasible backlogged states (paper eqs. 19-20), reachable or not.

    Counts partitions of ``b`` into parts in ``[k-l+1, k]`` for
    ``s-k < b <= s`` by dynamic programming, one vectorised pass per part
    size (O(l s) work, refused above 5e8 with a clear error). Exact below
    2^53 (about 9e15); larger counts are rounded (they are only compared with
    size limits).
    """
    return count_states(*_check(servers, tasks, needed))


def count_states(s: int, k: int, l_: int) -> int:
    """:func:`count_feasible_states` of validated ``(s, k, l)`` (e.g. the fields of a BarrierSystem)."""
    if l_ == 1:
        return 1                          # n_k = floor(s/k) is the only backlogged state
    if l_ * s > MAX_COUNT_WORK:
        raise ParameterError(f"the CTMC of (servers, tasks, needed) = ({s}, {k}, {l_}) is too large to count "
                             f"its states (needed x servers = {l_ * s:,} > {MAX_COUNT_WORK:,}); use the simulator "
                             "(saturated_throughput) for this size")
    ways = np.zeros(s + 1)
    ways[0] = 1.0
    for j in range(k - l_ + 1, k + 1):
        rows = -(-(s + 1) // j)
        padded = np.zeros(rows * j)
        padded[:s + 1] = ways
        ways = np.cumsum(padded.reshape(rows, j), axis=0).ravel()[:s + 1]
    total = float(ways[s - k + 1:].sum())
    return int(total) if total < 2**63 else int(min(total, 2.0**1000))


def _check(servers, tasks, needed):
    from .system import BarrierSystem

    system = BarrierSystem(servers, tasks, needed)
    return system.servers, system.tasks, system.needed


def _expand(rows: list[np.ndarray], b: np.ndarray, lo: np.ndarray, hi: np.ndarray, j: int):
    """Give each partial state every count ``n_j`` in ``[lo, hi]`` (vectorised)."""
    counts = np.maximum(hi - lo + 1, 0)
    parent = np.repeat(np.arange(b.size), counts)
    offsets = np.arange(parent.size) - np.repeat(np.cumsum(counts) - counts, counts)
    n_j = (lo[parent] + offsets).astype(np.int16)
    return [col[parent] for col in rows] + [n_j], b[parent] + j * n_j.astype(np.int64)


def enumerate_feasible_states(servers: int, tasks: int, needed: int | None = None):
    """All feasible backlogged states, as an ``(N, l)`` int16 array.

    Column ``c`` holds ``n_j`` for ``j = k - l + 1 + c``. Rows are sorted by
    their mixed-radix key (see :func:`state_keys`).
    """
    s, k, l_ = _check(servers, tasks, needed)
    jmin = k - l_ + 1
    parts = list(range(k, jmin - 1, -1))  # largest parts first keeps arrays small
    cols: list[np.ndarray] = []
    b = np.zeros(1, dtype=np.int64)
    for j in parts[:-1]:
        cols, b = _expand(cols, b, np.zeros_like(b), (s - b) // j, j)
    # the smallest part completes the state: s - k < b + jmin n <= s
    lo = np.maximum(-((b - (s - k + 1)) // jmin), 0)  # ceil((s-k+1-b)/jmin)
    cols, b = _expand(cols, b, lo, (s - b) // jmin, jmin)
    states = np.stack(cols[::-1], axis=1)  # column c <-> j = jmin + c
    keys = state_keys(states, s, k, l_)
    order = np.argsort(keys, kind="stable")
    return states[order]


def _weights(s: int, k: int, l_: int) -> np.ndarray:
    jmin = k - l_ + 1
    radix = [s // j + 1 for j in range(jmin, k + 1)]
    if sum(math.log2(r) for r in radix) > 62:
        raise ParameterError(f"the CTMC state space of (servers, tasks, needed) = ({s}, {k}, {l_}) "
                             "is too large to encode; use the simulator for this size")
    return np.concatenate([[1], np.cumprod(radix[:-1])]).astype(np.int64)


def state_keys(states: np.ndarray, servers: int, tasks: int, needed: int) -> np.ndarray:
    """Mixed-radix integer key of each state row (``n_j <= s // j``)."""
    return states.astype(np.int64) @ _weights(servers, tasks, needed)


@dataclass
class BackloggedChain:
    """Reachable state space and transitions of the backlogged 1-barrier chain.

    States are ordered by busy workers ``b`` (descending), so every level of
    ``b`` is a contiguous block. Rates are for ``task_rate = 1`` (they scale
    linearly with mu, which leaves the stationary distribution unchanged).

    Attributes
    ----------
    states : ndarray (N, l)
        ``states[i, c]`` = number of running jobs with ``k-l+1+c`` running tasks.
    src, dst, rate, start : ndarray (M,)
        Transitions between distinct states: source, target, rate and whether a
        job starts in it.
    start_rates : ndarray (N,)
        Rate of job-starting transitions out of each state (self-loops
        included: for ``l = 1`` a departure and a start leave the state unchanged).
    feasible : int
        Size of the feasible set before the reachability pruning.
    """

    servers: int
    tasks: int
    needed: int
    states: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    rate: np.ndarray
    start: np.ndarray
    start_rates: np.ndarray
    feasible: int
    seconds_build: float = 0.0

    @property
    def size(self) -> int:
        return self.states.shape[0]

    @property
    def busy_workers(self) -> np.ndarray:
        """b(n) for each state (paper eq. 18); also each state's exit rate for mu = 1."""
        jmin = self.tasks - self.needed + 1
        return self.states.astype(np.int64) @ np.arange(jmin, self.tasks + 1)

    @property
    def generator(self) -> sp.csr_matrix:
        """Generator Q (mu = 1) as a sparse CSR matrix."""
        import scipy.sparse as sp

        n = self.size
        out_rate = np.bincount(self.src, weights=self.rate, minlength=n)
        return sp.csr_matrix((np.concatenate([self.rate, -out_rate]),
                              (np.concatenate([self.src, np.arange(n)]),
                               np.concatenate([self.dst, np.arange(n)]))), shape=(n, n))

    def stationary(self, method: str = "auto", tol: float = 1e-13,
                   max_iter: int = 10_000) -> np.ndarray:
        """Stationary distribution pi of the CTMC (in this chain's state order).

        ``method="dense"`` (default up to :data:`DENSE_MAX_STATES` = 2,000
        states) solves ``pi Q = 0`` as :func:`stationary_distribution` does,
        with a dense LU (numpy, LAPACK); ``method="levels"`` (default beyond)
        iterates the start-to-start map described in
        :func:`_stationary_by_levels`; ``method="direct"`` solves with sparse
        LU (:func:`stationary_distribution`), an independent check that is
        exact but whose fill-in grows quickly with the chain.
        """
        if method == "auto":
            method = "dense" if self.size <= DENSE_MAX_STATES else "levels"
        if method == "dense":
            return _stationary_dense(self.dense_generator())
        if method == "direct":
            return stationary_distribution(self.generator)
        if method == "levels":
            return _stationary_by_levels(self, tol, max_iter)
        raise ParameterError(f"method must be 'auto', 'dense', 'levels' or 'direct' (got {method!r})")

    def dense_generator(self) -> np.ndarray:
        """Generator Q (mu = 1) as a dense array (refused beyond :data:`DENSE_MAX_STATES` states)."""
        n = self.size
        if n > DENSE_MAX_STATES:
            raise ParameterError(f"method 'dense' takes chains of at most {DENSE_MAX_STATES:,} states (this one has "
                                 f"{n:,}); use 'levels' or 'direct'")
        q = np.zeros((n, n))
        np.add.at(q, (self.src, self.dst), self.rate)
        q[np.arange(n), np.arange(n)] = -np.bincount(self.src, weights=self.rate, minlength=n)
        return q


def _stationary_dense(q: np.ndarray) -> np.ndarray:
    """:func:`stationary_distribution` of a dense generator: the same equations (``pi_last = 1``, the last
    balance equation dropped), solved by LAPACK's LU with partial pivoting."""
    n = q.shape[0]
    if n == 1:
        return np.ones(1)
    return _with_last(np.linalg.solve(q[:-1, :-1].T, -q[-1, :-1]))


def _with_last(x: np.ndarray) -> np.ndarray:
    """pi from the solution ``x`` of the reduced equations (``pi_last = 1``): clipped at 0, normalised."""
    pi = np.maximum(np.append(x, 1.0), 0.0)
    return pi / pi.sum()


def _stationary_by_levels(chain: BackloggedChain, tol: float, max_iter: int) -> np.ndarray:
    """Stationary distribution by iterating the start-to-start map.

    Every state's exit rate is ``b(n) mu`` (each busy worker ends its task at
    rate mu), so with the embedded jump chain ``P = P_down + P_start``
    (transitions without / with a job start) the CTMC's pi is proportional
    to ``nu / b`` where ``nu P = nu``. A transition without a start lowers
    ``b`` (by 1, or by ``k-l+1`` at a departure), so ``I - P_down`` is
    triangular in level order and ``nu = (nu P_start) (I - P_down)^{-1}`` is
    evaluated by one forward sweep over the at most ``k`` levels. Iterating
    this map is power iteration on the chain observed at job starts; it
    converges in a few dozen sweeps for the chains of the paper.
    """
    import scipy.sparse as sp

    n = chain.size
    if n == 1:
        return np.ones(1)
    b = chain.busy_workers.astype(np.float64)
    p = chain.rate / b[chain.src]
    down = ~chain.start
    p_down_t = sp.csr_matrix((p[down], (chain.dst[down], chain.src[down])), shape=(n, n))
    p_start_t = sp.csr_matrix((p[chain.start], (chain.dst[chain.start], chain.src[chain.start])),
                              shape=(n, n))
    edges = np.flatnonzero(np.r_[True, b[1:] != b[:-1], True])
    blocks = [(a, e, p_down_t[a:e]) for a, e in itertools.pairwise(edges)]
    nu = np.full(n, 1.0 / n)
    best = np.inf
    stalled = 0
    for _ in range(max_iter):
        new = p_start_t @ nu
        for a, e, block in blocks:  # forward substitution, level by level
            new[a:e] += block @ new
        new /= new.sum()
        change = float(np.abs(new - nu).sum())
        nu = new
        if change < tol:
            break
        # rounding noise can keep the change just above tol for huge chains
        stalled = stalled + 1 if change >= best else 0
        best = min(best, change)
        if stalled >= 20 and best < 1e-10:
            break
    else:
        raise RuntimeError(f"CTMC stationary iteration did not converge in {max_iter} sweeps "
                           f"(last change {change:.3g}); try method='direct'")
    pi = nu / b
    return pi / pi.sum()


def build_backlogged_chain(servers: int, tasks: int, needed: int | None = None,
                           max_states: int = MAX_STATES) -> BackloggedChain:
    """Enumerate the reachable states and all transitions (mu = 1)."""
    s, k, l_ = _check(servers, tasks, needed)
    return _build(s, k, l_, check_int("max_states", max_states, low=1))


def _build(s: int, k: int, l_: int, max_states: int) -> BackloggedChain:
    feasible = count_states(s, k, l_)
    if feasible > max_states:
        raise ParameterError(
            f"the CTMC of (servers, tasks, needed) = ({s}, {k}, {l_}) has {feasible:,} feasible "
            f"states, more than max_states = {max_states:,}; raise max_states (memory: about 300 bytes "
            "per feasible state) or use the simulator")
    t0 = time.perf_counter()
    states = enumerate_feasible_states(s, k, l_)
    weights = _weights(s, k, l_)
    keys = states.astype(np.int64) @ weights
    jmin = k - l_ + 1
    busy = states.astype(np.int64) @ np.arange(jmin, k + 1)
    index_type = np.int32 if keys.size < 2**31 else np.int64
    src_all, dst_all, rate_all, start_all = [], [], [], []
    for c in range(l_):
        j = jmin + c
        src = np.flatnonzero(states[:, c] > 0).astype(index_type)
        if c > 0:   # a task ends, the job keeps running with j-1 tasks
            dkey, db = weights[c - 1] - weights[c], -1
        else:       # the l-th completion: the job departs, j workers are freed
            dkey, db = -weights[c], -j
        start = (s - (busy[src] + db)) >= k
        new_keys = keys[src] + dkey + start * weights[l_ - 1]
        dst = np.searchsorted(keys, new_keys).astype(index_type)
        if np.any(dst >= keys.size) or np.any(keys[np.minimum(dst, keys.size - 1)] != new_keys):
            raise RuntimeError("CTMC transition left the feasible set (enumeration bug)")
        src_all.append(src)
        dst_all.append(dst)
        rate_all.append(j * states[src, c].astype(np.float64))
        start_all.append(start)
    del keys
    src = np.concatenate(src_all)
    dst = np.concatenate(dst_all)
    rate = np.concatenate(rate_all)
    start = np.concatenate(start_all)
    del src_all, dst_all, rate_all, start_all
    n = states.shape[0]
    start_rates = np.bincount(src, weights=rate * start, minlength=n)

    # keep the states reachable from n_k = floor(s/k) (always recurrent),
    # ordered by busy workers, descending, so that levels are contiguous
    i0 = int(np.flatnonzero((states[:, -1] == s // k) & (busy == (s // k) * k)
                            & (states.sum(axis=1) == s // k))[0])
    reach = _reachable(n, src, dst, i0)
    reach = reach[np.lexsort((reach, -busy[reach]))]
    new_index = np.full(n, -1, dtype=index_type)
    new_index[reach] = np.arange(reach.size, dtype=index_type)
    keep = (new_index[src] >= 0) & (src != dst)
    return BackloggedChain(s, k, l_, states[reach], new_index[src[keep]], new_index[dst[keep]],
                           rate[keep], start[keep], start_rates[reach], feasible,
                           time.perf_counter() - t0)


def _reachable(n: int, src: np.ndarray, dst: np.ndarray, i0: int) -> np.ndarray:
    """The states reachable from ``i0`` along the transitions ``src -> dst`` (their set: the caller orders
    them): breadth-first search by scipy.sparse.csgraph, or for at most :data:`DENSE_MAX_STATES` feasible
    states by growing the set along every transition out of it until it stops growing (numpy)."""
    if n > DENSE_MAX_STATES:
        import scipy.sparse as sp
        from scipy.sparse import csgraph

        adjacency = sp.csr_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(n, n))
        return csgraph.breadth_first_order(adjacency, i0, directed=True, return_predecessors=False)
    seen = np.zeros(n, dtype=bool)
    seen[i0] = True
    while True:
        grown = seen.copy()
        grown[dst[seen[src]]] = True
        if np.array_equal(grown, seen):
            return np.flatnonzero(seen)
        seen = grown


def stationary_distribution(generator: sp.spmatrix) -> np.ndarray:
    """Solve ``pi Q = 0, sum(pi) = 1`` for an irreducible generator by sparse LU.

    ``pi_last`` is fixed to 1 and the balance equation of the last state is
    dropped; the remaining system is nonsingular for an irreducible chain and,
    unlike the usual "replace a row by ones" trick, has no dense row to cause
    fill-in. Exact, but the LU fill-in grows quickly: meant for chains up to
    about 10^4 states and as an independent check of the iterative solver.
    """
    import scipy.sparse as sp
    from scipy.sparse.linalg import spsolve

    q_t = sp.csc_matrix(generator).T.tocsc()
    n = q_t.shape[0]
    if n == 1:
        return np.ones(1)
    return _with_last(spsolve(q_t[:-1, :-1].tocsc(), -q_t[:-1, -1].toarray().ravel(), permc_spec="COLAMD"))


@dataclass
class CTMCStability:
    """Stability limit of a 1-barrier (s,k,l) system from the backlogged CTMC.

    ``lambda_max`` in jobs per unit time; ``rho_max`` and ``rho_useful`` are
    ``lambda_max E[total | useful server time] / s`` (paper section II-D).
    """

    servers: int
    tasks: int
    needed: int
    task_rate: float
    lambda_max: float
    rho_max: float
    rho_useful: float
    states: int
    feasible_states: int
    residual: float
    seconds_build: float
    seconds_solve: float
    chain: BackloggedChain | None = field(default=None, repr=False)
    stationary: np.ndarray | None = field(default=None, repr=False)


def ctmc_stability(servers: int, tasks: int, needed: int | None = None,
                   task_rate: float = 1.0, max_states: int = MAX_STATES,
                   method: str = "auto", keep_chain: bool = False) -> CTMCStability:
    """Maximum job throughput and utilization of a backlogged 1-barrier (s,k,l) system.

    Parameters
    ----------
    servers, tasks, needed : int
        s, k, l with ``1 <= l <= k <= s``.
    task_rate : float
        mu > 0; the chain is solved for mu = 1 and rates scale with mu.
    max_states : int
        Refuse (with a clear error) chains with more feasible states.
    method : {"auto", "dense", "levels", "direct"}
        Stationary solver, see :meth:`BackloggedChain.stationary`.
    keep_chain : bool
        Keep the chain and the stationary vector on the result.

    Examples
    --------
    >>> round(ctmc_stability(12, 3, 2).lambda_max, 4)
    5.4784
    """
    s, k, l_ = _check(servers, tasks, needed)
    mu = check_positive("task_rate", task_rate, "(tasks per unit time)")
    return solve(s, k, l_, mu, check_int("max_states", max_states, low=1), method, keep_chain)


def solve(s: int, k: int, l_: int, mu: float, max_states: int = MAX_STATES, method: str = "auto",
          keep_chain: bool = False) -> CTMCStability:
    """:func:`ctmc_stability` of validated parameters (e.g. the fields of a BarrierSystem; no checks)."""
    chain = _build(s, k, l_, max_states)
    t0 = time.perf_counter()
    q = chain.dense_generator() if chain.size <= DENSE_MAX_STATES else None      # built once, for both uses
    pi = _stationary_dense(q) if q is not None and method in ("auto", "dense") else chain.stationary(method)
    seconds_solve = time.perf_counter() - t0
    # relative balance residual |pi Q| / (pi . exit rates), a convergence check
    residual = float(np.abs((q if q is not None else chain.generator).T @ pi).max() / (pi @ chain.busy_workers))
    lam = float(pi @ chain.start_rates) * mu
    total, useful = exp_server_time_per_job(k, l_, mu)
    return CTMCStability(s, k, l_, mu, lam, lam * total / s, lam * useful / s,
                         int(pi.size), chain.feasible, residual, chain.seconds_build,
                         seconds_solve, chain if keep_chain else None,
                         pi if keep_chain else None)
