"""Moldable barrier jobs (Appendix B, section 7): one FIFO queue whose head chooses how many workers it takes.

``s`` workers and one FIFO queue. A job of ``k`` tasks (iid task times, in task order) starts on ``m = min(n,
k)`` workers chosen when it reaches the head: it claims the ``m`` lowest-numbered free workers, its task ``i``
goes to claimed worker ``i mod m``, and each worker runs its tasks back to back (its *composite task*). With 1
barrier a worker is freed when its last task ends; with 2 barriers all ``m`` are held until the job departs
(its last task's end). Decision points are arrivals and every task end (releases of an instant first); at a
decision, while jobs wait and ``F >= 1`` workers are free, the policy (a registry entry of
:mod:`barrier_queues.moldable_policies`, the system's ``moldable`` field) starts the head with ``n`` workers or
leaves it waiting (which blocks the jobs behind it). The policies' rules are stated in that module; the
``patience`` estimates of the wait for one more worker, over the ``b`` busy workers with ``h_w`` a worker's
unfinished tasks (the running one included): ``min`` = ``min h_w``, ``mean`` = ``sum h_w / b``, ``height`` =
``sum hh_w / b`` with ``hh_w = sum_{j<H} (H - j) x^j / j! / sum_{j<H} x^j / j!``, ``H`` the tasks dealt to the
worker at its job's start ``t_w`` and ``x = mu (t - t_w)`` (0 with no busy worker).

The room selects itself when ``BarrierSystem.moldable`` names a policy (fcfs, central queue, one k that may
exceed ``s``, no release rule, phases, overhead, failures, gang clocks or nodes). Kernel part:
``moldable.pxi`` (``moldable_kernel``: one replication at once, its task times drawn at once); plain
reference: :func:`moldable_run` (the same starts, departures and workers, bit for bit, tested). A replication
draws, in order, the arrival gaps, the ``k`` task times of every job and one uniform per job (take-random's
share, take-random-all's requirement).
"""

from __future__ import annotations

import heapq
import math
import time

import numpy as np

from .. import moldable_policies
from .._validation import ParameterError
from ..inputs import draw_jobs
from ..kernels import kernels_module
from .base import Scheduler, register

#: the most task times one replication may draw (they are drawn at once: 8 bytes each)
MAX_DRAWS = 200_000_000
#: the system fields this room owns (``moldable`` selects it; the rest are the policies' options)
PARAMS = ("moldable", *moldable_policies.OPTIONS)


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
    """The plain-Python reference: per job ``start``, ``departure`` and ``workers`` (m) of one sample path.
    ``arrivals`` sorted, ``times`` the ``k`` task times of each job in task order (job-major), ``uniforms`` one
    U per job (take-random: used when the job starts; take-random-all: its requirement), ``requirement`` the n
    of ``fixed``."""
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
    kernels = kernels_module()
    if policy not in kernels.MOLDABLE_POLICIES:
        raise ParameterError(f"moldable policy {policy!r} has no compiled code in the kernel's MOLDABLE_POLICIES: "
                             "add it to schedulers/moldable.pxi and rebuild (make install), or run its plain "
                             "reference (barrier_queues.schedulers.moldable.moldable_run)")
    arrivals = np.ascontiguousarray(arrivals, dtype=float)
    n = arrivals.size
    uniforms = np.zeros(n) if uniforms is None else np.ascontiguousarray(uniforms, dtype=float)
    start, departure, workers = np.empty(n), np.empty(n), np.empty(n, dtype=np.int64)
    kernels.moldable_kernel(arrivals, int(tasks), np.ascontiguousarray(times, dtype=float), int(servers),
                            kernels.MOLDABLE_POLICIES[policy], option,
                            uniforms, kernels.MOLDABLE_WAITS[patience_wait or "min"], bool(two_barrier), float(mu),
                            start, departure, workers)
    return {"start": start, "departure": departure, "workers": workers}


# --------------------------------------------------------------------------------------------------
# the room: a system's fields, its replications and its given inputs

