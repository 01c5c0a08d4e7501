"""Trace replay: a real workload under any discipline, with the field's metrics (Appendix B, section 6).

:func:`replay` runs fcfs, Spark's first-fit, EASY backfill or server-filling (the disciplines of
:mod:`barrier_queues.schedulers`, section 4) on the jobs of a :class:`~barrier_queues.traces.Trace` instead
of drawn ones: one sample path, no randomness, no replications. The trace is the workload of a
:class:`~barrier_queues.system.BarrierSystem` (its ``trace`` field: :mod:`barrier_queues.trace_workload`),
run by the waiting-list scheduler room (:func:`barrier_queues.schedulers.waitlist.run_inputs`), the same
compiled kernel and plain reference as drawn jobs. At one instant every release comes first, then each
submission (in file order) with a decision (server-filling: one decision after all the instant's submissions;
the other three start the same jobs either way).

* **Rigid traces** (one shared runtime per job: SWF logs): each job holds its k workers for its runtime.
  EASY's prediction ``p`` of a job's runtime is its true runtime (``estimates="exact"``: clairvoyant EASY) or
  its estimate (``"requested"``: SWF field 9, raised to the runtime); a job always runs its true runtime.
* **Traces with per-task times** (Spark event logs): 1 barrier, each task frees its worker when it ends, so a
  replay of a simulated run's own jobs gives that run's starts; estimates are the true times.

What-if options: ``servers`` (more or fewer workers; jobs wider than the cluster are skipped and counted),
``load_scale`` (submissions compressed by that factor: ``submit' = t0 + (submit - t0) / load_scale``) and
**failures** (Appendix B, section 5: ``failure_rate`` gamma per running task, ``max_attempts`` A,
``resubmit_delay`` D): each running task fails at rate gamma; a failure ends a barrier job's attempt (every
task killed, its workers freed, the job waiting again D later at its place; aborted after A attempts) and a
plain job's task is retried alone. A retry redoes the recorded work (the trace's job is rerun: ``retry_work =
"identical"`` by default, or any failure model that redoes the work rather than drawing it afresh). The failure
clocks are the only randomness (``seed``). Under fcfs, first-fit or backfill (with
the true runtimes as EASY's predictions); server-filling is refused: its choice among jobs submitted at one
instant needs them all, and a failed job waiting again is one more event of the instant. A job's ``runtime``
is then its execution (first start to end, retries included), its ``start`` that of its first attempt, and
aborted jobs are counted apart and left out of the means.

**Gang clocks** (Appendix B, section 8: ``wait_budget``, ``on_budget``, ``requeue_backoff``,
``requeue_limit``; :mod:`barrier_queues.clocks`): a job that waits its budget since it (last) entered the
queue leaves, lost or requeued after a backoff; ``runtime:C`` and ``work:C`` budgets read the log's runtimes,
``exp:MEAN`` patience is drawn from ``seed``. A lost job's ``start`` and ``end`` are when it left; it is
counted apart (``lost_jobs``, ``lost_share``, ``lost_work_share``: its ``k r`` over all submitted work, per
class too) and left out of the means and of the utilization.

Metrics (:func:`trace_metrics`, overall and per size class of ``k``): waiting ``w`` = start - submit,
sojourn = end - submit, **bounded slowdown** ``max(1, (w + r) / max(r, tau))`` with runtime ``r`` (a job's
execution: start to end) and ``tau`` = 10 s, their means and maxima; utilization ``sum(work) / (s (last end -
first submit))`` with ``work`` = ``k r`` for a rigid job, the sum of its task times otherwise; makespan =
last end - first submit. ``trim=True`` (Tsafrir, Etsion & Feitelson, IEEE TPDS 2007) leaves out the first
1 % of the jobs and those ending after the last submission.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import clocks
from ._validation import ParameterError, check_int, check_positive
from .statistics import drift
from .trace_workload import ESTIMATES
from .traces import Trace

DISCIPLINES = ("fcfs", "first-fit", "backfill", "server-filling", "sjf", "sjf-first-fit")   # (and aging, hold: a T)
#: bounded slowdown's threshold, in the trace's time unit (seconds for SWF logs)
BSLD_TAU = 10.0
#: share of the first jobs that trimming leaves out (Tsafrir, Etsion & Feitelson 2007)
TRIM_SHARE = 0.01


@dataclass
class ReplayResult:
    """A replay's jobs (``job_id``, ``submit``, ``start``, ``end``, ``tasks``, ``runtime``, ``work``) and what
    produced them."""

    jobs: pd.DataFrame
    servers: int
    scheduling: str
    estimates: str
    load_scale: float
    trace: dict
    failures: dict | None = None
    clocks: dict | None = None
    node_size: int | None = None

    def metrics(self, tau: float = BSLD_TAU, trim: bool = False, size_edges=None) -> dict:
        """The field's metrics (:func:`trace_metrics`)."""
        return trace_metrics(self.jobs, self.servers, tau=tau, trim=trim, size_edges=size_edges)

    def summary(self, tau: float = BSLD_TAU, trim: bool = False, size_edges=None) -> dict:
        """Everything a report needs, JSON-ready: the setting, the trace and the metrics."""
        return {"servers": self.servers, "scheduling": self.scheduling, "estimates": self.estimates,
                "load_scale": self.load_scale, "failures": self.failures, "clocks": self.clocks,
                "node_size": self.node_size, "trace": self.trace,
                **self.metrics(tau=tau, trim=trim, size_edges=size_edges)}


