"""The plain-Python reference of the waiting-list scheduler (EXTENSIONS.md section 4), event by event.

Shares no code with the compiled kernel (``waitlist.pxi``); fed the same
inputs it must give the same per-job results, bit for bit. Jobs wait in
arrival order. Decision points are each arrival (one at a time, in arrival
order) and each instant at which workers are released (all releases of the
instant first); at a release instant that equals an arrival time the
releases come first. With ``F`` free workers a decision runs the discipline:

* ``fcfs``: walk the waiting jobs in arrival order; a barrier job starts if
  ``k <= F``, else the walk stops; a non-barrier job starts ``min(F, pending)``
  tasks and the walk stops while tasks stay pending;
* ``first-fit`` (Spark's rule): the same walk, but a barrier job that does not
  fit is skipped, and the walk goes on while ``F > 0``;
* ``backfill`` (EASY with the true task times): ``fcfs`` up to the first
  barrier job ``H`` that does not fit; ``H`` is reserved the earliest time
  ``t_H`` at which ``k_H`` workers will be free if nothing else starts, and
  ``x = F + (releases at or before t_H) - k_H`` workers are spare then. Later
  jobs, in arrival order, start if they fit in ``F`` and either all their
  workers are released by ``t_H`` or they take at most ``x`` workers (``x``
  shrinks); a non-barrier job's tasks are judged one by one in task order;
* ``server-filling`` (2 barriers, every k a power of two dividing s): take the
  shortest prefix of the waiting jobs whose k sum to at least s (or all);
  start its jobs in decreasing k, ties in arrival order, while they fit.

Free workers are taken lowest index first (a heap of free worker ids).
"""

from __future__ import annotations

import heapq
import math

from ..reference import service, service_args


