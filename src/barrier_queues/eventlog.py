"""Spark event logs as tidy tables (Appendix C, "Event log").

A Spark event log is JSON lines, one listener event per line. Spark 4.x rolls
logs into a directory ``eventlog_v2_<app>/events_<n>_<app>[.zstd]`` and
compresses the parts with zstd by default; 3.x writes one plain file. All
forms are read here. Times in the log are driver-clock milliseconds; the
tables use seconds.

:func:`parse_event_log` returns an :class:`EventLogTables` with

``tasks`` (one row per task attempt)
    ``job_id, stage_id, stage_attempt, task_id, index, attempt, executor,
    host, launch, finish, getting_result, failed, killed, reason,
    deserialize, run, result_serialization, scheduler_delay`` (times in s;
    scheduler delay as the Spark UI computes it: duration minus run,
    deserialize, result serialization and getting-result time).
``jobs`` (one row per job)
    ``job_id, key`` (the value of a thread-local property, e.g. the harness's
    job tag, used to join arrivals since job ids need not follow arrival
    order), ``barrier, tasks, submission, first_launch, last_launch,
    last_finish, completion, result, waiting, execution, sojourn``. Without
    harness timestamps a job arrives at its ``Submission Time``; its waiting
    time ends at its first task launch and its sojourn at its
    ``Completion Time``; execution is completion minus first launch.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ._validation import ParameterError


class EventLogError(ParameterError):
    """A malformed or incomplete Spark event log; the message names the file and line."""


_ROLLED_PART = re.compile(r"^events_(\d+)_")


def event_log_files(path) -> list[Path]:
    """The files of an event log, in order: one file, or the parts of a rolled log."""
    path = Path(path)
    if not path.exists():
        raise EventLogError(f"event log must be an existing file or directory (got {str(path)!r})")
    if path.is_file():
        return [path]
    if not path.is_dir():                    # a device, a socket, a FIFO: nothing Spark writes
        raise EventLogError(f"event log must be a regular file or a rolled event-log directory (got {str(path)!r}, "
                            "which is neither)")
    parts = []
    for f in path.iterdir():
        m = _ROLLED_PART.match(f.name)
        if m:
            parts.append((int(m.group(1)), f))
    if not parts:
        # spark.eventLog.dir itself (the folder spark-bench writes): one application's log in it is that log
        apps = sorted(f for f in path.iterdir() if f.is_file() and f.name.startswith(("app-", "local-"))
                      and not f.name.endswith(".inprogress"))
        rolled = sorted(f for f in path.iterdir() if f.is_dir() and f.name.startswith("eventlog_v2_"))
        if len(apps) + len(rolled) == 1:
            return event_log_files((apps + rolled)[0])
        if apps or rolled:
            names = ", ".join(f.name for f in (apps + rolled)[:4])
            raise EventLogError(f"event log directory {str(path)!r} holds {len(apps) + len(rolled)} applications' "
                                f"logs ({names}{' ...' if len(apps) + len(rolled) > 4 else ''}): name one of them")
        raise EventLogError(f"event log directory {str(path)!r} has no events_<n>_* files and no application's "
                            "log (expected a rolled Spark event log, eventlog_v2_<app>, or spark.eventLog.dir "
                            "holding one app-* log)")
    return [f for _, f in sorted(parts)]


#: compression by magic bytes (the file name's suffix may lie)
_MAGIC = {b"\x28\xb5\x2f\xfd": "zstd", b"\x1f\x8b": "gzip", b"\x04\x22\x4d\x18": "lz4", b"\xff\x06\x00\x00": "snappy"}


def _compression(raw: bytes, path: Path) -> str | None:
    for magic, name in _MAGIC.items():
        if raw.startswith(magic):
            return name
    if path.suffix in (".lz4", ".snappy", ".lzf"):
        return path.suffix[1:]
    return None


def _zstd_frames(raw: bytes) -> bytes:
    """Every zstd frame of ``raw``, decompressed; a frame that does not end raises (a cut stream)."""
    import zstandard

    parts, rest = [], raw
    while rest:
        frame = zstandard.ZstdDecompressor().decompressobj()
        parts.append(frame.decompress(rest))
        if not frame.eof:
            raise ValueError("the last frame does not end")
        rest = frame.unused_data
    return b"".join(parts)


def _open_text(path: Path):
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise EventLogError(f"{path.name}: cannot be read ({exc.strerror or exc})") from None
    kind = _compression(raw, path)
    try:
        if kind == "zstd":
            raw = _zstd_frames(raw)
        elif kind == "gzip":
            import gzip

            raw = gzip.decompress(raw)
        elif kind is not None:
            raise EventLogError(f"{path.name}: {kind}-compressed event logs are not supported; "
                                "use zstd (Spark's default), gzip or spark.eventLog.compress=false")
    except EventLogError:
        raise
    except Exception as exc:                 # a corrupt or cut compressed stream
        raise EventLogError(f"{path.name}: the {kind} stream is corrupt or cut short ({type(exc).__name__})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise EventLogError(f"{path.name}, line {line}: not UTF-8 text (byte {exc.start}); not a Spark event log, "
                            "or compressed in a form not recognised") from None
    return io.StringIO(text)


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number a Spark event log holds (strict JSON has no {name})")


#: event times beyond this (ms since 1970: about the year 5138) are refused as absurd
MAX_TIME_MS = 1e14


def read_events(path):
    """Yield ``(file name, line number, event dict)`` for every event of the log."""
    for f in event_log_files(path):
        for number, line in enumerate(_open_text(f), start=1):
            if not line.strip():
                continue
            try:
                event = json.loads(line, parse_constant=_no_constant)
            except json.JSONDecodeError as exc:
                raise EventLogError(f"{f.name}, line {number}: not a JSON event ({exc.msg}); "
                                    "the log is truncated or corrupt") from None
            except ValueError as exc:                       # NaN or Infinity: not JSON, never written by Spark
                raise EventLogError(f"{f.name}, line {number}: {exc}") from None
            except RecursionError:
                raise EventLogError(f"{f.name}, line {number}: a JSON value nested too deeply to be a Spark "
                                    "event; the log is corrupt") from None
            if not isinstance(event, dict) or "Event" not in event:
                raise EventLogError(f"{f.name}, line {number}: a JSON object with an 'Event' field "
                                    "was expected")
            yield f.name, number, event


@dataclass
class EventLogTables:
    """Per-job and per-task tables of one Spark application (see module docstring)."""

    jobs: pd.DataFrame
    tasks: pd.DataFrame
    app: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)


def _need(event, key, where, kind=None):
    if not isinstance(event, dict) or key not in event or event[key] is None:
        label = kind or (event.get("Event") if isinstance(event, dict) else None) or "the event"
        raise EventLogError(f"{where}: {label} has no field {key!r}")
    return event[key]


def _number(event, key, where, kind=None):
    value = _need(event, key, where, kind)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise EventLogError(f"{where}: field {key!r} must be a number (got {value!r})")
    if not -MAX_TIME_MS <= value <= MAX_TIME_MS:
        raise EventLogError(f"{where}: field {key!r} must be a number with |value| <= {MAX_TIME_MS:.0e} (got "
                            f"{value!r}): no Spark time or id is that large")
    return value


def _read_log(path) -> dict:
    """Every job, stage and task event of the log, checked as it is read (duplicates, missing fields)."""
    job_start, job_end, stage_job, task_start, task_end = {}, {}, {}, {}, {}
    job_where: dict = {}
    app: dict = {}
    for name, number, e in read_events(path):
        where = f"{name}, line {number}"
        kind = e["Event"]
        if kind == "SparkListenerJobStart":
            jid = _number(e, "Job ID", where)
            if jid in job_start:
                raise EventLogError(f"{where}: job {jid} starts a second time (first at {job_where[jid]}): two "
                                    "logs joined, or a corrupt log")
            _number(e, "Submission Time", where)
            job_start[jid] = e
            job_where[jid] = where
            stages = _need(e, "Stage IDs", where)
            if not isinstance(stages, list):
                raise EventLogError(f"{where}: field 'Stage IDs' must be a list (got {stages!r})")
            for sid in stages:                # a stage a later job reuses (skipped, or resubmitted in it) is
                stage_job.setdefault(sid, []).append(jid)      # listed by each: see _owner
        elif kind == "SparkListenerJobEnd":
            jid = _number(e, "Job ID", where)
            if jid in job_end:
                raise EventLogError(f"{where}: job {jid} ends a second time: two logs joined, or a corrupt log")
            _number(e, "Completion Time", where)
            job_end[jid] = e
        elif kind in ("SparkListenerTaskStart", "SparkListenerTaskEnd"):
            info = _need(e, "Task Info", where)
            if not isinstance(info, dict):
                raise EventLogError(f"{where}: field 'Task Info' must be an object")
            for key in ("Task ID", "Attempt", "Launch Time"):
                _number(info, key, where, f"{kind}'s Task Info")
            _need(info, "Executor ID", where, f"{kind}'s Task Info")
            key = (info["Task ID"], info["Attempt"])
            target = task_start if kind == "SparkListenerTaskStart" else task_end
            if key in target:
                raise EventLogError(f"{where}: task {key[0]} (attempt {key[1]}) appears twice as {kind}: two logs "
                                    "joined, or a corrupt log")
            if kind == "SparkListenerTaskEnd":
                _number(info, "Finish Time", where, f"{kind}'s Task Info")
            target[key] = (e, where)
        elif kind == "SparkListenerApplicationStart":
            if "start_ms" in app:
                raise EventLogError(f"{where}: a second SparkListenerApplicationStart ({e.get('App ID')!r} after "
                                    f"{app.get('app_id')!r}): two applications' logs joined; give one log")
            app.update({"name": e.get("App Name"), "app_id": e.get("App ID"),
                        "start_ms": e.get("Timestamp")})
        elif kind == "SparkListenerApplicationEnd":
            app["end_ms"] = e.get("Timestamp")
        elif kind == "SparkListenerLogStart":
            app["spark_version"] = e.get("Spark Version")
        elif kind == "SparkListenerExecutorAdded":
            cores = (e.get("Executor Info") or {}).get("Total Cores")
            if isinstance(cores, int) and not isinstance(cores, bool) and cores > 0:
                app.setdefault("executor_cores", {})[str(e.get("Executor ID"))] = cores
        elif kind == "SparkListenerExecutorRemoved":
            app["executors_removed"] = app.get("executors_removed", 0) + 1
        elif kind == "SparkListenerEnvironmentUpdate":
            cpus = ((e.get("Spark Properties") or {}) if isinstance(e.get("Spark Properties"), dict)
                    else {}).get("spark.task.cpus")
            if cpus is not None:
                app["task_cpus"] = cpus
    return {"job_start": job_start, "job_end": job_end, "stage_job": stage_job, "task_start": task_start,
            "task_end": task_end, "job_where": job_where, "app": app}


def _check_complete(path, log: dict) -> None:
    """Refuse a log without jobs, or with jobs or tasks that start and never end (or the other way round)."""
    job_start, job_end, task_start, task_end = log["job_start"], log["job_end"], log["task_start"], log["task_end"]
    if not job_start:
        raise EventLogError(f"event log {str(path)!r} has no SparkListenerJobStart events")
    if not task_end and not task_start:
        raise EventLogError(f"event log {str(path)!r} has {len(job_start)} job(s) but no task events: no task "
                            "ran, or the log is cut short")
    missing = sorted(set(job_start) - set(job_end))
    if missing:
        raise EventLogError(f"job {missing[0]} has a SparkListenerJobStart but no SparkListenerJobEnd "
                            f"({len(missing)} such jobs): the log ends early (application still "
                            "running, or crashed)")
    unstarted = sorted(set(task_end) - set(task_start))
    if unstarted:
        raise EventLogError(f"task {unstarted[0][0]} (attempt {unstarted[0][1]}) has a "
                            "SparkListenerTaskEnd but no SparkListenerTaskStart")
    unfinished = sorted(set(task_start) - set(task_end))
    if unfinished:
        raise EventLogError(f"task {unfinished[0][0]} (attempt {unfinished[0][1]}) has a "
                            "SparkListenerTaskStart but no SparkListenerTaskEnd: the log ends early")



def _owner(jobs: list, launch_ms: float, job_start: dict) -> int:
    """The job a task of a stage listed by ``jobs`` ran for: a shuffle map stage of one job may be listed again
    by a later job, which skips it or, after a fetch failure, resubmits it; the task belongs to the last of those
    jobs submitted by its launch (the first, for a task launched before all of them)."""
    if len(jobs) == 1:
        return jobs[0]
    before = [j for j in jobs if job_start[j]["Submission Time"] <= launch_ms]
    return max(before, key=lambda j: job_start[j]["Submission Time"]) if before else jobs[0]


def _task_table(log: dict, sec) -> tuple[pd.DataFrame, dict]:
    """One row per task attempt; and the jobs with impossible task times (job -> where)."""
    task_end, stage_job = log["task_end"], log["stage_job"]
    rows = []
    bad_jobs: dict = {}                      # job -> where the impossible time was seen
    for (tid, attempt), (e, where) in sorted(task_end.items()):
        info, metrics = e["Task Info"], e.get("Task Metrics") or {}
        if not isinstance(metrics, dict):
            raise EventLogError(f"{where}: field 'Task Metrics' must be an object")
        sid = e.get("Stage ID")
        if sid not in stage_job:
            raise EventLogError(f"{where}: task {tid} belongs to stage {sid}, which no job started")
        launch, finish = sec(info["Launch Time"]), sec(info["Finish Time"])
        jid = _owner(stage_job[sid], info["Launch Time"], log["job_start"])
        if finish < launch:
            bad_jobs.setdefault(jid, f"{where} (task {tid} finishes before its launch)")
        getting = sec(info["Getting Result Time"]) if info.get("Getting Result Time") else 0.0
        deser = metrics.get("Executor Deserialize Time", 0) / 1000
        run = metrics.get("Executor Run Time", 0) / 1000
        ser = metrics.get("Result Serialization Time", 0) / 1000
        fetch = (finish - getting) if info.get("Getting Result Time") else 0.0
        rows.append({"job_id": jid, "stage_id": sid,
                     "stage_attempt": e.get("Stage Attempt ID", 0), "task_id": tid,
                     "index": info.get("Index"), "partition": info.get("Partition ID", info.get("Index")),
                     "attempt": attempt, "executor": str(info["Executor ID"]),
                     "host": info.get("Host"), "launch": launch, "finish": finish,
                     "getting_result": getting, "failed": bool(info.get("Failed", False)),
                     "killed": bool(info.get("Killed", False)),
                     "reason": (e.get("Task End Reason") or {}).get("Reason"),
                     "deserialize": deser, "run": run, "result_serialization": ser,
                     "scheduler_delay": max(finish - launch - run - deser - ser - fetch, 0.0)})
    return pd.DataFrame(rows), bad_jobs


def _job_result(result) -> str | None:
    """A job's ``Job Result``: Spark writes ``{"Result": "JobSucceeded"}`` or ``{"Result": "JobFailed",
    "Exception": {...}}``; a bare string is read as the result itself; None when absent."""
    if isinstance(result, dict):
        value = result.get("Result")
        return value if isinstance(value, str) else None
    return result if isinstance(result, str) else None


def _job_message(result) -> str | None:
    """The first line (at most 200 characters) of a failed job's exception message, else None."""
    exc = result.get("Exception") if isinstance(result, dict) else None
    message = exc.get("Message") if isinstance(exc, dict) else None
    return message.strip().splitlines()[0][:200] if isinstance(message, str) and message.strip() else None