def check_estimates(schedulings, estimates) -> None:
    """Requested estimates are read by backfill alone: any other discipline with ``estimates='requested'``
    (in a grid, any such combination) is refused, never run with the exact times under the option's name."""
    others = [d for d in schedulings if d not in ("backfill", "aging", "sjf", "sjf-first-fit")]
    if "requested" in estimates and others:
        raise ParameterError(f"estimates must be 'exact' under {', '.join(others)} (got 'requested'): only "
                             "backfill (and aging, once it reserves) and sjf predict runtimes, the other disciplines "
                             "never read an estimate"
                             + ("; give the requested-estimate points a grid of backfill alone"
                                if len(schedulings) > 1 else ""))


def check_aging(schedulings, options: dict) -> None:
    """``aging_after`` goes to the ``aging`` points of a grid alone: given without any, it is refused, never
    ignored."""
    if options.get("aging_after") is not None and "aging" not in schedulings:
        raise ParameterError(f"aging_after must come with scheduling 'aging' (got it with "
                             f"{', '.join(map(str, schedulings))})")


def trace_system(trace: Trace, servers: int | None = None, scheduling: str = "fcfs", estimates: str = "exact",
                 load_scale: float = 1.0, failure_rate: float | None = None, max_attempts: int | None = None,
                 resubmit_delay: float | None = None, node_size: int | None = None, retry_work: str | None = None,
                 **clock):
    """The :class:`~barrier_queues.system.BarrierSystem` whose workload is ``trace`` (on the log's own machine
    size unless ``servers`` is given), validated once like any other; ``node_size``: workers per node
    (:mod:`barrier_queues.nodes`); ``retry_work``: the failure model (default ``identical``; any model that redoes
    the recorded work); ``clock``: the gang clock's fields (:data:`barrier_queues.clocks.FIELDS`)."""
    from .system import BarrierSystem

    if not isinstance(trace, Trace):
        raise ParameterError(f"trace must be a Trace (barrier_queues.traces.read_trace; got {type(trace).__name__})")
    if servers is None:
        if trace.servers is None:
            raise ParameterError("servers must be given: the trace does not say how many workers its machine had")
        servers = trace.servers
    if failure_rate is not None and scheduling == "server-filling":
        raise ParameterError("scheduling must be fcfs, first-fit or backfill with failure_rate (got "
                             "'server-filling'): its choice among jobs submitted at one instant needs them all, and "
                             "a failed job waiting again is one more event of the instant")
    unknown = sorted(set(clock) - set(clocks.OPTIONS))
    if unknown:
        raise ParameterError(f"replay takes the clock options {', '.join(clocks.OPTIONS)} (got unknown {unknown})")
    return BarrierSystem(servers=servers, scheduling=scheduling, trace=trace, estimates=estimates,
                         load_scale=load_scale, failure_rate=failure_rate, max_attempts=max_attempts,
                         resubmit_delay=resubmit_delay, node_size=node_size, retry_work=retry_work, **clock)


