"""Simulation of barrier systems: configuration, runs, replications and summaries.

A :class:`SimulationConfig` describes the system declaratively (MODEL.md
section 2): 1- or 2-barrier, conventional or (s,k,l), hybrid (a fraction
``barrier_fraction`` of barrier jobs, the rest single-queue fork-join jobs),
heterogeneous ``k`` from a pmf, any task law, Poisson or deterministic
arrivals, and Spark's blocking overhead (``"paper"``: an iid
``min(U(0,R), Exp(lambda))`` added to every task, paper section IV;
``"event"``: a blocked barrier job of k > 1 tasks starts only at the next
revive tick or job arrival; a 1-task job is carried by the freed executor's
own offer).

:func:`simulate` draws the random inputs with numpy Generators (independent
streams per replication from ``SeedSequence.spawn``), runs the compiled
kernel chunk by chunk, and returns a :class:`SimulationResult` with per-job
arrays and a summary with confidence intervals. Same seed, same results, bit
for bit (chunk size is fixed, not tied to the number of cores).
"""

from __future__ import annotations

import math
import mmap
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy import stats

from . import _kernels
from ._validation import ParameterError, check_choice, check_int, check_positive, check_probability
from .ctmc import count_feasible_states
from .distributions import Exponential, as_task_distribution
from .order_stats import server_time_per_job
from .overhead import OverheadModel
from .stability import stability_limit

#: jobs per kernel call; fixed so that results do not depend on the machine
CHUNK = 1 << 16
QUANTILES = (0.5, 0.9, 0.99, 0.999)
METRICS = ("waiting", "sojourn", "execution")


def _parse_pmf(pmf, servers: int) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(pmf, str):
        items = {}
        for part in pmf.split(","):
            key, sep, value = part.partition(":")
            if not sep:
                raise ParameterError(f"tasks_pmf must look like '4:0.5,12:0.5' (got {pmf!r})")
            try:
                items[int(key)] = float(value)
            except ValueError:
                raise ParameterError(f"tasks_pmf must look like '4:0.5,12:0.5' (got {pmf!r})") from None
        pmf = items
    ks = np.array(sorted(pmf), dtype=np.int64)
    if ks.size == 0:
        raise ParameterError("tasks_pmf must have at least one value of k (got an empty pmf)")
    for k in ks:
        check_int("tasks_pmf value k", int(k), low=1, high=servers, high_name=f"servers = {servers}")
    probs = np.array([pmf[int(k)] for k in ks], dtype=float)
    for p in probs:
        check_probability("tasks_pmf probability", float(p))
    if not math.isclose(probs.sum(), 1.0, abs_tol=1e-9):
        raise ParameterError(f"tasks_pmf probabilities must sum to 1 (got {probs.sum()!r})")
    return ks, probs / probs.sum()


