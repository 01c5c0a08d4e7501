"""A real Spark barrier-mode benchmark (paper section IV; Appendix C).

Jobs arrive as a Poisson process and are submitted from driver threads
(FIFO scheduler), so they queue inside Spark as in the paper. Each job is
``k`` barrier tasks (``rdd.barrier().mapPartitions``) that sleep an
exponential time, mean ``s/k`` seconds by default (the paper's scaling,
``rho = lambda``), seeded per job and task. A job of ``phases`` m > 1 does
m iid exponential sleeps per task with ``BarrierTaskContext.barrier()``
between them (Appendix B, section 3; mean ``s/(k m)`` each by default, so
the work per job stays that of the one-phase job); the older
``sync_points`` split one sleep into equal parts instead. ``saturated``
submits every job at once (10 ms apart, in order) to measure the start rate
of a backlogged system, Spark's stability limit.

The careful things Appendix C asks for are done here: a private Spark home (so
pip-installed pyspark's package folder stays clean), UI off, loopback
binding, single-core executors, waiting until every executor has registered,
tagged warm-up jobs that the analysis drops, Spark's event log switched on
(plain, not rolled or compressed), the harness's own submission and
completion times written line by line as the run goes (a crash keeps what
was measured), a time limit, and the Spark context and its JVM always
stopped.

Default master: ``local-cluster[s,1,MEM]``, an embedded standalone cluster;
any ``spark://host:port`` URL runs the same benchmark on a real cluster.
"""

from __future__ import annotations

import csv
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ._validation import ParameterError, check_int, check_positive, check_probability
from .backends import check_master, check_master_reachable, driver_host, java_version
from .load import offered_utilization
from .outputs import check_new_folder
from .system import BarrierSystem