def replay(trace: Trace, servers: int | None = None, scheduling: str = "fcfs", estimates: str = "exact",
           load_scale: float = 1.0, failure_rate: float | None = None, max_attempts: int | None = None,
           resubmit_delay: float | None = None, seed: int = 0, node_size: int | None = None,
           retry_work: str | None = None, **clock) -> ReplayResult:
    """Replay ``trace`` on ``servers`` workers (default: the log's own machine size) under ``scheduling``;
    with ``failure_rate``, failures of running tasks (module docstring; ``seed`` draws their clocks); with
    ``clock`` (``wait_budget``, ...), gang clocks (``seed`` draws exponential patience)."""
    from .runs import ensure_compiled
    from .schedulers import waitlist

    system = trace_system(trace, servers, scheduling, estimates, load_scale, failure_rate, max_attempts,
                          resubmit_delay, node_size, retry_work, **clock)
    work = system.trace
    jobs = work.jobs
    ensure_compiled(system.placement)
    fail = None
    if failure_rate is not None:
        seed = check_int("seed", seed, low=0, high=2**63 - 1, high_name="2^63 - 1")
        out = waitlist.run_inputs(system, failure_inputs(system, seed))
        runtime = np.asarray(out["departure"], dtype=float) - np.asarray(out["start"], dtype=float)
        job_work = np.asarray(out["work"], dtype=float)
        fail = {"failure_rate": system.failure_rate, "max_attempts": system.max_attempts,
                "resubmit_delay": system.resubmit_delay, "retry_work": system.retry_work, "seed": seed}
    else:
        # (with nodes each task holds its own worker of a node: the expanded inputs, k equal draws per rigid job,
        # which give the rigid room's results job by job: tested)
        inputs = work.expanded_inputs() if system.node_size else work.inputs(system.estimates)
        if clocks.enabled(system):
            seed = check_int("seed", seed, low=0, high=2**63 - 1, high_name="2^63 - 1")
            inputs["budget"] = clocks.budgets(system, inputs, np.random.default_rng(seed))
            inputs["jitter_seed"] = clocks.jitter_seed(np.random.default_rng(seed))
        out = waitlist.run_inputs(system, inputs)
        runtime = (jobs.runtime.to_numpy() if work.rigid
                   else np.asarray(out["departure"], dtype=float) - np.asarray(out["start"], dtype=float))
        job_work = work.work
    # a job's start is that of its last task (the paper's waiting time: until the last task starts); its end is
    # the room's departure (a rigid job's: start + runtime, the same double)
    table = pd.DataFrame({"job_id": jobs.job_id.to_numpy(), "submit": jobs.submit.to_numpy(),
                          "start": np.asarray(out["start"], dtype=float),
                          "end": np.asarray(out["departure"], dtype=float), "tasks": work.tasks, "runtime": runtime,
                          "work": job_work})
    if fail is not None:
        table["attempts"], table["aborted"] = np.asarray(out["attempts"]), np.asarray(out["aborted"], dtype=bool)
    clock_setting = None
    if clocks.enabled(system):
        table["lost"], table["requeues"] = np.asarray(out["lost"], dtype=bool), np.asarray(out["requeues"])
        table["backoff"] = np.asarray(out["backoff"], dtype=float)
        clock_setting = {"wait_budget": str(system.wait_budget), "on_budget": system.on_budget,
                         "requeue_backoff": list(system.requeue_backoff) if system.requeue_backoff else None,
                         "requeue_limit": system.requeue_limit, "requeue_order": system.requeue_order,
                         "requeue_jitter": system.requeue_jitter, "seed": seed}
    return ReplayResult(table, system.servers, system.scheduling, system.estimates, system.load_scale,
                        work.describe(), fail, clock_setting, system.node_size)