@dataclass(frozen=True)
class SimulationConfig:
    """A barrier system to simulate.

    Parameters
    ----------
    servers : int
        s workers.
    tasks : int, optional
        k tasks per job, ``1 <= k <= s`` (give ``tasks`` or ``tasks_pmf``).
    arrival_rate : float, optional
        lambda, jobs per unit time; None only for saturated (backlogged) runs.
    needed : int, optional
        l tasks that must finish (default k); only with a fixed ``tasks``.
    barriers : {1, 2}
    task_rate : float
        mu of exponential tasks when ``task_dist`` is None.
    task_dist : TaskDistribution, scipy.stats law or spec string, optional
    tasks_pmf : dict or str, optional
        pmf of k, e.g. ``{4: 0.5, 12: 0.5}`` or ``"4:0.5,12:0.5"``.
    barrier_fraction : float
        p, probability that a job is a barrier job (the rest start task by task).
    arrival : {"poisson", "deterministic"}
    overhead : {None, "paper", "event"}
        Spark's blocking overhead model (module docstring).
    revive_interval : float
        R, Spark's ``spark.scheduler.revive.interval`` in time units (default 1).
    """

    servers: int
    tasks: int | None = None
    arrival_rate: float | None = None
    needed: int | None = None
    barriers: int = 1
    task_rate: float = 1.0
    task_dist: object = None
    tasks_pmf: object = None
    barrier_fraction: float = 1.0
    arrival: str = "poisson"
    overhead: str | None = None
    revive_interval: float = 1.0
    _ks: np.ndarray = field(default=None, repr=False, compare=False)
    _pk: np.ndarray = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        s = check_int("servers", self.servers, low=1)
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        set_("servers", s)
        if (self.tasks is None) == (self.tasks_pmf is None):
            raise ParameterError("give exactly one of tasks (an integer 1 <= tasks <= servers) "
                                 "and tasks_pmf (got "
                                 + ("neither" if self.tasks is None else "both") + ")")
        if self.tasks is not None:
            k = check_int("tasks", self.tasks, low=1, high=s, high_name=f"servers = {s}")
            set_("tasks", k)
            ks, pk = np.array([k], dtype=np.int64), np.ones(1)
            l_ = k if self.needed is None else check_int("needed", self.needed, low=1, high=k,
                                                          high_name=f"tasks = {k}")
            set_("needed", l_)
        else:
            ks, pk = _parse_pmf(self.tasks_pmf, s)
            if self.needed is not None:
                raise ParameterError("needed must be None with tasks_pmf (got "
                                     f"{self.needed!r}): (s,k,l) jobs need a fixed k")
            set_("tasks_pmf", {int(k): float(p) for k, p in zip(ks, pk, strict=True)})
        set_("_ks", ks)
        set_("_pk", pk)
        set_("barriers", check_choice("barriers", self.barriers, (1, 2)))
        set_("task_rate", check_positive("task_rate", self.task_rate, "(tasks per unit time)"))
        set_("task_dist", as_task_distribution(self.task_dist, self.task_rate))
        if self.arrival_rate is not None:
            set_("arrival_rate", check_positive("arrival_rate", self.arrival_rate,
                                                "(jobs per unit time)"))
        set_("barrier_fraction", check_probability("barrier_fraction", self.barrier_fraction))
        if self.barrier_fraction < 1 and self.needed not in (None, self.tasks):
            raise ParameterError("needed must equal tasks when barrier_fraction < 1 (got needed = "
                                 f"{self.needed}, tasks = {self.tasks}): non-barrier jobs are conventional")
        check_choice("arrival", self.arrival, ("poisson", "deterministic"))
        check_choice("overhead", self.overhead, (None, "paper", "event"))
        set_("revive_interval", check_positive("revive_interval", self.revive_interval, "(time units)"))
        if self.overhead is not None and self.arrival_rate is None:
            raise ParameterError("arrival_rate must be given (> 0) with a Spark overhead model: "
                                 "offers follow job arrivals (got None)")

    # -- derived quantities -------------------------------------------------
    @property
    def stragglers(self) -> int:
        """k - l (0 for conventional jobs and for a pmf of k)."""
        return 0 if self.tasks is None else self.tasks - self.needed

    def describe(self) -> dict:
        """JSON-able parameters."""
        d = {f.name: getattr(self, f.name) for f in self.__dataclass_fields__.values()
             if not f.name.startswith("_")}
        d["task_dist"] = self.task_dist.describe()
        return d

    def mean_work(self) -> float | None:
        """E[server time per job] (time units), or None when not available in closed form."""
        law = self.task_dist
        total = 0.0
        for k, p in zip(self._ks, self._pk, strict=True):
            l_ = int(k) - self.stragglers
            barrier_work = server_time_per_job(law, int(k), l_)[0] if self.stragglers else k * law.mean()
            if self.overhead == "paper":
                if self.stragglers:
                    return None
                barrier_work += k * OverheadModel(self.revive_interval, self.arrival_rate).mean()
                nonbarrier_work = barrier_work
            else:
                nonbarrier_work = k * law.mean()
            total += p * (self.barrier_fraction * barrier_work
                          + (1 - self.barrier_fraction) * nonbarrier_work)
        return total

    def offered_utilization(self) -> float | None:
        """rho = lambda E[server time per job] / s."""
        work = self.mean_work()
        if work is None or self.arrival_rate is None:
            return None
        return self.arrival_rate * work / self.servers

    def analytic_limit(self) -> tuple[float, str] | None:
        """The exact maximum stable arrival rate and its method, when one is known.

        Known for pure barrier systems with a fixed k and no overhead model
        (Table I, the CTMC up to 300,000 feasible states, order statistics for
        2-barrier systems with any task law) and for pure non-barrier systems
        (work conservation: ``lambda_max = s / E[work]``). None otherwise.
        """
        if self.overhead is not None:
            return None
        exponential = isinstance(self.task_dist, Exponential)
        if self.barrier_fraction == 0 and self.stragglers == 0:
            return self.servers / self.mean_work(), "work-conservation"
        if self.barrier_fraction < 1 or self.tasks is None:
            return None
        s, k, l_ = self.servers, self.tasks, self.needed
        if self.barriers == 1 and not exponential:
            return None
        if self.barriers == 1 and l_ < k and count_feasible_states(s, k, l_) > 300_000:
            return None
        lim = stability_limit(s, k, l_, self.barriers, task_dist=self.task_dist)
        return lim.lambda_max, lim.method


