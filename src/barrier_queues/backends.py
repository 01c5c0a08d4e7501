"""Where simulations run: a process pool on this machine, or a Spark cluster.

A backend is chosen once, at the boundary of a public function
(:func:`~barrier_queues.simulate_many`, :func:`~barrier_queues.sweep`, ...),
by its ``backend`` and ``master`` arguments (:func:`resolve`); only when
``backend`` is None is the environment read (``SWEEP_BACKEND``,
``SPARK_MASTER``: ``make book-full`` on a cluster). Below the boundary the
choice travels as an argument.

* ``"local"``: a fork-based process pool (:func:`pool_map`), progress bar on a
  terminal; one process runs in the caller.
* ``"spark"``: each item becomes a Spark task (:func:`spark_map`) on
  ``local[N]``, ``local-cluster[...]`` or ``spark://``; each Python worker,
  which Spark reuses, loads the compiled kernels once. Every executor needs
  this package installed.

Results never depend on the backend: random streams are fixed by the items
(``SeedSequence`` children), not by where or in which order they run.
"""

from __future__ import annotations

import os
import re
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._validation import ParameterError, check_choice, check_int

if TYPE_CHECKING:
    import subprocess

# multiprocessing, concurrent.futures.process, subprocess, shutil and signal are imported where they are used:
# together a measurable part of every command's start (timing: CHANGELOG), and a one-replication simulation
# needs none of them

BACKENDS = ("local", "spark")


@dataclass(frozen=True)
class Backend:
    """A resolved backend: ``name`` (``"local"`` or ``"spark"``) and the Spark ``master`` (None locally)."""

    name: str = "local"
    master: str | None = None


def resolve(backend: str | Backend | None = None, master: str | None = None) -> Backend:
    """The backend of a public call: its arguments, else ``SWEEP_BACKEND`` / ``SPARK_MASTER``, else local."""
    if isinstance(backend, Backend):
        return backend
    if backend is None:
        backend = os.environ.get("SWEEP_BACKEND", "local") or "local"
        check_choice("SWEEP_BACKEND", backend, BACKENDS)
    backend = check_choice("backend", backend, BACKENDS)
    if backend == "spark" and master is None:
        master = os.environ.get("SPARK_MASTER") or None
    if master is not None and backend != "spark":
        raise ParameterError(f"master must be given only with backend 'spark' (got {master!r} with backend "
                             f"{backend!r})")
    if backend == "spark":
        master = check_master(master or "local[*]")
    return Backend(backend, master if backend == "spark" else None)


def check_master(master: str, allowed: str = "local[N], local-cluster[N,C,MB] or spark://host:port") -> str:
    """A Spark master URL, checked by form and by size before any work: ``local[N]`` with ``N >= 1`` (or
    ``*``), ``local-cluster[N,C,MB]`` with ``N, C >= 1`` and ``MB >= 512``, or ``spark://host:port``."""
    m = re.match(r"^(?:local(?:\[(\d+|\*)\])?|local-cluster\[(\d+),(\d+),(\d+)\]|spark://.+)$", master or "")
    if not m:
        raise ParameterError(f"master must be {allowed} (got {master!r})")
    if m.group(1) not in (None, "*") and int(m.group(1)) < 1:
        raise ParameterError(f"master local[N] must have N >= 1 worker threads (got {master!r})")
    if m.group(2) is not None:
        n, cores, mem = int(m.group(2)), int(m.group(3)), int(m.group(4))
        if n < 1 or cores < 1:
            raise ParameterError(f"master local-cluster[N,C,MB] must have N >= 1 executors and C >= 1 cores each "
                                 f"(got {master!r})")
        if mem < 512:
            raise ParameterError(f"master local-cluster[N,C,MB] must give each executor MB >= 512 of memory (got "
                                 f"{master!r})")
    return master


# --------------------------------------------------------------------------------------------------
# this machine

def watch_parent(parent: int, interval: float = 0.5) -> None:
    """In a worker process: a daemon thread that ends the worker when its parent is gone (``kill -9``,
    ``timeout``), so that no worker computes on for nobody. The compiled kernels release the GIL, so the
    thread runs during a long replication; an orphan's parent id changes (to init or a subreaper)."""
    import threading

    def watch():
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="watch-parent", daemon=True).start()


