"""Moldable barrier jobs: the number of workers a job takes is chosen online (Appendix B, section 7).

The policies are a registry (:mod:`barrier_queues.moldable_policies`); the list below states each.

``s`` workers and one FIFO queue. A job of ``k`` tasks (iid task times, in task order) starts on ``m = min(n,
k)`` workers chosen when it reaches the head: it claims the ``m`` lowest-numbered free workers, its task ``i``
goes to claimed worker ``i mod m``, and each worker runs its tasks back to back (its *composite task*). With 1
barrier a worker is freed when its last task ends; with 2 barriers all ``m`` are held until the job departs
(its last task's end). Decision points are arrivals and every task end (releases of an instant first); at a
decision, while jobs wait and ``F >= 1`` workers are free, the policy starts the head with ``n`` workers or
leaves it waiting (which blocks the jobs behind it):

* ``take-fraction f``: ``n = 1`` if ``F = 1``, else ``max(1, ceil(F f))`` (the product in double precision,
  as the paper authors' forkulator computes it);
* ``take-random``: the same with a fresh ``U ~ Uniform[0, 1)`` per started job in place of ``f``;
* ``take-random-all``: each job draws a requirement ``n = min(k, max(1, ceil(s U)))``; the head starts only
  when ``F >= n``;
* ``fixed n`` (``requirement``; ours, the baseline of a fixed choice): every job needs ``min(k, n)`` workers and
  the head starts only when that many are free (``n = k``: the paper's system, job by job);
* ``patience W``: with ``l = F`` free workers, the speed-up of one more worker ``S = k/l - k/(l+1)`` (0 when
  all ``s`` are free) against the expected wait ``E`` for the next free worker (in mean task times): if ``S >
  E`` the head is deferred, else it starts on all ``F`` free workers. ``E`` over the ``b`` busy workers, with
  ``h_w`` a worker's unfinished tasks (the running one included): ``min`` = ``min h_w``, ``mean`` = ``sum h_w /
  b``, ``height`` = ``sum hh_w / b`` with ``hh_w = sum_{j<H} (H - j) x^j / j! / sum_{j<H} x^j / j!``, ``H`` the
  tasks dealt to the worker at its job's start ``t_w`` and ``x = mu (t - t_w)`` (0 with no busy worker).

This module is the model's plain-Python implementation (:func:`moldable_run`, per job: the reference), its
compiled kernel (:func:`moldable_compiled`, ``_moldable.pxi``: the same starts, departures and workers, bit for
bit, tested) and its simulation front (:func:`simulate_moldable`: replications, one MSER-5 warm-up for all of
them, t intervals over replications, the drift test), which runs the kernel.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from . import moldable_policies
from ._validation import ParameterError, check_choice, check_int
from .moldable_policies import PATIENCE_WAITS
from .statistics import drift, replicated_warmup, t_interval
from .system import MAX_SERVERS

#: the policies' names (the registry's: barrier_queues.moldable_policies)
POLICIES = moldable_policies.names()
#: the most task times one replication may draw (they are drawn at once: 8 bytes each)
MAX_DRAWS = 200_000_000


def _height(h: int, x: float) -> float:
    """Expected exponential stages left of a worker dealt ``h`` tasks, still busy after ``x`` mean task times
    (``sum_{j<h} (h - j) x^j / j! / sum_{j<h} x^j / j!``, in logs: no overflow for large ``x``)."""
    if x <= 0.0:
        return float(h)
    lx, lf, logs = math.log(x), 0.0, []
    for j in range(h):                               # log j! as a running sum of log i
        if j > 0:
            lf = lf + math.log(j)
        logs.append(j * lx - lf)
    top = max(logs)
    weights = [math.exp(v - top) for v in logs]
    return sum((h - j) * w for j, w in enumerate(weights)) / sum(weights)


def _expected_wait(busy: dict, wait: str, now: float, mu: float) -> float:
    """``E`` of the patience rule over the busy workers: ``busy[w] = (tasks left, tasks dealt, job start)``."""
    if not busy:
        return 0.0
    if wait == "min":
        return float(min(left for left, _, _ in busy.values()))
    if wait == "mean":
        return sum(left for left, _, _ in busy.values()) / len(busy)
    return sum(_height(dealt, mu * (now - t0)) for _, dealt, t0 in busy.values()) / len(busy)


def _workers_wanted(policy: str, free: int, servers: int, k: int, f: float | None, u: float, wait: str,
                    busy: dict, now: float, mu: float) -> int:
    """How many workers the head takes now (0: it waits): the policy's plain rule (its registry entry)."""
    return moldable_policies.POLICIES[policy].wanted(free, servers, k, f, u,
                                                     lambda: _expected_wait(busy, wait, now, mu))


