"""One waiting list under a scheduling discipline (EXTENSIONS.md section 4): Spark's rule and beyond.

Jobs wait in arrival order; at each decision point (each arrival, and each
instant at which workers are released, releases first) the discipline
decides which waiting jobs start, on the lowest-numbered free workers:

* ``first-fit``: Spark's ``TaskSchedulerImpl.resourceOffers`` (SPARK.md): walk
  the waiting jobs in arrival order, skip a barrier job that does not fit,
  start what fits;
* ``backfill``: EASY backfilling with the true task times: the first job that
  does not fit gets a reservation, later jobs start only if they do not delay
  it;
* ``server-filling``: Grosof, Harchol-Balter & Scheller-Wolf (2022), for
  2-barrier jobs whose k are powers of two dividing s;
* ``fcfs``: the paper's FIFO queue (the :mod:`~barrier_queues.schedulers.central`
  room runs it for ``scheduling="fcfs"``; this room's fcfs serves as an oracle:
  both must agree job by job).

Each job's tasks follow its service rule (:mod:`barrier_queues.rules`). The
kernel part is ``waitlist.pxi`` (``run_waitlist``): first-fit costs
``O(classes)`` per started job (one FIFO per (k, barrier) class), fcfs
``O(1)``, server-filling ``O(s)``; backfill walks the jobs behind the
reservation (``O(waiting jobs)`` per blocked decision, as EASY does). The
plain reference is :func:`~barrier_queues.schedulers.waitlist_reference.simulate_waitlist_reference`.

Inputs stream chunk by chunk: the kernel keeps a window of the jobs that
have not all started (in arrival order) and hands back those before the
first unstarted job, so results reach the statistics in arrival order.
"""

from __future__ import annotations

import time

import numpy as np

from .. import failures
from .._validation import ParameterError
from ..inputs import chunk_jobs, draw_jobs
from ..kernels import kernels_module
from ..rules import kernel_params, reference_rule, reference_service
from .base import Scheduler, register, trace_arrays, trace_frame
from .waitlist_reference import simulate_waitlist_reference

DISCIPLINES = ("first-fit", "backfill", "server-filling")


def discipline_code(name: str) -> int:
    """The kernel's code of a discipline (read from the compiled module)."""
    return int(getattr(kernels_module(), name.upper().replace("-", "_")))


def classes(system) -> tuple[np.ndarray, np.ndarray]:
    """``(ks, requirement)`` of the job classes: barrier jobs of each k (need k workers at once), then
    non-barrier jobs of each k (need one worker for the next task). A job's class: index of its k, plus the
    number of k for a non-barrier job."""
    ks = system.ks
    return ks, np.concatenate([ks, np.ones(ks.size, dtype=np.int64)])