def _job_table(log: dict, tasks: pd.DataFrame, sec, key_property: str, bad_jobs: dict) -> pd.DataFrame:
    """One row per job: submission, first and last launch, completion, waiting, execution, sojourn."""
    job_start, job_end, job_where = log["job_start"], log["job_end"], log["job_where"]
    job_rows = []
    for jid, e in sorted(job_start.items()):
        end = job_end[jid]
        t = tasks[tasks.job_id == jid] if len(tasks) else tasks
        try:
            barrier = any(r.get("Barrier", False) for s in e.get("Stage Infos", []) for r in s.get("RDD Info", []))
        except (AttributeError, TypeError):
            raise EventLogError(f"{job_where[jid]}: field 'Stage Infos' must be a list of stages with 'RDD Info' "
                                "lists") from None
        submission = sec(e["Submission Time"])
        completion = sec(_need(end, "Completion Time", f"job {jid}"))
        first = float(t.launch.min()) if len(t) else float("nan")
        if completion < submission:
            bad_jobs.setdefault(jid, f"{job_where[jid]} (job {jid} completes before its submission)")
        elif len(t) and first < submission - 0.001:
            bad_jobs.setdefault(jid, f"{job_where[jid]} (job {jid} launches a task before its submission)")
        job_rows.append({"job_id": jid, "key": (e.get("Properties") or {}).get(key_property),
                         "barrier": barrier, "tasks": int(len(t)), "submission": submission,
                         "first_launch": first, "last_launch": float(t.launch.max()) if len(t) else first,
                         "last_finish": float(t.finish.max()) if len(t) else first,
                         "completion": completion,
                         "result": _job_result(end.get("Job Result")),
                         "message": _job_message(end.get("Job Result")),
                         "waiting": first - submission, "execution": completion - first,
                         "sojourn": completion - submission})
    return pd.DataFrame(job_rows)