def moldable_run(arrivals, tasks: int, times, servers: int, policy: str, take_fraction: float | None = None,
                 uniforms=None, patience_wait: str = "min", two_barrier: bool = False, mu: float = 1.0,
                 requirement: int | None = None) -> dict:
    """Per job ``start``, ``departure`` and ``workers`` (m) of one sample path: ``arrivals`` sorted, ``times``
    the ``k`` task times of each job in task order (job-major), ``uniforms`` one U per job (take-random: used
    when the job starts; take-random-all: its requirement), ``requirement`` the n of ``fixed``."""
    n, k = len(arrivals), int(tasks)
    if policy == "fixed":
        take_fraction = requirement
    start, departure, workers = [math.nan] * n, [math.nan] * n, [0] * n
    free = list(range(servers))                         # a min-heap of free worker ids
    busy: dict[int, list] = {}                          # worker -> [tasks left, tasks dealt, job start]
    holders: dict[int, list] = {}                       # job -> its workers still held (2 barriers)
    left_in_job = [0] * n
    events: list = []                                   # (time, 0, worker, job, last task of the worker?)
    head, i, now = 0, 0, -math.inf
    while i < n or events:
        t_event = events[0][0] if events else math.inf
        t_arrival = arrivals[i] if i < n else math.inf
        now = min(t_event, t_arrival)
        while events and events[0][0] == now:           # every task end of the instant first
            _, _, w, j, last = heapq.heappop(events)
            busy[w][0] -= 1
            left_in_job[j] -= 1
            if last:
                del busy[w]
                if not two_barrier:
                    heapq.heappush(free, w)
            if left_in_job[j] == 0:
                departure[j] = now
                if two_barrier:
                    for w2 in holders.pop(j):
                        heapq.heappush(free, w2)
        if t_arrival == now:
            i += 1                                      # one arrival per decision (in arrival order)
        while head < i and free:
            want = _workers_wanted(policy, len(free), servers, k, take_fraction,
                                   float(uniforms[head]) if uniforms is not None else 0.0, patience_wait, busy,
                                   now, mu)
            if want == 0:
                break
            m = min(want, k)
            claimed = [heapq.heappop(free) for _ in range(m)]
            start[head], workers[head], left_in_job[head] = now, m, k
            if two_barrier:
                holders[head] = claimed
            for slot, w in enumerate(claimed):
                mine = list(range(slot, k, m))         # task i goes to claimed worker i mod m
                busy[w] = [len(mine), len(mine), now]
                end = now
                for count, task in enumerate(mine):
                    end += float(times[head * k + task])
                    heapq.heappush(events, (end, 0, w, head, count == len(mine) - 1))
            head += 1
    return {"start": start, "departure": departure, "workers": workers}


