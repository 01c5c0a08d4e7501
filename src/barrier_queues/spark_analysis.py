"""Analysis of real Spark benchmark runs (paper section IV; Appendix C; Appendix A, section 7).

A *run folder* is what :func:`barrier_queues.spark_bench.run_spark_bench`
writes (or its compressed copy under ``data/spark/<run>/``):
``metadata.json``, ``arrivals.csv[.gz]`` and ``tasks.csv[.gz]`` (the
harness's own wall-clock records) and ``eventlog/`` (Spark's event log,
plain or zstd). :func:`load_run` joins them on the job tag, on one clock:
seconds since the Spark application started.

What is measured per run (:func:`run_summary`):

* waiting (harness submission to first task launch), execution (first launch
  to job completion) and sojourn times, with 95 % batch-means intervals for
  the means and distribution-free order-statistic intervals for quantiles;
* the utilization actually achieved (task sleep over executor time) next to
  the offered ``rho = lambda k E[task] / s``;
* the hidden per-task cost of starting the Python function (harness start
  time minus Spark's launch time), :func:`python_startup`, and Spark's whole
  cost per task beyond the function's own time, :func:`task_cost`;
* whether the machine served the run honestly (:func:`serving_check`, which
  the harness records in the run's metadata);
* the blocking-overhead samples (:func:`barrier_queues.eventlog.blocking_overhead`)
  against ``min(U(0, R), Exp(lambda))`` (eqs. 41-42): KS test at Spark's
  configured ``R`` and the achieved ``lambda``, the maximum-likelihood fit,
  and plain ``U(0, R)`` for contrast;
* ``barrier()`` synchronisation delays (:func:`sync_delays`,
  :func:`sync_delay_tests`): the paper's ``U(0, 1 s)`` for every task but the
  last, against Spark's polling loop, which releases a task that arrived at
  ``T`` at ``T + ceil((T_last - T) / 1 s) s`` (at least 1 s), i.e.
  ``1 - ((T_last - T) mod 1 s)`` after the last arrival ``T_last``, and the
  last task itself a full second after it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from ._validation import ParameterError
from .eventlog import EventLogError, EventLogTables, blocking_overhead, launch_delays, parse_event_log
from .load import offered_utilization
from .overhead import OverheadModel, fit_overhead, ks_test
from .statistics import batch_means_interval, quantile_interval, t_interval
from .system import BarrierSystem

#: Spark's hard-coded polling period of ``BarrierTaskContext.runBarrier`` (seconds).
BARRIER_POLL = 1.0


@dataclass
class SparkRun:
    """One benchmark run, joined on one clock (seconds since the application start).

    ``jobs``: one row per measured (non-warm-up) job: ``tag, job_id, arrival``
    (harness submission), ``planned`` (the Poisson arrival it was meant to
    have), ``first_launch, last_launch, completion, waiting, execution,
    sojourn, status``. ``tasks``: one row per task of a measured job, Spark's
    task record plus the harness's ``sleep, start, end`` and the Python
    start-up ``startup = start - launch``. ``harness_tasks``: the harness's
    per-task rows including ``barrier()`` arrival and release times.
    """

    path: Path
    metadata: dict
    jobs: pd.DataFrame
    tasks: pd.DataFrame
    harness_tasks: pd.DataFrame
    log: EventLogTables

    @property
    def executors(self) -> int:
        return int(self.metadata["config"]["executors"])

    @property
    def tasks_per_job(self) -> int:
        return int(self.metadata["config"]["tasks"])

    @property
    def arrival_rate(self) -> float | None:
        """The configured arrival rate (jobs/s; None for a saturated run)."""
        rate = self.metadata["config"].get("arrival_rate")
        return None if rate is None else float(rate)

    @property
    def task_mean(self) -> float:
        return float(self.metadata["task_mean"])

    @property
    def revive(self) -> float:
        return float(self.metadata["config"]["revive_interval"])

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def phases(self) -> int:
        """Phases per task: iid sleeps with barrier() between (1 for runs without them)."""
        return int(self.metadata["config"].get("phases", 1))

    @property
    def sync_points(self) -> int:
        """barrier() calls per task: phases - 1, or the older runs' equal split of one sleep."""
        return max(self.phases - 1, int(self.metadata["config"].get("sync_points", 0)))

    @property
    def saturated(self) -> bool:
        return bool(self.metadata["config"].get("saturated", False))

    def system(self, overhead: str | None = None, sync: str = "spark", arrival_rate: float | None = None):
        """The run as a :class:`~barrier_queues.BarrierSystem` (seconds): s workers, k tasks, exponential
        sleeps of the run's mean per phase, its phases with ``sync`` barrier() release, ``overhead`` model.

        A run's phases are ``sync_points + 1``: its iid sleeps of the run's mean, or an older run's equal
        parts of one sleep, modelled as iid phases of mean ``task_mean / m`` (the same work per task; the
        law differs, and :func:`run_inputs_of` gives a replay each phase's own time either way)."""
        m = self.sync_points + 1
        extra = {"phases": m, "sync": sync} if m > 1 else {}
        phase_mean = self.task_mean / m if self.phases == 1 else self.task_mean
        if overhead is not None:
            extra.update(overhead=overhead, revive_interval=self.revive)
        return BarrierSystem(servers=self.executors, tasks=self.tasks_per_job,
                             arrival_rate=arrival_rate or self.arrival_rate, task_rate=1.0 / phase_mean, **extra)


def _csv(folder: Path, name: str) -> pd.DataFrame:
    for candidate in (folder / f"{name}.csv", folder / f"{name}.csv.gz"):
        if candidate.exists():
            return pd.read_csv(candidate, dtype={"tag": str, "sync_arrive": str, "sync_release": str})
    raise ParameterError(f"run folder {str(folder)!r} must hold {name}.csv or {name}.csv.gz "
                         "(written by barrier-queues spark-bench)")


def _event_log(folder: Path) -> Path:
    logs = sorted(p for p in (folder / "eventlog").glob("*") if not p.name.startswith("."))
    if len(logs) != 1:
        raise ParameterError(f"run folder {str(folder)!r} must hold exactly one Spark event log under "
                             f"eventlog/ (found {len(logs)})")
    return logs[0]