def draw_jobs(config: SimulationConfig, n: int, rng: np.random.Generator,
              start_time: float = 0.0, saturated: bool = False) -> dict:
    """Draw the random inputs of ``n`` jobs, in a fixed order.

    Returns arrays ``arrival`` (absolute times from ``start_time``), ``tasks``,
    ``barrier`` and ``times`` (task times, job after job, overhead included
    for the paper's model). ``saturated`` puts every arrival at ``start_time``
    (an always-backlogged system).
    """
    if saturated:
        arrivals = np.full(n, start_time)
    elif config.arrival == "poisson":
        arrivals = start_time + np.cumsum(rng.exponential(1.0 / config.arrival_rate, n))
    else:
        arrivals = start_time + np.arange(1, n + 1) / config.arrival_rate
    if config._ks.size == 1:
        tasks = np.full(n, config._ks[0], dtype=np.int64)
    else:
        tasks = config._ks[rng.choice(config._ks.size, size=n, p=config._pk)]
    if config.barrier_fraction == 1:
        barrier = np.ones(n, dtype=np.bool_)
    elif config.barrier_fraction == 0:
        barrier = np.zeros(n, dtype=np.bool_)
    else:
        barrier = rng.random(n) < config.barrier_fraction
    total = int(tasks.sum())
    times = np.asarray(config.task_dist.rvs(size=total, random_state=rng), dtype=np.float64)
    if config.overhead == "paper":
        times = times + OverheadModel(config.revive_interval, config.arrival_rate).rvs(total, rng)
    return {"arrival": arrivals, "tasks": tasks, "barrier": barrier, "times": times}


def _offsets(tasks: np.ndarray) -> np.ndarray:
    offsets = np.zeros(tasks.size, dtype=np.int64)
    np.cumsum(tasks[:-1], out=offsets[1:])
    return offsets


@dataclass
class Replication:
    """Per-job arrays of one replication (times in time units).

    ``start`` is the start of each job's last task; ``work`` the server time
    its tasks used, ``useful`` that of tasks that were not killed.
    """

    arrival: np.ndarray
    start: np.ndarray
    departure: np.ndarray
    tasks: np.ndarray
    barrier: np.ndarray
    work: np.ndarray
    useful: np.ndarray
    kernel_seconds: float
    seconds: float
    trace: pd.DataFrame | None = None


_OUTPUT_FIELDS = (("arrival", np.float64), ("start", np.float64), ("departure", np.float64),
                  ("work", np.float64), ("useful", np.float64), ("tasks", np.int64),
                  ("barrier", np.bool_))


def _allocate(jobs: int, shared: bool = False) -> dict:
    """Per-job output arrays; ``shared`` puts them in anonymous shared memory that
    forked pool workers write into directly (no pickling of large results)."""
    out = {}
    for name, dtype in _OUTPUT_FIELDS:
        if shared:
            buf = mmap.mmap(-1, max(jobs * np.dtype(dtype).itemsize, 1))
            out[name] = np.frombuffer(buf, dtype=dtype, count=jobs)
        else:
            out[name] = np.empty(jobs, dtype=dtype)
    return out


