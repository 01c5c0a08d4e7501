"""A slow, obviously-correct plain-Python simulator (heapq), for validation.

It implements the same scheduling rules as the compiled kernel
(:mod:`barrier_queues._kernels`) without sharing any of its code, job by job
with a heap of ``(free time, worker)`` pairs. Fed the same random inputs
(:func:`barrier_queues.simulate.draw_jobs`) it must give identical per-job
results; the tests check that for every system type, and the benchmark uses
it as the pure-Python baseline.
"""

from __future__ import annotations

import heapq
import math


def simulate_reference(arrivals, tasks, barrier, times, servers: int, stragglers: int = 0,
                       two_barrier: bool = False, event_overhead: bool = False,
                       revive: float = 1.0, phase: float = 0.0, trace: bool = False):
    """Per-job (start, departure, work, useful) lists, and the per-task trace.

    ``times`` holds the task times of job 0, then job 1, ... (``tasks[j]`` each).
    ``start`` is the start of the job's last task; ``work`` the server time
    its tasks used (killed tasks up to the kill); ``useful`` that of the tasks
    that finished.
    """
    free = [(0.0, w) for w in range(servers)]
    heapq.heapify(free)
    last = 0.0
    offset = 0
    out = {"start": [], "departure": [], "work": [], "useful": []}
    tr = {"worker": [], "start": [], "end": []}
    arrivals = [float(a) for a in arrivals]
    m = 0
    for j, a in enumerate(arrivals):
        k = int(tasks[j])
        xs = [float(x) for x in times[offset:offset + k]]
        offset += k
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
                    # the next job arrival at or after tau (tau only grows for
                    # blocked jobs, so the search resumes where it stopped)
                    m = max(m, j + 1)
                    while m < len(arrivals) and arrivals[m] < tau:
                        m += 1
                    start = min(tick, arrivals[m]) if m < len(arrivals) else tick
            needed = k - stragglers
            ordered = sorted(xs)
            cut = ordered[needed - 1]          # the job departs at its l-th task end
            work = 0.0
            for (_, worker), x in zip(taken, xs, strict=True):
                run = min(x, cut)              # stragglers are killed at the cut
                work += run
                heapq.heappush(free, (start + (cut if two_barrier else run), worker))
                tr["worker"].append(worker)
                tr["start"].append(start)
                tr["end"].append(start + run)
            useful = work if stragglers == 0 else sum(ordered[:needed])
            departure = start + cut
        else:
            start, departure, work = ready, -math.inf, 0.0
            for x in xs:
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
        out["start"].append(start)
        out["departure"].append(departure)
        out["work"].append(work)
        out["useful"].append(useful)
    return (out, tr) if trace else out
