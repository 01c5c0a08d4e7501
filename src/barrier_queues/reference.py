"""Slow, obviously-correct plain-Python simulators (heapq, deques), for validation.

They implement the rules of MODEL.md section 2 and EXTENSIONS.md sections 1-3
without sharing any code with the compiled kernels
(:mod:`barrier_queues._kernels`). Fed the same random inputs
(:func:`barrier_queues.simulate.draw_jobs`, and the probed workers of
:func:`barrier_queues.simulate.draw_probes`) they must give identical per-job
results, bit for bit; the tests check that for every system type, and the
benchmark uses them as the pure-Python baseline.

Floating-point operations are done in the order the rules are stated in
(e.g. a job's useful work is summed task by task in increasing order of the
completion times), so the equality can be exact.
"""

from __future__ import annotations

import heapq
import math
from collections import deque


def knee(ordered: list[float], min_fraction: float, min_wait: float, gain: float = 0.125):
    """The knee-detector release of sorted completion times (EXTENSIONS.md section 1): (D, L)."""
    k = len(ordered)
    if k == 1:
        return ordered[0], 1
    need = math.ceil(min_fraction * k - 1e-12)
    gaps = [ordered[0]] + [ordered[i] - ordered[i - 1] for i in range(1, k)]
    arr, dev = gaps[0], gaps[0] / 2.0
    for done in range(1, k):               # after completion number `done`
        if done >= 2:
            g = gaps[done - 1]
            dev = 0.75 * dev + 0.25 * abs(arr - g)
            arr = (1.0 - gain) * arr + gain * g
        threshold = arr + 4.0 * dev
        if gaps[done] > threshold:          # the next completion is late: a knee
            when = ordered[done - 1] + threshold
            if done >= need and when >= min_wait:
                return when, done
    return ordered[-1], k


def service(draws: list[float], k: int, phases: int = 1, release: str = "fixed", needed: int | None = None,
            min_fraction: float = 0.5, min_wait: float = 0.0, gain: float = 0.125, timeout: float = math.inf,
            sync: str = "ideal", poll: float = 1.0):
    """One job: (departure D, completed L, useful work, per-task occupation) relative to its start.

    ``draws`` are the job's ``k * phases`` task times, phase after phase.
    """
    if phases > 1:
        ends = list(draws[:k])
        for p in range(1, phases):
            release_at = max(ends)
            resumes = []
            for e in ends:
                if sync == "spark":       # each task polls every `poll` from its own arrival
                    resumes.append(e + poll * (math.floor((release_at - e) / poll) + 1))
                else:
                    resumes.append(release_at)
            ends = [r + x for r, x in zip(resumes, draws[p * k:(p + 1) * k], strict=True)]
        useful = 0.0
        for x in draws:
            useful += x
        return max(ends), k, useful, ends
    xs = list(draws)
    ordered = sorted(xs)
    if release == "fixed":
        done = k if needed is None else needed
        cut = ordered[done - 1]
        if done == k:
            useful = 0.0
            for x in xs:                   # conventional: summed in task order
                useful += x
            return max(xs), k, useful, xs
    elif release == "timeout":
        if ordered[-1] <= timeout:
            cut, done = ordered[-1], k
        else:
            cut, done = timeout, sum(1 for x in ordered if x <= timeout)
    else:
        cut, done = knee(ordered, min_fraction, min_wait, gain)
    useful = 0.0
    for x in ordered[:done]:
        useful += x
    return cut, done, useful, [min(x, cut) for x in xs]


def _service_args(kwargs: dict) -> dict:
    return {k: v for k, v in kwargs.items() if k in ("phases", "release", "needed", "min_fraction", "min_wait",
                                                     "gain", "timeout", "sync", "poll")}