def _init_worker(parent: int) -> None:
    """A pool worker leaves Ctrl-C to its parent (a terminal sends SIGINT to the whole process group): the parent
    stops the pool, so no worker takes up a queued item after the interrupt; and it watches its parent."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_parent(parent)


def _stop_workers(pool) -> None:
    """Terminate a pool's worker processes now: after Ctrl-C or an error the items in flight are not wanted, and
    ``shutdown(cancel_futures=True)`` alone would still run the items already handed to the workers' queue.
    (``ProcessPoolExecutor.terminate_workers`` does this from Python 3.14; ``_processes`` is its own map.)"""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        if process.is_alive():
            process.terminate()


def pool_map(function, items: list, workers: int | None = None, progress: bool | None = None, desc: str = "",
             ordered: bool = True):
    """Yield ``function(x)`` for the items from a fork-based process pool (in the caller for one worker).

    ``ordered``: results in item order (else as they finish). ``workers``
    defaults to all cores; ``progress`` (default: on a terminal) shows a bar.
    """
    workers = check_int("workers", workers, low=1) if workers is not None else (os.cpu_count() or 1)
    workers = max(1, min(len(items), workers))
    show = sys.stderr.isatty() if progress is None else progress
    bar = None
    if show:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(items), desc=desc, leave=False)
    pool = None
    try:
        if workers <= 1:
            iterator = (function(x) for x in items)
        else:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor, as_completed

            pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"),
                                       initializer=_init_worker, initargs=(os.getpid(),))
            iterator = (pool.map(function, items) if ordered
                        else (f.result() for f in as_completed([pool.submit(function, x) for x in items])))
        for result in iterator:
            if bar is not None:
                bar.update()
            yield result
    except BaseException:                        # Ctrl-C, an error, or a caller that stopped reading
        if pool is not None:
            _stop_workers(pool)
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        if bar is not None:
            bar.close()


# --------------------------------------------------------------------------------------------------
# Spark

def java_version() -> int:
    """Major version of the ``java`` on PATH (or in JAVA_HOME); clear error if there is none."""
    import shutil
    import subprocess

    java = shutil.which("java", path=os.path.join(os.environ["JAVA_HOME"], "bin")
                        if os.environ.get("JAVA_HOME") else None) or shutil.which("java")
    if java is None:
        raise ParameterError("java must be installed (Java 17 or newer) for the Spark benchmark: "
                             "none found on PATH or in JAVA_HOME")
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        raise ParameterError(f"java -version gave no version string ({(out.stderr or out.stdout)[:80]!r})")
    major = int(m.group(1)) if m.group(1) != "1" else int(m.group(2))
    if major < 17:
        raise ParameterError(f"java must be version 17 or newer for Spark 4 (got Java {major} at {java})")
    return major


def check_master_reachable(master: str, timeout: float = 5.0) -> None:
    """For a ``spark://host:port[,host:port]`` master, fail fast unless one of its hosts accepts a connection.

    Spark itself would retry the registration for about a minute and then
    stop the context with a Java stack trace; this gives one clear message.
    """
    import socket

    if not master.startswith("spark://"):
        return
    reasons = []
    for address in master[len("spark://"):].split(","):
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ParameterError(f"master must be 'spark://host:port' (got {master!r})")
        try:
            socket.create_connection((host, int(port)), timeout=timeout).close()
            return
        except OSError as exc:
            reasons.append(f"{address}: {exc.strerror or type(exc).__name__}")
    raise ParameterError(f"master must be reachable: nothing accepted a connection at {master} "
                         f"({'; '.join(reasons)}); is the standalone master running?")


def driver_host(master: str) -> str | None:
    """The address the Spark driver binds to: 127.0.0.1 for ``local``, ``local-cluster`` and a standalone master
    on this machine (loopback), else None: Spark's default (this host's name), which a cluster's executors must
    be able to reach (set ``SPARK_LOCAL_IP`` to choose another interface)."""
    if master.startswith("local"):
        return "127.0.0.1"
    hosts = [a.rpartition(":")[0] for a in master[len("spark://"):].split(",")] if master.startswith("spark://") else []
    if hosts and all(h in ("127.0.0.1", "localhost", "::1", "[::1]") for h in hosts):
        return "127.0.0.1"
    return None


def spark_session(master: str, app: str = "barrier-queues-sweep"):
    """A SparkSession on ``master`` for running items as tasks (checked: pyspark, Java, a reachable master)."""
    check_master(master)
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise ParameterError("pyspark must be installed for backend 'spark' (pip install pyspark)") from None
    java_version()
    check_master_reachable(master)
    import warnings

    # pyspark 4.3 warns that it "does not yet fully support pandas >= 3" when pandas is imported with it; the
    # RDD API used here needs no pandas (the warning comes again at the session's start, so for the process)
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    from pyspark.sql import SparkSession
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master(master).appName(app)
               .config("spark.ui.enabled", "false").config("spark.python.worker.reuse", "true")
               .config("spark.task.maxFailures", "1"))
    if (host := driver_host(master)) is not None:
        builder = builder.config("spark.driver.host", host).config("spark.driver.bindAddress", host)
    return builder.getOrCreate()


def spark_map(function, items: list, master: str) -> list:
    """``[function(x) for x in items]`` as Spark tasks (one per item), results in item order."""
    spark = spark_session(master)
    try:
        sc = spark.sparkContext
        rdd = sc.parallelize(list(enumerate(items)), numSlices=max(1, len(items)))
        pairs = rdd.map(lambda pair: (pair[0], function(pair[1]))).collect()
    finally:
        spark.stop()
    out = [None] * len(items)
    for i, value in pairs:
        out[i] = value
    return out


# --------------------------------------------------------------------------------------------------
# a standalone Spark cluster on this machine

def _free_port(host: str) -> int:
    import socket

    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class StandaloneCluster:
    """A real Spark standalone cluster on this machine: one master and ``workers`` workers, started from the
    installed pyspark (``spark-class org.apache.spark.deploy.master.Master`` / ``...worker.Worker``), bound to
    ``host``, with their work and log folders under ``folder``. Use it as a context manager; ``master`` is its
    ``spark://host:port`` URL. Each daemon runs in its own process group, so that stopping the cluster ends
    it with every executor and Python worker it started (SIGTERM, then SIGKILL after ``grace`` seconds).

    It serves tests and trying the ``spark://`` path without a cluster; on a real cluster, start the master
    and workers with Spark's ``sbin/start-master.sh`` and ``sbin/start-worker.sh`` instead.
    """

    def __init__(self, folder, workers: int = 2, cores: int = 1, memory_mb: int = 1024, host: str = "127.0.0.1",
                 timeout: float = 120.0, grace: float = 10.0):
        from pathlib import Path

        self.folder = Path(folder)
        self.workers = check_int("workers", workers, low=1, high=64)
        self.cores = check_int("cores", cores, low=1, high=256)
        self.memory_mb = check_int("memory_mb", memory_mb, low=512)
        self.host, self.timeout, self.grace = host, float(timeout), float(grace)
        self.processes: list[subprocess.Popen] = []
        self.master: str | None = None

    def _spark_class(self) -> str:
        try:
            import pyspark
        except ImportError:
            raise ParameterError("pyspark must be installed for a standalone cluster (pip install pyspark)") from None
        path = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")
        if not os.path.exists(path):
            raise ParameterError(f"pyspark must include bin/spark-class (not found at {path})")
        return path

    def _start(self, name: str, args: list[str], env: dict) -> subprocess.Popen:
        import subprocess

        log = open(self.folder / "logs" / f"{name}.out", "ab")
        try:
            proc = subprocess.Popen([self._spark_class(), *args], stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        finally:
            log.close()
        self.processes.append(proc)
        return proc

    def _alive_workers(self, ui_port: int) -> int:
        import json
        import urllib.request

        try:
            with urllib.request.urlopen(f"http://{self.host}:{ui_port}/json/", timeout=2) as r:
                return int(json.load(r).get("aliveworkers", 0))
        except (OSError, ValueError):
            return 0

    def start(self) -> str:
        java_version()
        for sub in ("logs", "work"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        spark_home = os.path.dirname(os.path.dirname(self._spark_class()))
        env = {**os.environ, "SPARK_HOME": spark_home, "SPARK_LOCAL_IP": self.host,
               "SPARK_LOG_DIR": str(self.folder / "logs"), "SPARK_WORKER_DIR": str(self.folder / "work"),
               "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
        port, ui = _free_port(self.host), _free_port(self.host)
        self.master = f"spark://{self.host}:{port}"
        try:
            self._start("master", ["org.apache.spark.deploy.master.Master", "--host", self.host, "--port", str(port),
                                   "--webui-port", str(ui)], env)
            for i in range(self.workers):
                self._start(f"worker-{i}", ["org.apache.spark.deploy.worker.Worker", self.master, "--host", self.host,
                                            "--cores", str(self.cores), "--memory", f"{self.memory_mb}m",
                                            "--work-dir", str(self.folder / "work" / str(i)),
                                            "--webui-port", str(_free_port(self.host))], env)
            deadline = time.monotonic() + self.timeout
            while self._alive_workers(ui) < self.workers:
                if time.monotonic() > deadline or any(p.poll() is not None for p in self.processes):
                    raise ParameterError(f"the standalone cluster must start within {self.timeout:g} s with "
                                         f"{self.workers} workers (see {self.folder / 'logs'})")
                time.sleep(0.5)
        except BaseException:
            self.stop()
            raise
        return self.master

    def pids(self) -> list[int]:
        """Every live process of the cluster's process groups (daemons, executors, Python workers; Linux)."""
        groups = {p.pid for p in self.processes}
        out = []
        for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
            if entry.isdigit():
                try:
                    fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[2]) in groups and fields[0] != "Z":
                    out.append(int(entry))
        return out

    def _signal(self, sig: int) -> None:
        """``sig`` to every live process group of the cluster (a group may end between the check and the kill)."""
        for proc in self.processes:
            if _group_alive(proc.pid):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    pass

    def stop(self) -> None:
        import signal

        self._signal(signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        while any(_group_alive(p.pid) for p in self.processes) and time.monotonic() < deadline:
            for p in self.processes:
                p.poll()
            time.sleep(0.2)
        self._signal(signal.SIGKILL)
        for proc in self.processes:
            proc.wait()

    def __enter__(self) -> StandaloneCluster:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


__all__ = ["BACKENDS", "Backend", "StandaloneCluster", "check_master_reachable",
           "driver_host", "java_version", "pool_map", "resolve", "spark_map", "spark_session"]