@dataclass(frozen=True)
class SparkBenchConfig:
    """Parameters of one benchmark run (times in seconds).

    ``executors`` = s single-core executors, ``tasks`` = k per job,
    ``arrival_rate`` = lambda jobs/s, ``jobs`` measured jobs after
    ``warmup_jobs`` tagged warm-up jobs, ``task_mean`` (mean sleep of one
    phase; default s/(k m)), ``phases`` m (iid sleeps with barrier() between),
    ``sync_points`` barrier() calls splitting one sleep (older runs),
    ``saturated`` (all jobs at once), ``revive_interval`` Spark's
    ``spark.scheduler.revive.interval``, ``time_limit`` for the whole run.

    Mixed workloads: ``tasks_pmf`` (e.g. ``"2:0.5,8:0.5"``, instead of one
    ``tasks``) draws each job's k, and ``barrier_fraction`` (< 1) makes each
    job a barrier job with that probability, else a plain stage of k
    independent tasks; both are drawn per job from a stream of their own
    (``SeedSequence([seed, 1])``), so the arrival times are those of a
    single-k run with the same seed. Each job's k and kind are recorded.

    Failures (Appendix B, section 5): with ``failure_rate`` gamma (per
    second of a running task) each task attempt draws a failure clock
    Exp(gamma) from a seed of its own (job, partition, task attempt id); if it
    rings before the task's sleep ends, the task raises there. A retry sleeps
    the same time (identical work: a rerun partition). ``stage`` is
    ``"result"`` (``rdd.barrier().mapPartitions(f).collect()``: Spark aborts
    the job at the first failure) or ``"shuffle-map"`` (the barrier stage's
    output is shuffled into a ResultStage, as xgboost PR #9423 does, so
    Spark resubmits the failed stage, at most 4 attempts in all).
    """

    executors: int = 4
    tasks: int = 2
    arrival_rate: float | None = 0.5
    jobs: int = 20
    warmup_jobs: int = 3
    task_mean: float | None = None
    sync_points: int = 0
    phases: int = 1
    saturated: bool = False
    revive_interval: float = 1.0
    seed: int = 1
    master: str | None = None
    tasks_pmf: str | None = None
    barrier_fraction: float = 1.0
    executor_memory_mb: int = 512
    time_limit: float = 600.0
    registration_timeout: float = 120.0
    failure_rate: float | None = None
    stage: str = "result"

    def __post_init__(self):
        s = check_int("executors", self.executors, low=1)
        check_int("tasks", self.tasks, low=1, high=s, high_name=f"executors = {s}")
        check_probability("barrier_fraction", self.barrier_fraction)
        if self.tasks_pmf is not None:
            from .system import parse_pmf

            pmf = parse_pmf(self.tasks_pmf, s)
            if self.tasks != max(k for k, _ in pmf):
                raise ParameterError(f"tasks must be the largest k of tasks_pmf (got tasks = {self.tasks} and "
                                     f"tasks_pmf = {self.tasks_pmf!r})")
            if self.task_mean is None:
                raise ParameterError("task_mean must be given with tasks_pmf (seconds > 0): one sleep law for "
                                     "every k")
        if (self.tasks_pmf is not None or self.barrier_fraction < 1) and (self.phases > 1 or self.sync_points):
            raise ParameterError("phases must be 1 and sync_points 0 for a mixed workload (barrier() needs "
                                 "barrier jobs of one k)")
        if self.saturated is True:
            if self.arrival_rate is not None:
                raise ParameterError(f"arrival_rate must be None for a saturated run (got {self.arrival_rate!r}): "
                                     "every job is submitted at once")
        else:
            check_positive("arrival_rate", self.arrival_rate, "(jobs per second)")
        check_int("jobs", self.jobs, low=1)
        check_int("warmup_jobs", self.warmup_jobs, low=0)
        if self.task_mean is not None:
            check_positive("task_mean", self.task_mean, "(seconds)")
        check_int("sync_points", self.sync_points, low=0)
        check_int("phases", self.phases, low=1, high=1000, high_name="1,000")
        if self.phases > 1 and self.sync_points:
            raise ParameterError(f"sync_points must be 0 with phases > 1 (got {self.sync_points}): phases put "
                                 "barrier() between iid sleeps, sync_points split one sleep")
        if not isinstance(self.saturated, bool):
            raise ParameterError(f"saturated must be True or False (got {self.saturated!r})")
        check_positive("revive_interval", self.revive_interval, "(seconds)")
        check_int("executor_memory_mb", self.executor_memory_mb, low=256)
        check_positive("time_limit", self.time_limit, "(seconds)")
        check_positive("registration_timeout", self.registration_timeout, "(seconds)")
        if self.stage not in STAGES:
            raise ParameterError(f"stage must be one of {', '.join(repr(x) for x in STAGES)} (got {self.stage!r})")
        if self.failure_rate is not None:
            check_positive("failure_rate", self.failure_rate, "(failures per second of a running task)")
            if self.phases > 1 or self.sync_points or self.barrier_fraction < 1:
                raise ParameterError("failure_rate needs barrier jobs of one phase (got phases = "
                                     f"{self.phases}, sync_points = {self.sync_points}, barrier_fraction = "
                                     f"{self.barrier_fraction:g}): the model restarts whole barrier stages")
        if self.master is not None:
            if not re.match(r"^(spark://.+|local-cluster\[.*\])$", self.master):
                raise ParameterError("master must be 'spark://host:port' or 'local-cluster[N,1,MB]' "
                                     f"(got {self.master!r})")
            check_master(self.master, "'spark://host:port' or 'local-cluster[N,1,MB]'")

    @property
    def mean_task(self) -> float:
        """Mean sleep of one phase (seconds)."""
        return self.task_mean if self.task_mean is not None else self.executors / (self.tasks * self.phases)

    def system(self) -> BarrierSystem:
        """The model of this run: 1-barrier, Exp(1/task_mean) sleeps, phases with Spark's barrier()."""
        extra = {"phases": self.phases, "sync": "spark"} if self.phases > 1 else {}
        if self.failure_rate is not None:
            from .failures import SPARK_ATTEMPTS, SPARK_RESUBMIT_DELAY

            extra = {"failure_rate": self.failure_rate, "retry_work": "identical",
                     "max_attempts": SPARK_ATTEMPTS[self.stage], "resubmit_delay": SPARK_RESUBMIT_DELAY}
        k = {"tasks": self.tasks} if self.tasks_pmf is None else {"tasks_pmf": self.tasks_pmf}
        # arrival_rate is None for a saturated run
        return BarrierSystem(servers=self.executors, arrival_rate=self.arrival_rate, task_rate=1.0 / self.mean_task,
                             barrier_fraction=self.barrier_fraction, **k, **extra)

    def job_kinds(self) -> tuple[np.ndarray, np.ndarray]:
        """Each measured job's k and whether it is a barrier job (drawn from ``SeedSequence([seed, 1])``)."""
        system = self.system()
        rng = np.random.default_rng([self.seed, 1])
        ks = system.ks[rng.choice(system.ks.size, size=self.jobs, p=system.pk)] if self.tasks_pmf else \
            np.full(self.jobs, self.tasks, dtype=np.int64)
        barrier = rng.random(self.jobs) < self.barrier_fraction if self.barrier_fraction < 1 else \
            np.ones(self.jobs, dtype=bool)
        return ks, barrier

    @property
    def spark_master(self) -> str:
        # worker memory must hold the executor's; give it 512 MB of headroom
        return self.master or f"local-cluster[{self.executors},1,{self.executor_memory_mb + 512}]"