def run_replication(config: SimulationConfig, jobs: int, seed, saturated: bool = False,
                    trace: bool = False, out: dict | None = None) -> Replication:
    """One replication of ``jobs`` jobs from ``seed`` (int, SeedSequence or Generator).

    ``out`` optionally supplies the per-job output arrays (see ``_allocate``).
    """
    _ensure_compiled()
    t_begin = time.perf_counter()
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    phase = rng.uniform(0.0, config.revive_interval) if config.overhead == "event" else 0.0
    s = config.servers
    heap_key = np.zeros(s)
    heap_id = np.arange(s, dtype=np.int64)
    state = np.zeros(1)
    out = _allocate(jobs) if out is None else out
    out_tasks, out_barrier = out["tasks"], out["barrier"]
    traces = []
    kernel = 0.0
    chunk = draw_jobs(config, min(CHUNK, jobs), rng, saturated=saturated)
    done = 0
    empty_f = np.empty(0)
    empty_i = np.empty(0, dtype=np.int64)
    while done < jobs:
        n = chunk["arrival"].size
        following = None
        if done + n < jobs:
            following = draw_jobs(config, min(CHUNK, jobs - done - n), rng,
                                  start_time=chunk["arrival"][-1], saturated=saturated)
        offsets = _offsets(chunk["tasks"])
        sl = slice(done, done + n)
        m = chunk["times"].size
        tw, ts, te = ((np.empty(m, dtype=np.int64), np.empty(m), np.empty(m)) if trace
                      else (empty_i, empty_f, empty_f))
        t0 = time.perf_counter()
        _kernels.run_chunk(chunk["arrival"], chunk["tasks"], chunk["barrier"], chunk["times"], offsets,
                           config.stragglers, config.barriers == 2, config.overhead == "event",
                           config.revive_interval, phase,
                           following["arrival"] if following is not None else empty_f,
                           heap_key, heap_id, state, out["start"][sl], out["departure"][sl],
                           out["work"][sl], out["useful"][sl], tw, ts, te)
        kernel += time.perf_counter() - t0
        out["arrival"][sl] = chunk["arrival"]
        out_tasks[sl] = chunk["tasks"]
        out_barrier[sl] = chunk["barrier"]
        if trace:
            traces.append(pd.DataFrame({"job": np.repeat(np.arange(done, done + n), chunk["tasks"]),
                                        "worker": tw, "start": ts, "end": te}))
        done += n
        chunk = following
    trace_frame = pd.concat(traces, ignore_index=True) if trace else None
    return Replication(out["arrival"], out["start"], out["departure"], out_tasks, out_barrier,
                       out["work"], out["useful"], kernel, time.perf_counter() - t_begin, trace_frame)


_COMPILED = False


def _ensure_compiled() -> None:
    """Compile (or load from numba's cache) the kernel once, before any fork or timing."""
    global _COMPILED
    if _COMPILED:
        return
    f, i = np.zeros(1), np.ones(1, dtype=np.int64)
    _kernels.run_chunk(f, i, np.ones(1, dtype=np.bool_), np.ones(1), np.zeros(1, dtype=np.int64), 0,
                       False, True, 1.0, 0.0, np.empty(0), np.zeros(1), np.zeros(1, dtype=np.int64),
                       np.zeros(1), np.empty(1), np.empty(1), np.empty(1), np.empty(1),
                       np.empty(0, dtype=np.int64), np.empty(0), np.empty(0))
    _COMPILED = True


def _worker_run(args):
    config, jobs, seed, saturated = args
    return run_replication(config, jobs, seed, saturated)


#: output buffers of the runs handed to a process pool, set before the fork
_POOL_OUTPUTS: list = []


def _pool_run(args):
    index, (config, jobs, seed, saturated) = args
    rep = run_replication(config, jobs, seed, saturated, out=_POOL_OUTPUTS[index])
    return rep.kernel_seconds, rep.seconds


