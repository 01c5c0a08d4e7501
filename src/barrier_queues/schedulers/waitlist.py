"""One waiting list under a scheduling discipline (Appendix B, section 4): Spark's rule and beyond.

Jobs wait in arrival order; at each decision point (each arrival, and each
instant at which workers are released, releases first) the discipline
decides which waiting jobs start, on the lowest-numbered free workers:

* ``first-fit``: Spark's ``TaskSchedulerImpl.resourceOffers`` (Appendix C): walk
  the waiting jobs in arrival order, skip a barrier job that does not fit,
  start what fits;
* ``backfill``: EASY backfilling with the true task times: the first job that
  does not fit gets a reservation, later jobs start only if they do not delay
  it;
* ``server-filling``: Grosof, Harchol-Balter & Scheller-Wolf (2022), for
  2-barrier jobs whose k are powers of two dividing s;
* ``aging`` (a gang clock, :mod:`barrier_queues.clocks`): first-fit until the
  oldest waiting job has waited ``aging_after``, then backfill with it as the head;
* ``hold`` (a gang clock): fcfs, the head gang holding the free workers idle for
  at most ``hold_timeout``, then it leaves or is requeued;
* ``sjf`` (shortest job first, non-preemptive, the exact runtime as an oracle or
  a trace's requested times): the waiting gang of the least runtime starts if it
  fits, the first that does not fit blocking the rest; ``sjf-first-fit`` starts
  the least runtime among the gangs that fit (barrier jobs only). The Helios
  study's simulator (``policies/sjf.py`` of its artifact, read here) does the
  same: it sorts the waiting jobs by duration and starts them in that order
  until the first that does not fit; it decides once per second, after every
  submission of that second, where this room decides after each arrival;
* ``fcfs``: the paper's FIFO queue (the :mod:`~barrier_queues.schedulers.central`
  room runs it for ``scheduling="fcfs"``; this room's fcfs serves as an oracle:
  both must agree job by job), and this room's alone with nodes
  (``node_size``, :mod:`barrier_queues.nodes`).

Each job's tasks follow its service rule (:mod:`barrier_queues.rules`). The
kernel part is ``waitlist.pxi`` (``run_waitlist``): first-fit costs
``O(classes)`` per started job (one FIFO per (k, barrier) class), fcfs
``O(1)``, server-filling ``O(s)``; backfill keeps the release times sorted
(its reservation in ``O(log s)``) and, per class, a min segment tree of when
each waiting job would finish, so that instead of walking the jobs behind
the reservation (``O(waiting jobs)``, as the reference and EASY
implementations do) it finds the next job to start in ``O(classes log n)``:
a decision's cost does not grow with the queue (a class's tree is kept only
while more than :data:`BACKFILL_LIST_MAX` of its jobs wait; below, its
list is walked). Up to
:data:`~barrier_queues.schedulers.central.SORTED_FREE_MAX` workers, and under backfill at any number, without
a trace (which needs worker ids), the pending releases are one ascending array instead of a heap, as the
central kernel's free times (a killed task's release is found there by its time: :func:`releases_in_array`).
The
plain reference is
:func:`~barrier_queues.schedulers.waitlist_reference.simulate_waitlist_reference`.

Inputs stream chunk by chunk, drawn, run and added to the statistics in
the central queue's pipeline of three threads
(:func:`~barrier_queues.schedulers.base.chunk_pipeline`): the kernel keeps a
window of the jobs that have not all started (in arrival order; with
failures, not done; without, jobs handed on stay in it until they outnumber
the others twice), in buffers written in place (:class:`_Rows`; with
failures, each chunk's own buffers, written in the helper thread that draws
it, with room for the jobs kept); jobs done behind one that still waits are
parked (copied) until it starts, and results reach the statistics in arrival
order.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import clocks, failures
from .._validation import ParameterError
from ..inputs import CHUNK, child_stream, chunk_jobs, draw_jobs
from ..kernels import kernels_module
from ..rules import kernel_params, reference_rule, reference_service
from .base import Scheduler, chunk_pipeline, register, trace_arrays, trace_frame
from .central import SORTED_FREE_MAX
from .waitlist_reference import simulate_waitlist_reference

DISCIPLINES = ("first-fit", "backfill", "server-filling", "aging", "hold", "sjf", "sjf-first-fit")

#: backfill finds a class's next job by walking its waiting jobs while at most this many wait, and in a min
#: segment tree of their finishing times above (kept only then: a tree update costs log2 of the window's jobs
#: per arrival, start and task). The same jobs either way (tested with 0, 32 and no tree; timings: CHANGELOG)
BACKFILL_LIST_MAX = 32


def releases_in_array(system, code: int) -> bool:
    """Whether the kernel keeps the pending releases in one ascending array (without a trace; else a heap with
    worker ids): up to :data:`~barrier_queues.schedulers.central.SORTED_FREE_MAX` workers, and under backfill
    at any number, since its reservation keeps them sorted beside the heap anyway (the same jobs: tested;
    timings: CHANGELOG)."""
    if system.node_size:                                # (nodes: each release frees a worker of its node)
        return False
    return system.servers <= SORTED_FREE_MAX or code in (discipline_code("backfill"), discipline_code("aging"))


def discipline_code(name: str) -> int:
    """The kernel's code of a discipline (read from the compiled module)."""
    return int(getattr(kernels_module(), name.upper().replace("-", "_")))


def classes(system) -> tuple[np.ndarray, np.ndarray]:
    """``(ks, requirement)`` of the job classes: barrier jobs of each k (need k workers at once), then
    non-barrier jobs of each k (need one worker for the next task). A job's class: index of its k, plus the
    number of k for a non-barrier job."""
    ks = system.ks
    return ks, np.concatenate([ks, np.ones(ks.size, dtype=np.int64)])