#: seconds between submissions of a saturated run
SATURATED_GAP = 0.01
#: where the barrier stage sits: the job's ResultStage, or a ShuffleMapStage before a small ResultStage
STAGES = ("result", "shuffle-map")
#: Spark settings the harness sets explicitly for failures (recorded in each run's metadata)
FAILURE_SETTINGS = {"spark.stage.maxConsecutiveAttempts": "4", "spark.task.maxFailures": "4"}


def _spark_home(run_dir: Path) -> Path:
    """A private Spark home: links to the package's bin/jars/python, our own conf/ and work/."""
    import pyspark

    pkg = Path(pyspark.__file__).parent
    home = run_dir / "spark-home"
    (home / "conf").mkdir(parents=True, exist_ok=True)
    (home / "work").mkdir(exist_ok=True)
    for d in ("bin", "jars", "python", "sbin"):
        if (pkg / d).exists() and not (home / d).exists():
            (home / d).symlink_to(pkg / d)
    return home


def _task(job: int, seed: int, mean: float, sync_points: int, phases: int = 1, failure_rate: float | None = None):
    """The barrier task: seeded exponential sleeps, with barrier() between phases (or splitting one sleep);
    with ``failure_rate``, a failure clock per attempt that raises when it rings before the sleep ends."""
    def work(_):
        import random
        import time as _time

        from pyspark import BarrierTaskContext

        ctx = BarrierTaskContext.get()
        part = ctx.partitionId()
        rng = random.Random(seed * 1_000_003 + job * 1009 + part)
        if phases > 1:
            sleeps = [rng.expovariate(1.0 / mean) for _ in range(phases)]
        else:
            total = rng.expovariate(1.0 / mean)
            sleeps = [total / (sync_points + 1)] * (sync_points + 1)
        started = _time.time()
        if failure_rate is not None:         # seeded by the task attempt's id, which the event log records
            tid = ctx.taskAttemptId()
            clock = random.Random((seed * 1_000_003 + job * 1009 + part) * 7919 + tid).expovariate(failure_rate)
            if clock < sum(sleeps):
                _time.sleep(clock)
                raise RuntimeError(f"injected failure of job {job} task {part} (task id {tid}) at {clock:.6f} s")
        syncs = []
        for i, sleep in enumerate(sleeps):
            if i > 0:
                arrive = _time.time()
                ctx.barrier()
                syncs.append((arrive, _time.time()))
            _time.sleep(sleep)
        yield (job, part, sum(sleeps), started, _time.time(), syncs, sleeps)
    return work


def _plain_task(job: int, seed: int, mean: float):
    """A task of a non-barrier job: one seeded exponential sleep (each task is scheduled on its own)."""
    def work(_):
        import random
        import time as _time

        from pyspark import TaskContext

        part = TaskContext.get().partitionId()
        rng = random.Random(seed * 1_000_003 + job * 1009 + part)
        sleep = rng.expovariate(1.0 / mean)
        started = _time.time()
        _time.sleep(sleep)
        yield (job, part, sleep, started, _time.time(), [], [sleep])
    return work


def _cpu_times() -> tuple[float, float] | None:
    """(busy, total) CPU time of the whole machine in clock ticks, from ``/proc/stat``; None off Linux."""
    try:
        fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)          # idle + iowait
    return sum(fields[:8]) - idle, sum(fields[:8])                      # guest time is inside user time


class _LoadSampler:
    """Samples the 1-minute load average every ``interval`` seconds in a daemon thread, and measures the
    machine's busy CPU share over the whole window (exact, where the load average is smoothed over a minute)."""

    def __init__(self, interval: float = 5.0):
        self.interval, self.samples = interval, []
        self._cpu = _cpu_times()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while True:
            self.samples.append(os.getloadavg()[0])
            if self._stop.wait(self.interval):
                return

    def stop(self) -> dict:
        """``loadavg_1min`` (mean, max, samples) and ``cpu_busy`` (share of all cores' time, or None)."""
        self._stop.set()
        self._thread.join()
        end = _cpu_times()
        busy = None
        if self._cpu is not None and end is not None and end[1] > self._cpu[1]:
            busy = (end[0] - self._cpu[0]) / (end[1] - self._cpu[1])
        return {"loadavg_1min": {"mean": float(np.mean(self.samples)), "max": float(np.max(self.samples)),
                                 "samples": len(self.samples), "interval_seconds": self.interval},
                "cpu_busy": busy}


