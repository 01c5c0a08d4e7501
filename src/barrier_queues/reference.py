"""Slow, obviously-correct plain-Python references of the service rules (one job, without queueing).

:func:`service` implements every rule of :mod:`barrier_queues.rules`
(Appendix B, sections 1 and 3) without sharing any code with the compiled
``_job_service``. The schedulers' plain references
(:func:`barrier_queues.schedulers.central.simulate_reference`,
:func:`barrier_queues.schedulers.sampling.simulate_sampling_reference`) call
it for each job; fed the same random inputs
(:func:`barrier_queues.inputs.draw_jobs`) they must give the kernels'
per-job results, bit for bit; the tests check that for every system type,
and the benchmark uses them as the pure-Python baseline.

Floating-point operations are done in the order the rules are stated in
(e.g. a job's useful work is summed task by task in increasing order of the
completion times), so the equality can be exact.
"""

from __future__ import annotations

import math

#: the knee detector's EWMA gain of the mean gap: seed 002 keeps 0.70 of the previous mean (gain 0.3;
#: Appendix B, section 1); RFC 6298's 1/8 is a sensitivity case
KNEE_GAIN = 0.3


def knee(ordered: list[float], min_fraction: float, min_wait: float, gain: float = KNEE_GAIN):
    """The knee-detector release of sorted completion times (Appendix B, section 1): (D, L)."""
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
            min_fraction: float = 0.5, min_wait: float = 0.0, gain: float = KNEE_GAIN, timeout: float = math.inf,
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


def service_args(kwargs: dict) -> dict:
    """The keyword arguments of :func:`service` among a rule's (``reference_rule``)."""
    return {k: v for k, v in kwargs.items() if k in ("phases", "release", "needed", "min_fraction", "min_wait",
                                                     "gain", "timeout", "sync", "poll")}


def mgc_fifo_starts(arrivals, services, c: int) -> list[float]:
    """Start times of the FIFO M/G/c queue (``c`` servers, jobs in arrival order), job by job: a job starts at
    the latest of its arrival, the previous start and the earliest free server, which it then holds for its
    service time. The paper's 2-barrier system with ``k | s`` is this queue with ``c = s / k`` and the service
    time of a job the largest of its ``k`` task times (section II-C); the tests and the stability chapter feed
    both the same draws."""
    import heapq

    free = [0.0] * int(c)
    last, starts = 0.0, []
    for a, x in zip(arrivals, services, strict=True):
        start = max(float(a), last, free[0])
        heapq.heapreplace(free, start + float(x))
        last = start
        starts.append(start)
    return starts


__all__ = ["knee", "mgc_fifo_starts", "service", "service_args"]