def failure_inputs(system, seed, raw: bool = False) -> dict:
    """The inputs of a trace's replay with failures (``system``: :func:`trace_system` with a failure rate):
    its jobs with each task's time and their attempts (:func:`barrier_queues.failures.attempts`; ``raw``: also
    the raw draws the plain reference needs)."""
    from . import failures

    return failures.attempts(system, system.trace.expanded_inputs(), np.random.default_rng(seed), raw=raw)


def size_classes(tasks: np.ndarray, servers: int, edges=None) -> tuple[np.ndarray, list[str]]:
    """Each job's size class: ``edges`` (ascending lower bounds of k; default 1, 2, 4, 8, ... up to s) and the
    labels (``k = 1``, ``k 2-3``, ...)."""
    if edges is None:
        edges = [1] + [2 ** i for i in range(1, max(1, int(math.log2(servers))) + 1) if 2 ** i <= servers]
    given = [int(e) for e in edges]
    shown = ",".join(str(e) for e in given)
    if not given or any(b <= a for a, b in zip(given[:-1], given[1:], strict=False)):
        raise ParameterError(f"size classes (--size-classes, size_edges) must be increasing lower bounds of k "
                             f"(got {shown or 'none'})")
    if given[0] != 1:
        raise ParameterError(f"size classes (--size-classes, size_edges) must start at 1 (got {shown}): the jobs "
                             f"of k below {given[0]} would be in no class; give 1,{shown}")
    edges = given
    labels = []
    for i, lo in enumerate(edges):
        hi = edges[i + 1] - 1 if i + 1 < len(edges) else None
        labels.append(f"k = {lo}" if hi == lo else f"k {lo}-{hi}" if hi is not None else f"k >= {lo}")
    return np.searchsorted(edges, tasks, side="right") - 1, labels


def _block(w, sojourn, bsld, n_all: int) -> dict:
    n = len(w)
    if n == 0:
        return {"jobs": 0, "share": 0.0, "mean_waiting": None, "max_waiting": None, "mean_sojourn": None,
                "mean_bounded_slowdown": None, "max_bounded_slowdown": None}
    return {"jobs": int(n), "share": n / n_all, "mean_waiting": float(w.mean()), "max_waiting": float(w.max()),
            "mean_sojourn": float(sojourn.mean()), "mean_bounded_slowdown": float(bsld.mean()),
            "max_bounded_slowdown": float(bsld.max())}