def moldable_compiled(arrivals, tasks: int, times, servers: int, policy: str, take_fraction: float | None = None,
                      uniforms=None, patience_wait: str = "min", two_barrier: bool = False, mu: float = 1.0,
                      requirement: int | None = None) -> dict:
    """:func:`moldable_run` by the compiled kernel: the same arguments, numpy arrays out (the kernel reads the
    policy's one option value: take-fraction's f or fixed's n)."""
    option = float(requirement) if policy == "fixed" else 0.0 if take_fraction is None else float(take_fraction)
    from .kernels import kernels_module

    kernels = kernels_module()
    if policy not in kernels.MOLDABLE_POLICIES:
        raise ParameterError(f"moldable policy {policy!r} has no compiled code in the kernel's MOLDABLE_POLICIES: "
                             "add it to _moldable.pxi and rebuild (make install), or run compiled=False")
    arrivals = np.ascontiguousarray(arrivals, dtype=float)
    n = arrivals.size
    uniforms = np.zeros(n) if uniforms is None else np.ascontiguousarray(uniforms, dtype=float)
    start, departure, workers = np.empty(n), np.empty(n), np.empty(n, dtype=np.int64)
    kernels.moldable_kernel(arrivals, int(tasks), np.ascontiguousarray(times, dtype=float), int(servers),
                            kernels.MOLDABLE_POLICIES[policy], option,
                            uniforms, kernels.MOLDABLE_WAITS[patience_wait or "min"], bool(two_barrier), float(mu),
                            start, departure, workers)
    return {"start": start, "departure": departure, "workers": workers}


def check_moldable(policy: str, take_fraction, patience_wait, requirement=None) -> tuple:
    """The policy's options as its registry entry reads them (:func:`barrier_queues.moldable_policies.
    check_options`); one clear error otherwise. Returns ``(take_fraction, patience_wait, requirement)``."""
    out = moldable_policies.check_options(policy, take_fraction=take_fraction, patience_wait=patience_wait,
                                          requirement=requirement)
    return out["take_fraction"], out["patience_wait"], out["requirement"]


def utilization_per_rate(servers: int, tasks: int, task_dist=None) -> float:
    """rho / lambda of moldable jobs: a job brings ``k E[X]`` of work to ``s`` workers whatever workers it takes,
    so rho = lambda k E[X] / s (the arrival rate for a utilization is rho divided by this)."""
    return tasks * _law(task_dist).mean() / servers


def _law(task_dist):
    """The task law: Exp(1) by default, a spec string or a distribution."""
    from .distributions import as_task_distribution, parse_task_distribution

    return (parse_task_distribution("exponential:rate=1") if task_dist is None
            else parse_task_distribution(task_dist) if isinstance(task_dist, str) else as_task_distribution(task_dist))


def _replication_series(out: dict, arrivals: np.ndarray) -> dict:
    """One replication's per-job waiting, execution and workers."""
    start, dep = np.asarray(out["start"]), np.asarray(out["departure"])
    return {"waiting": start - arrivals, "execution": dep - start, "workers": np.asarray(out["workers"])}


def _replication_means(series: dict, cut: int) -> dict:
    """One replication's means after the warm-up ``cut`` (jobs) chosen over all replications."""
    w, e, m = series["waiting"][cut:], series["execution"][cut:], series["workers"][cut:]
    return {"waiting": float(w.mean()), "execution": float(e.mean()), "sojourn": float((w + e).mean()),
            "workers": float(m.mean()), "warmup": int(cut), "series": series["waiting"]}


def check_requirement(policy: str, requirement, servers: int) -> None:
    """``fixed``'s n is at most s, whatever k (each job takes min(k, n) workers; n > s names no real choice and
    was cut to k when k <= s but refused when k > s): the one rule of the simulator and the exact chain."""
    if policy == "fixed" and requirement > servers:
        raise ParameterError(f"requirement must be at most servers = {servers} (got {requirement}): n is the workers "
                             "each job takes, min(k, n), and a cluster has no more than s")


