"""The random inputs of a simulation: what is drawn, in which order, and in which chunks.

Every simulator of this library (the compiled kernels of each scheduler and
their plain-Python references) consumes the same pre-drawn arrays, so that a
kernel and its reference fed the same inputs must agree bit for bit.

* **Streams.** Replication ``r`` of a run with ``seed`` draws from
  ``SeedSequence(seed).spawn(replications)[r]`` (:func:`spawn_seeds`);
  randomness is owned by the caller and nothing is seeded globally.
* **Order.** Per chunk: arrival gaps, k (pmf), barrier flags (hybrid), task
  times (``k m`` per job, phase-major), the paper's overheads
  (:func:`draw_jobs`). Batch sampling draws its probed workers from a child
  stream (:func:`draw_probes`), so a sampled system sees exactly the jobs of
  the central one with the same seed.
* **Chunks.** 65,536 jobs, fewer for jobs of many draws (:func:`chunk_jobs`): a
  function of the system only, so results do not depend on the machine.

Times are in the system's time unit (mean task time ``1/mu``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._validation import check_int
from .distributions import categorical

if TYPE_CHECKING:                 # annotations only: the system imports the schedulers, which import this
    from .system import BarrierSystem

#: jobs per chunk of random inputs; fixed so that results do not depend on the machine
CHUNK = 1 << 16
#: task draws per chunk at most (memory); a chunk holds min(65,536, 2^22 / (k m)) jobs
CHUNK_DRAWS = 1 << 22


def chunk_jobs(system: BarrierSystem) -> int:
    """Jobs per chunk of random inputs: 65,536, fewer for jobs of many draws (a function of the system only,
    so that results do not depend on the machine)."""
    return max(1, min(CHUNK, CHUNK_DRAWS // (system.max_tasks * system.phases)))


def child_stream(rng: np.random.Generator) -> np.random.Generator:
    """A stream of a replication's own for draws beside its jobs' (failures' attempts, clocks' patience): a child
    of its generator, so that the arrivals and task times are those of the same system without them."""
    try:
        return rng.spawn(1)[0]
    except (TypeError, ValueError):                     # a generator without a seed sequence
        return np.random.default_rng(rng.integers(0, 2**63))


def generator(seed) -> np.random.Generator:
    """A Generator from a seed, a SeedSequence or a Generator (used as is)."""
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def recorded_seed(seed):
    """The seed a run uses: the caller's, or fresh entropy drawn now and recorded, so that an unseeded run can
    be repeated exactly (``SeedSequence(entropy)`` is the sequence an unseeded run would have drawn)."""
    if seed is None:
        return int(np.random.SeedSequence().entropy)
    return seed


def spawn_seeds(seed, n: int) -> list[np.random.SeedSequence]:
    """``n`` independent streams: ``SeedSequence(seed).spawn(n)`` (``seed``: None, an int >= 0 or a SeedSequence)."""
    if seed is not None and not isinstance(seed, np.random.SeedSequence):
        seed = check_int("seed", seed, low=0, high=2**128 - 1, high_name="2**128 - 1")
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return root.spawn(n)


def draw_jobs(system: BarrierSystem, n: int, rng: np.random.Generator, start_time: float = 0.0,
              saturated: bool = False, scratch: dict | None = None) -> dict:
    """Draw the random inputs of ``n`` jobs, in a fixed order.

    Returns arrays ``arrival`` (absolute times from ``start_time``),
    ``tasks``, ``barrier``, ``times`` (``k m`` draws per job, phase-major,
    the paper's overhead added to the first phase) and ``offsets`` (index of
    each job's first draw); with a workload also ``cls``, each job's class. ``saturated`` puts every arrival at
    ``start_time`` (an always-backlogged system). Draw order: arrival gaps,
    k (pmf), barrier flags (hybrid), task times, overheads. ``scratch``: a
    dict the caller keeps between the chunks of one replication (drawn by one
    thread at a time), where the overheads' intermediate draws are kept
    instead of allocated for every chunk (the same numbers).
    """
    if saturated:
        arrivals = np.full(n, start_time)
    elif system.arrival == "poisson":
        arrivals = rng.standard_exponential(n)    # exponential(1 / lambda) bit for bit: 1/lambda e, in place
        arrivals *= 1.0 / system.arrival_rate
        np.cumsum(arrivals, out=arrivals)
        arrivals += start_time         # in place: the same sums as start_time + cumsum, one array fewer
    else:
        arrivals = start_time + np.arange(1, n + 1) / system.arrival_rate
    if system.workload is not None:
        return _draw_classes(system, n, rng, arrivals)
    if system.tasks_pmf is None:
        tasks = np.full(n, system.tasks, dtype=np.int64)
    else:
        tasks = system.ks.take(categorical(rng, system.pk, n))
    if system.barrier_fraction == 1:
        barrier = np.ones(n, dtype=np.bool_)
    elif system.barrier_fraction == 0:
        barrier = np.zeros(n, dtype=np.bool_)
    else:
        barrier = rng.random(n) < system.barrier_fraction
    m = system.phases
    draws = tasks * m
    offsets = np.zeros(n, dtype=np.int64)
    np.cumsum(draws[:-1], out=offsets[1:])
    total = int(draws.sum())
    times = np.asarray(system.task_dist.rvs(size=total, random_state=rng), dtype=np.float64)
    if system.overhead == "paper":
        from .overhead import OverheadModel

        # one overhead per task (the system refuses the paper's model with phases)
        times += OverheadModel(system.revive_interval, system.arrival_rate).rvs(
            total, rng, out=_scratch(scratch, "uniforms", total), spare=_scratch(scratch, "exponentials", total))
    return {"arrival": arrivals, "tasks": tasks, "barrier": barrier, "times": times, "offsets": offsets}


def _scratch(scratch: dict | None, name: str, size: int) -> np.ndarray:
    """A float64 array of ``size`` kept in ``scratch`` under ``name`` (grown when too small); a new one without."""
    if scratch is None:
        return np.empty(size)
    buf = scratch.get(name)
    if buf is None or buf.size < size:
        buf = scratch[name] = np.empty(size)
    return buf[:size]


def _draw_classes(system: BarrierSystem, n: int, rng: np.random.Generator, arrivals: np.ndarray) -> dict:
    """A workload's jobs: each job's class (after the arrival gaps), then task times class by class in
    class order (``k_c`` draws per job, or one shared draw repeated ``k_c`` times)."""
    classes = system.workload
    shares = np.array([c.share for c in classes])
    cls = categorical(rng, shares, n) if len(classes) > 1 else np.zeros(n, dtype=np.int64)
    ks = np.array([c.tasks for c in classes], dtype=np.int64)
    tasks = ks[cls]
    barrier = np.array([c.barrier for c in classes], dtype=np.bool_)[cls]
    offsets = np.zeros(n, dtype=np.int64)
    np.cumsum(tasks[:-1], out=offsets[1:])
    times = np.empty(int(tasks.sum()))
    for c, job_class in enumerate(classes):
        jobs = np.flatnonzero(cls == c)
        if jobs.size == 0:
            continue
        law, k = system.class_law(job_class), job_class.tasks
        if job_class.shared:
            draws = np.repeat(np.asarray(law.rvs(size=jobs.size, random_state=rng), dtype=np.float64), k)
        else:
            draws = np.asarray(law.rvs(size=jobs.size * k, random_state=rng), dtype=np.float64)
        times[(offsets[jobs][:, None] + np.arange(k)).ravel()] = draws
    return {"arrival": arrivals, "tasks": tasks, "barrier": barrier, "times": times, "offsets": offsets,
            "cls": cls.astype(np.int64)}


def probe_count(system: BarrierSystem, k) -> np.ndarray:
    """Workers probed by a job of ``k`` tasks: ``min(s, ceil(d k))`` (Appendix B, section 2)."""
    k = np.asarray(k, dtype=np.int64)
    return np.minimum(system.servers, np.ceil(system.probe_ratio * k - 1e-9).astype(np.int64))


def draw_probes(system: BarrierSystem, tasks: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The workers each job probes: ``min(s, ceil(d k))`` distinct ones, uniformly at random.

    Returns ``(probes, offsets)``: job ``j`` probes ``probes[offsets[j]:offsets[j+1]]``,
    sorted by worker index. Each job's workers are the first ``m`` of a
    uniformly random permutation of the ``s`` workers (argsort of ``s``
    uniform keys), drawn in rows of at most ``2^22 / s`` jobs.
    """
    s = system.servers
    n = tasks.size
    counts = probe_count(system, tasks)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    probes = np.empty(int(offsets[-1]), dtype=np.int64)
    rows = max(1, (1 << 22) // s)
    for a in range(0, n, rows):
        b = min(n, a + rows)
        order = np.argsort(rng.random((b - a, s)), axis=1, kind="stable")
        for m in np.unique(counts[a:b]):
            sel = np.flatnonzero(counts[a:b] == m)
            chosen = np.sort(order[sel, :m], axis=1)
            starts = offsets[a + sel]
            probes[(starts[:, None] + np.arange(m)).ravel()] = chosen.ravel()
    return probes, offsets


def as_kernel_inputs(inputs: dict) -> dict:
    """Given inputs (e.g. a measured workload) as the contiguous arrays the kernels take."""
    return {"arrival": np.ascontiguousarray(inputs["arrival"], dtype=np.float64),
            "tasks": np.ascontiguousarray(inputs["tasks"], dtype=np.int64),
            "barrier": np.ascontiguousarray(inputs["barrier"], dtype=np.bool_),
            "times": np.ascontiguousarray(inputs["times"], dtype=np.float64),
            "offsets": np.ascontiguousarray(inputs["offsets"], dtype=np.int64)}


__all__ = ["CHUNK", "CHUNK_DRAWS", "as_kernel_inputs", "chunk_jobs", "draw_jobs", "draw_probes", "generator",
           "probe_count", "spawn_seeds"]