class _Rows:
    """Per-row arrays (a window's jobs, without failures) with room to grow, in rotating buffers.

    A chunk is written after the rows kept, in place: no new arrays per chunk and no concatenation (measured:
    CHANGELOG). Keeping a subset moves it to the front of the next buffer,
    so the current buffer's rows stay untouched for views of them handed on (a chunk's results, which the
    statistics thread reads while the next chunk runs) until the rotation comes back to it: with three
    buffers, two steps later, after :func:`~barrier_queues.schedulers.base.chunk_pipeline` has waited for
    those statistics (it waits for chunk i's before it hands on chunk i + 1's)."""

    def __init__(self, dtypes: dict, buffers: int = 3):
        self.dtypes = dtypes
        self._bufs = [{} for _ in range(buffers)]
        self._cap = [-1] * buffers                     # (-1: not allocated)
        self._cur = 0
        self.size = 0
        self.view = {f: np.empty(0, dtype=d) for f, d in dtypes.items()}

    def _alloc(self, slot: int, need: int) -> dict:
        cap = need + need // 2                          # a half more than needed: amortised O(1) per row
        self._bufs[slot] = {f: np.empty(cap, dtype=d) for f, d in self.dtypes.items()}
        self._cap[slot] = cap
        return self._bufs[slot]

    def _set(self, buf: dict, size: int) -> None:
        self.size = size
        self.view = {f: buf[f][:size] for f in self.dtypes}

    def extend(self, new: dict, n: int) -> None:
        """Append ``n`` rows after the current ones: per field an array of ``n`` values, one value for all, or
        ``(array, offset)`` (the array's values plus the offset, added as they are written); a field not in
        ``new`` is left unwritten (for values the reader writes before it reads them)."""
        m = self.size
        buf = self._bufs[self._cur]
        if m + n > self._cap[self._cur]:                # a larger buffer in the same place, the rows first
            old = self.view
            buf = self._alloc(self._cur, m + n)
            for f in self.dtypes:
                buf[f][:m] = old[f]
        _write({f: buf[f][:m + n] for f in self.dtypes}, new, m)
        self._set(buf, m + n)

    def keep(self, rows: np.ndarray, room: int = 0) -> None:
        """Keep only ``rows`` (ascending indices), moved to the front of the next buffer, with room for ``room``
        more."""
        nxt = (self._cur + 1) % len(self._bufs)
        need = rows.size + room
        buf = self._bufs[nxt] if need <= self._cap[nxt] else self._alloc(nxt, need)
        for f in self.dtypes:
            np.take(self.view[f], rows, out=buf[f][:rows.size])
        self._cur = nxt
        self._set(buf, rows.size)


class _Views:
    """A window's rows with failures: views of one chunk's buffers (:meth:`_Window._prebuild`), the same
    interface as :class:`_Rows` for reading (``view``, ``size``, ``dtypes``)."""

    def __init__(self, view: dict):
        self.view = view
        self.dtypes = {f: v.dtype for f, v in view.items()}
        self.size = next(iter(view.values())).size