def load_run(path) -> SparkRun:
    """Read a run folder and join the harness records with Spark's event log.

    Raises :class:`~barrier_queues.ParameterError` for a folder that is not a
    run, and :class:`~barrier_queues.eventlog.EventLogError` for a broken log
    or one that does not match the harness records.
    """
    folder = Path(path)
    if not (folder / "metadata.json").exists():
        raise ParameterError(f"run folder must contain metadata.json (got {str(folder)!r})")
    try:
        meta = json.loads((folder / "metadata.json").read_text())
        meta["config"]["executors"], meta["config"]["tasks"], meta["task_mean"]   # noqa: B018 (required keys)
    except (ValueError, KeyError, TypeError):
        raise ParameterError(f"run folder {str(folder)!r} must hold a complete metadata.json (it is truncated or "
                             "not a spark-bench run's)") from None
    arrivals, htasks = _csv(folder, "arrivals"), _csv(folder, "tasks")
    log = parse_event_log(_event_log(folder))
    origin = log.app["origin_ms"] / 1000
    for frame, cols in ((arrivals, ("planned", "submitted", "completed")), (htasks, ("start", "end"))):
        for c in cols:
            frame[c] = frame[c] - origin
    for c in ("sync_arrive", "sync_release"):
        htasks[c] = [np.array([float(v) - origin for v in str(x).split(";")]) if isinstance(x, str) and x
                     else np.empty(0) for x in htasks[c]]

    measured = arrivals[~arrivals.warmup.astype(bool)].rename(columns={"tasks": "harness_tasks",
                                                                       "barrier": "harness_barrier"})
    logjobs = log.jobs.dropna(subset=["key"]).set_index("key")
    missing = sorted(set(measured.tag) - set(logjobs.index), key=lambda t: int(t) if t.isdigit() else -1)
    ok = measured[measured.status == "ok"]
    lost = [t for t in missing if t in set(ok.tag)]
    if lost:
        raise EventLogError(f"job {lost[0]} finished in the harness but is not in the event log "
                            f"({len(lost)} such jobs): the log and the run folder do not match")
    joined = ok.merge(logjobs, left_on="tag", right_index=True, how="left")
    jobs = pd.DataFrame({
        "tag": joined.tag, "job_id": joined.job_id.astype(int), "planned": joined.planned,
        "arrival": joined.submitted, "first_launch": joined.first_launch, "last_launch": joined.last_launch,
        "completion": joined.completion, "status": joined.status,
    })
    jobs["waiting"] = jobs.first_launch - jobs.arrival
    jobs["execution"] = jobs.completion - jobs.first_launch
    jobs["sojourn"] = jobs.completion - jobs.arrival
    if "harness_tasks" in joined:                       # a mixed workload: each job's k and kind, as Spark ran it
        first = log.tasks[log.tasks.stage_id == log.tasks.groupby("job_id").stage_id.transform("min")]
        k_of = first.groupby("job_id")["index"].nunique()  # a job's k: its first stage's partitions (retries and a
        jobs["tasks"] = joined.job_id.map(k_of).fillna(0).astype(int)   # following shuffle stage not counted)
        jobs["barrier"] = joined.barrier.astype(bool)
        wrong = (jobs.tasks != joined.harness_tasks.astype(int)) | (jobs.barrier != joined.harness_barrier.astype(bool))
        if wrong.any():
            raise EventLogError(f"job {jobs.tag[wrong].iloc[0]}: the event log's tasks or barrier flag differ from "
                                "the harness's record: the log and the run folder do not match")
    jobs = jobs.sort_values("arrival").reset_index(drop=True)

    tasks = log.tasks[log.tasks.job_id.isin(jobs.job_id)].merge(
        jobs[["job_id", "tag"]], on="job_id")
    tasks = tasks.merge(htasks[["tag", "partition", "sleep", "start", "end"]].rename(columns={"partition": "part"}),
                        left_on=["tag", "partition"], right_on=["tag", "part"], how="left")
    # the harness records each task of the last attempt of a job's first stage: other task attempts (failed,
    # killed, of an earlier stage attempt, or of a shuffle stage after it) get no harness times
    in_first = tasks.stage_id == tasks.groupby("job_id").stage_id.transform("min")
    last = tasks.job_id.map(tasks[in_first].groupby("job_id").stage_attempt.max())
    other = tasks.failed | tasks.killed | ~in_first | (tasks.stage_attempt != last)
    tasks.loc[other.to_numpy(), ["sleep", "start", "end"]] = np.nan
    tasks["startup"] = tasks.start - tasks.launch
    return SparkRun(folder, meta, jobs, tasks.drop(columns="part"), htasks, log)


def python_startup(run: SparkRun) -> pd.Series:
    """Seconds from Spark's task launch to the start of the Python function, per task."""
    return run.tasks.startup.dropna().rename("startup")


def task_cost(run: SparkRun) -> pd.Series:
    """Spark's time per task beyond the Python function's own (seconds): ``(finish - launch) - (end - start)``.

    The hidden cost of running a task: Python worker start-up, deserialisation,
    returning the result; it excludes the sleep and any ``barrier()`` waits,
    which the function's own start and end times enclose.
    """
    t = run.tasks
    return ((t.finish - t.launch) - (t.end - t.start)).dropna().rename("task_cost")


#: What counts as a run this machine served honestly (:func:`serving_check`); seconds unless stated.
SERVING_LIMITS = {
    # the driver kept the Poisson timing: every job submitted within 100 ms of its planned arrival
    "submission_lag_max": 0.1,
    # Python start-up per task at most twice the uncontended median on Spark 4.3.0 (Appendix C: 73 ms)
    "python_startup_median": 0.15,
    # Spark's per-task cost beyond the function's own time, median
    "task_cost_median": 0.2,
    # runnable threads per core: the 1-minute load average over the run, per core
    "load_per_core": 1.5,
    # share of all cores' time the machine was busy during the measured jobs (where recorded)
    "cpu_busy": 0.8,
}


def serving_check(run: SparkRun, limits: dict | None = None) -> dict:
    """Could the machine serve this run honestly? Its measured costs against :data:`SERVING_LIMITS`.

    The tasks only sleep, so a small machine can host more single-core
    executors than it has cores, up to the point where the JVMs and Python
    workers compete for the CPU: then submissions fall behind their Poisson
    times, Python start-up and Spark's per-task cost grow, and the measured
    waiting times include CPU contention that a cluster of real single-core
    executors would not have. Returns the measurements, the limits, a list of
    ``problems`` (one sentence each, naming the measured value and its limit)
    and ``honest`` (no problems). ``cpu_busy`` (the share of all cores' time
    the machine was busy while the measured jobs ran, from ``/proc/stat``) is
    checked where the harness recorded it (None otherwise). The load average
    is the harness's samples during the run (``loadavg_1min``) where
    recorded, else the 1-minute value at its end; ``load_at_start_per_core``
    (where recorded) shows a machine that was already busy before the run,
    which the 1-minute average carries into the run's first minutes.
    """
    limits = {**SERVING_LIMITS, **(limits or {})}
    meta = run.metadata
    cores = int(meta.get("cores") or 1)
    lag = (run.jobs.arrival - run.jobs.planned).to_numpy()
    start, cost = python_startup(run), task_cost(run)
    during = meta.get("loadavg_1min")
    load, load_source = ((float(during["mean"]), "mean of 1-minute samples during the run") if during
                         else (float(meta.get("loadavg_1_5_15min", [np.nan])[0]), "1-minute value at the end"))
    if run.saturated:          # a backlog submitted at once: how fast it was submitted does not matter
        limits["submission_lag_max"] = None
    measured = {"submission_lag_max": float(lag.max()), "python_startup_median": float(start.median()),
                "task_cost_median": float(cost.median()), "load_per_core": load / cores,
                "cpu_busy": meta.get("cpu_busy")}
    what = {"submission_lag_max": "largest submission lag behind the planned Poisson arrival",
            "python_startup_median": "median Python start-up per task",
            "task_cost_median": "median Spark cost per task beyond the function's own time",
            "load_per_core": f"load average per core ({load_source})",
            "cpu_busy": "busy share of the machine's CPU time during the run"}
    unit = {"submission_lag_max": " s", "python_startup_median": " s", "task_cost_median": " s"}
    problems = [f"{what[k]} {v:.3g}{unit.get(k, '')} exceeds {limits[k]:g}{unit.get(k, '')}"
                for k, v in measured.items() if v is not None and limits[k] is not None and not v <= limits[k]]
    at_start = meta.get("loadavg_at_start")
    return {"cores": cores, "executors": run.executors, "executors_per_core": run.executors / cores,
            **measured, "load_at_start_per_core": at_start[0] / cores if at_start else None,
            "submission_lag_median": float(np.median(lag)),
            "python_startup_p90": float(start.quantile(0.9)), "task_cost_p90": float(cost.quantile(0.9)),
            "load_source": load_source, "limits": limits, "problems": problems, "honest": not problems}


