"""Schedulers: who starts next, and on which workers. One room per scheduler.

A scheduler is the queueing part of a system (Appendix A, section 2,
Appendix B, section 2): given the arrivals and each job's service rule
(:mod:`barrier_queues.rules`), it decides when each job's tasks start and on
which workers. Each room (a module of this package) holds one scheduler:

* its description, a :class:`Scheduler` registered under the value of
  ``BarrierSystem.placement`` that selects it, with the system fields it
  owns and its validation;
* its driver of the compiled kernel (``run``: chunk by chunk over a
  replication's random inputs; ``run_inputs``: one given workload), whose
  kernel part is one include of ``_kernels.pyx`` (``<room>.pxi``);
* its plain-Python reference simulator (``reference``), which shares no code
  with the kernel and must agree with it bit for bit on the same inputs.

Rooms today: :mod:`~barrier_queues.schedulers.central` (the paper's central
FIFO queue: ``scheduling="fcfs"``), :mod:`~barrier_queues.schedulers.waitlist`
(one waiting list under the other disciplines of Appendix B, section 4:
``first-fit``, Spark's rule; ``backfill``; ``server-filling``) and
:mod:`~barrier_queues.schedulers.sampling` (batch sampling with late
binding) and :mod:`~barrier_queues.schedulers.moldable` (moldable jobs: the
head takes the workers a policy chooses; ``BarrierSystem.moldable``). A
system selects its room by ``placement`` and ``scheduling`` (:func:`of`).
A new scheduler is one room, one kernel include and its reference function
(the book's extension guide shows one).
"""

from __future__ import annotations

from . import central, moldable, sampling, waitlist  # noqa: F401  (the rooms register themselves on import)
from .base import (
    SCHEDULERS,
    Scheduler,
    disciplines,
    get,
    job_outputs,
    names,
    of,
    params,
    register,
    trace_arrays,
    trace_frame,
    unregister,
    validate,
)

__all__ = ["SCHEDULERS", "Scheduler", "disciplines", "get", "job_outputs", "names", "of", "params", "register",
           "trace_arrays", "trace_frame", "unregister", "validate"]
