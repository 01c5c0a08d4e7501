"""The scheduler description and the registry shared by the rooms (see :mod:`barrier_queues.schedulers`)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from .._validation import ParameterError


def _nothing(*args, **kwargs):
    return None


def _no_extra(system, tasks, rng) -> dict:
    return {}


@dataclass(frozen=True)
class Scheduler:
    """One scheduler (see the package docstring).

    Attributes
    ----------
    name : str
        The room's name.
    placement : str
        The value of ``BarrierSystem.placement`` it serves (default: its name).
    disciplines : tuple of str
        The values of ``BarrierSystem.scheduling`` it runs under that placement.
    help : str
    params : tuple of str
        ``BarrierSystem`` fields it owns (None unless it is chosen).
    validate : callable
        ``validate(system, set_)``: defaults and checks of its fields, and
        combinations it refuses (raises :class:`ParameterError`); called once
        when a system is made.
    run : callable
        ``run(system, jobs, rng, saturated, trace, sink) -> (kernel seconds, trace frame or None)``:
        one replication, chunk by chunk; hands per-job arrays to ``sink.add``.
    run_inputs : callable
        ``run_inputs(system, inputs, phase) -> dict`` of per-job arrays for given inputs (one chunk).
    reference : callable
        ``reference(system, inputs, phase, trace=False)``: the plain-Python simulator on the same inputs.
    draw_extra : callable
        ``draw_extra(system, tasks, rng) -> dict``: inputs beyond :func:`~barrier_queues.inputs.draw_jobs`
        (e.g. the probed workers), drawn from the replication's child stream.
    guard : callable
        ``guard(system, jobs, saturated)``: size guards before any work.
    failures : bool
        It simulates failures (``BarrierSystem.failure_rate``): a system with failures runs in the first
        such room of its placement that has its discipline.
    clocks : bool
        It simulates gang clocks (``BarrierSystem.wait_budget``, :mod:`barrier_queues.clocks`), as
        ``failures``.
    nodes : bool
        It places jobs on nodes (``BarrierSystem.node_size``, :mod:`barrier_queues.nodes`), as ``failures``.
    moldable : bool
        It runs moldable jobs (``BarrierSystem.moldable`` names a policy, :mod:`barrier_queues.moldable_policies`),
        and only them: a system with a policy runs in such a room, one without it never does.
    """

    name: str
    help: str
    run: Callable
    run_inputs: Callable
    reference: Callable
    placement: str = ""
    disciplines: tuple = ("fcfs",)
    params: tuple = ()
    validate: Callable = _nothing
    draw_extra: Callable = _no_extra
    guard: Callable = _nothing
    kernel_include: str = ""
    options: dict = field(default_factory=dict)
    failures: bool = False
    clocks: bool = False
    nodes: bool = False
    moldable: bool = False


SCHEDULERS: dict[str, Scheduler] = {}


def register(scheduler: Scheduler) -> Scheduler:
    """Add a scheduler to the registry (its ``params`` must be fields of ``BarrierSystem``)."""
    if not scheduler.placement:
        object.__setattr__(scheduler, "placement", scheduler.name)
    SCHEDULERS[scheduler.name] = scheduler
    return scheduler


def unregister(name: str) -> None:
    SCHEDULERS.pop(name, None)


def names() -> tuple[str, ...]:
    """The placements (values of ``BarrierSystem.placement``), in registration order."""
    return tuple(dict.fromkeys(s.placement for s in SCHEDULERS.values()))


def disciplines(placement: str | None = None) -> tuple[str, ...]:
    """The values of ``BarrierSystem.scheduling`` (under one placement, or any)."""
    return tuple(dict.fromkeys(d for s in SCHEDULERS.values() if placement in (None, s.placement)
                               for d in s.disciplines))


def of(system) -> Scheduler:
    """The room that runs a system: its placement and its scheduling discipline (and failures, gang clocks or
    nodes, if any)."""
    fail = getattr(system, "failure_rate", None) is not None
    budget = getattr(system, "wait_budget", None)
    clock = budget is not None and not getattr(budget, "off", False)
    nodes = getattr(system, "node_size", None) is not None
    mold = getattr(system, "moldable", None) is not None
    for s in SCHEDULERS.values():
        if s.placement == system.placement and system.scheduling in s.disciplines and (s.failures or not fail) \
                and (s.clocks or not clock) and (s.nodes or not nodes) and s.moldable == mold:
            return s
    if mold:
        given = next((name for name, on in (("failure_rate", fail), ("wait_budget and hold_timeout", clock),
                                            ("node_size", nodes)) if on), None)
        what = f"{given} must be None" if given else "scheduling must be 'fcfs' and placement 'central'"
        raise ParameterError(f"{what} with moldable jobs (got scheduling {system.scheduling!r}, placement "
                             f"{system.placement!r}): moldable jobs run under one FIFO queue, without failures, "
                             "gang clocks or nodes")
    raise ParameterError(f"scheduling must be one of {', '.join(repr(d) for d in disciplines(system.placement))} "
                         f"with placement = {system.placement!r} (got {system.scheduling!r})")


def get(name: str) -> Scheduler:
    try:
        return SCHEDULERS[name]
    except KeyError:
        allowed = ", ".join(repr(n) for n in SCHEDULERS)
        raise ParameterError(f"scheduler must be one of {allowed} (got {name!r})") from None


def params() -> list[str]:
    """Every scheduler-owned system field, each once."""
    return list(dict.fromkeys(p for s in SCHEDULERS.values() for p in s.params))


def validate(system, set_) -> None:
    """The system's scheduler fields: other schedulers' fields are None, the chosen one validates its own."""
    if system.placement not in names():
        raise ParameterError(f"placement must be one of {', '.join(repr(n) for n in names())} "
                             f"(got {system.placement!r})")
    if system.scheduling not in disciplines():
        raise ParameterError(f"scheduling must be one of {', '.join(repr(d) for d in disciplines())} "
                             f"(got {system.scheduling!r})")
    chosen = of(system)
    for name in params():
        if name not in chosen.params and getattr(system, name) is not None:
            owner = next(s for s in SCHEDULERS.values() if name in s.params)
            if owner.moldable:
                raise ParameterError(f"{name} must be None without moldable jobs (got {getattr(system, name)!r}): "
                                     "it is an option of a moldable policy (moldable)")
            raise ParameterError(f"{name} must be None with placement = {system.placement!r} (got "
                                 f"{getattr(system, name)!r}): it needs placement = {owner.placement!r}")
    chosen.validate(system, set_)


def trace_frame(chunk: dict, tw, ts, te):
    """Per-task records (job, worker, start, end) of one traced chunk (first ``k`` draws of each job)."""
    import pandas as pd

    k, o = chunk["tasks"], chunk["offsets"]
    idx = np.concatenate([o[j] + np.arange(k[j]) for j in range(k.size)]) if k.size else np.empty(0, np.int64)
    return pd.DataFrame({"job": np.repeat(np.arange(k.size), k), "worker": tw[idx], "start": ts[idx], "end": te[idx]})


def trace_arrays(trace: bool, draws: int):
    """Per-draw trace buffers (worker, start, end), or empty ones without a trace."""
    if trace:
        return np.zeros(draws, dtype=np.int64), np.zeros(draws), np.zeros(draws)
    return np.empty(0, dtype=np.int64), np.empty(0), np.empty(0)


def chunk_pipeline(draw: Callable, step: Callable, add: Callable, jobs: int, size: int,
                   threads: bool = True) -> None:
    """One replication's chunks through a kernel, in order.

    ``draw(start_time, done)`` draws the chunk of ``min(size, jobs - done)``
    jobs that follows the first ``done`` (arrivals after ``start_time``);
    ``step(chunk, following)`` runs the kernel on a chunk, knowing the next
    one (None after the last), and returns the per-job arrays to hand on (a
    dict, or an iterator of dicts: pieces in order), or None; ``add(results)``
    takes them.

    With ``threads`` and more than two chunks, a pipeline of three threads:
    while the kernel (compiled without the GIL) runs chunk i, one helper
    thread draws chunk i + 2 and another adds chunk i - 1's results (the
    statistics' block sums and bin counts are compiled without the GIL too;
    numpy's draws release it as well). Draws stay in order (one thread, the
    only one that uses the generator) and each chunk's results are added
    after the previous one's, so the results are those of the serial loop,
    bit for bit; ``step`` must not change arrays it has handed on (measured
    against two threads: CHANGELOG).
    """
    helper = ThreadPoolExecutor(max_workers=1) if threads and jobs > 2 * size else None
    adder = ThreadPoolExecutor(max_workers=1) if helper else None
    pending_add = None
    try:
        chunk, done = draw(0.0, 0), 0
        following = draw(chunk["arrival"][-1], chunk["arrival"].size) if chunk["arrival"].size < jobs else None
        while chunk is not None:
            n = chunk["arrival"].size
            after = done + n + (following["arrival"].size if following is not None else 0)
            upcoming = None
            if following is not None and after < jobs:
                args = (following["arrival"][-1], after)
                upcoming = helper.submit(draw, *args) if helper else draw(*args)
            result = step(chunk, following)
            for block in () if result is None else (result,) if isinstance(result, dict) else result:
                if helper:                           # (pieces of one step's results: the next one is made while
                    if pending_add is not None:      # the previous one is added)
                        pending_add.result()         # in order, and errors surface here
                    pending_add = adder.submit(add, block)
                else:
                    add(block)
            done += n
            chunk = following
            following = upcoming.result() if helper and upcoming is not None else upcoming
        if pending_add is not None:
            pending_add.result()
    finally:
        if helper:
            helper.shutdown(wait=True)
            adder.shutdown(wait=True)


def job_outputs(n: int) -> dict:
    """The per-job output arrays every kernel fills."""
    return {"start": np.empty(n), "departure": np.empty(n), "work": np.empty(n), "useful": np.empty(n),
            "completed": np.empty(n, dtype=np.int64)}


__all__ = ["SCHEDULERS", "Scheduler", "chunk_pipeline", "disciplines", "get", "job_outputs", "names", "of", "params",
           "register", "trace_arrays", "trace_frame", "unregister", "validate"]