class _Recorder:
    """Appends rows to CSV files as they come, so a crash keeps what was measured."""

    def __init__(self, path: Path, header: list[str]):
        self._lock = threading.Lock()
        self._file = path.open("w", newline="")
        self._writer = csv.writer(self._file)
        self._writer.writerow(header)
        self._file.flush()

    def write(self, row):
        with self._lock:
            self._writer.writerow(row)
            self._file.flush()

    def close(self):
        self._file.close()


def _start_session(config: SparkBenchConfig, run_dir: Path, t_begin: float):
    """The benchmark's SparkSession with every executor registered (refused with one line otherwise)."""
    import warnings

    # pyspark's pandas-version notice, at import and again at the session's start: the RDD API needs no pandas
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(config.spark_master).appName("barrier-queues-bench")
             .config("spark.executor.memory", f"{config.executor_memory_mb}m")
             .config("spark.executor.cores", "1").config("spark.cores.max", str(config.executors))
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.eventLog.enabled", "true")
             .config("spark.eventLog.dir", str((run_dir / "eventlog").resolve()))
             .config("spark.eventLog.rolling.enabled", "false")
             .config("spark.eventLog.compress", "false")
             .config("spark.scheduler.revive.interval", f"{int(config.revive_interval * 1000)}ms")
             .config("spark.scheduler.mode", "FIFO").config("spark.speculation", "false")
             .config("spark.dynamicAllocation.enabled", "false").config("spark.locality.wait", "0")
             .config("spark.scheduler.minRegisteredResourcesRatio", "1.0"))
    if (host := driver_host(config.spark_master)) is not None:
        builder = builder.config("spark.driver.host", host).config("spark.driver.bindAddress", host)
    if config.failure_rate is not None:
        for key, value in FAILURE_SETTINGS.items():
            builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
    except Exception as exc:            # Py4J wraps the JVM's error: keep its first line only
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ParameterError(f"Spark must start on {config.spark_master}: {first}") from None
    sc = spark.sparkContext
    if config.failure_rate is not None:
        # every injected failure is recorded by the harness and the event log; at Spark's default level (WARN)
        # the driver would also print each one's Python traceback, which reads like a crash of the run
        sc.setLogLevel("ERROR")
    deadline = time.time() + config.registration_timeout
    while sc._jsc.sc().getExecutorIds().size() < config.executors:
        if time.time() > deadline:
            spark.stop()
            raise ParameterError(
                f"executors must register within {config.registration_timeout:.0f} s: only "
                f"{sc._jsc.sc().getExecutorIds().size()} of {config.executors} did on "
                f"{config.spark_master} (is the master reachable, and is there memory?)")
        time.sleep(0.5)
    return spark


def _job_runner(sc, config: SparkBenchConfig, tasks, arrivals):
    """``run_job(tag, index, warm, planned)``: one barrier job, its tasks and its arrival recorded."""
    ks, kinds = config.job_kinds()

    def run_job(tag: str, index: int, warm: bool, planned: float):
        sc.setLocalProperty("bq.job", tag)
        k, barrier = (int(ks[index]), bool(kinds[index])) if index >= 0 else (config.tasks, True)
        submitted = time.time()
        status = "ok"
        try:
            stage = sc.parallelize(range(k), k)
            if barrier:
                out = stage.barrier().mapPartitions(_task(index, config.seed, config.mean_task, config.sync_points,
                                                          config.phases, config.failure_rate))
                if config.stage == "shuffle-map":        # a shuffle after it: the barrier stage is a ShuffleMapStage
                    out = out.keyBy(lambda row: row[1]).partitionBy(k).values()
                rows = out.collect()
            else:
                rows = stage.mapPartitions(_plain_task(index, config.seed, config.mean_task)).collect()
            for _job, part, sleep, start, end, syncs, sleeps in rows:
                tasks.write([tag, part, sleep, start, end,
                             ";".join(f"{a:.6f}" for a, _ in syncs),
                             ";".join(f"{r:.6f}" for _, r in syncs),
                             ";".join(repr(x) for x in sleeps)])
        except Exception as exc:  # a failed job is recorded, not fatal
            status = f"failed: {type(exc).__name__}"
        arrivals.write([tag, warm, planned, submitted, time.time(), status, k, int(barrier)])

    return run_job


