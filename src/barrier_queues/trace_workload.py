"""A trace as a workload of the model: what ``BarrierSystem(trace=...)`` holds (Appendix B, section 6).

A recorded log is one more way to give the model its jobs, beside a law of ``k`` (``tasks``, ``tasks_pmf``)
and job classes (``workload``): instead of drawn arrivals and task times, the trace's own submissions, widths
and times, replayed through the same scheduler room as drawn jobs (:mod:`barrier_queues.schedulers.waitlist`),
as Ciw replays a recorded trace through its nodes and AccaSim feeds one simulator from any workload source.

:class:`TraceWorkload` is made once, when the system is validated, from a :class:`~barrier_queues.traces.Trace`,
the system's ``servers`` and its ``load_scale``:

* the jobs wider than the cluster (``k > s``) are skipped and counted (beside the reader's own skips);
* submissions are compressed by ``load_scale``: ``submit' = t0 + (submit - t0) / load_scale`` (``t0`` the
  first kept job's submission);
* the system's law of ``k`` is the kept jobs' (:attr:`ks`, :attr:`pk`), its barrier share theirs, and its
  task law the empirical law of their times (:attr:`law`: what the jobs ran, never a law made up to pass
  validation).

A **rigid** trace's job (an SWF log's) holds its ``k`` workers for its one runtime: the scheduler keeps one
release per job (the same results as ``k`` equal task times, tested), with a predicted runtime beside it for
EASY backfilling (:meth:`inputs`: the runtime itself, ``estimates="exact"``, or the log's requested time raised
to the runtime, ``"requested"``). A trace with per-task times (a Spark event log's) gives each task its own.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from ._validation import ParameterError
from .traces import Trace

#: how EASY predicts a rigid job's runtime: the true runtime (clairvoyant EASY) or the log's requested time
ESTIMATES = ("exact", "requested")


class TraceWorkload:
    """A trace's jobs on ``servers`` workers with submissions compressed by ``load_scale`` (module docstring).

    Equal (and hashed alike) when made from the same :class:`Trace` object with the same ``servers`` and
    ``load_scale``: a system holding it stays value-comparable without comparing the jobs."""

    def __init__(self, trace: Trace, servers: int, load_scale: float):
        if not isinstance(trace, Trace):
            raise ParameterError(f"trace must be a Trace (barrier_queues.traces.read_trace; got "
                                 f"{type(trace).__name__})")
        self.trace, self.servers, self.load_scale = trace, servers, load_scale
        jobs = trace.jobs
        wide = jobs.tasks.to_numpy() > servers
        self.skipped = dict(trace.skipped)
        if wide.any():
            reason = f"wider than the cluster (k > {servers})"
            self.skipped[reason] = self.skipped.get(reason, 0) + int(wide.sum())
        self.keep = np.flatnonzero(~wide)
        if self.keep.size == 0:
            raise ParameterError(f"servers must be at least the width of some job of the trace (got {servers}; "
                                 f"the narrowest job needs {int(jobs.tasks.min())})")
        chosen = jobs.iloc[self.keep].reset_index(drop=True)
        if load_scale != 1.0:
            t0 = float(chosen.submit.iat[0])
            chosen = chosen.assign(submit=t0 + (chosen.submit.to_numpy() - t0) / load_scale)
        self.jobs: pd.DataFrame = chosen

    def _key(self):
        return (id(self.trace), self.servers, self.load_scale)

    def __eq__(self, other):
        return isinstance(other, TraceWorkload) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (f"TraceWorkload({self.trace.source!r}, {len(self.jobs)} jobs on {self.servers} workers, "
                f"load scale {self.load_scale:g})")

    @property
    def rigid(self) -> bool:
        return self.trace.rigid

    @cached_property
    def tasks(self) -> np.ndarray:
        """Each kept job's k (int64)."""
        return self.jobs.tasks.to_numpy(dtype=np.int64)

    @cached_property
    def ks(self) -> np.ndarray:
        """The values of k among the kept jobs (ascending)."""
        return np.unique(self.tasks)

    @cached_property
    def pk(self) -> np.ndarray:
        """The share of the kept jobs of each of :attr:`ks`."""
        return np.unique(self.tasks, return_counts=True)[1] / self.tasks.size

    @cached_property
    def barrier(self) -> np.ndarray:
        """Whether each kept job is a barrier job (every job of a rigid trace is)."""
        if self.rigid:
            return np.ones(self.tasks.size, dtype=bool)
        return self.jobs.barrier.to_numpy(dtype=bool)

    @cached_property
    def offsets(self) -> np.ndarray:
        """Each kept job's first task time in :attr:`task_times` (per-task traces)."""
        return np.concatenate([[0], np.cumsum(self.tasks)[:-1]]).astype(np.int64)

    @cached_property
    def task_times(self) -> np.ndarray:
        """Every kept job's task times, job after job (a rigid job's runtime k times)."""
        if self.rigid:
            return np.repeat(self.jobs.runtime.to_numpy(dtype=float), self.tasks)
        tr = self.trace
        return np.concatenate([tr.task_times[o:o + n] for o, n in zip(tr.task_offsets[self.keep], self.tasks,
                                                                          strict=True)])

    @cached_property
    def work(self) -> np.ndarray:
        """Each kept job's work, worker-time: ``k r`` for a rigid job, the sum of its task times otherwise."""
        if self.rigid:
            return self.tasks * self.jobs.runtime.to_numpy(dtype=float)
        times = self.task_times
        return np.add.reduceat(times, self.offsets) if times.size else np.zeros(self.tasks.size)

    @cached_property
    def law(self):
        """The system's task law: the empirical law of the kept jobs' task times, or of a rigid trace's runtimes
        (one per job: its k tasks share it; :meth:`mean_task` weighs them by k). Only descriptions read it:
        the jobs run their own times."""
        from .distributions import Empirical

        if self.rigid:
            return Empirical(self.jobs.runtime.to_numpy(dtype=float))
        return Empirical(self.task_times)

    def mean_task(self) -> float:
        """The mean task time over every task of the kept jobs (time units of the trace)."""
        return float(self.work.sum() / self.tasks.sum())

    def check_estimates(self, estimates: str) -> None:
        """Requested estimates need a rigid trace whose every kept job has one."""
        if estimates == "exact":
            return
        if not self.rigid:
            raise ParameterError("estimates must be 'exact' for a trace with per-task times (got 'requested'): it "
                                 "holds no requested times")
        missing = int(np.isnan(self.jobs.estimate.to_numpy(dtype=float)).sum())
        if missing:
            raise ParameterError(f"estimates must be 'exact' for this trace (got 'requested'): {missing} of its "
                                 "jobs have no requested time")

    def inputs(self, estimates: str = "exact") -> dict:
        """The scheduler room's inputs (:func:`barrier_queues.schedulers.waitlist.run_inputs`): a rigid trace's
        jobs with one time each (``rigid``) and the runtimes EASY predicts (``predicted``), a per-task trace's
        with every task's."""
        arrival = np.ascontiguousarray(self.jobs.submit.to_numpy(dtype=float))
        if not self.rigid:
            return {"arrival": arrival, "tasks": self.tasks, "barrier": self.barrier, "times": self.task_times,
                    "offsets": self.offsets}
        run = np.ascontiguousarray(self.jobs.runtime.to_numpy(dtype=float))
        pred = run if estimates == "exact" else np.maximum(self.jobs.estimate.to_numpy(dtype=float), run)
        return {"arrival": arrival, "tasks": self.tasks, "barrier": self.barrier, "times": run,
                "offsets": np.arange(run.size, dtype=np.int64), "rigid": True,
                "predicted": np.ascontiguousarray(pred)}

    def expanded_inputs(self) -> dict:
        """The same jobs with each task's time (a rigid job's runtime k times): the inputs of failures, which
        draw a clock per task, and of the plain reference."""
        return {"arrival": np.ascontiguousarray(self.jobs.submit.to_numpy(dtype=float)), "tasks": self.tasks,
                "barrier": self.barrier, "times": self.task_times, "offsets": self.offsets}

    def describe(self) -> dict:
        return {**self.trace.describe(), "skipped": dict(self.skipped), "replayed": int(self.tasks.size),
                "load_scale": self.load_scale}


__all__ = ["ESTIMATES", "TraceWorkload"]