def record_serving_check(path, assessed: str = "at the end of the run") -> dict:
    """Add :func:`serving_check` of a run folder to its ``metadata.json`` (key ``serving``); returns it.

    Only the ``serving`` key is written; every other field stays as it was.
    A run that cannot be analysed (too few jobs, a log cut short by the time
    limit) gets ``{"error": ...}`` instead, so the run's data are never lost.
    """
    folder = Path(path)
    meta_path = folder / "metadata.json"
    try:
        check = serving_check(load_run(folder))
    except (ParameterError, ValueError, KeyError, IndexError) as exc:
        check = {"error": f"{type(exc).__name__}: {exc}"}
    check["assessed"] = assessed
    meta = json.loads(meta_path.read_text())
    meta["serving"] = check
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    return check


def _batch_interval(x: np.ndarray, batches: int = 10, level: float = 0.95) -> list[float]:
    """t interval over the means of consecutive batches (jobs of a queue are correlated)."""
    return batch_means_interval(x, batches, level)["interval"]


def overhead_samples(run: SparkRun) -> pd.DataFrame:
    """Blocking-overhead samples of the run's measured jobs (seconds)."""
    samples = blocking_overhead(run.log)
    return samples[samples.job_id.isin(run.jobs.job_id)].reset_index(drop=True)


def overhead_sources(runs: list[SparkRun]) -> pd.DataFrame:
    """The paper's other sources of overhead (section IV), measured per run of k-task barrier jobs (no phases).

    * ``sleep precision (ms)``: median ``|end - start - sleep|`` of the tasks, the harness's own clock around
      its sleep ("the execution time of each task can be controlled with precision on the order of 1 ms");
    * ``non-blocking (ms)``: median of a job's completion minus its last task's finish (what delays a
      departure without holding executors);
    * ``free launch (ms)``: median launch delay of the jobs that found k free executors and no job ahead on
      submission, beside ``blocking overhead (ms)``, the mean of the blocked jobs'
      (:func:`~barrier_queues.eventlog.launch_delays`): the overhead falls on queued jobs only;
    * ``execution`` (s): the jobs' mean execution time (last launch to completion) with its 95 % t interval,
      beside the model's ``E[X_(k:k)] = task_mean H_k`` (the paper's "exactly matched").
    """
    from .order_stats import harmonic

    rows = []
    for run in runs:
        if run.phases > 1 or run.sync_points or run.saturated:
            continue
        measured = set(run.jobs.job_id)
        t = run.tasks[run.tasks.job_id.isin(measured)]
        jobs = run.log.jobs[run.log.jobs.job_id.isin(measured)]
        delays = launch_delays(run.log)
        delays = delays[delays.job_id.isin(measured)]
        free, blocked = delays[delays.kind == "free"].delay, delays[delays.kind == "blocked"].delay
        execution = run.jobs.execution.to_numpy()
        lo, hi = t_interval(execution)
        rows.append({"run": run.name, "s": run.executors, "k": run.tasks_per_job, "jobs": len(run.jobs),
                     "sleep precision (ms)": 1000 * float(np.median(np.abs(t.end - t.start - t.sleep))),
                     "non-blocking (ms)": 1000 * float(np.median(jobs.completion - jobs.last_finish)),
                     "free jobs": int(free.size), "free launch (ms)": 1000 * float(np.median(free)) if free.size
                     else float("nan"),
                     "blocked jobs": int(blocked.size),
                     "blocking overhead (ms)": 1000 * float(blocked.mean()) if blocked.size else float("nan"),
                     "execution (s)": float(execution.mean()), "execution 95% CI": [lo, hi],
                     "model E[X_(k:k)] (s)": run.task_mean * harmonic(run.tasks_per_job)})
    return pd.DataFrame(rows)


def executor_handoffs(run: SparkRun) -> pd.Series:
    """Launch minus the previous task's finish on the same executor, for tasks whose job was
    submitted before that executor freed (seconds; negative: Spark logged the launch first).

    With k = 1 this is the whole blocking overhead: the freed executor's own
    offer launches the waiting job, without a global offer.
    """
    tasks = run.log.tasks.sort_values("launch")
    submission = run.log.jobs.set_index("job_id").submission
    measured = set(run.jobs.job_id)
    gaps = []
    for _, d in tasks.groupby("executor"):
        previous = d.finish.shift().to_numpy()
        waited = submission.reindex(d.job_id).to_numpy() < previous
        keep = waited & d.job_id.isin(measured).to_numpy()
        gaps.append((d.launch.to_numpy() - previous)[keep])
    return pd.Series(np.concatenate(gaps) if gaps else [], name="handoff", dtype=float)


def overhead_tests(samples, revive: float, rate: float, bootstrap: int = 0, seed=0) -> dict:
    """KS tests of overhead samples.

    * ``model``: ``min(U(0,R), Exp(lambda))`` at Spark's configured ``R`` and
      the run's achieved ``lambda`` (nothing fitted to the samples: the plain
      KS p-value holds);
    * ``mle``: at the samples' own maximum-likelihood ``(R, lambda)``, with a
      parametric-bootstrap p-value when ``bootstrap > 0``
      (:func:`~barrier_queues.overhead.ks_test_fitted`);
    * ``uniform``: plain ``U(0, R)``, for contrast.
    """
    from .overhead import ks_test_fitted

    x = np.asarray(samples, dtype=float)
    model = OverheadModel(revive, rate)
    out = {"n": int(x.size), "mean": float(x.mean()), "model_mean": model.mean(), "model": ks_test(x, model)}
    out["mle"] = ks_test_fitted(x, bootstrap=bootstrap, seed=seed)
    res = stats.kstest(x, stats.uniform(0, revive).cdf)
    out["uniform"] = {"ks_statistic": float(res.statistic), "ks_pvalue": float(res.pvalue)}
    return out


def cross_validate_overhead(runs: list, min_samples: int = 20) -> pd.DataFrame:
    """Fit the overhead model on one run, test it on every other (no parameter fitted to the tested run).

    ``R`` is a property of the scheduler, ``lambda`` of the workload: the
    revive interval fitted (maximum likelihood) on run A is tested on run B
    at B's achieved arrival rate, by a plain KS test, valid because nothing
    was fitted to B. One row per ordered pair of runs with at least
    ``min_samples`` blocked jobs.
    """
    samples = {}
    for r in runs:
        o = overhead_samples(r)
        if len(o) >= min_samples:
            samples[r.name] = (o.overhead.to_numpy(), achieved_rate(r.jobs))
    rows = []
    for fitted_on, (x, _) in samples.items():
        fit = fit_overhead(x)
        for tested_on, (y, rate) in samples.items():
            if tested_on == fitted_on:
                continue
            res = ks_test(y, OverheadModel(fit.revive, rate))
            rows.append({"fitted_on": fitted_on, "tested_on": tested_on, "revive_fitted": fit.revive,
                         "rate_tested": rate, "n_tested": len(y), "ks_statistic": res["ks_statistic"],
                         "ks_pvalue": res["ks_pvalue"]})
    return pd.DataFrame(rows, columns=["fitted_on", "tested_on", "revive_fitted", "rate_tested", "n_tested",
                                       "ks_statistic", "ks_pvalue"])