def parse_event_log(path, key_property: str = "bq.job") -> EventLogTables:
    """Parse a Spark event log into tidy job and task tables.

    Parameters
    ----------
    path : str or Path
        An event-log file (plain or zstd) or a rolled event-log directory.
    key_property : str
        Thread-local property copied into ``jobs.key`` (None where absent).

    Raises
    ------
    EventLogError
        For a truncated or non-JSON line, a job or task that starts but never
        ends, a task of an unknown stage, or a log without jobs.
    """
    log = _read_log(path)
    _check_complete(path, log)
    app = log["app"]
    # times: seconds since the application start (epoch ms would lose sub-microsecond
    # precision as float seconds)
    origin = app.get("start_ms") or min(e["Submission Time"] for e in log["job_start"].values())
    app["origin_ms"] = origin

    def sec(ms):
        return (ms - origin) / 1000

    tasks, bad_jobs = _task_table(log, sec)
    jobs = _job_table(log, tasks, sec, key_property, bad_jobs)
    warnings = []
    if bad_jobs:
        first_where = bad_jobs[min(bad_jobs)]
        warnings.append(f"{len(bad_jobs)} job(s) dropped for impossible times, the first at {first_where}")
        jobs = jobs[~jobs.job_id.isin(bad_jobs)].reset_index(drop=True)
        if len(tasks):
            tasks = tasks[~tasks.job_id.isin(bad_jobs)].reset_index(drop=True)
        if jobs.empty:
            raise EventLogError(f"every job of the log has impossible times (first at {first_where})")
    return EventLogTables(jobs, tasks, app, warnings)