def trace_metrics(jobs: pd.DataFrame, servers: int, tau: float = BSLD_TAU, trim: bool = False,
                  size_edges=None) -> dict:
    """The metrics of the module docstring, overall and per size class, JSON-ready."""
    tau = check_positive("tau", tau)
    submit, start, end = (jobs[c].to_numpy(dtype=float) for c in ("submit", "start", "end"))
    runtime, work, tasks = jobs.runtime.to_numpy(dtype=float), jobs.work.to_numpy(dtype=float), jobs.tasks.to_numpy()
    span = float(end.max() - submit.min())
    measured = np.ones(len(jobs), dtype=bool)
    aborted = jobs.aborted.to_numpy(dtype=bool) if "aborted" in jobs else np.zeros(len(jobs), dtype=bool)
    lost = jobs.lost.to_numpy(dtype=bool) if "lost" in jobs else np.zeros(len(jobs), dtype=bool)
    if trim:
        measured[:math.ceil(TRIM_SHARE * len(jobs))] = False
        measured &= end <= submit.max()
    w = start - submit
    sojourn = end - submit
    bsld = np.maximum(1.0, (w + runtime) / np.maximum(runtime, tau))
    cls, labels = size_classes(tasks, servers, size_edges)
    m = measured & ~aborted & ~lost              # (aborted and lost jobs are counted apart)
    out = {"jobs": int(len(jobs)), "measured_jobs": int(m.sum()),
           "trimming": ("first 1 % of the jobs and those ending after the last submission left out (Tsafrir, "
                        "Etsion & Feitelson 2007)") if trim else "none: every job", "bsld_tau": tau,
           **{key: v for key, v in _block(w[m], sojourn[m], bsld[m], int(m.sum())).items() if key != "jobs"},
           "utilization": float(work[~lost].sum() / (servers * span)) if span > 0 else None, "makespan": span,
           "classes": []}
    if "attempts" in jobs:
        out["aborted_jobs"] = int(aborted.sum())
        out["mean_attempts"] = float(jobs.attempts.to_numpy().mean())
    if "lost" in jobs:
        out.update(_lost(measured, lost, work, jobs.requeues.to_numpy(), jobs.backoff.to_numpy(dtype=float)))
    out.pop("share")
    last = float(submit.max())
    for c, label in enumerate(labels):
        sel = m & (cls == c)
        if sel.any() or (lost & measured & (cls == c)).any():
            row = {"class": label, **_block(w[sel], sojourn[sel], bsld[sel], int(m.sum())),
                   **_class_verdict(w[sel], start[sel], last)}
            if "lost" in jobs:
                mine = measured & (cls == c)
                row.update(_lost(mine, lost, work, jobs.requeues.to_numpy(), jobs.backoff.to_numpy(dtype=float)))
            out["classes"].append(row)
    out["late_starts"] = int(sum(r["late_starts"] for r in out["classes"]))
    out["starving_classes"] = [r["class"] for r in out["classes"] if r["starving"]]
    return out


def _class_verdict(waiting, start, last_submit: float) -> dict:
    """A class's verdict on a finite log: ``late_starts``, its jobs that start after the last submission (they
    waited for the arrivals to end), ``waiting_trend``, Kendall's tau of its waiting's batch means in
    submission order (:func:`barrier_queues.statistics.drift`; None with fewer than 20 jobs), and
    ``starving``: a late start, or a waiting that grows through the log (the drift test)."""
    late = int((start > last_submit).sum())
    trend = drift(waiting)
    tau = trend["kendall_tau"]
    return {"late_starts": late, "waiting_trend": None if not math.isfinite(tau) else float(tau),
            "starving": bool(late > 0 or trend["drifting"])}


def _lost(sel, lost, work, requeues, backoff) -> dict:
    """What the gang clocks did to the jobs ``sel``: lost jobs, their share and their work's share of all the
    work submitted, requeues and time in backoff per job."""
    n = int(sel.sum())
    total = float(work[sel].sum())
    return {"lost_jobs": int((lost & sel).sum()), "lost_share": float((lost & sel).sum() / n) if n else None,
            "lost_work_share": float(work[lost & sel].sum() / total) if total > 0 else None,
            "requeues_per_job": float(requeues[sel].mean()) if n else None,
            "backoff_per_job": float(backoff[sel].mean()) if n else None}