class _Window:
    """The jobs that have not all started, then the newest chunk (arrays in arrival order).

    Without failures the per-job arrays live in :class:`_Rows` buffers (no new arrays per chunk). With failures
    each chunk's jobs, units and draws are written where the chunk is drawn, into buffers of their own with room
    before them for the jobs the window keeps (:meth:`_prebuild`). Timings of both: CHANGELOG."""

    #: the window's per-job arrays and their types; with job classes of their own (a workload's)
    #: ``job_class``, with failures the attempts and units (the kernel reads those only with failures): a
    #: window carries only what it needs
    FIELDS = {"arrival": np.float64, "k": np.int64, "barrier": np.bool_, "cls": np.int64, "toff": np.int64,
              "status": np.int64, "handed": np.int64, "start": np.float64, "dep": np.float64, "work": np.float64,
              "useful": np.float64, "completed": np.int64, "seq": np.int64, "nd": np.int64}
    CLASS_FIELDS = {"job_class": np.int64}
    #: with gang clocks (:mod:`barrier_queues.clocks`): each job's budget, deadline, requeues, time away, lost
    CLOCK_FIELDS = {"budget": np.float64, "due": np.float64, "requeues": np.int64, "away": np.float64,
                    "lost": np.bool_, "entry": np.float64}
    FAIL_FIELDS = {"natt": np.int64, "attempt": np.int64, "aborted": np.bool_, "ufirst": np.int64,
                   "rtop": np.int64, "left": np.int64, "doomed": np.uint8}
    #: per unit; ``unext`` (the next in its job's list of failed tasks due again) and ``urun`` (its running
    #: attempt's end) are not filled: the kernel writes each before it reads it (a unit joins a list by
    #: ``unext``, and an abort reads ``urun`` only of a unit that has started, ``ucur`` > 0)
    UNIT_FIELDS = {"ujob": np.int64, "utoff": np.int64, "unatt": np.int64, "uab": np.uint8, "ucur": np.int64,
                   "unext": np.int64, "urun": np.float64}
    #: empty unit arrays, for a window of barrier jobs only (the kernel reads them only for non-barrier jobs)
    NO_UNITS = {f: np.empty(0, dtype=d) for f, d in UNIT_FIELDS.items()}
    #: with failures, the least room a chunk's buffers leave before its jobs, units and draws for those the
    #: window keeps (twice the most kept so far above: :meth:`_prebuild`)
    ROOMS = (1024, 4096, 16384)

    def __init__(self, system, discipline: int, rigid: bool = False):
        self.system = system
        self.ks, self.creq = classes(system)
        self.rows = None                                     # the jobs (set by the first chunk: see FIELDS)
        self._draws, self._used = np.empty(0), 0             # the draws (holds): a buffer that doubles
        self.fail = failures.enabled(system)
        self.clock = clocks.enabled(system)
        # an abort kills running tasks only with failures of non-barrier jobs: found by worker id with the heap
        # of releases (above SORTED_FREE_MAX workers), by their release times in the ascending array
        all_barrier = (system.barrier_fraction >= 1 if system.workload is None
                       else all(c.barrier for c in system.workload))
        self.kills = self.fail and not all_barrier
        policy, stragglers, params = kernel_params(system)
        # the kernel's state, carried from chunk to chunk (workers, releases, revive tick, failure heaps): one
        # object made here, read and written by the kernel; the window only renumbers and grows its heaps
        self.state = kernels_module().WaitlistState(
            system.servers, discipline, system.phases, policy, stragglers, params, system.barriers == 2,
            event_overhead=system.overhead == "event", revive=system.revive_interval or 1.0, fail=self.fail,
            failure_ids=self.kills, delay=system.resubmit_delay if self.fail else 0.0,
            sorted_releases=releases_in_array(system, discipline), backfill_list_max=BACKFILL_LIST_MAX,
            rigid=rigid, clock=clocks.settings(system) if self.clock else None, node_size=system.node_size or 0)
        if system.aging_after is not None:
            self.state.aging = system.aging_after
        if system.hold_timeout is not None:
            setting = clocks.settings(system)
            self.state.timeout, self.state.hold_exp = setting["timeout"], setting["hold_exp"]
        self.hold = system.scheduling == "hold"
        # (read by the kernel only; with barrier jobs only, each unit is a job and the kernel reads its job alone)
        self.units = None                                    # with failures, the units (set by the first chunk)
        self.unit_dtypes = self.UNIT_FIELDS if self.kills else {"ujob": np.int64}
        self.rooms = self.ROOMS                              # with failures: see _prebuild
        self.prepared = 0                                    # with failures, the jobs prepared so far (in order)
        self.pending = None                                  # with failures, the jobs to keep at the next chunk
        self.parked = []                                     # done jobs behind a waiting one: (results, seq)
        self.seq = 0                                         # jobs appended so far
        self.handed = 0                                      # the window's first jobs that were handed on
        self.given = 0                                       # jobs handed on so far
        self.chunk = self.unit_chunk = 0                     # the last chunk's jobs and units
        self.results = None                                  # set by the first chunk

    @property
    def arrays(self) -> dict:
        """The window's per-job arrays (views of its buffers)."""
        return self.rows.view

    @property
    def times(self) -> np.ndarray:
        """The window's draws (holds with failures), each job's from its ``toff``."""
        return self._draws[:self._used]

    def _push(self, values: np.ndarray) -> None:
        need = self._used + values.size
        if need > self._draws.size:                         # amortised O(1) per draw, not a copy per chunk
            grown = np.empty(max(need, 2 * self._draws.size))
            grown[:self._used] = self._draws[:self._used]
            self._draws = grown
        self._draws[self._used:need] = values
        self._used = need

    def _room(self, count: int) -> None:
        """Without failures, before ``count`` new draws would overflow the buffer: the draws still read (of the
        jobs not handed on) move to its front first, so that it grows (a copy into fresh memory) only when
        those and the new ones do not fit (timings: CHANGELOG). (With failures the window holds only jobs whose
        draws are read.)"""
        if self.fail or self.rows is None or self._used + count <= self._draws.size:
            return
        a = self.arrays
        live = np.flatnonzero(a["status"] != self.HANDED)
        new_toff = self._compact_draws(live, force=True)
        if new_toff is not None:
            a["toff"][live] = new_toff

    def prepare(self, chunk: dict) -> dict:
        """A chunk's per-job and per-unit values that do not depend on the window (its classes, draws per job,
        indices; what :meth:`append` shifts by the window's counts as it writes them), kept in the chunk:
        computed where it is drawn, in the pipeline's helper thread, off the kernel's thread."""
        n = chunk["arrival"].size
        prep = {"cls": np.searchsorted(self.ks, chunk["tasks"]) + np.where(chunk["barrier"], 0, self.ks.size),
                "index": np.arange(n)}
        drawn = chunk["holds" if self.fail else "times"].size      # each job's draws (holds), in job order
        prep["nd"] = np.diff(chunk["toff" if self.fail else "offsets"], append=drawn)
        if self.fail:
            nu = chunk["unit_attempts"].size
            prep["left"] = np.where(chunk["barrier"], 0, chunk["tasks"])
            prep["ujob"] = (prep["index"] if nu == n                # every unit a job
                            else chunk["unit_job"] if "unit_job" in chunk
                            else np.repeat(prep["index"], np.diff(chunk["unit_first"], append=nu)))
            prep["pre"] = self._prebuild(chunk, prep, self.rooms, self.prepared)
            self.prepared += n
        chunk["window"] = prep
        return chunk

    def _dtypes(self, chunk: dict) -> dict:
        """The window's per-job fields and types for jobs like ``chunk``'s (see FIELDS)."""
        return {**self.FIELDS, **(self.CLASS_FIELDS if "cls" in chunk else {}),
                **(self.FAIL_FIELDS if self.fail else {}), **(self.CLOCK_FIELDS if self.clock else {}),
                **({"held": np.float64} if self.hold else {})}

    def _prebuild(self, chunk: dict, prep: dict, rooms: tuple, seq: int) -> dict:
        """With failures, a chunk's window rows, units and draws (holds) in buffers of their own, written where
        the chunk is drawn (in the pipeline's helper thread) with ``rooms`` = ``(jobs, units, draws)`` left
        free before them: :meth:`append` copies the jobs the window keeps there (a window with failures holds
        only the jobs not done: few), so that the kernel's thread writes only those, not the chunk. Offsets
        into the draws are absolute (the kernel reads the whole buffer); a unit's job and a job's first unit
        count from the chunk's first, and ``append`` adds the kept jobs and units. ``seq``: the jobs before
        this chunk. (``rooms`` is read as it stands when the chunk is drawn: any room is valid, and one too
        small for the jobs kept is grown by ``append``.) Timings: CHANGELOG."""
        r, ru, rd = rooms
        n, nu = chunk["arrival"].size, chunk["unit_attempts"].size
        holds = chunk["holds"]
        rows = {f: np.empty(r + n, dtype=d) for f, d in self._dtypes(chunk).items()}
        units = {f: np.empty(ru + nu, dtype=d) for f, d in self.unit_dtypes.items()}
        draws = np.empty(rd + holds.size)
        draws[rd:] = holds
        new = {"arrival": chunk["arrival"], "k": chunk["tasks"], "barrier": chunk["barrier"], "cls": prep["cls"],
               "toff": (chunk["toff"], rd), "status": 0, "handed": 0, "start": 0.0, "dep": -np.inf, "work": 0.0,
               "useful": chunk["useful"], "completed": 0, "seq": (prep["index"], seq), "nd": prep["nd"],
               "natt": chunk["attempts"], "attempt": 0, "aborted": chunk["aborted"], "ufirst": chunk["unit_first"],
               "rtop": -1, "left": prep["left"], "doomed": 0}
        if "job_class" in rows:
            new["job_class"] = chunk["cls"]
        _write(rows, new, r)
        # (unext, urun: not filled, see UNIT_FIELDS)
        _write(units, {"ujob": prep["ujob"], "utoff": (chunk["unit_toff"], rd), "unatt": chunk["unit_attempts"],
                       "uab": chunk["unit_aborted"], "ucur": 0}, ru)
        return {"rooms": rooms, "rows": rows, "units": units, "draws": draws, "seq": seq}

    def append(self, chunk: dict) -> int:
        """Add a chunk after the jobs still in the window; returns the index of its first job."""
        n = self.chunk = chunk["arrival"].size
        prep = chunk["window"] if "window" in chunk else self.prepare(dict(chunk))["window"]
        fail = self.fail
        if self.results is None:
            classes = "cls" in chunk                        # the jobs' own classes (a workload's)
            self.results = {**self.RESULTS, "cls": "job_class" if classes else "cls",
                            **({"attempts": "natt", "aborted": "aborted"} if fail else {}),
                            **({"lost": "lost", "requeues": "requeues", "backoff": "away"} if self.clock else {}),
                            **({"held": "held"} if self.hold else {})}
        if fail:
            return self._append_prebuilt(chunk, prep)
        if self.rows is None:
            self.rows = _Rows(self._dtypes(chunk))
        self._room(chunk["holds" if fail else "times"].size)
        base = self.times.size
        new = {"arrival": chunk["arrival"], "k": chunk["tasks"], "barrier": chunk["barrier"], "cls": prep["cls"],
               "toff": (chunk["toff"] if fail else chunk["offsets"], base), "status": 0, "handed": 0, "start": 0.0,
               "dep": -np.inf, "work": 0.0, "useful": 0.0, "completed": 0, "seq": (prep["index"], self.seq),
               "nd": prep["nd"]}
        if "job_class" in self.rows.dtypes:
            new["job_class"] = chunk["cls"]
        if self.clock:
            new.update(budget=chunk["budget"], due=np.inf, requeues=0, away=0.0, lost=False, entry=chunk["arrival"])
        if self.hold:
            new["held"] = 0.0
        self.seq += n
        pos = self.rows.size
        self.rows.extend(new, n)
        self._push(chunk["times"])
        return pos

    def _append_prebuilt(self, chunk: dict, prep: dict) -> int:
        """With failures: the chunk's prebuilt buffers (:meth:`_prebuild`) after the jobs kept from the last
        chunk (:attr:`pending`, copied into the room before it with their units and draws; the units' jobs, the
        jobs' first units, the lists of failed tasks due again, the workers' units and the retry and abort
        heaps renumbered, entries of jobs and units not kept becoming -1); returns the index of the chunk's
        first job."""
        n, nu = chunk["arrival"].size, chunk["unit_attempts"].size
        self.unit_chunk = nu
        pre = prep["pre"]
        if pre["seq"] != self.seq:
            raise RuntimeError(f"a chunk prepared after {pre['seq']} jobs appended after {self.seq} (out of order)")
        keep = self.pending if self.pending is not None else np.empty(0, dtype=np.int64)
        old, uold = (self.arrays, self.units.view) if self.rows is not None else (None, None)
        m = keep.size
        if m:
            counts = np.diff(old["ufirst"], append=self.units.size)[keep]
            mu = int(counts.sum())
            ukeep = (np.repeat(old["ufirst"][keep] - np.cumsum(counts) + counts, counts) + np.arange(mu))
            sizes = old["nd"][keep]
            dk = int(sizes.sum())
        else:
            mu = dk = 0
            ukeep = keep                                    # (none)
        if m > pre["rooms"][0] or mu > pre["rooms"][1] or dk > pre["rooms"][2]:      # too little room: anew
            pre = self._prebuild(chunk, prep, tuple(max(a, 2 * b) for a, b in zip(self.rooms, (m, mu, dk),
                                                                                   strict=True)), self.seq)
        self.rooms = tuple(max(a, 2 * b) for a, b in zip(self.rooms, (m, mu, dk), strict=True))
        r, ru, rd = pre["rooms"]
        rows, units, draws = pre["rows"], pre["units"], pre["draws"]
        if m:
            for f, v in rows.items():
                np.take(old[f], keep, out=v[r - m:r])
            for f, v in units.items():
                np.take(uold[f], ukeep, out=v[ru - mu:ru])
            new_toff = rd - dk + np.cumsum(sizes) - sizes   # the kept jobs' draws, just before the chunk's
            old_toff = rows["toff"][r - m:r]
            if dk:
                draws[rd - dk:rd] = self._draws[np.repeat(old_toff - new_toff, sizes) + np.arange(rd - dk, rd)]
            if "utoff" in units:
                units["utoff"][ru - mu:ru] += np.repeat(new_toff - old_toff, counts)
            rows["toff"][r - m:r] = new_toff
            units["ujob"][ru - mu:ru] = np.searchsorted(keep, units["ujob"][ru - mu:ru])   # (a kept unit's job
            rows["ufirst"][r - m:r] = np.cumsum(counts) - counts                          # is kept)
            rtop = rows["rtop"][r - m:r]
            if (rtop >= 0).any():                           # failed tasks due again: each job's list (rtop, then
                rtop[:] = _renumber(rtop, ukeep)            # unext) holds unit indices, of its own (kept) units
                units["unext"][ru - mu:ru] = _renumber(units["unext"][ru - mu:ru], ukeep)
        if self.rows is not None:                          # (the first chunk: no worker has a unit, no heap entry)
            st = self.state
            st.wunit[:] = _renumber(st.wunit, ukeep)
            for times, heap, kept_, size in ((st.rt_time, st.rt_job, ukeep, st.heap_state[2]),
                                             (st.ab_time, st.ab_job, keep, st.heap_state[3])):
                v = _renumber(heap[:size], kept_)
                order = np.lexsort((v, times[:size]))      # sorted by (time, entry): still a heap for the kernel
                times[:size], heap[:size] = times[:size][order], v[order]
        units["ujob"][ru:] += m                             # the chunk's units' jobs and jobs' first units, after
        rows["ufirst"][r:] += mu                            # the kept ones
        self.rows = _Views({f: v[r - m:] for f, v in rows.items()})
        self.units = _Views({f: v[ru - mu:] for f, v in units.items()})
        self._draws, self._used = draws, draws.size
        self.pending = None
        self.seq += n
        st = self.state
        room = self.units.size + int(st.heap_state[2:].max())    # room in the retry and abort heaps: a unit
        if st.rt_time.size < room:                          # each, and the entries they hold (only those are
            heaps = []                                      # copied: the kernel reads no further, and the rest
            for values, held in ((st.rt_time, st.heap_state[2]), (st.rt_job, st.heap_state[2]),   # is never
                                 (st.ab_time, st.heap_state[3]), (st.ab_job, st.heap_state[3])):  # read)
                grown = np.empty(2 * room, dtype=values.dtype)
                grown[:held] = values[:held]
                heaps.append(grown)
            st.rt_time, st.rt_job, st.ab_time, st.ab_job = heaps
        return m

    #: the per-job arrays the kernel reads and writes (with failures, FAIL_KEYS too)
    KERNEL_KEYS = ("arrival", "k", "cls", "toff", "status", "handed", "start", "dep", "work", "useful", "completed")
    FAIL_KEYS = ("natt", "attempt", "ufirst", "rtop", "left", "doomed")

    def run(self, pos: int, next_first_arrival: float, trace):
        """The kernel on the window from ``pos`` (the new chunk's first job) until ``next_first_arrival``."""
        a = self.arrays
        jobs = {key: a[key] for key in self.KERNEL_KEYS}
        jobs.update(barrier=a["barrier"].view(np.uint8), times=self.times, creq=self.creq)
        units = None
        if self.fail:
            jobs.update({key: a[key] for key in self.FAIL_KEYS}, aborted=a["aborted"].view(np.uint8))
            units = {**self.NO_UNITS, **self.units.view}   # (barrier jobs only: ujob alone)
        if self.clock:
            jobs.update({key: a[key] for key in ("budget", "due", "requeues", "away", "entry", "seq")},
                        lost=a["lost"].view(np.uint8))
            if self.state.evict:                            # the waiting jobs in list order: (entry, seq)
                w = np.flatnonzero(a["status"][:pos] == kernels_module().WAITING)
                jobs["order"] = w[np.lexsort((a["seq"][w], a["entry"][w]))]
            if self.hold:
                jobs["held"] = a["held"]
            self._clock_room(a["arrival"].size)
        k = kernels_module()
        k.run_waitlist(self.state, jobs, units, pos, next_first_arrival, tuple(trace))
        if self.state.stormed:
            raise ParameterError(f"the gangs were requeued more than {k.MAX_REQUEUES_PER_JOB} times per job: they "
                                 "starve, bounced by their clock faster than they start (the run would not end); give "
                                 "--requeue-limit, or a longer --hold-timeout or --wait-budget")

    RESULTS = {"arrival": "arrival", "tasks": "k", "barrier": "barrier", "start": "start", "departure": "dep",
               "work": "work", "useful": "useful", "completed": "completed"}

    #: a done job whose results were handed on, still in the window (Python's mark: the kernel links only
    #: waiting jobs, and without failures nothing else refers to a job)
    HANDED = 4

    def take_started(self, cuts=None):
        """Hand on the jobs that have all started (with failures: that are done) before the first job still in
        the window, in arrival order. Jobs done behind a job that still waits are parked (copied) until it
        starts, so a decision's cost does not grow with the jobs that passed a waiting gang.

        With failures the window keeps only the jobs not done (heap entries and units refer to them), copied
        into the next chunk's buffers when it is appended (:attr:`pending`; a buffer handed on is not written
        again). Without,
        done jobs stay in place, marked :attr:`HANDED`, until they outnumber the others twice (then the others
        move to the next buffer): a window of starving gangs is not copied at every chunk (timings: CHANGELOG).

        ``cuts(first, n, every)`` (:meth:`barrier_queues.runs.Sink.cuts`): where many jobs merged back from
        the parked ones may be handed on in pieces (an iterator of dicts instead of one dict), so that the
        statistics of one piece overlap the gathering of the next (the drain of starving gangs hands on most of
        a run at once: see CHANGELOG)."""
        a = self.arrays
        n = a["arrival"].size
        status = a["status"]
        h = self.handed                                     # the jobs before h: handed on
        finished = np.flatnonzero(status == 2)
        waiting = np.flatnonzero(status != 2 if self.fail else (status != 2) & (status != self.HANDED))
        first = int(waiting[0]) if waiting.size else n
        keys = self.results
        if finished.size == first - h and (not finished.size or finished[-1] == first - 1):
            done = {out: a[f][h:first] for out, f in keys.items()}        # a prefix of the rest: views
            seq = a["seq"][h:first]
        else:
            self.parked.append(({out: a[f][finished] for out, f in keys.items()}, a["seq"][finished]))
            done, seq = None, None
        limit = a["seq"][first] if waiting.size else np.iinfo(np.int64).max
        if self.parked and min(int(q[0]) for _, q in self.parked) < limit:     # (each block's seq ascends)
            parts, kept = [(done, seq)] if done is not None else [], []
            for block, q in self.parked:                    # split each block at the limit (views, no copy)
                cut = int(np.searchsorted(q, limit))
                if cut:
                    parts.append(({key: v[:cut] for key, v in block.items()}, q[:cut]))
                if cut < q.size:
                    kept.append(({key: v[cut:] for key, v in block.items()}, q[cut:]))
            total = sum(q.size for _, q in parts)
            if total != (int(limit) if waiting.size else self.seq) - self.given:
                raise RuntimeError(f"{total} jobs to hand on, not every job up to the first waiting one (kernel bug)")
            at = cuts(self.given, total, CHUNK) if cuts is not None and total > 2 * CHUNK else []
            merged = _merged(parts, self.given, [0, *at, total])
            self.parked = kept
            self.given += total
            done = merged if at else next(merged)
        elif done is None:
            done = {key: a[f][:0] for key, f in keys.items()}
        else:
            self.given += done["arrival"].size
        if self.fail:                                       # (kept at the next chunk: see _append_prebuilt)
            self.pending = waiting
        elif n - waiting.size > 2 * waiting.size:           # done jobs twice the others: compact
            self._keep(waiting)
            self.handed = 0
        else:
            status[finished] = self.HANDED
            self.handed = first
            new_toff = self._compact_draws(waiting)         # (the handed jobs' draws are not read again)
            if new_toff is not None:
                a["toff"][waiting] = new_toff
        return done

    def _compact_draws(self, keep: np.ndarray, force: bool = False):
        """Once half of the draws are dead (``force``: any), move the draws of the jobs ``keep`` to the buffer's
        front (it keeps its room) and return their new ``toff``; else None."""
        a = self.arrays
        sizes = a["nd"][keep]
        total = int(sizes.sum())
        if (total >= self.times.size) if force else (2 * total >= self.times.size):
            return None
        new_toff = np.cumsum(sizes) - sizes
        self._used = kernels_module().compact_runs(self._draws, np.ascontiguousarray(a["toff"][keep]),
                                                   np.ascontiguousarray(sizes))
        return new_toff

    def _clock_room(self, nw: int) -> None:
        """Room in the clocks' heaps for a window of ``nw`` jobs: two deadlines and a return per job (the kernel
        drops stale deadlines when the heap is full: at most one per job is live), the entries kept."""
        st = self.state
        for t, j, need, held in (("dl_time", "dl_job", 2 * nw + 2, st.clock_state[0]),
                                 ("rq_time", "rq_job", nw + 1, st.clock_state[1])):
            if getattr(st, t).size < need:
                for name in (t, j):
                    old = getattr(st, name)
                    grown = np.empty(2 * need, dtype=old.dtype)
                    grown[:held] = old[:held]
                    setattr(st, name, grown)

    def _renumber_clocks(self, keep: np.ndarray) -> None:
        """The clocks' heap entries after the window keeps only the rows ``keep``: each job's new row (-1 for
        one not kept: a stale deadline), the entries sorted by (time, job) again (a valid heap)."""
        st = self.state
        st.hold_state[:] = _renumber(st.hold_state, keep)       # (the holder waits: it is kept)
        for t, j, size in (("dl_time", "dl_job", st.clock_state[0]), ("rq_time", "rq_job", st.clock_state[1])):
            times, jobs = getattr(st, t), getattr(st, j)
            v = _renumber(jobs[:size], keep)
            order = np.lexsort((v, times[:size]))
            times[:size], jobs[:size] = times[:size][order], v[order]

    def _keep(self, keep: np.ndarray) -> None:
        """Without failures, shrink the window to the jobs ``keep`` (in order): their arrays and their draws.
        (With failures the next chunk's buffers take the jobs kept: :meth:`_append_prebuilt`.)"""
        new_toff = self._compact_draws(keep)
        self.rows.keep(keep, self.chunk)                   # (room for a chunk: no larger buffer at once)
        if self.clock:
            self._renumber_clocks(keep)
        if new_toff is not None:
            self.arrays["toff"][:] = new_toff


