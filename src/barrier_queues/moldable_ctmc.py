"""The exact CTMC of a small moldable barrier system with exponential tasks (Appendix B, section 7).

The model is :mod:`barrier_queues.moldable`'s (``s`` workers, one FIFO queue, Poisson arrivals of rate
``lambda``, ``k`` tasks per job, each Exp(``mu``), the policy choosing the workers ``m`` of the head job) with
exponential tasks. A worker dealt ``j`` tasks runs an Erlang(``j``, ``mu``) composite task; by memorylessness
its state is the number of its tasks not yet finished (its *height* ``h_w``, the running one included), and one
of them ends at rate ``mu``. So the process is Markov in

    (q, r, jobs)

with ``q`` the jobs waiting, ``r`` the waiting head's requirement (``take-random-all`` and ``fixed``; 0
otherwise) and ``jobs`` the multiset of jobs in service, each the multiset of its claimed workers' heights
(with 1 barrier a worker leaves its job, freed, at height 0; with 2 barriers it stays, held, until all of its
job's workers are at 0 and the job departs). Workers are exchangeable, so which ones a job claims does not
matter. ``patience`` with ``min`` or ``mean`` reads only the heights; ``height`` (forkulator's estimator)
reads the time since each job started, which this state does not hold, so it has no such chain.

Transitions: an arrival (rate ``lambda``) adds one waiting job; a task end on a worker of height ``h``
(rate ``mu`` per busy worker) lowers it to ``h - 1``. After either, the decision walk of the section runs in
the same instant: while jobs wait and a worker is free, the policy starts the head on ``m = min(n, k)``
workers (dealt ``ceil(k/m)`` tasks on ``k mod m`` of them, ``floor(k/m)`` on the others) or leaves it
waiting. The walk's random choices (``take-random``'s ``n`` uniform on ``{1, ..., F}``; a new head's
requirement ``min(k, U{1, ..., s})``) branch the transition.

The queue is truncated at ``q_max`` (an arrival that finds ``q_max`` waiting is lost); ``q_max`` doubles
until the means change by less than ``rtol`` between two truncations, and the result states that change and
the probability of the top level. Means by Little's law over the accepted arrivals' rate ``lambda_a``:
waiting ``E[q] / lambda_a``, execution ``E[jobs in service] / lambda_a``, workers per job the rate of claimed
workers over ``lambda_a``. ``pi Q = 0`` is solved with scipy's sparse solvers (:func:`_stationary`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import moldable_policies
from ._validation import ParameterError, check_choice, check_int, check_positive
from .moldable import moldable_system

#: policies whose decisions read only the state above (``patience`` with ``min`` or ``mean``)
#: the policies whose exact chain is written here (_Chain._choices: a policy added to the registry has none)
CTMC_POLICIES = ("take-fraction", "take-random", "take-random-all", "fixed", "patience")
#: refusal threshold for the chain's states (memory guard: sparse LU of the generator)
MAX_STATES = 400_000


def deal(k: int, m: int) -> tuple:
    """Heights of the ``m`` workers a job of ``k`` tasks claims: ``k mod m`` get ``ceil(k/m)``, the others
    ``floor(k/m)`` (sorted, largest first)."""
    big, rest = divmod(k, m)
    return (big + 1,) * rest + (big,) * (m - rest)


@dataclass
class MoldableChainResult:
    """Stationary means of the truncated chain (times in the units of ``1/mu``)."""

    mean_waiting: float
    mean_execution: float
    mean_sojourn: float
    mean_workers: float
    mean_busy_workers: float
    states: int
    queue_limit: int
    top_level_probability: float
    truncation_change: float

    def as_dict(self) -> dict:
        return dict(self.__dict__)


class _Chain:
    def __init__(self, s, k, lam, mu, policy, f, wait, two_barrier, requirement):
        self.s, self.k, self.lam, self.mu = s, k, lam, mu
        self.policy, self.f, self.wait, self.two = policy, f, wait, two_barrier
        if policy == "take-random-all":
            pmf: dict[int, float] = {}
            for j in range(1, s + 1):
                pmf[min(k, j)] = pmf.get(min(k, j), 0.0) + 1.0 / s
            self.req = sorted(pmf.items())
        elif policy == "fixed":
            self.req = [(min(k, requirement), 1.0)]
        else:
            self.req = None
        self._walks: dict = {}

    def held(self, jobs) -> int:
        return sum(len(j) for j in jobs)

    def _choices(self, free: int, r: int, jobs) -> list:
        """(probability, n) of the head's start with ``free`` workers free (empty: it waits)."""
        p, k, s = self.policy, self.k, self.s
        if p == "take-fraction":
            return [(1.0, 1 if free == 1 else max(1, math.ceil(free * self.f)))]
        if p == "take-random":
            return [(1.0 / free, n) for n in range(1, free + 1)]
        if p in ("take-random-all", "fixed"):
            return [(1.0, r)] if free >= r else []
        heights = [h for job in jobs for h in job if h > 0]
        if not heights:
            expected = 0.0
        elif self.wait == "min":
            expected = float(min(heights))
        else:
            expected = sum(heights) / len(heights)
        speedup = 0.0 if free >= s else k / free - k / (free + 1)
        return [] if speedup > expected else [(1.0, free)]

    def walk(self, q: int, r: int, jobs) -> list:
        """The decision walk from a state just after an event: [(probability, q', r', jobs', claimed)]. It
        depends on ``q`` only through whether the queue can run out (at most ``s`` starts), so it is cached
        per ``min(q, s + 1)`` and returns ``q'`` as a change."""
        key = (min(q, self.s + 1), r, jobs)
        hit = self._walks.get(key)
        if hit is None:
            hit = []
            self._walk(key[0], r, jobs, 1.0, 0, hit, key[0])
            self._walks[key] = hit
        return [(p, q + dq, r2, j2, c) for p, dq, r2, j2, c in hit]

    def _walk(self, q, r, jobs, prob, claimed, out, q0):
        free = self.s - self.held(jobs)
        choices = self._choices(free, r, jobs) if q > 0 and free > 0 else []
        if not choices:
            out.append((prob, q - q0, r, jobs, claimed))
            return
        for pn, n in choices:
            m = min(n, self.k)
            started = tuple(sorted(jobs + (deal(self.k, m),)))
            if self.req is not None and q > 1:
                for r2, pr in self.req:
                    self._walk(q - 1, r2, started, prob * pn * pr, claimed + m, out, q0)
            else:
                self._walk(q - 1, 0, started, prob * pn, claimed + m, out, q0)

    def events(self, q: int, r: int, jobs, q_max: int) -> list:
        """[(rate, q', r', jobs', claimed)] out of a state (after each event's decision walk)."""
        out = []
        if q < q_max:
            if q == 0 and self.req is not None:
                for r2, pr in self.req:
                    out += [(self.lam * pr * p, *rest) for p, *rest in self.walk(1, r2, jobs)]
            else:
                out += [(self.lam * p, *rest) for p, *rest in self.walk(q + 1, r, jobs)]
        for i, job in enumerate(jobs):
            others = jobs[:i] + jobs[i + 1:]
            for h in sorted(set(job)):
                if h == 0:
                    continue
                count = job.count(h)
                lowered = list(job)
                lowered[lowered.index(h)] = h - 1
                if not self.two:
                    lowered = [x for x in lowered if x > 0]
                after = others if not any(lowered) else tuple(sorted(others + (tuple(sorted(lowered,
                                                                                           reverse=True)),)))
                out += [(self.mu * count * p, *rest) for p, *rest in self.walk(q, r, after)]
        return out