def parse_cluster_sizes(spec) -> dict[str, int]:
    """``"vc:gpus,vc:gpus,..."`` (or a dict) as ``{vc: workers}``: each VC once, each size a whole number >= 1."""
    if isinstance(spec, dict):
        items = list(spec.items())
    else:
        items = []
        for part in str(spec).split(","):
            name, sep, size = part.strip().partition(":")
            if not sep or not name:
                raise ParameterError(f"cluster sizes must look like 'vc:gpus,vc:gpus' (got {spec!r})")
            items.append((name, size))
    out = {}
    for name, size in items:
        try:
            value = int(str(size))
        except ValueError:
            raise ParameterError(f"cluster size of {name!r} must be a whole number of workers (got {size!r})") from None
        if name in out:
            raise ParameterError(f"cluster sizes name {name!r} twice (got {spec!r})")
        out[str(name)] = check_int(f"cluster size of {name!r}", value, low=1, high=10**6, high_name="1,000,000")
    if not out:
        raise ParameterError("cluster sizes must name at least one cluster")
    return out


@dataclass
class ClusterReplay:
    """A log replayed cluster by cluster (:func:`replay_by_cluster`): each sized cluster's
    :class:`ReplayResult`, and the jobs of clusters given no size, by cluster (skipped, never run)."""

    results: dict
    unsized: dict

    def summary(self, tau: float = BSLD_TAU, trim: bool = False, size_edges=None) -> dict:
        """Per cluster its setting and metrics, and all clusters together: their jobs pooled (the waiting and
        slowdown of every job replayed), utilization over the sum of the sizes, the unsized clusters' jobs
        counted by name."""
        per = {}
        for name, r in self.results.items():
            per[name] = {"servers": r.servers, "skipped": dict(r.trace["skipped"]),
                         **r.metrics(tau=tau, trim=trim, size_edges=size_edges)}
        tables = [r.jobs for r in self.results.values()]
        servers = sum(r.servers for r in self.results.values())
        pooled = trace_metrics(pd.concat(tables, ignore_index=True), servers, tau=tau, trim=False,
                               size_edges=size_edges)
        pooled["utilization"] = (sum(float(t.work.sum()) for t in tables)
                                 / sum(r.servers * (float(r.jobs.end.max()) - float(r.jobs.submit.min()))
                                       for r in self.results.values()))
        first = next(iter(self.results.values()))
        return {"scheduling": first.scheduling, "estimates": first.estimates, "load_scale": first.load_scale,
                "clusters": per, "all": {"servers": servers, **pooled},
                "unsized": {"clusters": dict(self.unsized), "jobs": int(sum(self.unsized.values()))},
                "trace": {**first.trace, "source": self.source}}

    @property
    def source(self) -> str:
        return next(iter(self.results.values())).trace["source"].rsplit(" cluster ", 1)[0]


def replay_by_cluster(trace: Trace, sizes, **options) -> ClusterReplay:
    """Replay each virtual cluster of a log with a ``cluster`` column (the Philly log) as its own cluster of
    ``sizes[vc]`` workers, under the same ``options`` (:func:`replay`'s); jobs wider than their cluster are
    skipped and counted there, and the jobs of a cluster given no size are skipped and counted by name, never
    run on a guessed size. The pooled metrics weigh every replayed job once; utilization is the work of all
    over the sum of each cluster's size times its own span."""
    if "cluster" not in trace.jobs:
        raise ParameterError(f"trace {trace.source!r} has no cluster column: --by-cluster needs a log of virtual "
                             "clusters (the Philly log)")
    sizes = parse_cluster_sizes(sizes)
    if "servers" in options:
        raise ParameterError("servers must not be given with cluster sizes: each cluster runs on its own size")
    named = trace.jobs.cluster.astype(str)
    unknown = sorted(set(sizes) - set(named))
    if unknown:
        raise ParameterError(f"cluster sizes name clusters the log does not have: {unknown}")
    results = {}
    for name, size in sizes.items():
        jobs = trace.jobs[named == name].reset_index(drop=True)
        sub = Trace(jobs, f"{trace.source} cluster {name}", trace.format, servers=size, notes=list(trace.notes))
        results[name] = replay(sub, servers=size, **options)
    unsized = named[~named.isin(list(sizes))].value_counts()
    return ClusterReplay(results, {str(k): int(v) for k, v in unsized.sort_index().items()})