def launch_delays(tables: EventLogTables, min_gap: float = 0.0) -> pd.DataFrame:
    """Every barrier job's launch, classified by what it waited for (seconds).

    Jobs are taken in launch order (FIFO, as measured). For job j launched at
    ``L_j`` with k tasks, each executor idle just before ``L_j`` has been idle
    since its last task's finish; ``ready_k`` is the time the k-th of them
    became free. ``kind``: ``"blocked"`` when ``ready_k`` is later than both its
    submission and the previous job's launch (it waited for executors, not
    for its turn; ``delay = L_j - ready_k``, the blocking overhead);
    ``"free"`` when k executors were free and no job was ahead at its
    submission (``delay = L_j - submission``: what a job that never queues
    pays); ``"behind"`` otherwise (it waited for its turn; ``delay = L_j -
    max(submission, previous launch)``). One row per job: ``job_id, key, kind,
    submission, ready, launch, delay``.
    """
    jobs = tables.jobs[tables.jobs.barrier & (tables.jobs.tasks > 0)].sort_values("first_launch")
    tasks = tables.tasks
    rows = []
    previous_launch = -float("inf")
    for job in jobs.itertuples():
        launch = job.first_launch
        before = tasks[tasks.launch < launch - 1e-9]
        running = before[before.finish > launch + 1e-9].executor.unique()
        idle_since = before[~before.executor.isin(running)].groupby("executor").finish.max()
        never_used = set(tasks.executor.unique()) - set(before.executor.unique()) - set(running)
        free = sorted(list(idle_since.to_numpy()) + [-float("inf")] * len(never_used))
        if len(free) >= job.tasks:
            ready = free[job.tasks - 1]
            turn = max(job.submission, previous_launch)
            if ready > turn + min_gap:
                kind, delay = "blocked", launch - ready
            elif ready <= job.submission and previous_launch <= job.submission:
                kind, delay = "free", launch - job.submission
            else:
                kind, delay = "behind", launch - turn
            rows.append({"job_id": job.job_id, "key": job.key, "kind": kind, "submission": job.submission,
                         "ready": ready, "launch": launch, "delay": delay})
        previous_launch = launch
    return pd.DataFrame(rows, columns=["job_id", "key", "kind", "submission", "ready", "launch", "delay"])


def blocking_overhead(tables: EventLogTables, min_gap: float = 0.0) -> pd.DataFrame:
    """Blocking-overhead samples of barrier jobs that had to queue (Appendix A, section 7): the ``"blocked"``
    jobs of :func:`launch_delays`, one row each: ``job_id, key, ready, launch, overhead`` (seconds)."""
    d = launch_delays(tables, min_gap)
    d = d[d.kind == "blocked"].rename(columns={"delay": "overhead"})
    return d[["job_id", "key", "ready", "launch", "overhead"]].reset_index(drop=True)