def _run_many(tasks: list, workers: int | None, progress: bool | None, desc: str) -> list:
    """Run (config, jobs, seed, saturated) tuples, in a process pool when worthwhile."""
    _ensure_compiled()
    workers = min(len(tasks), workers or os.cpu_count() or 1)
    show = sys.stderr.isatty() if progress is None else progress
    if show:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(tasks), desc=desc, leave=False)
    results = []
    if workers <= 1:
        for t in tasks:
            results.append(_worker_run(t))
            if show:
                bar.update()
    else:
        # forked workers inherit the shared output buffers and write into them
        global _POOL_OUTPUTS
        _POOL_OUTPUTS = [_allocate(t[1], shared=True) for t in tasks]
        ctx = multiprocessing.get_context("fork")
        try:
            with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
                for i, (kernel, seconds) in enumerate(pool.map(_pool_run, enumerate(tasks))):
                    o = _POOL_OUTPUTS[i]
                    results.append(Replication(o["arrival"], o["start"], o["departure"], o["tasks"],
                                               o["barrier"], o["work"], o["useful"], kernel, seconds))
                    if show:
                        bar.update()
        finally:
            _POOL_OUTPUTS = []
    if show:
        bar.close()
    return results


def _t_interval(values: np.ndarray, level: float = 0.95) -> list[float]:
    values = np.asarray(values, dtype=float)
    if values.size < 2:
        return [float("nan"), float("nan")]
    half = stats.t.ppf(0.5 + level / 2, values.size - 1) * values.std(ddof=1) / math.sqrt(values.size)
    mean = values.mean()
    return [float(mean - half), float(mean + half)]


def _drift(waiting: np.ndarray, batches: int = 20) -> dict:
    """Kendall's tau of batch means of the waiting time against time.

    A stationary queue gives tau near 0; a queue that does not drain gives a
    steady increase (tau near 1). Flagged when tau > 0.6 with p < 0.001.
    """
    if waiting.size < 10 * batches:
        return {"kendall_tau": float("nan"), "pvalue": float("nan"), "drifting": False}
    means = np.array([b.mean() for b in np.array_split(waiting, batches)])
    res = stats.kendalltau(np.arange(batches), means)
    tau = float(res.statistic) if np.isfinite(res.statistic) else 0.0
    return {"kendall_tau": tau, "pvalue": float(res.pvalue),
            "drifting": bool(tau > 0.6 and res.pvalue < 1e-3)}


@dataclass
class SimulationResult:
    """Replications of one configuration, warm-up removed in the statistics.

    Attributes
    ----------
    config : SimulationConfig
    replications : list of Replication
    warmup : int
        Jobs dropped from the start of every replication.
    seconds : float
        Wall-clock time of the whole run.
    """

    config: SimulationConfig
    replications: list
    warmup: int
    seconds: float
    seed: object = None

    def metric(self, name: str, replication: int | None = None) -> np.ndarray:
        """Post-warm-up ``waiting``, ``sojourn`` or ``execution`` times (pooled by default)."""
        check_choice("metric", name, METRICS)
        reps = self.replications if replication is None else [self.replications[replication]]
        parts = []
        for r in reps:
            w = slice(self.warmup, None)
            if name == "waiting":
                parts.append(r.start[w] - r.arrival[w])
            elif name == "sojourn":
                parts.append(r.departure[w] - r.arrival[w])
            else:
                parts.append(r.departure[w] - r.start[w])
        return np.concatenate(parts)

    def to_frame(self) -> pd.DataFrame:
        """Per-job table of every replication (warm-up jobs flagged, not dropped)."""
        frames = []
        for i, r in enumerate(self.replications):
            frames.append(pd.DataFrame({
                "replication": i, "job": np.arange(r.arrival.size), "warmup": np.arange(r.arrival.size)
                < self.warmup, "arrival": r.arrival, "start": r.start, "departure": r.departure,
                "tasks": r.tasks, "barrier": r.barrier, "work": r.work, "useful": r.useful,
                "waiting": r.start - r.arrival, "sojourn": r.departure - r.arrival,
                "execution": r.departure - r.start}))
        return pd.concat(frames, ignore_index=True)

    def _groups(self, name: str) -> tuple[list[np.ndarray], str]:
        if len(self.replications) >= 2:
            return [self.metric(name, i) for i in range(len(self.replications))], "replications"
        return np.array_split(self.metric(name), 20), "batch-means (20 batches)"

    def utilization(self) -> float:
        """Measured utilization: task server time / (s x observed time), after warm-up."""
        busy, span = 0.0, 0.0
        for r in self.replications:
            w = self.warmup
            busy += r.work[w:].sum()
            span += r.arrival[-1] - r.arrival[w]
        return float(busy / (self.config.servers * span)) if span > 0 else float("nan")

    def summary(self, level: float = 0.95) -> dict:
        """Means and quantiles of waiting, sojourn and execution time with CIs.

        CIs are t-intervals over independent replications (two or more) or
        over 20 batch means of one long replication, at ``level``.
        """
        cfg = self.config
        out = {"jobs": int(sum(r.arrival.size - self.warmup for r in self.replications)),
               "replications": len(self.replications), "warmup": self.warmup,
               "utilization": self.utilization(), "offered_utilization": cfg.offered_utilization(),
               "ci": {"level": level}, "quantiles": {}, "quantile_ci": {}}
        for name in METRICS:
            groups, method = self._groups(name)
            pooled = np.concatenate(groups)
            out[f"mean_{name}"] = float(pooled.mean())
            out["ci"][name] = _t_interval([g.mean() for g in groups], level)
            qs = np.quantile(pooled, QUANTILES)
            out["quantiles"][name] = {str(q): float(v) for q, v in zip(QUANTILES, qs, strict=True)}
            per_group = np.array([np.quantile(g, QUANTILES) for g in groups])
            out["quantile_ci"][name] = {str(q): _t_interval(per_group[:, i], level)
                                        for i, q in enumerate(QUANTILES)}
        out["ci"]["method"] = method
        limit = cfg.analytic_limit() if cfg.arrival_rate is not None else None
        drift = _drift(self.metric("waiting", 0))
        analytic_unstable = limit is not None and cfg.arrival_rate >= limit[0]
        out["stable"] = not (analytic_unstable or drift["drifting"])
        out["stability"] = {"lambda_max": limit[0] if limit else None,
                            "method": limit[1] if limit else None, **drift}
        kernel = sum(r.kernel_seconds for r in self.replications)
        total_jobs = sum(r.arrival.size for r in self.replications)
        out["seconds"] = self.seconds
        out["jobs_per_second"] = total_jobs / self.seconds if self.seconds > 0 else float("nan")
        out["kernel_jobs_per_second"] = total_jobs / kernel if kernel > 0 else float("nan")
        return out