def sync_delays(run: SparkRun, poll: float = BARRIER_POLL) -> pd.DataFrame:
    """One row per task and ``barrier()`` call of the measured jobs.

    Columns: ``run`` (the run's name: job tags repeat across runs, so delays of several runs concatenated
    stay apart), ``tag, sync, partition, arrive, release, last_arrival, lag``
    (``last_arrival - arrive``), ``excess`` (``release - last_arrival``, the
    delay the barrier adds beyond waiting for the last task), ``is_last`` and
    ``predicted``, Spark's polling prediction ``poll - (lag mod poll)``.
    """
    h = run.harness_tasks[run.harness_tasks.tag.isin(run.jobs.tag)]
    rows = []
    for r in h.itertuples():
        for i, (a, rel) in enumerate(zip(r.sync_arrive, r.sync_release, strict=True)):
            rows.append((r.tag, i, int(r.partition), a, rel))
    d = pd.DataFrame(rows, columns=["tag", "sync", "partition", "arrive", "release"])
    d.insert(0, "run", run.name)
    if d.empty:
        return d.assign(last_arrival=[], lag=[], excess=[], is_last=[], predicted=[])
    d["last_arrival"] = d.groupby(["tag", "sync"]).arrive.transform("max")
    d["lag"] = d.last_arrival - d.arrive
    d["excess"] = d.release - d.last_arrival
    d["is_last"] = d.lag == 0
    d["predicted"] = poll - np.mod(d.lag, poll)
    return d


def sync_delay_tests(delays: pd.DataFrame, poll: float = BARRIER_POLL) -> dict:
    """Test the two descriptions of the ``barrier()`` delay against measured delays.

    *Paper*: tasks other than the last are released ``U(0, poll)`` after the
    last arrival, the last task at once. *Spark's code*: every task is
    released ``poll - (lag mod poll)`` after the last arrival (the last one
    ``poll`` after it). Reports the KS test of the non-last excess against
    ``U(0, poll)``, the last task's mean excess (paper: 0, code: ``poll``)
    and the share of last tasks released at once (within 50 ms: the
    coordinator's reply beat the loop's first check), and the residuals of
    the code's prediction (median, 2.5-97.5 % range, share within 50 ms).
    """
    if delays.empty:
        raise ParameterError("delays must come from a run with sync points (--sync-points >= 1)")
    early = delays[~delays.is_last]
    last = delays[delays.is_last]
    res = stats.kstest(early.excess, stats.uniform(0, poll).cdf)
    resid = (delays.excess - delays.predicted).to_numpy()
    calls = ["run", "tag", "sync"] if "run" in delays.columns else ["tag", "sync"]    # tags repeat across runs
    return {"barriers": int(delays.groupby(calls).ngroups), "tasks": int(len(delays)),
            "paper_uniform_ks_statistic": float(res.statistic), "paper_uniform_ks_pvalue": float(res.pvalue),
            "last_task_mean_excess": float(last.excess.mean()),
            "last_task_at_once": float(np.mean(last.excess < 0.05)),
            "last_task_excess_ci": _batch_interval(last.excess.to_numpy(), min(10, len(last))),
            "code_residual_median": float(np.median(resid)),
            "code_residual_range_95": [float(np.quantile(resid, 0.025)), float(np.quantile(resid, 0.975))],
            "code_within_50ms": float(np.mean(np.abs(resid) <= 0.05))}


def achieved_rate(jobs: pd.DataFrame) -> float:
    """Jobs per second a run achieved: (jobs - 1) / (last arrival - first arrival)."""
    return (len(jobs) - 1) / float(jobs.arrival.iloc[-1] - jobs.arrival.iloc[0])


def run_summary(run: SparkRun, quantile: float = 0.99) -> dict:
    """The measured numbers of one run (seconds; see the module docstring)."""
    jobs = run.jobs
    rate = achieved_rate(jobs)
    window = float(jobs.completion.max() - jobs.arrival.min())
    busy = float((run.tasks.finish - run.tasks.launch).sum())
    serving = serving_check(run)
    out = {"run": run.name, "spark": run.metadata.get("spark"), "master": run.metadata.get("master"),
           "servers": run.executors, "tasks": run.tasks_per_job, "task_mean": run.task_mean,
           "arrival_rate": run.arrival_rate, "achieved_arrival_rate": rate, "jobs": int(len(jobs)),
           "failed_jobs": int((run.metadata.get("submitted") or len(jobs)) - len(jobs)),
           "submission_lag_median": serving["submission_lag_median"],
           "submission_lag_max": serving["submission_lag_max"],
           "offered_utilization": offered_utilization(run.system(), useful=True),
           "achieved_utilization": float(run.tasks.sleep.sum()) / (run.executors * window),
           "busy_utilization": busy / (run.executors * window)}
    for m in ("waiting", "execution", "sojourn"):
        x = jobs[m].to_numpy()
        out[f"mean_{m}"] = float(x.mean())
        out[f"mean_{m}_ci"] = _batch_interval(x)
        out[f"{m}_q"] = float(np.quantile(x, quantile))
        out[f"{m}_q_ci"] = quantile_interval(x, quantile)
    out["quantile"] = quantile
    out["python_startup_median"] = serving["python_startup_median"]
    out["python_startup_p90"] = serving["python_startup_p90"]
    out["serving"] = serving
    samples = overhead_samples(run)
    out["overhead_samples"] = int(len(samples))
    if len(samples) >= 2:
        out["overhead"] = overhead_tests(samples.overhead, run.revive, rate)
    return out


