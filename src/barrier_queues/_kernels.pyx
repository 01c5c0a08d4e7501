# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# cython: nonecheck=False, cpow=True
"""Compiled simulation kernels (Cython, compiled to C when the package is installed). Private: use
:mod:`barrier_queues.simulate`.

Why Cython and not a JIT: the kernels were numba functions at first;
importing numba and loading its cached machine code was most of a
2-million-job ``simulate`` command (numba's first cached call imports its
whole typing registry and scipy.linalg; timings: CHANGELOG). An extension
module compiled at install time loads at once. The code is
the numba code, line for line, with C types; floating-point operations are
plain IEEE-754 double (compiled with ``-ffp-contract=off``, no fast-math), so
results are bit for bit those of the plain-Python reference.

The kernels consume pre-drawn random inputs (arrival times, tasks per job,
barrier flags, task times and, for batch sampling, the probed workers) one
chunk at a time and keep the system's state in arrays between chunks. All
randomness is drawn by the caller with numpy Generators, so the plain-Python
reference (:mod:`barrier_queues.reference`), fed the same arrays, must give
identical results, bit for bit.

**One job's service** (:func:`job_service`, shared by both kernels; times
relative to the job's start ``S``). A job of ``k`` tasks and ``m`` phases
has ``k m`` draws stored phase-major (``times[o + p k + i]`` is task ``i``'s
phase ``p``). It returns the departure ``D``, the tasks completed ``L``,
the useful work and, per task, ``run[i]``: how long task ``i`` occupies its
worker.

* ``m = 1``, fixed release, ``l = k``: ``D = max x_i``, ``run = x``.
* ``m = 1``, fixed ``l < k``: ``D = x_(l)`` (stragglers killed at ``D``).
* ``m = 1``, timeout ``T``: ``D = min(x_(k), T)``; ``L`` tasks have ``x <= D``.
* ``m = 1``, knee (book Appendix B.1): on the sorted times, after
  completion 1 ``arr = g_1, dev = g_1/2``; after completion ``i >= 2``
  ``dev <- 3/4 dev + 1/4 |arr - g_i|`` then ``arr <- (1-a) arr + a g_i``
  (``a`` = ``knee_gain``, 1/8); if ``g_{i+1} > tau_i = arr + 4 dev`` a knee
  is detected at ``t_(i) + tau_i`` and counts if ``i >= ceil(f k - 1e-12)``
  and ``t_(i) + tau_i >= w``; the first counted knee is ``D``, ``L = i``;
  else ``D = t_(k)``.
* In all four ``run[i] = min(x_i, D)`` and the useful work is the sum of the
  ``L`` smallest times, in increasing order.
* ``m > 1`` (book Appendix B.3): phase 1 of every task ends at
  ``e_i = x_i0``; at each ``barrier()`` ``T = max e_i`` and task ``i`` resumes
  at ``T`` (ideal) or ``e_i + P (floor((T - e_i) / P) + 1)`` (Spark's
  polling, period ``P``), then ``e_i += x_ip``. ``D = max e_i``,
  ``run = e``, ``L = k``; the useful work is the sum of all draws in storage
  order.

**Central FIFO queue** (:func:`run_chunk`; book Appendix A.2): a barrier job
starts at ``t = max(arrival, previous start, tau)`` with ``tau`` the time at
which k workers are free (the k-th smallest free time); its workers are free
at ``t + run[i]`` (1 barrier) or ``t + D`` (2 barriers). A non-barrier job's
tasks in turn take the earliest free worker. With the event-accurate Spark
overhead a barrier job of k > 1 tasks that had to wait for workers starts at
the first global offer at or after ``tau`` (revive tick ``phase + n R`` or
job arrival); a 1-task job starts at ``tau``. The free times are a heap, or,
for at most ``SORTED_FREE_MAX`` workers and no trace, an ascending array
(``tau`` is read at index k - 1; a new free time moves the smaller ones down
a slot): the same free times, hence the same outputs.

**Batch sampling with late binding** (:func:`run_sampling`; book Appendix B
section 2): every worker has a FIFO queue of reservations; an arriving job
appends one to each of its probed workers. An idle worker takes the head of
its queue: a reservation of a started (or, non-barrier, fully handed-out)
job is discarded; otherwise the worker becomes ready for that job: a
non-barrier job hands it a task at once, a barrier job makes it hold until k
workers are ready, then all k tasks start (task ``i`` on the ``i``-th worker
to become ready). Events at one instant: worker frees (in worker order)
before arrivals; arriving jobs' idle probed workers look in worker order.
"""


import numpy as np

from libc.math cimport INFINITY, NAN, ceil, fabs, floor, log, log1p, pow
from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memcpy, memmove

cdef enum:
    C_FIXED = 0
    C_KNEE = 1
    C_TIMEOUT = 2
    C_INSERTION_MAX = 32
    C_IDLE = 0
    C_BUSY = 1
    C_HOLDING = 2

# the same values for Python callers
FIXED, KNEE, TIMEOUT = C_FIXED, C_KNEE, C_TIMEOUT
#: jobs of at most this many tasks are sorted by insertion (same order, hence the same sums, as a full sort)
INSERTION_MAX = C_INSERTION_MAX
IDLE, BUSY, HOLDING = C_IDLE, C_BUSY, C_HOLDING


#: the kernels' float parameters of a job's service, in the order _service reads them (barrier_queues.rules)
PARAM_SLOTS = ("min_fraction", "min_wait", "knee_gain", "timeout", "spark_sync", "sync_poll")


# --------------------------------------------------------------------------------------------------
# one job's service: the rules (barrier_queues.rules)
include "_service.pxi"

# --------------------------------------------------------------------------------------------------
# the binary heaps the kernels share
include "_heap.pxi"

# --------------------------------------------------------------------------------------------------
# the schedulers (barrier_queues.schedulers): one include per room
include "schedulers/central.pxi"
include "schedulers/sampling.pxi"
include "schedulers/releases.pxi"
include "schedulers/waitlist.pxi"
include "schedulers/moldable.pxi"

# --------------------------------------------------------------------------------------------------
# the streaming statistics of each chunk (barrier_queues.statistics)
include "_statistics.pxi"

# --------------------------------------------------------------------------------------------------
# failures' attempts: a round's arithmetic and the layout (barrier_queues.failures)
include "_failures.pxi"