#: the incomplete LU that preconditions GMRES: the states are in breadth-first order, so the matrix is nearly
#: banded by queue level, and the factor in that natural order with a coarse drop tolerance is cheap while GMRES
#: still reaches 1e-13 (benchmarks/moldable_ctmc_speed.py runs it beside the earlier COLAMD, 1e-4, 10)
ILU = {"drop_tol": 1e-2, "fill_factor": 3, "permc_spec": "NATURAL"}


def _stationary(n: int, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> np.ndarray:
    """``pi Q = 0``, ``sum pi = 1`` for the generator with off-diagonal rates ``vals`` at (``rows``, ``cols``).
    With ``pi_0`` fixed to 1 the other balance equations are a nonsingular sparse system (no dense
    normalization row, which made LU fill in); it is solved by GMRES preconditioned with an incomplete LU in the
    states' breadth-first order (several times faster than the complete LU on these chains; timings in the
    CHANGELOG and benchmarks/moldable_ctmc_speed.py), and by complete sparse LU if GMRES stops short of a relative
    residual of 1e-13."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import LinearOperator, gmres, spilu, spsolve

    off = rows != cols
    rows, cols, vals = rows[off], cols[off], vals[off]
    out = np.bincount(rows, vals, n)
    q_t = sp.csc_matrix((np.concatenate([vals, -out]), (np.concatenate([cols, np.arange(n)]),
                                                        np.concatenate([rows, np.arange(n)]))), shape=(n, n))
    if n == 1:
        return np.ones(1)
    sub = q_t[1:, 1:].tocsc()
    rhs = -q_t[1:, 0].toarray().ravel()
    x, info = None, 1
    try:
        ilu = spilu(sub, **ILU)
        x, info = gmres(sub, rhs, M=LinearOperator(sub.shape, ilu.solve), rtol=1e-13, atol=0.0, restart=50,
                        maxiter=200)
    except RuntimeError:                            # a singular incomplete factor
        info = 1
    if info != 0:
        x = spsolve(sub, rhs, permc_spec="COLAMD")
    pi = np.maximum(np.concatenate([[1.0], x]), 0.0)
    return pi / pi.sum()


def _explore(first: list, transitions, max_states: int, what: str) -> tuple:
    """Every state reachable from ``first`` (breadth first) and the chain's transitions: ``transitions(state)``
    yields ``(rate, target, reward)``; returns the states in order, the transitions as arrays (rows, cols, rates)
    and each state's reward rate (the sum of rate x reward out of it). Refused beyond ``max_states`` states."""
    index = {state: i for i, state in enumerate(dict.fromkeys(first))}
    order = list(index)
    rows, cols, vals, reward = [], [], [], []
    i = 0
    while i < len(order):
        total = 0.0
        for rate, target, gain in transitions(order[i]):
            t = index.get(target)
            if t is None:
                t = index[target] = len(order)
                order.append(target)
                if len(order) > max_states:
                    raise ParameterError(f"{what} has more than max_states = {max_states:,} states: a smaller system"
                                         ", or a lower load")
            rows.append(i)
            cols.append(t)
            vals.append(rate)
            total += rate * gain
        reward.append(total)
        i += 1
    return (order, np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64), np.array(vals, dtype=float),
            np.array(reward, dtype=float))