def _submit_jobs(config: SparkBenchConfig, run_job, t_begin: float, progress: bool, meta: dict, held: dict):
    """Warm-up jobs, then Poisson (or saturated) submissions from driver threads; returns (sampler, unfinished).

    The load sampler is also left in ``held["sampler"]`` as soon as it runs, so that the caller stops it
    whatever happens."""
    for i in range(config.warmup_jobs):          # warm-up: Python workers, JIT, caches
        run_job(f"warmup-{i}", -1 - i, True, time.time())
    rng = np.random.default_rng(config.seed)
    if config.saturated:                         # a backlog at once, in order (10 ms apart)
        gaps = np.full(config.jobs, SATURATED_GAP)
    else:
        gaps = rng.exponential(1.0 / config.arrival_rate, config.jobs)
    sampler = held["sampler"] = _LoadSampler()
    threads = []
    start = time.time()
    limit = t_begin + config.time_limit
    submitted = 0
    first_submit = last_submit = start
    for i, planned in enumerate(start + np.cumsum(gaps)):
        if planned > limit:
            break
        time.sleep(max(planned - time.time(), 0.0))
        last_submit = time.time()
        if i == 0:
            first_submit = last_submit
        th = threading.Thread(target=run_job, args=(str(i), i, False, float(planned)), daemon=True)
        th.start()
        threads.append(th)
        submitted += 1
        if progress:
            print(f"\rsubmitted {submitted}/{config.jobs} jobs", end="", file=sys.stderr, flush=True)
    for th in threads:
        th.join(max(limit - time.time(), 0.1))
    unfinished = sum(th.is_alive() for th in threads)
    if progress:
        print(file=sys.stderr)
    elapsed = time.time() - start
    meta.update(status="complete" if unfinished == 0 else "time limit", submitted=submitted,
                unfinished=unfinished, measured_seconds=elapsed,
                achieved_arrival_rate=(submitted - 1) / (last_submit - first_submit)
                if submitted > 1 and last_submit > first_submit else None,
                offered_utilization=offered_utilization(config.system(), useful=True))
    return sampler, unfinished