def _seeds(seed, n: int) -> list[np.random.SeedSequence]:
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return root.spawn(n)


def _check_run(jobs, replications, warmup):
    jobs = check_int("jobs", jobs, low=2)
    replications = check_int("replications", replications, low=1)
    warmup = jobs // 10 if warmup is None else check_int("warmup", warmup, low=0, high=jobs - 1,
                                                        high_name=f"jobs - 1 = {jobs - 1}")
    return jobs, replications, warmup


def stability_error(config: SimulationConfig) -> str | None:
    """The message for an arrival rate at or above the known stability limit, else None."""
    limit = config.analytic_limit()
    if limit is None or config.arrival_rate < limit[0]:
        return None
    return (f"arrival_rate must be below the stability limit lambda_max = {limit[0]:.6g} "
            f"({limit[1]}) for this system (got {config.arrival_rate:.6g}): the queue would grow "
            "without bound; lower it, or pass allow_unstable=True (--allow-unstable) to simulate anyway")


def simulate(config: SimulationConfig, jobs: int = 100_000, replications: int = 1, seed=None,
             warmup: int | None = None, workers: int | None = None, progress: bool | None = None,
             allow_unstable: bool = False) -> SimulationResult:
    """Simulate ``replications`` independent runs of ``jobs`` jobs each.

    Parameters
    ----------
    config : SimulationConfig
    jobs : int
        Jobs per replication (>= 2).
    replications : int
        Independent replications (streams from ``SeedSequence(seed).spawn``);
        run in a process pool over ``workers`` processes (default: all cores).
    seed : int or SeedSequence, optional
        Same seed, same results, bit for bit.
    warmup : int, optional
        Jobs dropped from each replication's statistics (default ``jobs // 10``).
    allow_unstable : bool
        Simulate even at or above the known stability limit (the run still ends
        after ``jobs`` jobs; the summary reports ``stable: False``).

    Raises
    ------
    ParameterError
        For bad parameters, and for an arrival rate at or above the analytic
        stability limit unless ``allow_unstable``.

    Examples
    --------
    >>> cfg = SimulationConfig(servers=16, tasks=4, arrival_rate=2.8)
    >>> res = simulate(cfg, jobs=20_000, seed=1)
    >>> round(res.summary()["utilization"], 1)
    0.7
    """
    if config.arrival_rate is None:
        raise ParameterError("arrival_rate must be given (> 0) to simulate a queue (got None); "
                             "use saturated_throughput for a backlogged system")
    jobs, replications, warmup = _check_run(jobs, replications, warmup)
    if not allow_unstable:
        message = stability_error(config)
        if message:
            raise ParameterError(message)
    t0 = time.perf_counter()
    tasks = [(config, jobs, s, False) for s in _seeds(seed, replications)]
    reps = _run_many(tasks, workers if replications > 1 else 1, progress, "replications")
    return SimulationResult(config, reps, warmup, time.perf_counter() - t0, seed)