def _solve(chain: _Chain, q_max: int, max_states: int) -> dict:
    order, rows, cols, vals, claim_rate = _explore(
        [(0, 0, ())], lambda x: ((rate, (q2, r2, j2), claimed) for rate, q2, r2, j2, claimed in
                                 chain.events(*x, q_max)),
        max_states, f"the chain at queue limit {q_max}")
    n = len(order)
    pi = _stationary(n, rows, cols, vals)
    q = np.array([x[0] for x in order], dtype=float)
    in_service = np.array([len(x[2]) for x in order], dtype=float)
    busy = np.array([sum(h > 0 for job in x[2] for h in job) for x in order], dtype=float)
    accepted = chain.lam * float(pi[q < q_max].sum())
    return {"mean_waiting": float(pi @ q) / accepted, "mean_execution": float(pi @ in_service) / accepted,
            "mean_workers": float(pi @ claim_rate) / accepted, "mean_busy_workers": float(pi @ busy),
            "states": n, "top": float(pi[q == q_max].sum())}


def _states_at(chain: _Chain, q_max: int, max_states: int) -> int:
    """The chain's number of states at queue limit ``q_max`` from the chain at limit 1, without building it;
    more than ``max_states`` as soon as that is known. Every level ``q >= 1`` holds the same service states,
    because the decision walk reads the head and the workers, never ``q``: the count is ``n_0 + q_max n_1``,
    with ``n_q`` the states at level ``q`` of the chain at limit 1 (tested against the built chains). The walk
    stops once ``n_0 + q_max n_1`` passes ``max_states`` with the states found so far, so a chain too large at
    any load is refused after a fraction of the time its first truncation would take to build."""
    seen = {(0, 0, ())}
    order, levels = [(0, 0, ())], [1, 0]
    for state in order:                                  # breadth first, as _explore (the list grows)
        for _, q, r, jobs, _ in chain.events(*state, 1):
            if (q, r, jobs) not in seen:
                seen.add((q, r, jobs))
                order.append((q, r, jobs))
                levels[q] += 1
                if levels[0] + q_max * levels[1] > max_states:
                    return max_states + 1
    return levels[0] + q_max * levels[1]