def simulate_waitlist_reference(arrivals, tasks, barrier, times, servers: int, discipline: str = "fcfs",
                                two_barrier: bool = False, trace: bool = False, service_fn=None,
                                reservations: list | None = None, event_overhead: bool = False,
                                revive: float = 1.0, phase: float = 0.0, **rule):
    """Per-job lists ``start`` (of the job's last task), ``departure``, ``work``, ``useful``, ``completed``
    (and with ``trace`` per-draw ``worker``, ``start``, ``end`` for each job's first ``k`` draws).
    ``reservations``, if given, receives each backfill reservation ``(H, t_H)``.

    ``event_overhead`` (Spark's offers, fcfs and first-fit): workers released at an instant are offered one
    by one, only to jobs that need one slot (a non-barrier job's next task, a 1-task barrier job); global
    offers come at job arrivals and at revive ticks ``phase + n revive`` while jobs wait. At one instant:
    releases, then the tick, then the arrival."""
    phases = rule.get("phases", 1)
    one_job = service_fn or (lambda draws, k: service(draws, k, **service_args(rule)))
    n = len(arrivals)
    arrivals = [float(a) for a in arrivals]
    offsets, total = [], 0
    for k in tasks:
        offsets.append(total)
        total += int(k) * phases
    draws = [[float(x) for x in times[offsets[j]:offsets[j] + int(tasks[j]) * phases]] for j in range(n)]
    res = {"start": [0.0] * n, "departure": [-math.inf] * n, "work": [0.0] * n, "useful": [0.0] * n,
           "completed": [0] * n}
    tr = {"worker": [0] * total, "start": [0.0] * total, "end": [0.0] * total}
    free = list(range(servers))
    releases: list[tuple[float, int]] = []
    waiting: list[int] = []
    handed = [0] * n

    served = {}

    def run_of(j):                     # one job's service is a function of its draws: computed once
        if j not in served:
            served[j] = one_job(draws[j], int(tasks[j]))
        return served[j]

    def start_job(j, now):
        cut, done, useful, occupied = run_of(j)
        work = 0.0
        for i, busy in enumerate(occupied):
            w = heapq.heappop(free)
            work += busy
            heapq.heappush(releases, (now + (cut if two_barrier else busy), w))
            tr["worker"][offsets[j] + i], tr["start"][offsets[j] + i] = w, now
            tr["end"][offsets[j] + i] = now + busy
        res["start"][j], res["departure"][j], res["work"][j] = now, now + cut, work
        res["useful"][j], res["completed"][j] = useful, done
        waiting.remove(j)
        return int(tasks[j])

    def start_task(j, now):
        i = handed[j]
        x = draws[j][i]
        w = heapq.heappop(free)
        heapq.heappush(releases, (now + x, w))
        tr["worker"][offsets[j] + i], tr["start"][offsets[j] + i], tr["end"][offsets[j] + i] = w, now, now + x
        res["work"][j] += x
        res["useful"][j] += x
        res["departure"][j] = max(res["departure"][j], now + x)
        handed[j] = i + 1
        if handed[j] == int(tasks[j]):
            res["start"][j], res["completed"][j] = now, int(tasks[j])
            waiting.remove(j)
        return 1

    def fcfs_part(now):
        """Start jobs in arrival order up to the first that cannot start in full; return it (or None)."""
        while waiting:
            j = waiting[0]
            if barrier[j]:
                if int(tasks[j]) > len(free):
                    return j
                start_job(j, now)
            else:
                while free and handed[j] < int(tasks[j]):
                    start_task(j, now)
                if handed[j] < int(tasks[j]):
                    return j
        return None

    def first_fit(now):
        for j in list(waiting):
            if not free:
                return
            if barrier[j]:
                if int(tasks[j]) <= len(free):
                    start_job(j, now)
            else:
                while free and handed[j] < int(tasks[j]):
                    start_task(j, now)

    def backfill(now):
        head = fcfs_part(now)
        if head is None or not barrier[head] or not free:
            return
        ordered = sorted(t for t, _ in releases)
        t_h = ordered[int(tasks[head]) - len(free) - 1]
        spare = len(free) + sum(1 for t in ordered if t <= t_h) - int(tasks[head])
        if reservations is not None:
            reservations.append((head, t_h))
        for j in list(waiting[waiting.index(head) + 1:]):
            if not free:
                return
            if barrier[j]:
                k = int(tasks[j])
                if k > len(free):
                    continue
                cut, _, _, occupied = run_of(j)
                if now + (cut if two_barrier else max(occupied)) <= t_h:
                    start_job(j, now)
                elif k <= spare:
                    start_job(j, now)
                    spare -= k
            else:
                while free and handed[j] < int(tasks[j]):
                    if now + draws[j][handed[j]] <= t_h:
                        start_task(j, now)
                    elif spare >= 1:
                        start_task(j, now)
                        spare -= 1
                    else:
                        break

    def server_filling(now):
        prefix, total_k = [], 0
        for j in waiting:
            prefix.append(j)
            total_k += int(tasks[j])
            if total_k >= servers:
                break
        for j in sorted(prefix, key=lambda j: (-int(tasks[j]), j)):
            if int(tasks[j]) > len(free):
                return
            start_job(j, now)

    def single(now, slots):
        """Released workers offered one by one: only one-slot jobs can take them."""
        while slots > 0 and free:
            if discipline == "fcfs":
                j = waiting[0] if waiting else None
                if j is None or (barrier[j] and int(tasks[j]) > 1):
                    return
            else:
                j = next((j for j in waiting if not barrier[j] or int(tasks[j]) == 1), None)
                if j is None:
                    return
            if barrier[j]:
                start_job(j, now)
            else:
                start_task(j, now)
            slots -= 1

    decide = {"fcfs": fcfs_part, "first-fit": first_fit, "backfill": backfill,
              "server-filling": server_filling}[discipline]
    i, now, tick_n = 0, -math.inf, 0.0
    while i < n or releases or (event_overhead and waiting):
        rel = releases[0][0] if releases else math.inf
        arr = arrivals[i] if i < n else math.inf
        tick = math.inf
        if event_overhead and waiting:
            while phase + tick_n * revive < now:
                tick_n += 1.0
            tick = phase + tick_n * revive
        if releases and rel <= tick and rel <= arr:
            now, released = rel, 0
            while releases and releases[0][0] == now:
                heapq.heappush(free, heapq.heappop(releases)[1])
                released += 1
            if event_overhead:
                single(now, released)
            else:
                decide(now)
        elif tick <= arr and tick < math.inf:
            now = tick
            tick_n += 1.0
            decide(now)
        else:
            now = arr
            waiting.append(i)
            i += 1
            decide(now)
    return (res, tr) if trace else res


__all__ = ["simulate_waitlist_reference"]