#: the options a grid of replays may vary, in the order they multiply out (the last varies fastest)
GRID_OPTIONS = ("servers", "scheduling", "estimates", "load_scale")


def replay_grid(trace: Trace, grid: dict, tau: float = BSLD_TAU, trim: bool = False, **failures) -> pd.DataFrame:
    """A trace as the workload of a grid: one replay per combination of the values in ``grid`` (keys among
    ``servers``, ``scheduling``, ``estimates``, ``load_scale``; a scalar counts as one value; a value listed
    twice is refused), one row each with its overall metrics. A replay is deterministic, so a row has no
    interval and needs no seed; ``failures`` (``failure_rate``, ``max_attempts``, ``resubmit_delay``,
    ``seed``: :func:`replay`) and the gang clock's options apply to every point (``aging_after`` to the
    ``aging`` points alone), each with the same seed."""
    import itertools

    if not isinstance(grid, dict):
        raise ParameterError(f"grid must be a dict of option values (got {type(grid).__name__})")
    unknown = sorted(set(grid) - set(GRID_OPTIONS))
    if unknown:
        raise ParameterError(f"grid options must be among {', '.join(GRID_OPTIONS)} (got unknown {unknown})")
    names = [n for n in GRID_OPTIONS if n in grid]
    values = []
    for name in names:
        v = list(grid[name]) if isinstance(grid[name], list | tuple) else [grid[name]]
        if not v or len(set(map(str, v))) < len(v):
            raise ParameterError(f"grid option {name} must list distinct values (got {v})")
        values.append(v)
    check_estimates(values[names.index("scheduling")] if "scheduling" in names else ["fcfs"],
                    values[names.index("estimates")] if "estimates" in names else ["exact"])
    check_aging(values[names.index("scheduling")] if "scheduling" in names else ["fcfs"], failures)
    rows = []
    for i, combo in enumerate(itertools.product(*values)):
        point = dict(zip(names, combo, strict=True))
        own = point.get("scheduling", "fcfs") == "aging"     # (aging's wait goes to its points alone)
        result = replay(trace, **point, **{k: v for k, v in failures.items() if own or k != "aging_after"})
        m = result.metrics(tau=tau, trim=trim)
        rows.append({"point": i, "servers": result.servers, "scheduling": result.scheduling,
                     "estimates": result.estimates, "load_scale": result.load_scale,
                     **({"aging_after": failures["aging_after"] if own else None} if "aging_after" in failures else {}),
                     "late_starts": m["late_starts"], "starving_classes": ", ".join(m["starving_classes"]),
                     **{k: m[k] for k in ("jobs", "measured_jobs", "mean_waiting", "max_waiting", "mean_sojourn",
                                          "mean_bounded_slowdown", "max_bounded_slowdown", "utilization",
                                          "makespan")},
                     **({"aborted_jobs": m["aborted_jobs"], "mean_attempts": m["mean_attempts"]}
                        if "aborted_jobs" in m else {}),
                     **({k: m[k] for k in ("lost_jobs", "lost_share", "lost_work_share", "requeues_per_job",
                                           "backoff_per_job")} if "lost_share" in m else {}),
                     "skipped": int(sum(result.trace["skipped"].values()))})
    return pd.DataFrame(rows)


#: the metrics a shaken grid reports with their spread over the shaken logs
SHAKEN_METRICS = ("mean_waiting", "max_waiting", "mean_bounded_slowdown")


