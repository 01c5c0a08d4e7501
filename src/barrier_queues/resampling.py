"""Resampled logs: new versions of a job log built from its users' weeks (after Zakay and Feitelson, ICPE 2013).

A replay is one sample path of a finite log; shaking it (:func:`barrier_queues.replay.shake`) moves each
submission a little, resampling builds other logs the same users might have made. The log is cut into weeks
from its first submission; a **block** is one user's jobs of one week, each at its offset within the week.
A resampled log has the log's weeks; week ``w`` gets ``L n_w`` blocks (rounded at random to a neighbouring
integer, so that the mean is ``L n_w``), ``n_w`` the users active in week ``w`` of the log and ``L`` the
``load`` factor, each block drawn uniformly with replacement from every block of the log and placed at its
offsets in week ``w``. So every job keeps its width, runtime and requested time, a user's week of work stays
together (its sessions, its bursts), the daily and weekly cycles stay (the offsets within the week), and the
number of active users follows the log's weeks. ``L > 1`` raises the load by adding users' activity, not by
compressing time (``load_scale``), which shortens the gaps between one user's dependent jobs.

This is our simplification of Zakay and Feitelson's method, stated here: they tell long-term users (whose
activity continues from week to week) from temporary ones, keep each long-term user's continuity, and pace
submissions by the feedback of the simulated system; we draw every block independently and keep the
submission times of the log.

A log without users (the Philly extract) is resampled by **weeks**: its jobs count as one user's, so a block is
one week of the whole log; each week of the log that has jobs gets ``L`` blocks (rounded at random as above),
drawn with replacement from the log's weeks with jobs, and an empty week stays empty. At ``L = 1`` that is the
log's weeks in a new order, with repeats (a moving-block bootstrap with blocks of a week); above 1, weeks laid
over each other.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._validation import ParameterError, check_int, check_positive
from .traces import Trace

#: a week in seconds: the unit of a user's activity in a block
WEEK = 7 * 86400.0


def resample(trace: Trace, rng: np.random.Generator, load: float = 1.0, week: float = WEEK) -> Trace:
    """A resampled copy of ``trace`` (module docstring): the log's weeks, each with ``load`` times its active
    users' count of blocks drawn from the whole log."""
    load = check_positive("resample_load", load)
    week = check_positive("resample_week", week)
    jobs = trace.jobs
    by_user = "user" in jobs and bool((jobs.user >= 0).any())
    users = jobs.user.to_numpy() if by_user else np.zeros(len(jobs), dtype=np.int64)   # (no users: whole weeks)
    start = float(jobs.submit.min())
    slot = np.floor((jobs.submit.to_numpy() - start) / week).astype(np.int64)
    offset = jobs.submit.to_numpy() - start - slot * week
    keys = pd.MultiIndex.from_arrays([users, slot])
    codes, uniques = pd.factorize(keys)
    members = pd.Series(np.arange(len(jobs))).groupby(codes).apply(np.asarray).to_list()   # block -> its jobs
    weeks = int(slot.max()) + 1
    active = np.bincount(np.asarray([w for _, w in uniques]), minlength=weeks)
    chosen_rows, submits = [], []
    for w in range(weeks):
        mean = load * active[w]
        count = int(np.floor(mean)) + int(rng.random() < mean - np.floor(mean))
        for b in rng.integers(0, len(members), count):
            rows = members[b]
            chosen_rows.append(rows)
            submits.append(start + w * week + offset[rows])
    if not chosen_rows:
        raise ParameterError(f"trace {trace.source!r}: the resampled log has no job (load {load:g})")
    rows = np.concatenate(chosen_rows)
    new = jobs.iloc[rows].reset_index(drop=True)
    new["submit"] = np.concatenate(submits)
    new["job_id"] = np.arange(len(new), dtype=np.int64)
    new = new.iloc[np.argsort(new.submit.to_numpy(), kind="stable")].reset_index(drop=True)
    note = (f"resampled: users' weeks drawn anew, {load:g} times the active users of each week" if by_user else
            f"resampled by weeks (the log names no users): {load:g} weeks of the log drawn for each week with jobs")
    return Trace(new, trace.source, trace.format, servers=trace.servers, task_times=None,
                 skipped=dict(trace.skipped), notes=[*trace.notes, note])


def resampled_grid(trace: Trace, grid: dict, copies: int, load: float = 1.0, seed: int = 0, **options):
    """A grid of replays on the log and on ``copies`` resampled logs (:func:`resample`, seeds from ``seed``):
    :func:`barrier_queues.replay.perturbed_grid`'s table (columns ``<metric>_shaken``: over the copies) and
    summary. With ``load`` 1 the copies' spread is the log's uncertainty; above 1, a busier cluster of the
    same users."""
    from .replay import perturbed_grid

    if not trace.rigid:
        raise ParameterError("resampling needs a rigid log (one runtime per job)")
    copies = check_int("resamples", copies, low=2, high=10_000, high_name="10,000")
    logs = [resample(trace, child, load) for child in np.random.default_rng(seed).spawn(copies)]
    table, info = perturbed_grid(trace, grid, logs, **options)
    by_user = "user" in trace.jobs and bool((trace.jobs.user >= 0).any())
    info.update(resamples=copies, load=float(load), seed=seed,
                method=("users' weeks drawn with replacement, load x the active users of each week" if by_user else
                        "the log's weeks drawn with replacement (it names no users), load weeks per week with jobs")
                + "; t interval over the resampled logs")
    return table, info


__all__ = ["WEEK", "resample", "resampled_grid"]