def _checked_system(servers, tasks, policy, take_fraction, patience_wait, requirement, barriers, task_dist, jobs,
                    min_jobs: int) -> tuple:
    """The arguments simulate_moldable and saturated_moldable share, checked once: ``(take_fraction,
    patience_wait, requirement, s, k, law, jobs)``."""
    take_fraction, patience_wait, requirement = check_moldable(policy, take_fraction, patience_wait, requirement)
    s = check_int("servers", servers, low=1, high=MAX_SERVERS, high_name=f"{MAX_SERVERS:,}")
    k = check_int("tasks", tasks, low=1, high=MAX_SERVERS, high_name=f"{MAX_SERVERS:,}")
    check_requirement(policy, requirement, s)
    check_choice("barriers", barriers, (1, 2))
    law = _law(task_dist)
    jobs = check_int("jobs", jobs, low=min_jobs, high=10**8, high_name="100,000,000")
    if jobs * k > MAX_DRAWS:
        raise ParameterError(f"jobs x tasks must be at most {MAX_DRAWS:,} task times per replication (got "
                             f"{jobs * k:,}): a replication's times are drawn at once ({8 * jobs * k / 1e9:.1f} GB)")
    return take_fraction, patience_wait, requirement, s, k, law, jobs


def simulate_moldable(servers: int, tasks: int, arrival_rate: float, policy: str, take_fraction: float | None = None,
                      patience_wait: str | None = None, barriers: int = 1, task_dist=None, arrival: str = "poisson",
                      jobs: int = 20_000, replications: int = 10, seed=None, level: float = 0.95,
                      compiled: bool = True, requirement: int | None = None, allow_unstable: bool = False) -> dict:
    """Mean waiting, sojourn, execution and workers per job with t intervals over ``replications`` independent
    replications of ``jobs`` jobs (one warm-up for all of them: MSER-5 on their averaged waiting times,
    :func:`barrier_queues.statistics.replicated_warmup`); ``stable`` from the drift test of every
    replication's waiting times (and, for the work-conserving take-fraction and take-random with 1 barrier,
    the condition ``lambda k E[X] < s``); no means for a system that is not stable. ``k`` may exceed ``s`` (a
    job's tasks are dealt onto the workers it takes). ``task_dist``: any task law (default Exp(1)); ``arrival``: poisson
    or deterministic. ``seed``: an integer or a ``numpy.random.SeedSequence``. ``compiled`` False: the
    plain-Python reference (the same numbers, slower)."""
    from ._validation import check_positive

    take_fraction, patience_wait, requirement, s, k, law, jobs = _checked_system(
        servers, tasks, policy, take_fraction, patience_wait, requirement, barriers, task_dist, jobs, 10)
    rate = check_positive("arrival_rate", arrival_rate)
    check_choice("arrival", arrival, ("poisson", "deterministic"))
    replications = check_int("replications", replications, low=1, high=10_000)
    mu = 1.0 / law.mean()
    if rate * k / mu >= s and not allow_unstable:
        # every policy serves each job's k tasks, so s workers serve at most s / (k E[X]) jobs per unit time
        raise ParameterError(f"arrival_rate must be below s / (k E[X]) = {s * mu / k:.6g}, the most any policy "
                             f"serves (got {rate:.6g}): the queue would grow without bound; lower it, or pass "
                             "allow_unstable=True (--allow-unstable) to simulate anyway")
    streams = (seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)).spawn(replications)
    per = []
    for stream in streams:
        rng = np.random.default_rng(stream)
        gaps = rng.exponential(1.0 / rate, jobs) if arrival == "poisson" else np.full(jobs, 1.0 / rate)
        arrivals = np.cumsum(gaps)
        times = law.rvs(jobs * k, rng)
        uniforms = rng.random(jobs)
        run = moldable_compiled if compiled else moldable_run
        out = run(arrivals, k, times, s, policy, take_fraction, uniforms, patience_wait, barriers == 2, mu,
                  requirement)
        per.append(_replication_series(out, arrivals))
    # one warm-up for all replications (MSER-5 on their averaged waiting, as every other simulation here: per
    # replication MSER mistakes a replication's own excursions for a transient and biases the means low)
    cut = replicated_warmup([p["waiting"] for p in per])[0]
    per = [_replication_means(p, cut) for p in per]
    work_conserving = moldable_policies.POLICIES[policy].work_conserving and barriers == 1
    tests = [drift(p["series"]) for p in per]                        # every replication's waiting times
    drifting = any(t["drifting"] for t in tests)
    untested = any(not math.isfinite(t["kendall_tau"]) for t in tests)
    stable = not drifting and (not work_conserving or rate * k / mu < s)
    if stable and untested:
        stable = None                      # too few measured jobs for the drift test: a short run does not pass
    summary = {"moldable": policy, "take_fraction": take_fraction, "requirement": requirement,
               "patience_wait": patience_wait if policy == "patience" else None, "jobs": jobs,
               "replications": replications, "stable": stable if stable is None else bool(stable),
               "warmup_jobs": [p["warmup"] for p in per],
               "ci": {"level": level},
               "method": ("compiled" if compiled else "plain-Python") + " model (barrier_queues.moldable), MSER-5 "
                         "warm-up on the replications' averaged waiting, t interval over replications"}
    for key in ("waiting", "sojourn", "execution", "workers"):
        values = [p[key] for p in per]
        summary[f"mean_{key}"] = float(np.mean(values)) if stable is not False else None
        summary["ci"][key] = (t_interval(values, level) if stable is not False and replications >= 2 else None)
    if stable is None:
        summary["reason"] = ("too few measured jobs to judge: the drift test needs 20 or more per replication "
                             "after the warm-up (run more jobs)")
    elif not stable:
        summary["reason"] = ("the waiting times grow (drift test)" if drifting else
                             "lambda k E[X] >= s: beyond the work-conserving limit")
    return summary