def simulate_many(configs: list[SimulationConfig], jobs: int = 100_000, replications: int = 1,
                  seed=None, warmup: int | None = None, workers: int | None = None,
                  progress: bool | None = None, allow_unstable: bool = False) -> list[SimulationResult]:
    """:func:`simulate` for a sweep: all (config, replication) runs share one process pool.

    Configuration ``i`` uses the streams of ``SeedSequence(seed).spawn(len(configs))[i]``,
    so adding a configuration to a sweep does not change the others' results.
    """
    jobs, replications, warmup = _check_run(jobs, replications, warmup)
    for c in configs:
        if c.arrival_rate is None:
            raise ParameterError("arrival_rate must be given (> 0) for every configuration (got None)")
        if not allow_unstable and (message := stability_error(c)):
            raise ParameterError(message)
    t0 = time.perf_counter()
    tasks = [(c, jobs, s, False) for c, root in zip(configs, _seeds(seed, len(configs)), strict=True)
             for s in root.spawn(replications)]
    reps = _run_many(tasks, workers, progress, "simulations")
    seconds = time.perf_counter() - t0
    return [SimulationResult(c, reps[i * replications:(i + 1) * replications], warmup,
                             seconds / len(configs), seed) for i, c in enumerate(configs)]


def _saturated_estimate(cfg: SimulationConfig, reps: list, jobs: int, warmup: int, level: float) -> dict:
    lam, rho, useful = [], [], []
    batches = 20 if len(reps) == 1 else 1
    for r in reps:
        for part in np.array_split(np.arange(warmup, jobs), batches):
            start = r.start[part]
            rate = (start.size - 1) / (start[-1] - start[0])
            lam.append(rate)
            rho.append(rate * r.work[part].mean() / cfg.servers)
            useful.append(rate * r.useful[part].mean() / cfg.servers)
    return {"lambda_max": float(np.mean(lam)), "lambda_max_ci": _t_interval(lam, level),
            "rho_max": float(np.mean(rho)), "rho_max_ci": _t_interval(rho, level),
            "rho_useful": float(np.mean(useful)), "rho_useful_ci": _t_interval(useful, level),
            "replications": len(reps), "jobs": jobs, "warmup": warmup, "level": level,
            "ci_method": "replications" if batches == 1 else "batch-means (20 batches)"}


def saturated_throughput(config: SimulationConfig, jobs: int = 200_000, replications: int = 8,
                         seed=None, warmup: int | None = None, workers: int | None = None,
                         progress: bool | None = None, level: float = 0.95) -> dict:
    """Stability limit by simulation: the job start rate of an always-backlogged system.

    Every job arrives at time 0; after ``warmup`` starts, the start rate
    ``(n - 1) / (t_last - t_first)`` estimates ``lambda_max``, and
    ``rho_max = lambda_max E[work] / s``, ``rho_useful`` likewise with the
    measured useful work. CIs are t-intervals over replications, or over 20
    batches of one replication.
    """
    return saturated_many([config], jobs, replications, seed, warmup, workers, progress, level)[0]