class _Window:
    """The jobs that have not all started, then the newest chunk (arrays in arrival order)."""

    FIELDS = ("arrival", "k", "barrier", "cls", "toff", "status", "handed", "start", "dep", "work", "useful",
              "completed", "job_class", "natt", "attempt", "aborted")

    def __init__(self, system):
        self.system = system
        self.ks, self.creq = classes(system)
        self.arrays = None
        self.times = np.empty(0)
        s = system.servers
        self.rel_time, self.rel_worker = np.zeros(s), np.zeros(s, dtype=np.int64)
        self.free_ids = np.arange(s, dtype=np.int64)
        self.heap_state = np.array([0, s, 0], dtype=np.int64)     # releases, free workers, failed jobs pending
        self.tick_state = np.zeros(1)
        self.phase = 0.0
        self.fail = failures.enabled(system)
        self.rt_time, self.rt_job = np.zeros(0), np.zeros(0, dtype=np.int64)

    def append(self, chunk: dict) -> int:
        """Add a chunk after the jobs still in the window; returns the index of its first job."""
        n = chunk["arrival"].size
        cls = np.searchsorted(self.ks, chunk["tasks"]) + np.where(chunk["barrier"], 0, self.ks.size)
        fail = self.fail
        new = {"arrival": chunk["arrival"], "k": chunk["tasks"], "barrier": chunk["barrier"],
               "cls": cls.astype(np.int64), "toff": (chunk["toff"] if fail else chunk["offsets"]) + self.times.size,
               "status": np.zeros(n, dtype=np.int64), "handed": np.zeros(n, dtype=np.int64),
               "start": np.zeros(n), "dep": np.full(n, -np.inf), "work": np.zeros(n), "useful": np.zeros(n),
               "completed": np.zeros(n, dtype=np.int64),
               "job_class": chunk["cls"] if "cls" in chunk else cls.astype(np.int64),
               "natt": chunk["attempts"] if fail else np.ones(n, dtype=np.int64),
               "attempt": np.zeros(n, dtype=np.int64),
               "aborted": chunk["aborted"] if fail else np.zeros(n, dtype=np.bool_)}
        if fail:
            new["useful"] = chunk["useful"].copy()          # the successful attempt's work (the kernel times only)
        pos = 0 if self.arrays is None else self.arrays["arrival"].size
        self.arrays = new if self.arrays is None else {f: np.concatenate([self.arrays[f], new[f]])
                                                       for f in self.FIELDS}
        self.times = np.concatenate([self.times, chunk["holds"] if fail else chunk["times"]])
        size = self.arrays["arrival"].size
        if fail and self.rt_time.size < size:               # room for every job of the window in the retry heap
            self.rt_time = np.concatenate([self.rt_time, np.zeros(size - self.rt_time.size)])
            self.rt_job = np.concatenate([self.rt_job, np.zeros(size - self.rt_job.size, dtype=np.int64)])
        return pos

    def run(self, pos: int, next_first_arrival: float, discipline: int, trace):
        a = self.arrays
        policy, stragglers, params = kernel_params(self.system)
        tw, ts, te = trace
        kernels_module().run_waitlist(
            a["arrival"], a["k"], a["barrier"].astype(np.uint8), a["cls"], a["toff"], self.times, a["status"],
            a["handed"], a["start"], a["dep"], a["work"], a["useful"], a["completed"], self.creq, pos,
            next_first_arrival, discipline, self.system.phases, policy, stragglers,
            np.asarray(params, dtype=np.float64), self.system.barriers == 2, self.rel_time, self.rel_worker,
            self.heap_state, self.free_ids, tw, ts, te, self.system.overhead == "event",
            self.system.revive_interval or 1.0, self.phase, self.tick_state,
            *((a["natt"], a["attempt"], a["aborted"].astype(np.uint8), self.system.resubmit_delay, self.rt_time,
               self.rt_job) if self.fail else ()))

    def take_started(self) -> dict:
        """Remove and return the jobs before the first one that has not all started."""
        a = self.arrays
        waiting = np.flatnonzero(a["status"] != 2)
        cut = int(waiting[0]) if waiting.size else a["arrival"].size
        done = {"arrival": a["arrival"][:cut], "tasks": a["k"][:cut], "barrier": a["barrier"][:cut],
                "start": a["start"][:cut], "departure": a["dep"][:cut], "work": a["work"][:cut],
                "useful": a["useful"][:cut], "completed": a["completed"][:cut], "cls": a["job_class"][:cut]}
        if self.fail:
            done.update(attempts=a["natt"][:cut], aborted=a["aborted"][:cut])
        if cut:
            self.rt_job[:self.heap_state[2]] -= cut                # the failed jobs pending keep their index
            first_draw = int(a["toff"][cut]) if cut < a["arrival"].size else self.times.size
            self.arrays = {f: v[cut:].copy() for f, v in a.items()}
            self.arrays["toff"] -= first_draw
            self.times = self.times[first_draw:].copy()
        return done


def run(system, jobs, rng, saturated, trace, sink, discipline: str | None = None):
    """One replication, chunk by chunk through the window (see the module docstring)."""
    code = discipline_code(discipline or system.scheduling)
    window = _Window(system)
    window.phase = rng.uniform(0.0, system.revive_interval) if system.overhead == "event" else 0.0
    size = chunk_jobs(system)
    kernel, frame, done = 0.0, None, 0
    frng = failure_stream(rng) if window.fail else None
    if trace and window.fail:
        raise ParameterError("trace must be False with failure_rate: a trace records one attempt per task, and "
                             "a job with failures has several (keep_jobs gives each job's attempts)")

    def draw(n, **kw):
        chunk = draw_jobs(system, n, rng, saturated=saturated, **kw)
        return failures.attempts(system, chunk, frng) if frng is not None else chunk

    chunk = draw(min(size, jobs))
    while chunk is not None:
        n = chunk["arrival"].size
        following = None
        if done + n < jobs:
            following = draw(min(size, jobs - done - n), start_time=chunk["arrival"][-1])
        pos = window.append(chunk)
        buffers = trace_arrays(trace, chunk["holds" if window.fail else "times"].size)
        t0 = time.perf_counter()
        window.run(pos, following["arrival"][0] if following is not None else np.inf, code, buffers)
        kernel += time.perf_counter() - t0
        started = window.take_started()
        if started["arrival"].size:
            sink.add(started)
        if trace:
            frame = trace_frame(chunk, *buffers)
        done += n
        chunk = following
    if window.arrays["arrival"].size:
        raise RuntimeError(f"{window.arrays['arrival'].size} jobs never started after draining (kernel bug)")
    return kernel, frame