def shake(trace: Trace, by: float, rng: np.random.Generator) -> Trace:
    """A shaken copy of a log: every job's submission moved by its own ``U(-by, by)`` (at least 0), the jobs
    in their new order; widths, runtimes and estimates unchanged. (Input shaking in the sense of Tsafrir,
    Ouaknine and Feitelson, MASCOTS 2007: a result that a tiny change of the log overturns is the log's, not
    the rule's; this is our perturbation, stated here, not a copy of theirs.)"""
    by = check_positive("shake_by", by)
    jobs = trace.jobs.copy()
    jobs["submit"] = np.maximum(0.0, jobs.submit.to_numpy() + rng.uniform(-by, by, len(jobs)))
    jobs = jobs.iloc[np.argsort(jobs.submit.to_numpy(), kind="stable")].reset_index(drop=True)
    return Trace(jobs, trace.source, trace.format, servers=trace.servers, task_times=None,
                 skipped=dict(trace.skipped), notes=[*trace.notes, f"shaken: submissions moved by U(-{by:g}, {by:g})"])


def shaken_grid(trace: Trace, grid: dict, shakes: int, by: float, seed: int = 0, tau: float = BSLD_TAU,
                trim: bool = False, level: float = 0.95, **options) -> tuple[pd.DataFrame, dict]:
    """A grid of replays (:func:`replay_grid`) on the log and on ``shakes`` shaken copies of it (:func:`shake`,
    seeds from ``seed``): :func:`perturbed_grid`'s table and summary. Rigid logs only (a shaken Spark log would
    move its tasks apart)."""
    if not trace.rigid:
        raise ParameterError("shaking needs a rigid log (one runtime per job): a log of per-task times is not shaken")
    shakes = check_int("shakes", shakes, low=2, high=10_000, high_name="10,000")
    by = check_positive("shake_by", by)
    copies = [shake(trace, by, child) for child in np.random.default_rng(seed).spawn(shakes)]
    table, info = perturbed_grid(trace, grid, copies, tau=tau, trim=trim, level=level, **options)
    info.update(shakes=shakes, by=float(by), seed=seed,
                method="each submission moved by its own U(-by, by), at least 0; t interval over the shaken logs")
    return table, info


def perturbed_grid(trace: Trace, grid: dict, copies: list, tau: float = BSLD_TAU, trim: bool = False,
                   level: float = 0.95, **options) -> tuple[pd.DataFrame, dict]:
    """A grid of replays on the log and on perturbed ``copies`` of it (shaken or resampled logs): the log's own
    rows, each with the mean of :data:`SHAKEN_METRICS` over the copies (columns ``<metric>_shaken``), a t
    interval over them and the share of copies in which the point keeps its rank among the points; and per
    metric the share in which the log's best point stays the best (a ranking that flips on a copy is said to)."""
    from .statistics import t_interval, within

    base = replay_grid(trace, grid, tau=tau, trim=trim, **options)
    runs = [replay_grid(copy, grid, tau=tau, trim=trim, **options) for copy in copies]
    table = base.copy()
    kept = {}
    for m in SHAKEN_METRICS:
        values = np.array([r[m].to_numpy(dtype=float) for r in runs])          # copy x point
        table[f"{m}_shaken"] = values.mean(axis=0)
        bounds = [within(t_interval(values[:, j], level)) for j in range(values.shape[1])]
        table[f"{m}_shaken_low"] = [b[0] for b in bounds]
        table[f"{m}_shaken_high"] = [b[1] for b in bounds]
        own = base[m].rank(method="min").to_numpy()
        ranks = np.array([pd.Series(v).rank(method="min").to_numpy() for v in values])
        table[f"{m}_rank_kept"] = (ranks == own).mean(axis=0)
        best = int(np.argmin(base[m].to_numpy()))
        kept[m] = float(np.mean([int(np.argmin(v)) == best for v in values]))
    return table, {"copies": len(copies), "level": level, "best_kept": kept}


__all__ = ["BSLD_TAU", "DISCIPLINES", "ESTIMATES", "GRID_OPTIONS", "SHAKEN_METRICS", "ClusterReplay", "ReplayResult",
           "check_estimates", "failure_inputs", "parse_cluster_sizes", "replay", "replay_by_cluster", "replay_grid",
           "perturbed_grid", "shake", "shaken_grid", "size_classes", "trace_metrics", "trace_system"]
