"""The plain-Python reference of the trace replay of rigid jobs (Appendix B, section 6), event by event.

Shares no code with the compiled kernel (``_replay.pxi``); fed the same jobs it must give the same start
times, bit for bit. Each job holds its ``k`` workers from its start for its runtime. At each instant every
release is applied, then every submission (in file order), then one pass of the discipline over the waiting
jobs in submission order with ``F`` free workers:

* ``fcfs``: start jobs from the head while the head fits;
* ``first-fit``: walk the whole list, start every job that fits;
* ``backfill`` (EASY): fcfs; then the head ``H`` gets the shadow time ``S``, the earliest predicted end of
  the running jobs at which ``F`` plus the workers of the running jobs predicted to end by ``S`` reach
  ``k_H`` (jobs predicted to end at one time free together), and ``extra`` = that number minus ``k_H``; a
  later job ``j`` starts iff ``k_j <= F`` and (``t + p_j <= S`` or ``k_j <= extra``); after a start ``F``
  shrinks by ``k_j``, and ``extra`` only when ``t + p_j > S``; ``S`` is not recomputed within the pass;
* ``server-filling``: the shortest prefix of the waiting jobs whose k sum to at least ``s`` (or all), started
  in decreasing k (ties in submission order) while they fit.

``p_j`` is the prediction the discipline is given (the true runtime, or a user's estimate); a job always
runs its true runtime.
"""

from __future__ import annotations

import heapq
import math


def _pass(discipline: str, t: float, waiting: list, state: dict) -> list:
    """One pass of the discipline at time ``t``; returns the jobs still waiting."""
    k, pred, servers = state["k"], state["pred"], state["servers"]
    if discipline in ("fcfs", "backfill"):
        while waiting and k[waiting[0]] <= state["free"]:
            state["start"](waiting.pop(0), t)
        if discipline == "fcfs" or not waiting:
            return waiting
        head = waiting[0]
        ends = sorted((e, k[j]) for j, e in state["predicted"].items())
        avail, shadow, extra, g = state["free"], math.inf, 0, 0
        while g < len(ends):
            e = ends[g][0]
            while g < len(ends) and ends[g][0] == e:
                avail += ends[g][1]
                g += 1
            if avail >= k[head]:
                shadow, extra = e, avail - k[head]
                break
        kept = [head]
        for j in waiting[1:]:
            if k[j] <= state["free"] and (t + pred[j] <= shadow or k[j] <= extra):
                if t + pred[j] > shadow:
                    extra -= k[j]
                state["start"](j, t)
            else:
                kept.append(j)
        return kept
    if discipline == "first-fit":
        kept = []
        for j in waiting:
            if k[j] <= state["free"]:
                state["start"](j, t)
            else:
                kept.append(j)
        return kept
    prefix, total = [], 0
    for j in waiting:
        if total >= servers:
            break
        prefix.append(j)
        total += k[j]
    started = set()
    for j in sorted(prefix, key=lambda j: (-k[j], j)):
        if k[j] > state["free"]:
            break
        state["start"](j, t)
        started.add(j)
    return [j for j in waiting if j not in started]


def replay_rigid(submit, k, run, pred, servers: int, discipline: str = "fcfs") -> list[float]:
    """Each job's start time (jobs in submission order; every k in 1..servers; ``pred`` the runtimes the
    discipline predicts)."""
    n = len(submit)
    submit = [float(x) for x in submit]
    run = [float(x) for x in run]
    state = {"k": [int(x) for x in k], "pred": [float(x) for x in pred], "servers": int(servers),
             "free": int(servers), "predicted": {}}
    start = [math.nan] * n
    releases: list[tuple[float, int]] = []

    def begin(j, t):
        start[j] = t
        state["free"] -= state["k"][j]
        heapq.heappush(releases, (t + run[j], j))
        state["predicted"][j] = t + state["pred"][j]

    state["start"] = begin
    waiting: list[int] = []
    i = 0
    while i < n or releases:
        t = min(submit[i] if i < n else math.inf, releases[0][0] if releases else math.inf)
        while releases and releases[0][0] == t:
            _, j = heapq.heappop(releases)
            state["free"] += state["k"][j]
            del state["predicted"][j]
        while i < n and submit[i] == t:
            waiting.append(i)
            i += 1
        if waiting:
            waiting = _pass(discipline, t, waiting, state)
    return start


__all__ = ["replay_rigid"]