def _checked_chain(servers, tasks, arrival_rate, policy, take_fraction, patience_wait, barriers, task_rate,
                   requirement) -> _Chain:
    """The chain of a small moldable system, its arguments checked once for both entry points."""
    s = check_int("servers", servers, low=1, high=64)
    k = check_int("tasks", tasks, low=1, high=64)
    system = moldable_system(s, k, policy, take_fraction, patience_wait, barriers, requirement=requirement)
    take_fraction, requirement = system.take_fraction, system.requirement    # (validated there, once: n <= s)
    patience_wait = system.patience_wait or "min"
    check_choice("moldable (a policy with an exact chain)", policy, CTMC_POLICIES)
    if policy == "patience" and patience_wait == "height":
        raise ParameterError("patience_wait 'height' has no exact chain here: it reads the time since each job "
                             "started, which the chain's state (tasks left per worker) does not hold; use 'min' "
                             "or 'mean', or simulate")
    lam = check_positive("arrival_rate", arrival_rate)
    mu = check_positive("task_rate", task_rate)
    return _Chain(s, k, lam, mu, policy, take_fraction, patience_wait, barriers == 2, requirement)


def moldable_ctmc(servers: int, tasks: int, arrival_rate: float, policy: str, take_fraction: float | None = None,
                  patience_wait: str | None = None, barriers: int = 1, task_rate: float = 1.0,
                  requirement: int | None = None, rtol: float = 1e-7, q_max: int = 16,
                  max_states: int = MAX_STATES) -> MoldableChainResult:
    """Stationary mean waiting, execution, sojourn and workers per job of the moldable system with Exp(``mu``)
    tasks from its exact CTMC (module docstring), the queue truncated at ``q_max`` doubled until the means
    change by less than ``rtol`` (relative). Refused: ``patience`` with ``height`` (not Markov in this state),
    and a system whose truncations do not converge within ``max_states`` states (unstable, or too near its
    limit for a chain this size)."""
    chain = _checked_chain(servers, tasks, arrival_rate, policy, take_fraction, patience_wait, barriers, task_rate,
                           requirement)
    s, k, lam, mu = chain.s, chain.k, chain.lam, chain.mu
    check_positive("rtol", rtol)
    if moldable_policies.POLICIES[policy].work_conserving and barriers == 1 and lam * k / mu >= s:
        raise ParameterError(f"arrival_rate must be below the work-conserving limit s mu / k = {s * mu / k:g} "
                             f"(got {lam:g}): the system is unstable and has no stationary means")
    q_max = check_int("q_max", q_max, low=1, high=1_000_000)
    too_large = (f"the exact chain of this system has more than max_states = {max_states:,} states already at "
                 f"the first queue limit {q_max}: it is too large at any load (fewer servers or tasks, or simulate "
                 "it)")
    if _states_at(chain, q_max, max_states) > max_states:
        raise ParameterError(too_large)
    previous, change = None, math.inf
    while True:
        try:
            out = _solve(chain, q_max, max_states)
        except ParameterError as error:
            if previous is None:                # the first truncation alone is too large: a size, not a load, limit
                raise ParameterError(too_large) from None
            raise ParameterError(f"{error} (the means still changed by {change:.1e} between the last two queue "
                                 "limits: is the system stable at this load?)") from None
        if previous is not None:
            change = max(abs(out[x] - previous[x]) / max(abs(out[x]), 1e-300)
                         for x in ("mean_waiting", "mean_execution", "mean_workers"))
            if change < rtol:
                break
        previous = out
        q_max *= 2
    return MoldableChainResult(mean_waiting=out["mean_waiting"], mean_execution=out["mean_execution"],
                               mean_sojourn=out["mean_waiting"] + out["mean_execution"],
                               mean_workers=out["mean_workers"], mean_busy_workers=out["mean_busy_workers"],
                               states=out["states"], queue_limit=q_max, top_level_probability=out["top"],
                               truncation_change=change)