def run_spark_bench(config: SparkBenchConfig, out_dir, progress: bool = True) -> Path:
    """Run the benchmark; returns the run folder.

    ``out_dir`` must be new or empty (measured data is never overwritten).
    The folder holds ``metadata.json`` (versions, parameters, machine, what
    was achieved, the load average at the start and sampled during the run
    and, under ``serving``,
    :func:`~barrier_queues.spark_analysis.serving_check`: whether this machine
    served the run honestly), ``arrivals.csv`` (per job: tag, planned arrival,
    submission and completion time, status), ``tasks.csv`` (per task: sleep,
    start, end, barrier() arrival and release times) and ``eventlog/``
    (Spark's log).
    """
    run_dir = Path(out_dir)
    check_new_folder("out_dir", run_dir, "measured data")
    java = java_version()
    try:
        import pyspark
    except ImportError:
        raise ParameterError("pyspark must be installed for the Spark benchmark "
                             "(pip install pyspark)") from None
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "eventlog").mkdir(exist_ok=True)
    home = _spark_home(run_dir)
    meta = {"config": asdict(config), "master": config.spark_master, "task_mean": config.mean_task,
            "spark_settings": {**({"spark.scheduler.mode": "FIFO", "spark.speculation": "false",
                                   "spark.scheduler.revive.interval": f"{int(config.revive_interval * 1000)}ms"}),
                               **(FAILURE_SETTINGS if config.failure_rate is not None else {})},
            "spark": pyspark.__version__, "java": java, "python": platform.python_version(),
            "machine": platform.machine(), "cores": os.cpu_count(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "status": "running",
            "loadavg_at_start": list(os.getloadavg())}   # a busy machine before the run shows here
    (run_dir / "metadata.json").write_text(json.dumps(meta, indent=2))
    env = {"SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    old_env = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    arrivals = _Recorder(run_dir / "arrivals.csv",
                         ["tag", "warmup", "planned", "submitted", "completed", "status", "tasks", "barrier"])
    tasks = _Recorder(run_dir / "tasks.csv",
                      ["tag", "partition", "sleep", "start", "end", "sync_arrive", "sync_release", "sleeps"])
    spark = None
    sampler = None
    t_begin = time.time()
    try:
        check_master_reachable(config.spark_master)
        spark = _start_session(config, run_dir, t_begin)
        sc = spark.sparkContext
        meta["registered_after"] = time.time() - t_begin
        run_job = _job_runner(sc, config, tasks, arrivals)
        held = {}
        try:
            sampler, unfinished = _submit_jobs(config, run_job, t_begin, progress, meta, held)
        finally:
            sampler = held.get("sampler")
        if unfinished:
            sc.cancelAllJobs()
    except Exception as exc:
        meta.update(status=f"failed: {type(exc).__name__}: {exc}")
        raise
    finally:
        if sampler is not None:
            meta.update(sampler.stop())
        arrivals.close()
        tasks.close()
        if spark is not None:
            _stop(spark)
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        meta["total_seconds"] = time.time() - t_begin
        meta["loadavg_1_5_15min"] = list(os.getloadavg())   # how busy the machine was at the end
        (run_dir / "metadata.json").write_text(json.dumps(meta, indent=2))
    from .spark_analysis import record_serving_check

    record_serving_check(run_dir)
    return run_dir


def _stop(spark) -> None:
    """Stop the session once every task has ended, then the driver JVM."""
    _wait_for_running_tasks(spark.sparkContext)
    spark.stop()
    _shutdown_gateway()


def _wait_for_running_tasks(sc, timeout: float = 60.0) -> None:
    """Wait until no executor runs a task (at most ``timeout`` seconds), then let the listener bus write.

    A barrier job aborted at a failure returns to the driver while the scheduler is still killing its other
    tasks; stopping Spark then would cut the event log before their ends, and the run could not be read."""
    try:
        tracker = sc._jsc.sc().statusTracker()
        deadline = time.time() + timeout
        while time.time() < deadline:
            infos = tracker.getExecutorInfos()
            if sum(infos[i].numRunningTasks() for i in range(len(infos))) == 0:
                break
            time.sleep(0.2)
        time.sleep(1.0)             # the task-end events are posted to the event log asynchronously
    except Exception:               # a context that is already gone has nothing left to wait for
        return


def _shutdown_gateway() -> None:
    """Stop the driver JVM that pyspark launched, so nothing outlives the run."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        return
    proc = getattr(gateway, "proc", None)
    try:
        gateway.shutdown()
    finally:
        if proc is not None:
            if proc.stdin:
                proc.stdin.close()       # pyspark's JVM exits when its stdin closes
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        SparkContext._gateway = None
        SparkContext._jvm = None


def archive_run(run_dir, dest) -> Path:
    """Copy a run folder in compact, reproducible form (what ``data/spark/<run>/`` holds).

    ``metadata.json`` as is, ``arrivals.csv`` and ``tasks.csv`` gzip-compressed
    (no timestamp in the header, so equal data give equal bytes) and the event
    log zstd-compressed (level 19) under ``eventlog/``; the private Spark home
    and executor logs are left out; ``dest`` must be new or empty. Readable by
    :func:`barrier_queues.spark_analysis.load_run` and ``spark-analyze``.
    """
    import gzip

    import zstandard

    src, dst = Path(run_dir), Path(dest)
    if not (src / "metadata.json").exists():
        raise ParameterError(f"run_dir must be a spark-bench run folder with metadata.json (got {str(src)!r})")
    logs = [p for p in (src / "eventlog").glob("*") if p.is_file() and not p.name.startswith(".")]
    if len(logs) != 1:
        raise ParameterError(f"run_dir must hold exactly one event log under eventlog/ (found {len(logs)})")
    check_new_folder("dest", dst, "measured data")
    (dst / "eventlog").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src / "metadata.json", dst / "metadata.json")
    for name in ("arrivals.csv", "tasks.csv"):
        with (src / name).open("rb") as f_in, (dst / f"{name}.gz").open("wb") as raw, \
                gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as f_out:
            shutil.copyfileobj(f_in, f_out)
    log = logs[0]
    data = log.read_bytes()
    if log.suffix in (".zstd", ".zst"):
        target = dst / "eventlog" / log.name
    else:
        target = dst / "eventlog" / f"{log.name}.zstd"
        data = zstandard.ZstdCompressor(level=19).compress(data)
    target.write_bytes(data)
    return dst


__all__ = ["SparkBenchConfig", "archive_run", "check_master_reachable", "java_version", "run_spark_bench"]