def failure_stream(rng: np.random.Generator) -> np.random.Generator:
    """The stream of a replication's failure draws: a child of its generator, so that the arrivals and first
    attempts are those of the same system without failures (common random numbers across failure rates)."""
    try:
        return rng.spawn(1)[0]
    except (TypeError, ValueError):                     # a generator without a seed sequence
        return np.random.default_rng(rng.integers(0, 2**63))


def run_inputs(system, inputs: dict, phase: float = 0.0, discipline: str | None = None) -> dict:
    """The kernel on given inputs (one chunk, drained): per-job arrays. With failures the inputs carry the
    attempts (:func:`barrier_queues.failures.attempts`)."""
    window = _Window(system)
    window.phase = phase
    keys = ("arrival", "tasks", "barrier", "offsets", "times")
    if window.fail:
        keys += ("toff", "holds", "attempts", "aborted", "useful")
    pos = window.append({key: inputs[key] for key in keys})
    window.run(pos, np.inf, discipline_code(discipline or system.scheduling), trace_arrays(False, 0))
    out = window.take_started()
    result = {"start": out["start"], "departure": out["departure"], "work": out["work"], "useful": out["useful"],
              "completed": out["completed"]}
    if window.fail:
        result.update(attempts=out["attempts"], aborted=out["aborted"])
    return result


def reference(system, inputs: dict, phase: float = 0.0, trace: bool = False, discipline: str | None = None):
    """:func:`simulate_waitlist_reference` for a system and its inputs (with failures, from the raw draws)."""
    fail = None
    if failures.enabled(system):
        fail = {"clocks": inputs["clocks"], "fresh": inputs["fresh"], "attempts": inputs["attempts"],
                "max_attempts": system.max_attempts, "delay": system.resubmit_delay,
                "identical": system.retry_work == "identical", "tau": system.checkpoint_interval,
                "delta": system.checkpoint_cost, "restart": system.restart_cost}
    return simulate_waitlist_reference(inputs["arrival"], inputs["tasks"], inputs["barrier"], inputs["times"],
                                       system.servers, discipline or system.scheduling, system.barriers == 2,
                                       trace=trace, service_fn=reference_service(system),
                                       event_overhead=system.overhead == "event",
                                       revive=system.revive_interval or 1.0, phase=phase, failures=fail,
                                       **reference_rule(system))


def _validate(system, set_) -> None:
    if system.overhead == "paper" or (system.overhead == "event" and system.scheduling != "first-fit"):
        raise ParameterError(f"overhead must be None{' or event' if system.scheduling == 'first-fit' else ''} "
                             f"with scheduling = {system.scheduling!r} (got {system.overhead!r}): Spark's offers "
                             "(event) follow its own first-fit rule, the paper's iid overhead the fcfs queue")
    if system.scheduling == "server-filling":
        if system.barriers != 2 or system.barrier_fraction < 1:
            raise ParameterError(f"scheduling 'server-filling' needs barrier jobs with 2 barriers (got barriers = "
                                 f"{system.barriers}, barrier_fraction = {system.barrier_fraction:g})")
        bad = [int(k) for k in system.ks if k & (k - 1) or system.servers % k]
        if bad:
            raise ParameterError(f"scheduling 'server-filling' needs every k a power of two dividing servers = "
                                 f"{system.servers} (got k = {bad})")


def _guard(system, jobs: int, saturated: bool) -> None:
    if saturated and system.scheduling != "fcfs":
        raise ParameterError(f"scheduling must be 'fcfs' for a saturated run (got {system.scheduling!r}): a "
                             "saturated run measures the start rate of a backlog served in arrival order; under "
                             f"{system.scheduling} jobs start out of order (under first-fit large jobs would "
                             "starve behind an endless backlog), so its limit is found by queueing runs and their "
                             "drift test")


SCHEDULER = register(Scheduler(
    "waitlist", "one waiting list in arrival order under first-fit (Spark), backfill or server-filling",
    run=run, run_inputs=run_inputs, reference=reference, placement="central", disciplines=("fcfs", *DISCIPLINES),
    validate=_validate, guard=_guard, kernel_include="schedulers/waitlist.pxi", failures=True))

__all__ = ["DISCIPLINES", "SCHEDULER", "classes", "discipline_code", "failure_stream", "reference", "run",
           "run_inputs"]