def _merged(parts: list, first: int, bounds: list):
    """The jobs of ``parts`` (``(per-job arrays, seq)`` blocks, each's ``seq`` ascending; together the jobs
    ``first, first + 1, ...``) in job order, piece by piece between ``bounds`` (job counts from ``first``): each
    piece's arrays are filled when asked, every block's jobs in the piece written to their places (found by
    bisection, as a block's ``seq`` ascends). One write per value, where concatenating the blocks, sorting their
    ``seq`` and gathering took two copies and a sort (measured: see CHANGELOG)."""
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=False):
        piece = None
        for block, q in parts:
            a, b = np.searchsorted(q, (first + lo, first + hi))
            if a == b:
                continue
            if piece is None:
                piece = {key: np.empty(hi - lo, dtype=v.dtype) for key, v in block.items()}
            if q[b - 1] - q[a] == b - a - 1:            # consecutive jobs: one slice
                at = slice(q[a] - first - lo, q[b - 1] - first - lo + 1)
            else:
                at = q[a:b] - (first + lo)
            for key, v in block.items():
                piece[key][at] = v[a:b]
        yield piece


def _write(buffers: dict, new: dict, at: int) -> None:
    """Write ``new`` into ``buffers`` from row ``at`` on: per field an array, one value for all, or ``(array,
    offset)`` (the values plus the offset, added as they are written); a field not in ``buffers`` is skipped."""
    for f, value in new.items():
        if f not in buffers:
            continue
        if type(value) is tuple:
            np.add(value[0], value[1], out=buffers[f][at:])
        else:
            buffers[f][at:] = value