def saturated_moldable(servers: int, tasks: int, policy: str, take_fraction: float | None = None,
                       patience_wait: str | None = None, barriers: int = 1, task_dist=None, jobs: int = 20_000,
                       replications: int = 10, seed=None, level: float = 0.95, requirement: int | None = None) -> dict:
    """The stability limit of a moldable system by simulation: every job waits from time 0 (the queue never
    empties), so the rate of starts is the most the policy sustains. Per replication ``lambda_max`` is the
    number of starts after the first 10 % over the time they span; a t interval over ``replications``;
    ``rho_max = lambda_max k E[X] / s``. (Exponential tasks, small systems: the exact value is
    :func:`barrier_queues.moldable_ctmc.moldable_saturated_ctmc`.)"""
    take_fraction, patience_wait, requirement, s, k, law, jobs = _checked_system(
        servers, tasks, policy, take_fraction, patience_wait, requirement, barriers, task_dist, jobs, 100)
    replications = check_int("replications", replications, low=2, high=10_000)
    mu = 1.0 / law.mean()
    rates = []
    for stream in np.random.SeedSequence(seed).spawn(replications):
        rng = np.random.default_rng(stream)
        times = law.rvs(jobs * k, rng)
        out = moldable_compiled(np.zeros(jobs), k, times, s, policy, take_fraction, rng.random(jobs), patience_wait,
                                barriers == 2, mu, requirement)
        start = np.sort(np.asarray(out["start"]))
        cut = jobs // 10
        rates.append((jobs - 1 - cut) / (start[-1] - start[cut]))
    lam = float(np.mean(rates))
    lo, hi = t_interval(rates, level)
    return {"moldable": policy, "lambda_max": lam, "lambda_max_ci": [lo, hi], "rho_max": lam * k / (s * mu),
            "rho_max_ci": [lo * k / (s * mu), hi * k / (s * mu)], "jobs": jobs, "replications": replications,
            "ci": {"level": level}, "method": "saturated simulation (every job waiting at time 0; starts after the "
                                               "first 10 % over the time they span; t interval over replications)"}

__all__ = ["MAX_DRAWS", "PATIENCE_WAITS", "POLICIES", "check_moldable", "check_requirement", "moldable_compiled",
           "moldable_run", "saturated_moldable", "simulate_moldable", "utilization_per_rate"]