def saturation_rate(run: SparkRun, level: float = 0.95) -> dict:
    """Spark's stability limit from a saturated run (every job submitted at once): the job start rate.

    The spacings between successive first launches after a warm-up chosen
    by MSER-5 (batches of 5 jobs) give ``lambda_max = jobs / sum of
    spacings``, its interval the inverted t interval of the mean spacing over
    10 batch means; ``rho_max`` is
    ``lambda_max k E[task] / s`` (the useful work, as the harness offers it).
    """
    from .statistics import mser_truncation

    if not run.saturated:
        raise ParameterError(f"run {run.name} must be a saturated run (spark-bench --saturated)")
    launches = np.sort(run.jobs.first_launch.to_numpy())
    spacing = np.diff(launches)
    b = 5
    blocks = spacing[: spacing.size // b * b].reshape(-1, b).mean(axis=1)
    d, at_limit = mser_truncation(blocks)
    post = spacing[d * b:]
    rate = post.size / post.sum()
    lo, hi = batch_means_interval(post, 10, level)["interval"]     # of the mean spacing 1 / lambda_max
    ci = {"interval": [1.0 / hi if hi > 0 else math.nan, 1.0 / lo if lo > 0 else math.nan]}
    work = run.tasks_per_job * run.task_mean * max(run.phases, 1)
    return {"run": run.name, "servers": run.executors, "tasks": run.tasks_per_job, "jobs": int(launches.size),
            "warmup_jobs": int(d * b + 1), "warmup_at_limit": bool(at_limit), "lambda_max": float(rate),
            "lambda_max_ci": ci["interval"], "rho_max": float(rate * work / run.executors),
            "rho_max_ci": [x * work / run.executors for x in ci["interval"]]}


def discover_runs(folder) -> list[Path]:
    """Run folders (those with a metadata.json) directly under ``folder``, sorted by name."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ParameterError(f"runs folder must be an existing directory (got {str(folder)!r})")
    return sorted(p for p in folder.iterdir() if (p / "metadata.json").exists())


def simulation_configs(run: SparkRun) -> dict:
    """The run's system as :class:`~barrier_queues.BarrierSystem` s: plain, with the paper's iid overhead
    and with the event-accurate revive-timer model (seconds)."""
    plain = run.system()
    out = {"plain": plain, "event overhead": run.system("event")}
    if run.sync_points == 0:
        out["paper overhead"] = run.system("paper")
    return out


def spark_limits(saturated_runs: list) -> dict:
    """Spark's measured stability limit per ``(servers, tasks)``: the start rate of the longest saturated run
    (the most jobs, so the narrowest interval) at each size (:func:`saturation_rate`)."""
    best: dict = {}
    for r in saturated_runs:
        est = saturation_rate(r)
        key = (r.executors, r.tasks_per_job)
        if key not in best or est["jobs"] > best[key]["jobs"]:
            best[key] = est
    return {key: est["lambda_max"] for key, est in best.items()}


def steady_state(run: SparkRun, limits: dict | None = None, batches: int = 10) -> tuple[bool, str]:
    """Whether a finished Spark run describes a steady state: its waiting times do not drift (Kendall tau of
    batch means, :func:`~barrier_queues.statistics.drift`) and its achieved arrival rate lies below Spark's
    measured limit at its size (``limits`` from :func:`spark_limits`, where one was measured); with the reason
    when not. A queue that grows through the run has means that only grow with its length."""
    from .statistics import drift

    reasons = []
    if drift(run.jobs.sort_values("arrival").waiting.to_numpy(), batches)["drifting"]:
        reasons.append("waiting times drift")
    limit = (limits or {}).get((run.executors, run.tasks_per_job))
    rate = achieved_rate(run.jobs)
    if limit is not None and rate >= limit:
        reasons.append(f"arrivals at {rate:.3f} jobs/s, at or beyond Spark's measured limit {limit:.3f}")
    return (not reasons, "; ".join(reasons))


def compare_with_simulation(runs: list[SparkRun], jobs: int = 200_000, replications: int = 4,
                            seed=None, quantile: float = 0.99, limits: dict | None = None) -> pd.DataFrame:
    """Measured means and quantiles beside the three simulations, one row per run and source.

    Columns: ``run, servers, tasks, k/s, utilization, source`` (``Spark`` or a
    simulation name), ``mean_waiting, mean_sojourn, waiting_q, sojourn_q`` and
    their 95 % intervals (``*_ci``), and ``stable``: False where the system
    has no steady state, so that its means and quantiles grow with the run
    and describe nothing: a simulated system beyond its stability limit, or
    drifting; a Spark run whose waiting times drift or whose arrivals ran at
    or beyond Spark's measured limit (``limits``, :func:`steady_state`).
    """
    from .simulate import simulate_many
    from .statistics import QUANTILES

    key = next((x for x in QUANTILES if abs(x - quantile) < 1e-12), None)
    if key is None:
        raise ParameterError(f"quantile must be one of {list(QUANTILES)} (got {quantile!r})")
    configs, labels = [], []
    for run in runs:
        for name, c in simulation_configs(run).items():
            configs.append(c)
            labels.append((run, name))
    results = simulate_many(configs, jobs=jobs, replications=replications, seed=seed)
    rows = []
    for run in runs:
        s = run_summary(run, quantile)
        rows.append({"source": "Spark", **{m: s[m] for m in (
            "mean_waiting", "mean_waiting_ci", "mean_sojourn", "mean_sojourn_ci")},
            "waiting_q": s["waiting_q"], "waiting_q_ci": s["waiting_q_ci"],
            "sojourn_q": s["sojourn_q"], "sojourn_q_ci": s["sojourn_q_ci"], "stable": steady_state(run, limits)[0],
            "_run": run})
    for (run, name), res in zip(labels, results, strict=True):
        sm = res.summary()
        rows.append({"source": name, "mean_waiting": sm["mean_waiting"], "mean_waiting_ci": sm["ci"]["waiting"],
                     "mean_sojourn": sm["mean_sojourn"], "mean_sojourn_ci": sm["ci"]["sojourn"],
                     "waiting_q": sm["quantiles"]["waiting"][key],
                     "waiting_q_ci": sm["quantile_ci"]["waiting"][key],
                     "sojourn_q": sm["quantiles"]["sojourn"][key],
                     "sojourn_q_ci": sm["quantile_ci"]["sojourn"][key], "stable": sm["stable"], "_run": run})
    table = pd.DataFrame(rows)
    table.insert(0, "run", [r.name for r in table["_run"]])
    table.insert(1, "servers", [r.executors for r in table["_run"]])
    table.insert(2, "tasks", [r.tasks_per_job for r in table["_run"]])
    table.insert(3, "k/s", table.tasks / table.servers)
    table.insert(4, "utilization", [round(r.arrival_rate * r.tasks_per_job * r.task_mean / r.executors, 6)
                                    for r in table["_run"]])
    return table.drop(columns="_run").sort_values(["run", "source"]).reset_index(drop=True)


def same_length(runs: list[SparkRun], model: str = "paper overhead", replications: int = 200, seed=None,
                level: float = 0.95) -> pd.DataFrame:
    """Each Spark run beside simulations of the same length from the same start: like with like.

    A run of a few hundred jobs that starts empty is not a steady state: near
    its stability limit its mean waiting is far below the steady-state mean
    (and grows with the run's length). So each run is set against the
    distribution of the same statistic over ``replications`` simulated runs
    of ``model`` (:func:`simulation_configs`) with the run's own warm-up and
    measured jobs, started empty (a fixed warm-up of the run's warm-up jobs,
    as Spark's harness drops them). One row per run and metric (``waiting``,
    ``sojourn``): Spark's mean, the simulated runs' median and central
    ``level`` range, Spark's percentile among them (share of simulated runs
    at or below it), ``inside`` the range, and the relative error of Spark
    against the median. Simulated runs may be beyond the model's stability
    limit: a finite run is defined there too.
    """
    from .inputs import spawn_seeds
    from .simulate import simulate

    rows = []
    streams = spawn_seeds(seed, len(runs))
    for run, stream in zip(runs, streams, strict=True):
        configs = simulation_configs(run)
        if model not in configs:
            continue
        warm = int(run.metadata.get("config", {}).get("warmup_jobs", 0) or 0)
        n = len(run.jobs)
        res = simulate(configs[model], jobs=warm + n, replications=replications, seed=stream, warmup=warm,
                       allow_unstable=True, progress=False)
        summary = run_summary(run)
        for metric in ("waiting", "sojourn"):
            sims = np.array([st.mean(metric) for st in res.stats])
            spark = float(summary[f"mean_{metric}"])
            lo, hi = np.quantile(sims, [(1 - level) / 2, (1 + level) / 2])
            median = float(np.median(sims))
            rows.append({"run": run.name, "s": run.executors, "k": run.tasks_per_job,
                         "utilization": round(run.arrival_rate * run.tasks_per_job * run.task_mean / run.executors, 6),
                         "jobs": n, "metric": metric, "Spark": spark, "same-length median": median,
                         "same-length low": float(lo), "same-length high": float(hi),
                         "Spark percentile": float(np.mean(sims <= spark)), "inside": bool(lo <= spark <= hi),
                         "error vs median": spark / median - 1 if median > 0 else float("nan")})
    return pd.DataFrame(rows)


def revive_phase(run: SparkRun, window: float = 0.02) -> float:
    """The revive timer's phase (seconds in ``[0, R)``), estimated from the launches of blocked jobs.

    Blocked jobs launch at a tick (plus a few ms of scheduling) or just after an
    arrival; the ticks show as the ``window``-wide interval of ``launch mod R``
    holding the most launches, and the phase is the median launch in it.
    """
    launches = np.mod(overhead_samples(run).launch.to_numpy(), run.revive)
    if launches.size == 0:
        raise ParameterError(f"run {run.name} must have blocked jobs to estimate the revive phase (has none)")
    ext = np.sort(np.concatenate([launches, launches + run.revive]))
    ends = np.searchsorted(ext, ext + window, side="right")
    best = int(np.argmax(ends - np.arange(ext.size)))
    return float(np.mod(np.median(ext[best:ends[best]]), run.revive))


REPLAY_MODELS = ("plain", "paper", "event")


def run_inputs_of(run: SparkRun, task_cost: float = 0.0) -> dict:
    """The run's own workload as simulator inputs: harness submissions and each task's sleeps.

    Phase sleeps are stored phase-major per job (as :func:`barrier_queues.inputs.draw_jobs`
    draws them); runs with the older ``sync_points`` split one sleep into equal phases.
    ``task_cost`` (seconds) is added to every task's first phase.
    """
    jobs = run.jobs.sort_values("arrival")
    h = run.harness_tasks.set_index("tag")
    k, m = run.tasks_per_job, run.sync_points + 1
    times = np.empty(len(jobs) * k * m)
    for j, tag in enumerate(jobs.tag):
        rows = h.loc[[tag]].sort_values("partition")
        if len(rows) != k:
            raise EventLogError(f"run {run.name}: job {tag} has {len(rows)} task records, {k} expected")
        for i, r in enumerate(rows.itertuples()):
            text = getattr(r, "sleeps", None)
            if isinstance(text, str) and text:
                parts = [float(x) for x in text.split(";")]
            else:
                parts = [float(r.sleep) / m] * m
            if len(parts) != m:
                raise EventLogError(f"run {run.name}: job {tag} task {r.partition} has {len(parts)} phase sleeps, "
                                    f"{m} expected")
            for p, x in enumerate(parts):
                times[j * k * m + p * k + i] = x + (task_cost if p == 0 else 0.0)
    n = len(jobs)
    return {"arrival": jobs.arrival.to_numpy(dtype=float), "tasks": np.full(n, k, dtype=np.int64),
            "barrier": np.ones(n, dtype=bool), "times": times,
            "offsets": np.arange(n, dtype=np.int64) * k * m, "tag": jobs.tag.to_numpy()}


def replay(run: SparkRun, model: str = "plain", task_cost: float = 0.0, phase: float | None = None,
           seed=0, sync: str = "spark") -> pd.DataFrame:
    """Feed the run's own workload through the simulator's scheduler (the kernel); one row per job.

    The same arrival times (harness submissions) and the same task sleeps as
    Spark got, on ``s`` workers, so that any difference from Spark is the
    scheduler's, not the workload's sampling noise. ``model``:

    * ``"plain"``: a job starts when it is at the head and ``k`` workers are free;
    * ``"paper"``: as plain, every task's service lengthened by an iid
      ``min(U(0, R), Exp(lambda))`` (the paper's simulation, eq. 40);
    * ``"event"``: a job of ``k > 1`` tasks that finds fewer than ``k`` free
      workers starts only at the next global offer: the revive tick
      (``phase`` + multiples of ``R``; default :func:`revive_phase`) or the
      next job arrival, whichever is first.

    Phased jobs release their ``barrier()`` calls by ``sync`` (Spark's
    polling, or ``"ideal"``). ``task_cost`` (seconds) is added to every task
    (e.g. the measured median of Spark's per-task cost beyond the sleep).
    Columns: ``tag, arrival, start, completion, waiting, sojourn``.
    """
    if model not in REPLAY_MODELS:
        raise ParameterError(f"model must be one of {REPLAY_MODELS} (got {model!r})")
    if not (task_cost >= 0 and np.isfinite(task_cost)):
        raise ParameterError(f"task_cost must be a finite number >= 0 seconds (got {task_cost!r})")
    from .runs import run_inputs

    inputs = run_inputs_of(run, task_cost)
    arrivals = inputs["arrival"]
    rate = (len(arrivals) - 1) / (arrivals[-1] - arrivals[0])
    if model == "paper":
        if run.sync_points:
            raise ParameterError("model must be 'plain' or 'event' for a run with barrier() calls (got 'paper'): "
                                 "the paper's overhead is defined for one-phase tasks")
        rng = np.random.default_rng(seed)
        inputs["times"] = inputs["times"] + OverheadModel(run.revive, rate).rvs(inputs["times"].size, rng)
    if model == "event" and phase is None:
        # 1-task jobs never wait for a revive tick (a freed executor's own offer carries them), so the
        # phase does not matter for them, and a k = 1 run may have no blocked launch to estimate it from
        phase = revive_phase(run) if run.tasks_per_job > 1 else 0.0
    system = run.system("event" if model == "event" else None, sync=sync, arrival_rate=rate)
    out = run_inputs(system, inputs, phase=phase or 0.0)
    table = pd.DataFrame({"tag": inputs["tag"], "arrival": arrivals, "start": out["start"],
                          "completion": out["departure"]})
    table["waiting"] = table.start - table.arrival
    table["sojourn"] = table.completion - table.arrival
    return table


def replay_comparison(run: SparkRun, seed=0, quantile: float = 0.99) -> pd.DataFrame:
    """Spark beside the replays of its own workload, one row per source.

    Sources: ``Spark``, ``plain``, ``paper``, ``event`` and ``event + task
    cost`` (the event model with the median :func:`task_cost` added).
    Columns: mean and ``quantile`` of waiting and sojourn time, and the mean
    absolute per-job difference of the waiting time from Spark's.
    """
    spark = run.jobs.sort_values("arrival")
    cost = float(task_cost(run).median())
    sources = {"Spark": spark[["tag", "waiting", "sojourn"]]}
    for model in REPLAY_MODELS:
        if model == "paper" and run.sync_points:
            continue                     # the paper's overhead is defined for one-phase tasks
        sources[model] = replay(run, model, seed=seed)
    sources["event + task cost"] = replay(run, "event", task_cost=cost, seed=seed)
    if run.sync_points:
        sources["event + task cost, ideal barrier()"] = replay(run, "event", task_cost=cost, seed=seed, sync="ideal")
    rows = []
    for name, d in sources.items():
        rows.append({"run": run.name, "source": name, "mean_waiting": float(d.waiting.mean()),
                     "mean_sojourn": float(d.sojourn.mean()),
                     "waiting_q": float(np.quantile(d.waiting, quantile)),
                     "sojourn_q": float(np.quantile(d.sojourn, quantile)),
                     "per_job_waiting_error": float(np.mean(np.abs(d.waiting.to_numpy()
                                                                   - spark.waiting.to_numpy()))),
                     "task_cost": cost if name.startswith("event + task cost") else 0.0})
    return pd.DataFrame(rows)


def best_match(table: pd.DataFrame, metrics=("mean_waiting", "mean_sojourn", "waiting_q", "sojourn_q")) -> pd.DataFrame:
    """Relative error of each simulation against Spark, per run and metric, and the closest."""
    rows = []
    for run, d in table.groupby("run"):
        spark = d[d.source == "Spark"].iloc[0]
        for m in metrics:
            errs = {r.source: (getattr(r, m) - spark[m]) / spark[m] for r in d[d.source != "Spark"].itertuples()}
            rows.append({"run": run, "metric": m, "spark": spark[m], **{f"error {k}": v for k, v in errs.items()},
                         "closest": min(errs, key=lambda k: abs(errs[k]))})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------------
# the chapter's tables (book/spark.md): each from the runs or the comparison table, tested

def repeat_spread(runs: list, quantile: float = 0.99) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Settings (s, k, lambda) run more than once: one row per run (means with 95 % batch-means intervals), and
    per setting how far its first two runs lie apart and whether their intervals overlap."""
    rows = []
    setting_of = pd.DataFrame([{"run": r, "s": r.executors, "k": r.tasks_per_job, "lambda": r.arrival_rate}
                               for r in runs], columns=["run", "s", "k", "lambda"])
    for (s_, k_, lam), group in setting_of.groupby(["s", "k", "lambda"]):
        if len(group) < 2:
            continue
        for r in group.run:
            sm = run_summary(r, quantile=quantile)
            rows.append({"setting": f"s = {s_}, k = {k_}, lambda = {lam:g}", "run": r.name,
                         "seed": r.metadata["config"]["seed"], "jobs": sm["jobs"],
                         "mean waiting (s)": sm["mean_waiting"], "waiting 95% CI": sm["mean_waiting_ci"],
                         "mean sojourn (s)": sm["mean_sojourn"], "sojourn 95% CI": sm["mean_sojourn_ci"]})
    repeats = pd.DataFrame(rows, columns=["setting", "run", "seed", "jobs", "mean waiting (s)", "waiting 95% CI",
                                          "mean sojourn (s)", "sojourn 95% CI"])

    def apart(a, b, metric):
        return abs(a[f"mean {metric} (s)"] - b[f"mean {metric} (s)"]) / ((a[f"mean {metric} (s)"]
                                                                          + b[f"mean {metric} (s)"]) / 2)

    def overlap(a, b, metric):
        return bool(max(a[f"{metric} 95% CI"][0], b[f"{metric} 95% CI"][0])
                    <= min(a[f"{metric} 95% CI"][1], b[f"{metric} 95% CI"][1]))

    spread_rows = []
    for setting, d in repeats.groupby("setting", sort=False):
        a, b = d.iloc[0], d.iloc[1]
        spread_rows.append({"setting": setting, "runs": f"{a.run}, {b.run}",
                            "waiting: relative difference": apart(a, b, "waiting"),
                            "waiting intervals overlap": overlap(a, b, "waiting"),
                            "sojourn: relative difference": apart(a, b, "sojourn"),
                            "sojourn intervals overlap": overlap(a, b, "sojourn")})
    spread = pd.DataFrame(spread_rows, columns=["setting", "runs", "waiting: relative difference",
                                                "waiting intervals overlap", "sojourn: relative difference",
                                                "sojourn intervals overlap"])
    return repeats, spread


def ushape(table: pd.DataFrame, servers: int | None = None) -> pd.DataFrame:
    """Spark's mean waiting and sojourn time against k at each load of one cluster size (default: the largest),
    from :func:`compare_with_simulation`'s Spark rows (repeats averaged); loads with fewer than three k are left
    out. Only runs in a steady state (``stable``) decide: a U-shape needs the best k for sojourn strictly inside
    the steady k, and on each side a steady k whose mean sojourn is significantly larger (its 95 % interval
    wholly above the best k's; a k's interval spans its repeats' intervals)."""
    spark = table[table.source == "Spark"]
    servers = int(spark.servers.max()) if servers is None else servers
    rows = []
    for u, d in spark[spark.servers == servers].groupby("utilization"):
        d = d.sort_values("tasks")
        per_k = d.groupby("tasks")[["mean_waiting", "mean_sojourn"]].mean()
        if len(per_k) < 3:                                    # a U-shape needs three values of k at one load
            continue
        steady = d.groupby("tasks").stable.all()
        low = d.groupby("tasks").mean_sojourn_ci.agg(lambda c: min(x[0] for x in c))
        high = d.groupby("tasks").mean_sojourn_ci.agg(lambda c: max(x[1] for x in c))
        ks = [k for k in per_k.index if steady[k]]
        k_best = int(per_k.loc[ks].mean_sojourn.idxmin()) if ks else None
        above = [k for k in ks if k_best is not None and low[k] > high[k_best]]
        both = bool(k_best is not None and any(k < k_best for k in above) and any(k > k_best for k in above))
        rows.append({"utilization": u, "k measured": per_k.index.tolist(),
                     "k without steady state": [int(k) for k in per_k.index if not steady[k]],
                     "mean waiting by k (s)": [round(v, 2) for v in per_k.mean_waiting],
                     "mean sojourn by k (s)": [round(v, 2) for v in per_k.mean_sojourn],
                     "waiting grows with k": bool((np.diff(per_k.mean_waiting) > 0).all()),
                     "best k (sojourn, steady runs)": k_best,
                     "best k interior": bool(k_best is not None and min(ks) < k_best < max(ks)),
                     "significantly higher on both sides": both,
                     "U-shape": bool(both and min(ks) < k_best < max(ks))})
    return pd.DataFrame(rows)


def drift_table(runs: list, batches: int = 10) -> pd.DataFrame:
    """Per run: the drift test of Spark's waiting times (Kendall tau of batch means) beside the model's rho_max."""
    from .stability import stability_limit
    from .statistics import drift

    rows = []
    for r in runs:
        dr = drift(r.jobs.sort_values("arrival").waiting.to_numpy(), batches)
        rows.append({"run": r.name, "s": r.executors, "k": r.tasks_per_job, "rho": r.arrival_rate,
                     "model rho_max": stability_limit(r.executors, r.tasks_per_job).rho_max,
                     "Kendall tau of waiting": dr["kendall_tau"], "p": dr["pvalue"],
                     "Spark's queue drifts": dr["drifting"]})
    return pd.DataFrame(rows)


def saturation_table(runs: list, jobs: int, replications: int, seed=None) -> pd.DataFrame:
    """Saturated Spark runs against the model: Spark's start rate (:func:`saturation_rate`) beside eq. 5's
    lambda_max and a saturated simulation with the event-accurate overhead; ``used (longest at its k)`` marks
    the run with the most jobs at each k (the narrowest interval)."""
    from .saturated import saturated_many
    from .stability import stability_limit

    rows = []
    if runs:
        model = saturated_many([BarrierSystem(servers=r.executors, tasks=r.tasks_per_job, task_rate=1 / r.task_mean,
                                              overhead="event", revive_interval=r.revive, arrival_rate=1.0)
                                for r in runs], jobs=jobs, replications=replications, seed=seed)
        for r, m in zip(runs, model, strict=True):
            est = saturation_rate(r)
            exact = stability_limit(r.executors, r.tasks_per_job, task_rate=1 / r.task_mean)
            rows.append({"run": r.name, "s": r.executors, "k": r.tasks_per_job, "jobs": est["jobs"],
                         "Spark lambda_max": est["lambda_max"], "Spark 95% CI": est["lambda_max_ci"],
                         "model lambda_max (eq. 5)": exact.lambda_max,
                         "event-overhead simulation": m["lambda_max"], "simulation 95% CI": m["lambda_max_ci"],
                         "Spark / model": est["lambda_max"] / exact.lambda_max,
                         "Spark rho_max": est["rho_max"], "model rho_max": exact.rho_max})
    table = pd.DataFrame(rows)
    if len(table):
        table["used (longest at its k)"] = table.index.isin(table.groupby("k").jobs.idxmax().to_numpy())
    return table


def blocking_gap(replays: pd.DataFrame, runs: list) -> dict:
    """How much longer Spark's jobs wait than the plain model on the same workload (the paper's "diverge more
    quickly with k" and "more dramatic with load"): per run the gap, per (s, rho, k) its mean, and whether it
    grows with k at each load and with the load at each k."""
    tasks_of = {r.name: r.tasks_per_job for r in runs}
    load_of = {r.name: round(r.arrival_rate * r.tasks_per_job * r.task_mean / r.executors, 3) for r in runs}
    gap = replays[replays.source.isin(["Spark", "plain"])].pivot(index="run", columns="source", values="mean_waiting")
    gap["s"] = [{r.name: r.executors for r in runs}[name] for name in gap.index]
    gap["k"] = [tasks_of[name] for name in gap.index]
    gap["rho"] = [load_of[name] for name in gap.index]
    gap["Spark - plain (s)"] = gap.Spark - gap.plain
    blocking = gap[gap.k > 1].groupby(["s", "rho", "k"], as_index=False)["Spark - plain (s)"].mean()
    grows_k = [bool((np.diff(d.sort_values("k")["Spark - plain (s)"]) > 0).all())
               for _, d in blocking.groupby(["s", "rho"]) if d.k.nunique() > 1]
    by_load = blocking.groupby(["s", "k"]).filter(lambda d: d.rho.nunique() > 1)
    grows_load = [bool((np.diff(d.sort_values("rho")["Spark - plain (s)"]) > 0).all())
                  for _, d in by_load.groupby(["s", "k"])]
    return {"gap": gap, "blocking": blocking, "grows_with_k": grows_k, "by_load": by_load,
            "grows_with_load": grows_load}


# --------------------------------------------------------------------------------------------------
# mixed workloads (several k, barrier and plain jobs): Spark's scheduling rule, job by job

def is_mixed(run: SparkRun) -> bool:
    """A run whose jobs differ in k or in kind (barrier or plain)."""
    return "barrier" in run.jobs and (run.jobs.tasks.nunique() > 1 or run.jobs.barrier.nunique() > 1)


def overtakes(starts: np.ndarray, arrivals: np.ndarray, barrier: np.ndarray) -> np.ndarray:
    """For each job: how many later-arriving jobs started before it while it waited (0 for plain jobs).

    A job's start is the launch of its last task (all of its tasks running); a
    barrier job is overtaken by every job that arrived after it and started
    before it: what Spark's first-fit allows and the paper's FIFO never does.
    """
    order = np.argsort(arrivals, kind="stable")
    a, st, b = arrivals[order], starts[order], barrier[order]
    out = np.zeros(a.size, dtype=np.int64)
    for i in np.flatnonzero(b):
        out[order[i]] = int(np.count_nonzero(st[i + 1:] < st[i]))
    return out


def mixed_inputs(run: SparkRun, task_cost: float = 0.0) -> dict:
    """A mixed run's own workload as simulator inputs: harness submissions, each job's k and kind, and each
    task's sleep (in partition order), plus ``task_cost`` seconds per task."""
    jobs = run.jobs.sort_values("arrival")
    h = run.harness_tasks.set_index("tag")
    times, offsets, ks = [], [], []
    for tag, k in zip(jobs.tag, jobs.tasks, strict=True):
        rows = h.loc[[tag]].sort_values("partition")
        if len(rows) != k:
            raise EventLogError(f"run {run.name}: job {tag} has {len(rows)} task records, {k} expected")
        offsets.append(len(times))
        times.extend(float(x) + task_cost for x in rows.sleep)
        ks.append(int(k))
    return {"arrival": jobs.arrival.to_numpy(dtype=float), "tasks": np.asarray(ks, dtype=np.int64),
            "barrier": jobs.barrier.to_numpy(dtype=bool), "times": np.asarray(times),
            "offsets": np.asarray(offsets, dtype=np.int64), "tag": jobs.tag.to_numpy()}


MIXED_MODELS = ("fcfs", "fcfs + offers", "first-fit", "first-fit + offers")


def mixed_replay(run: SparkRun, model: str, task_cost: float = 0.0, phase: float | None = None) -> pd.DataFrame:
    """A mixed run's own workload through the waiting-list scheduler: ``model`` is the discipline (``fcfs``:
    the paper's FIFO; ``first-fit``: Spark's rule), ``+ offers`` adds Spark's offers (a release offers its
    executor to one-slot jobs only; revive ticks and arrivals offer every free executor). One row per job:
    ``tag, tasks, barrier, arrival, start`` (last task launched), ``completion, waiting, sojourn``."""
    if model not in MIXED_MODELS:
        raise ParameterError(f"model must be one of {MIXED_MODELS} (got {model!r})")
    inputs = mixed_inputs(run, task_cost)
    arrivals = inputs["arrival"]
    config = run.metadata["config"]
    ks = sorted({int(k) for k in inputs["tasks"]} | {int(config["tasks"])})
    offers = model.endswith("+ offers")
    if offers and phase is None:
        phase = revive_phase(run)
    system = BarrierSystem(servers=run.executors, tasks_pmf={k: 1 / len(ks) for k in ks},
                           barrier_fraction=0.5 if inputs["barrier"].any() and not inputs["barrier"].all()
                           else float(inputs["barrier"].all()),
                           arrival_rate=(len(arrivals) - 1) / (arrivals[-1] - arrivals[0]),
                           overhead="event" if offers else None, revive_interval=run.revive if offers else None,
                           scheduling="first-fit")
    from .schedulers import waitlist

    out = waitlist.run_inputs(system, {k: v for k, v in inputs.items() if k != "tag"}, phase=phase or 0.0,
                              discipline=model.split(" ")[0])
    table = pd.DataFrame({"tag": inputs["tag"], "tasks": inputs["tasks"], "barrier": inputs["barrier"],
                          "arrival": arrivals, "start": out["start"], "completion": out["departure"]})
    table["waiting"] = table.start - table.arrival
    table["sojourn"] = table.completion - table.arrival
    return table


def mixed_comparison(run: SparkRun) -> pd.DataFrame:
    """Spark beside the replays of its own mixed workload (every model of :data:`MIXED_MODELS`, with the
    median per-task cost added), one row per source and job class (k, barrier or plain): jobs, mean
    waiting (to the last task's launch) and sojourn, the share of barrier jobs overtaken, and the mean
    absolute per-job difference of the waiting time from Spark's."""
    spark = run.jobs.sort_values("arrival")
    cost = float(task_cost(run).median())
    spark_start = spark.last_launch.to_numpy()
    sources = {"Spark": pd.DataFrame({"tag": spark.tag.to_numpy(), "tasks": spark.tasks.to_numpy(),
                                      "barrier": spark.barrier.to_numpy(), "arrival": spark.arrival.to_numpy(),
                                      "start": spark_start, "completion": spark.completion.to_numpy()})}
    sources["Spark"]["waiting"] = sources["Spark"].start - sources["Spark"].arrival
    sources["Spark"]["sojourn"] = sources["Spark"].completion - sources["Spark"].arrival
    for model in MIXED_MODELS:
        sources[model] = mixed_replay(run, model, task_cost=cost)
    rows = []
    for name, d in sources.items():
        over = overtakes(d.start.to_numpy(), d.arrival.to_numpy(), d.barrier.to_numpy(dtype=bool))
        error = np.abs(d.waiting.to_numpy() - sources["Spark"].waiting.to_numpy())
        for (k, barrier), mask in d.groupby(["tasks", "barrier"]).groups.items():
            idx = d.index.get_indexer(mask)
            rows.append({"run": run.name, "source": name, "tasks": int(k), "barrier": bool(barrier),
                         "jobs": int(idx.size), "mean_waiting": float(d.waiting.iloc[idx].mean()),
                         "mean_sojourn": float(d.sojourn.iloc[idx].mean()),
                         "overtaken_share": float(np.mean(over[idx] > 0)) if barrier else float("nan"),
                         "per_job_waiting_error": float(error[idx].mean()), "task_cost": cost})
    return pd.DataFrame(rows)


__all__ = ["BARRIER_POLL", "MIXED_MODELS", "REPLAY_MODELS", "is_mixed", "mixed_comparison", "mixed_inputs",
           "mixed_replay", "overtakes", "SERVING_LIMITS", "SparkRun", "best_match", "blocking_gap",
           "compare_with_simulation", "drift_table", "repeat_spread", "same_length", "saturation_table", "ushape",
           "cross_validate_overhead", "run_inputs_of", "saturation_rate",
           "discover_runs", "executor_handoffs", "load_run", "overhead_samples", "overhead_tests", "python_startup",
           "quantile_interval", "record_serving_check", "replay", "replay_comparison", "revive_phase", "run_summary",
           "serving_check", "simulation_configs", "spark_limits", "steady_state", "sync_delay_tests",
           "sync_delays", "task_cost"]