def moldable_saturated_ctmc(servers: int, tasks: int, policy: str, take_fraction: float | None = None,
                            patience_wait: str | None = None, barriers: int = 1, task_rate: float = 1.0,
                            requirement: int | None = None, max_states: int = MAX_STATES) -> dict:
    """The exact stability limit of a small moldable system with Exp(``mu``) tasks: the job throughput of the
    always-backlogged chain (the queue never empties, so the state is the head's requirement and the jobs in
    service; only task ends move it, each followed by the decision walk). ``lambda_max`` is the stationary rate
    of starts; ``rho_max = lambda_max k / (s mu)``. The system is stable iff ``lambda < lambda_max``."""
    chain = _checked_chain(servers, tasks, 1.0, policy, take_fraction, patience_wait, barriers, task_rate,
                           requirement)
    s, k, mu = chain.s, chain.k, chain.mu
    deep = s + 1                                    # the walk cannot empty a queue this long; arrivals never come
    first = [(r2, j) for r, _ in (chain.req or [(0, 1.0)]) for _, _, r2, j, _ in chain.walk(deep, r, ())]
    order, rows, cols, vals, start_rate = _explore(
        first, lambda x: ((rate, (r2, j2), deep - q2) for rate, q2, r2, j2, _ in chain.events(deep, *x, deep)),
        max_states, "the backlogged chain")
    keep = _closed_class(len(order), rows, cols)   # the states first reached may be transient
    where = np.full(len(order), -1)
    where[keep] = np.arange(keep.size)
    inside = (where[rows] >= 0) & (where[cols] >= 0)
    pi = _stationary(keep.size, where[rows[inside]], where[cols[inside]], vals[inside])
    lam = float(pi @ start_rate[keep])
    return {"lambda_max": lam, "rho_max": lam * k / (s * mu), "states": int(keep.size),
            "method": "ctmc (backlogged)"}


def _closed_class(n: int, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The states of the chain's closed communicating class (a strongly connected component with no transition
    out of it): the recurrent states, where the stationary law lives."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    graph = sp.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n)).tocsr()
    count, label = connected_components(graph, directed=True, connection="strong")
    leaves = np.ones(count, dtype=bool)
    leaves[np.unique(label[rows[label[rows] != label[cols]]])] = False
    closed = np.flatnonzero(leaves)
    if closed.size != 1:
        raise ParameterError(f"the backlogged chain has {closed.size} closed classes: no unique stationary law")
    return np.flatnonzero(label == closed[0])

__all__ = ["CTMC_POLICIES", "MAX_STATES", "MoldableChainResult", "deal", "moldable_ctmc",
           "moldable_saturated_ctmc"]