def _renumber(index: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Each old row index's place among the ascending rows ``kept``, -1 where it is not kept (or was -1)."""
    at = np.searchsorted(kept, index)
    found = np.zeros(index.size, dtype=bool)
    inside = at < kept.size
    found[inside] = kept[at[inside]] == index[inside]
    return np.where(found, at, -1)


def run(system, jobs, rng, saturated, trace, sink, discipline: str | None = None):
    """One replication, chunk by chunk through the window (see the module docstring)."""
    code = discipline_code(discipline or system.scheduling)
    window = _Window(system, code)
    window.state.phase = rng.uniform(0.0, system.revive_interval) if system.overhead == "event" else 0.0
    size = chunk_jobs(system)
    kernel, frame = 0.0, None
    frng = failure_stream(rng) if window.fail else None
    crng = child_stream(rng) if window.clock else None
    if window.clock and (window.state.jitter > 0 or window.state.hold_exp):
        window.state.jseed = clocks.jitter_seed(crng)
    if trace and window.fail:
        raise ParameterError("trace must be False with failure_rate: a trace records one attempt per task, and "
                             "a job with failures has several (keep_jobs gives each job's attempts)")

    scratch = {}                          # the draws' reused buffers (see draw_jobs)
    # with failures and more than one chunk, a chunk's attempts are drawn in a thread of their own, in chunk
    # order (their own stream): the kernel needs only the next chunk's first arrival, so the first chunk runs
    # while the second one's attempts are drawn (measured: see CHANGELOG)
    pool = ThreadPoolExecutor(max_workers=1) if frng is not None and not trace and jobs > size else None

    def with_attempts(chunk):
        return window.prepare(failures.attempts(system, chunk, frng, raw=False))

    def draw(start_time, done):
        chunk = draw_jobs(system, min(size, jobs - done), rng, start_time=start_time, saturated=saturated,
                          scratch=scratch)
        if crng is not None:
            chunk["budget"] = clocks.budgets(system, chunk, crng)
        if frng is None:
            return window.prepare(chunk)
        if pool is None:
            return with_attempts(chunk)
        return {"arrival": chunk["arrival"], "pending": pool.submit(with_attempts, chunk)}

    def step(chunk, following):
        nonlocal kernel, frame
        if "pending" in chunk:
            chunk = chunk["pending"].result()
        pos = window.append(chunk)
        buffers = trace_arrays(trace, chunk["holds" if window.fail else "times"].size)
        t0 = time.perf_counter()
        window.run(pos, following["arrival"][0] if following is not None else np.inf, buffers)
        kernel += time.perf_counter() - t0
        if trace:
            frame = trace_frame(chunk, *buffers)
        started = window.take_started(sink.cuts)   # (new arrays or views the window no longer writes)
        return started if not isinstance(started, dict) or started["arrival"].size else None

    try:
        chunk_pipeline(draw, step, sink.add, jobs, size, threads=not trace)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    left = window.pending.size if window.pending is not None else window.arrays["arrival"].size
    if left:
        raise RuntimeError(f"{left} jobs never started after draining (kernel bug)")
    return kernel, frame


def failure_stream(rng: np.random.Generator) -> np.random.Generator:
    """The stream of a replication's failure draws (:func:`~barrier_queues.inputs.child_stream`): the arrivals
    and first attempts are those of the same system without failures (common random numbers across rates)."""
    return child_stream(rng)


def run_inputs(system, inputs: dict, phase: float = 0.0, discipline: str | None = None) -> dict:
    """The kernel on given inputs (one chunk, drained): per-job arrays. With failures the inputs carry the
    attempts (:func:`barrier_queues.failures.attempts`). Rigid jobs (a trace's: ``inputs["rigid"]``, 2
    barriers) have one draw each, the runtime all their k tasks hold their workers for (``offsets`` 0, 1, 2,
    ...), and ``inputs["predicted"]``, the runtimes backfill predicts (each at least the job's own): the kernel
    keeps one release per job instead of k (the same results as k equal draws: tested)."""
    rigid = bool(inputs.get("rigid", False))
    window = _Window(system, discipline_code(discipline or system.scheduling), rigid=rigid)
    window.state.phase = phase
    if rigid:
        window.state.pred = np.ascontiguousarray(inputs["predicted"], dtype=float)
    keys = ("arrival", "tasks", "barrier", "offsets", "times")
    if window.clock:
        inputs = {**inputs, "budget": _budgets(system, inputs)}
        keys += ("budget",)
        window.state.jseed = int(inputs.get("jitter_seed", 0))
    if window.fail:
        keys += ("toff", "holds", "attempts", "aborted", "useful", "unit_attempts", "unit_aborted", "unit_toff",
                 "unit_first")
    pos = window.append({key: inputs[key] for key in keys})
    window.run(pos, np.inf, trace_arrays(False, 0))
    out = window.take_started()
    result = {"start": out["start"], "departure": out["departure"], "work": out["work"], "useful": out["useful"],
              "completed": out["completed"]}
    if window.fail:
        result.update(attempts=out["attempts"], aborted=out["aborted"])
    if window.clock:
        result.update(lost=out["lost"], requeues=out["requeues"], backoff=out["backoff"])
    if window.hold:
        result["held"] = out["held"]
    return result


def _budgets(system, inputs: dict) -> np.ndarray:
    """The inputs' wait budgets: ``inputs["budget"]``, or computed from the jobs (exponential patience must be
    drawn by the caller: :func:`barrier_queues.clocks.budgets`)."""
    if "budget" in inputs:
        return np.asarray(inputs["budget"], dtype=float)
    if system.wait_budget is not None and system.wait_budget.kind == "exp":
        raise ParameterError("exponential patience (wait_budget 'exp:MEAN') needs drawn budgets: give "
                             "inputs['budget'] from barrier_queues.clocks.budgets(system, inputs, rng)")
    return clocks.budgets(system, inputs, None)


def reference(system, inputs: dict, phase: float = 0.0, trace: bool = False, discipline: str | None = None,
              predictions=None):
    """:func:`simulate_waitlist_reference` for a system and its inputs (with failures, from the raw draws;
    ``predictions``: backfill's predicted hold per job, a trace's requested times)."""
    fail = None
    if failures.enabled(system):
        fail = {"clocks": inputs["clocks"], "fresh": inputs["fresh"], "unit_attempts": inputs["unit_attempts"],
                "max_attempts": system.max_attempts, "delay": system.resubmit_delay,
                "identical": not failures.get(system.retry_work).fresh,
                "attempt": failures.get(system.retry_work).attempt, "tau": system.checkpoint_interval,
                "delta": system.checkpoint_cost, "restart": system.restart_cost}
    return simulate_waitlist_reference(inputs["arrival"], inputs["tasks"], inputs["barrier"], inputs["times"],
                                       system.servers, discipline or system.scheduling, system.barriers == 2,
                                       trace=trace, service_fn=reference_service(system),
                                       event_overhead=system.overhead == "event",
                                       revive=system.revive_interval or 1.0, phase=phase, failures=fail,
                                       predictions=predictions, **reference_rule(system),
                                       clock={**clocks.settings(system), "budgets": _budgets(system, inputs),
                                              "jitter_seed": int(inputs.get("jitter_seed", 0))}
                                       if clocks.enabled(system) else None, aging_after=system.aging_after,
                                       node_size=system.node_size)


def _validate(system, set_) -> None:
    if system.overhead == "paper" or (system.overhead == "event" and system.scheduling != "first-fit"):
        raise ParameterError(f"overhead must be None{' or event' if system.scheduling == 'first-fit' else ''} "
                             f"with scheduling = {system.scheduling!r} (got {system.overhead!r}): Spark's offers "
                             "(event) follow its own first-fit rule, the paper's iid overhead the fcfs queue")
    if system.scheduling in ("sjf", "sjf-first-fit"):
        if system.barrier_fraction < 1 or system.failure_rate is not None:
            raise ParameterError(f"scheduling {system.scheduling!r} orders gangs by their runtime: it needs barrier "
                                 f"jobs only and no failures (got barrier_fraction = {system.barrier_fraction:g}"
                                 f", failure_rate = {system.failure_rate!r})")
    if system.scheduling == "server-filling":
        if system.barriers != 2 or system.barrier_fraction < 1:
            raise ParameterError(f"scheduling 'server-filling' needs barrier jobs with 2 barriers (got barriers = "
                                 f"{system.barriers}, barrier_fraction = {system.barrier_fraction:g}): give "
                                 "--barriers 2 (barriers=2); jobs with a shared time, as MJQM's are, behave the "
                                 "same under 1 and 2 barriers")
        bad = [int(k) for k in system.ks if k & (k - 1) or system.servers % k]
        if bad:
            raise ParameterError(f"scheduling 'server-filling' needs every k a power of two dividing servers = "
                                 f"{system.servers} (got k = {bad[:5]}{' ...' if len(bad) > 5 else ''})")


def _guard(system, jobs: int, saturated: bool) -> None:
    if saturated and clocks.enabled(system):
        raise ParameterError("wait_budget must be left out of a saturated run: a saturated run measures how fast a "
                             "backlog that never leaves is served; a system that loses jobs is judged by queueing "
                             "runs (their lost share and stability)")
    if saturated and system.scheduling != "fcfs":
        raise ParameterError(f"scheduling must be 'fcfs' for a saturated run (got {system.scheduling!r}): a "
                             "saturated run measures the start rate of a backlog served in arrival order; under "
                             f"{system.scheduling} jobs start out of order (under first-fit large jobs would "
                             "starve behind an endless backlog), so its limit is found by queueing runs and their "
                             f"drift test: 'sweep ... --scheduling {system.scheduling} --utilization 0.5,0.6,0.7,...' "
                             "and each row's stable column")


SCHEDULER = register(Scheduler(
    "waitlist", "one waiting list in arrival order under first-fit (Spark), backfill, server-filling or aging",
    run=run, run_inputs=run_inputs, reference=reference, placement="central", disciplines=("fcfs", *DISCIPLINES),
    validate=_validate, guard=_guard, kernel_include="schedulers/waitlist.pxi", failures=True,
    clocks=True, nodes=True))


def add_discipline(name: str, decide) -> None:
    """Offer a new discipline of the waiting list (``BarrierSystem(scheduling=name)``; the book's extension
    guide). Its compiled part must be built: a code in ``waitlist.pxi`` named ``name`` in upper case (``-`` as
    ``_``), listed in ``DISCIPLINE_CODES`` with its branch in ``_wl_decide``. ``decide(q, now)`` is its plain
    reference: one decision of the reference scheduler (:mod:`.waitlist_reference`; ``q.waiting`` the waiting
    jobs in arrival order, ``q.free`` the free workers, ``q.start_job(j, now)``, ``q.start_task(j, now)``,
    ``q.ready(j)``)."""
    from .waitlist_reference import DECIDE

    try:
        code = discipline_code(name)
    except AttributeError:
        raise ParameterError(f"discipline {name!r} has no compiled code {name.upper().replace('-', '_')} in the "
                             "kernels: add its branch to waitlist.pxi and rebuild (make install)") from None
    if code not in kernels_module().DISCIPLINE_CODES:
        raise ParameterError(f"discipline {name!r}: its code {code} is not in the kernel's DISCIPLINE_CODES")
    if name in SCHEDULER.disciplines:
        raise ParameterError(f"discipline {name!r} is already offered")
    DECIDE[name] = decide
    object.__setattr__(SCHEDULER, "disciplines", (*SCHEDULER.disciplines, name))


__all__ = ["DISCIPLINES", "SCHEDULER", "add_discipline", "classes", "discipline_code", "failure_stream", "reference",
           "run", "run_inputs"]