def _validate(system, set_) -> None:
    """The policy and its one option (its registry entry's check), ``fixed``'s n at most s, and every field a
    moldable system does not read refused (one k, fcfs on the central queue, no release rule, phases,
    overhead, failures, gang clocks or nodes)."""
    out = moldable_policies.check_options(system.moldable, take_fraction=system.take_fraction,
                                          patience_wait=system.patience_wait, requirement=system.requirement)
    set_("take_fraction", out["take_fraction"])
    set_("requirement", out["requirement"])
    set_("patience_wait", out["patience_wait"] if system.moldable == "patience" else None)
    if system.requirement is not None and system.requirement > system.servers:
        raise ParameterError(f"requirement must be at most servers = {system.servers} (got {system.requirement}): "
                             "n is the workers each job takes, min(k, n), and a cluster has no more than s")
    for name, value, ok in (("tasks_pmf", system.tasks_pmf, None), ("workload", system.workload, None),
                            ("trace", system.trace, None), ("barrier_fraction", system.barrier_fraction, 1.0),
                            ("needed", system.needed, system.tasks), ("release", system.release, "fixed"),
                            ("phases", system.phases, 1), ("overhead", system.overhead, None)):
        if value != ok:
            raise ParameterError(f"{name} must be {ok!r} with moldable jobs (got {value!r}): a moldable job is "
                                 "one k of barrier tasks that all finish, its workers chosen at the head")


def _guard(system, jobs: int, saturated: bool) -> None:
    draws = jobs * system.tasks
    if draws > MAX_DRAWS:
        raise ParameterError(f"jobs x tasks must be at most {MAX_DRAWS:,} task times per replication with moldable "
                             f"jobs (got {draws:,}): a replication's times are drawn at once "
                             f"({8 * draws / 1e9:.1f} GB)")


def _path(engine, system, inputs: dict) -> dict:
    """``engine`` (:func:`moldable_compiled` or :func:`moldable_run`) on a system's inputs."""
    return engine(inputs["arrival"], system.tasks, inputs["times"], system.servers, system.moldable,
                  system.take_fraction, inputs.get("uniforms"), system.patience_wait or "min", system.barriers == 2,
                  1.0 / system.mean_task, system.requirement)


def _outputs(system, inputs: dict, out: dict) -> dict:
    """The per-job arrays every room hands on (a job's work: its k task times; every task completes), and the
    workers it took."""
    n, k = inputs["arrival"].size, system.tasks
    work = np.asarray(inputs["times"], dtype=float).reshape(n, k).sum(axis=1)
    return {"start": out["start"], "departure": out["departure"], "work": work, "useful": work,
            "completed": np.full(n, k, dtype=np.int64), "workers": np.asarray(out["workers"], dtype=np.int64)}


def run(system, jobs, rng, saturated, trace, sink):
    """One replication at once (the kernel is not resumable): arrival gaps, task times and one uniform per job
    drawn in that order, the kernel, and the per-job arrays to the statistics."""
    if trace:
        raise ParameterError("trace must not be asked of moldable jobs (got a trace): their kernel records each "
                             "job's start, departure and workers, not each task's worker")
    inputs = draw_jobs(system, jobs, rng, saturated=saturated)
    inputs["uniforms"] = rng.random(jobs)
    t0 = time.perf_counter()
    out = run_inputs(system, inputs)
    kernel = time.perf_counter() - t0
    sink.add({"arrival": inputs["arrival"], "tasks": inputs["tasks"], "barrier": inputs["barrier"], **out})
    return kernel, None


def run_inputs(system, inputs: dict, phase: float = 0.0) -> dict:
    """The kernel on given inputs (``uniforms``: one per job, zeros if absent): per-job arrays."""
    return _outputs(system, inputs, _path(moldable_compiled, system, inputs))


def reference(system, inputs: dict, phase: float = 0.0, trace: bool = False) -> dict:
    """:func:`moldable_run` on a system and its inputs: the per-job arrays of :func:`run_inputs`."""
    out = _path(moldable_run, system, inputs)
    return _outputs(system, inputs, {key: np.asarray(v) for key, v in out.items()})


SCHEDULER = register(Scheduler(
    "moldable", "moldable jobs: one FIFO queue whose head takes a number of workers chosen by a policy",
    run=run, run_inputs=run_inputs, reference=reference, placement="central", params=PARAMS, validate=_validate,
    guard=_guard, kernel_include="schedulers/moldable.pxi", moldable=True))

__all__ = ["MAX_DRAWS", "PARAMS", "SCHEDULER", "moldable_compiled", "moldable_run", "reference", "run",
           "run_inputs"]