def simulate_reference(arrivals, tasks, barrier, times, servers: int, two_barrier: bool = False,
                       event_overhead: bool = False, revive: float = 1.0, phase: float = 0.0,
                       trace: bool = False, **rule):
    """The central FIFO queue, job by job with a heap of ``(free time, worker)``.

    ``times`` holds the draws of job 0, then job 1, ... (``tasks[j] * phases``
    each). ``rule`` are the keyword arguments of :func:`service` (``needed``
    applies to every job). Returns per-job lists ``start`` (of the job's last
    task), ``departure``, ``work`` (occupation of workers by its tasks),
    ``useful`` and ``completed``; with ``trace`` also per-task ``worker``,
    ``start`` and ``end`` (one entry per task, in the order of the draws).
    """
    phases = rule.get("phases", 1)
    free = [(0.0, w) for w in range(servers)]
    heapq.heapify(free)
    last = 0.0
    offset = 0
    out = {"start": [], "departure": [], "work": [], "useful": [], "completed": []}
    tr = {"worker": [], "start": [], "end": []}
    arrivals = [float(a) for a in arrivals]
    m = 0
    for j, a in enumerate(arrivals):
        k = int(tasks[j])
        draws = [float(x) for x in times[offset:offset + k * phases]]
        offset += k * phases
        ready = max(a, last)
        if barrier[j]:
            taken = [heapq.heappop(free) for _ in range(k)]
            tau = taken[-1][0]
            start = ready
            if tau > ready:
                start = tau
                if event_overhead and k > 1:   # one freed executor's own offer carries a 1-task job
                    tick = phase + math.ceil((tau - phase) / revive) * revive
                    if tick < tau:
                        tick += revive
                    m = max(m, j + 1)          # the next arrival at or after tau (tau grows for blocked jobs)
                    while m < len(arrivals) and arrivals[m] < tau:
                        m += 1
                    start = min(tick, arrivals[m]) if m < len(arrivals) else tick
            cut, done, useful, occupied = service(draws, k, **_service_args(rule))
            work = 0.0
            for (_, worker), busy in zip(taken, occupied, strict=True):
                work += busy
                heapq.heappush(free, (start + (cut if two_barrier else busy), worker))
                tr["worker"].append(worker)
                tr["start"].append(start)
                tr["end"].append(start + busy)
            departure = start + cut
        else:
            start, departure, work, done = ready, -math.inf, 0.0, k
            for x in draws:
                when, worker = heapq.heappop(free)
                start = max(start, when)
                heapq.heappush(free, (start + x, worker))
                work += x
                departure = max(departure, start + x)
                tr["worker"].append(worker)
                tr["start"].append(start)
                tr["end"].append(start + x)
            useful = work
        last = start
        for key, value in (("start", start), ("departure", departure), ("work", work), ("useful", useful),
                           ("completed", done)):
            out[key].append(value)
    return (out, tr) if trace else out


def simulate_sampling_reference(arrivals, tasks, barrier, times, probes, servers: int, two_barrier: bool = False,
                                trace: bool = False, **rule):
    """Batch sampling with late binding (EXTENSIONS.md section 2), event by event.

    ``probes[j]`` lists the workers job ``j`` probes. Returns the lists of
    :func:`simulate_reference` plus ``held`` (worker-time spent ready and
    holding for the job before it started) per job.
    """
    phases = rule.get("phases", 1)
    n = len(arrivals)
    offsets, total = [], 0
    for k in tasks:
        offsets.append(total)
        total += int(k) * phases
    queues = [deque() for _ in range(servers)]
    state = ["idle"] * servers
    ready_since = [0.0] * servers
    holders = [[] for _ in range(n)]       # workers holding for each job, in the order they became ready
    handed = [0] * n
    done = [False] * n
    res = {"start": [0.0] * n, "departure": [-math.inf] * n, "work": [0.0] * n, "useful": [0.0] * n,
           "completed": [0] * n, "held": [0.0] * n}
    tr = {"worker": [0] * total, "start": [0.0] * total, "end": [0.0] * total}
    events: list[tuple[float, int]] = []  # (time a worker frees, worker)

    def look(w: int, now: float) -> None:
        while queues[w]:
            j = queues[w].popleft()
            if done[j]:
                continue                   # a cancelled reservation
            k = int(tasks[j])
            draws = [float(x) for x in times[offsets[j]:offsets[j] + k * phases]]
            if barrier[j]:
                state[w] = "holding"
                ready_since[w] = now
                holders[j].append(w)
                if len(holders[j]) == k:
                    cut, completed, useful, occupied = service(draws, k, **_service_args(rule))
                    held, work = 0.0, 0.0
                    for i, v in enumerate(holders[j]):
                        held += now - ready_since[v]
                        work += occupied[i]
                        state[v] = "busy"
                        heapq.heappush(events, (now + (cut if two_barrier else occupied[i]), v))
                        tr["worker"][offsets[j] + i], tr["start"][offsets[j] + i] = v, now
                        tr["end"][offsets[j] + i] = now + occupied[i]
                    res["start"][j], res["departure"][j] = now, now + cut
                    res["work"][j], res["useful"][j] = work, useful
                    res["completed"][j], res["held"][j] = completed, held
                    done[j] = True
                return
            i = handed[j]
            x = draws[i]
            state[w] = "busy"
            heapq.heappush(events, (now + x, w))
            tr["worker"][offsets[j] + i], tr["start"][offsets[j] + i], tr["end"][offsets[j] + i] = w, now, now + x
            res["work"][j] += x
            res["useful"][j] += x
            res["departure"][j] = max(res["departure"][j], now + x)
            handed[j] = i + 1
            if handed[j] == k:
                res["start"][j], res["completed"][j], done[j] = now, k, True
            return

    j = 0
    while j < n or events:
        if events and (j >= n or events[0][0] <= float(arrivals[j])):
            now, w = heapq.heappop(events)
            state[w] = "idle"
            look(w, now)
        else:
            now = float(arrivals[j])
            for w in probes[j]:
                queues[w].append(j)
            for w in sorted(probes[j]):
                if state[w] == "idle":
                    look(w, now)
            j += 1
    return (res, tr) if trace else res