def saturated_many(configs: list[SimulationConfig], jobs: int = 200_000, replications: int = 8,
                   seed=None, warmup: int | None = None, workers: int | None = None,
                   progress: bool | None = None, level: float = 0.95) -> list[dict]:
    """:func:`saturated_throughput` for a sweep, all runs in one process pool.

    Configuration ``i`` uses the streams of ``SeedSequence(seed).spawn(len(configs))[i]``.
    """
    for c in configs:
        if c.overhead is not None:
            raise ParameterError("overhead must be None for a saturated run (got "
                                 f"{c.overhead!r}): the overhead models need job arrivals")
    jobs, replications, warmup = _check_run(jobs, replications, warmup)
    cfgs = [replace(c, arrival_rate=None) for c in configs]
    tasks = [(c, jobs, s, True) for c, root in zip(cfgs, _seeds(seed, len(cfgs)), strict=True)
             for s in root.spawn(replications)]
    reps = _run_many(tasks, workers, progress, "saturated runs")
    return [_saturated_estimate(c, reps[i * replications:(i + 1) * replications], jobs, warmup, level)
            for i, c in enumerate(cfgs)]


def saturated_curve(servers, tasks, needed=None, barriers=1, task_dist=None, jobs: int = 50_000,
                    replications: int = 4, seed=None, workers: int | None = None,
                    progress: bool | None = None, level: float = 0.95) -> pd.DataFrame:
    """Simulated stability limits over a grid, the counterpart of :func:`stability_curve`.

    Each of ``servers``, ``tasks``, ``needed`` and ``barriers`` may be a scalar
    or a list; combinations with ``k > s`` or ``l > k`` are skipped. Returns one
    row per combination with ``lambda_max``, ``rho_max`` and ``rho_useful``
    and their confidence intervals (``*_ci``: [low, high]).
    """
    grid = []
    for s_ in np.atleast_1d(servers):
        for k in np.atleast_1d(tasks):
            if k > s_:
                continue
            for l_ in ([k] if needed is None else np.atleast_1d(needed)):
                if l_ > k:
                    continue
                for b in np.atleast_1d(barriers):
                    grid.append(SimulationConfig(servers=int(s_), tasks=int(k), needed=int(l_),
                                                 barriers=int(b), task_dist=task_dist))
    estimates = saturated_many(grid, jobs, replications, seed, None, workers, progress, level)
    rows = [{"servers": c.servers, "tasks": c.tasks, "needed": c.needed, "barriers": c.barriers, **e}
            for c, e in zip(grid, estimates, strict=True)]
    return pd.DataFrame(rows)


def compare_with_exact(estimates, intervals, exact) -> dict:
    """How simulation estimates with confidence intervals compare with exact values.

    Returns ``inside`` (how many exact values lie in their interval), ``total``
    and ``max_rel_error`` (largest ``|estimate / exact - 1|``). With 95 %
    intervals about one exact value in twenty may fall outside by chance.
    """
    est = np.asarray(estimates, dtype=float)
    ci = np.asarray(list(intervals), dtype=float).reshape(-1, 2)
    ex = np.asarray(exact, dtype=float)
    if not (est.shape == ex.shape == ci.shape[:1]):
        raise ParameterError(f"estimates, intervals and exact must have the same length "
                             f"(got {est.size}, {ci.shape[0]} and {ex.size})")
    inside = (ci[:, 0] <= ex) & (ex <= ci[:, 1])
    return {"inside": int(inside.sum()), "total": int(ex.size),
            "max_rel_error": float(np.max(np.abs(est / ex - 1))) if ex.size else 0.0}


def trace(config: SimulationConfig, jobs: int = 10, seed=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-task and per-job records of a short run, for schedule pictures (Fig. 1).

    Returns ``(tasks, jobs)``: tasks with columns ``job, worker, start, end``
    (end = task end, or kill time) and jobs with ``arrival, start, departure``.
    """
    if config.arrival_rate is None:
        raise ParameterError("arrival_rate must be given (> 0) for a trace (got None)")
    jobs = check_int("jobs", jobs, low=1, high=10_000, high_name="10,000")
    rep = run_replication(config, jobs, _seeds(seed, 1)[0], trace=True)
    job_table = pd.DataFrame({"job": np.arange(jobs), "arrival": rep.arrival, "start": rep.start,
                              "departure": rep.departure, "tasks": rep.tasks, "barrier": rep.barrier})
    return rep.trace, job_table


__all__ = ["SimulationConfig", "SimulationResult", "Replication", "draw_jobs", "run_replication",
           "simulate", "simulate_many", "saturated_throughput", "saturated_many", "saturated_curve",
           "compare_with_exact", "trace", "stability_error"]
