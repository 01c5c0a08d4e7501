"""Workload logs as traces: a production log (SWF), a CSV table or a Spark event log, read as jobs.

A **trace** (:class:`Trace`) is a table of jobs: submit time, ``k``, either one shared runtime (a rigid job
holding its ``k`` workers for that time: the Standard Workload Format's jobs) or per-task times (a Spark
job's measured tasks), barrier or not, and optionally a runtime estimate (Appendix B, section 6).
:func:`barrier_queues.replay.replay` runs a discipline on it.

Readers (:func:`read_trace` picks one by content):

* **SWF** (Parallel Workloads Archive; plain or gzip): submit = field 2; ``k`` = field 8 (requested
  processors) when positive, else field 5 (allocated) (``width="allocated"``: field 5 first), the rule of
  the simulator behind the published backfilling results; runtime = field 4; estimate = field 9 (requested
  time), raised to the runtime where smaller; user = field 12; ``s`` = the header's ``MaxProcs``. Jobs with
  runtime <= 0, ``k`` <= 0, ``k > s`` or submit < 0 are skipped and counted by reason (the archive's "strong
  filter" removes exactly these).
* **CSV** with a header: ``submit``, ``tasks``, ``runtime`` (or ``task_times``: task times separated by
  ``;``), optional ``job_id``, ``barrier`` (default true), ``estimate`` and ``user`` (a whole number).
* **Spark event log** (any format :func:`barrier_queues.eventlog.parse_event_log` reads): each job
  submitted at its ``SparkListenerJobStart``; the launch-to-finish times of its successful tasks (of its
  last stage attempt) are its task times; a barrier stage (its RDD info) makes a barrier job. Failed jobs and
  jobs of more than one stage are skipped and counted.

A malformed line or value is one :class:`ParameterError` naming the file and the line (or CSV row).
"""

from __future__ import annotations

import gzip
import io
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from ._validation import ParameterError, check_choice

#: which SWF field gives a job's width first: 8 (requested processors) or 5 (allocated)
WIDTHS = ("requested", "allocated")
SWF_FIELDS = 18


@dataclass
class Trace:
    """A workload log as jobs. ``jobs``: ``job_id`` (the log's own), ``submit``, ``tasks``, ``runtime`` (the
    shared time of a rigid job; NaN with per-task times), ``barrier``, ``estimate`` (NaN: none), and where the
    log says who submitted it ``user`` (SWF field 12, -1 for none; a CSV's user column), in submission order
    (ties in file order). ``task_times``/``task_offsets``: per-task times of non-rigid jobs
    (None for a rigid trace). ``servers``: the log's own machine size (SWF ``MaxProcs``), if it says.
    ``skipped``: jobs left out, by reason; ``notes``: what was done to the jobs kept. ``origin``: for a log of
    wall-clock times (Philly's), the time its submit 0 stands for (``YYYY-MM-DD HH:MM:SS``; see :func:`window`)."""

    jobs: pd.DataFrame
    source: str
    format: str
    servers: int | None = None
    task_times: np.ndarray | None = None
    task_offsets: np.ndarray | None = None
    skipped: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    origin: str | None = None

    @property
    def rigid(self) -> bool:
        return self.task_times is None

    def describe(self) -> dict:
        return {"source": self.source, "format": self.format, "jobs": int(len(self.jobs)),
                "servers": self.servers, "rigid": self.rigid, "skipped": dict(self.skipped),
                "notes": list(self.notes)}


def _open_bytes(path: Path, what: str) -> bytes:
    from .outputs import read_input_file

    raw = read_input_file(what, path)
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise ParameterError(f"{what} {str(path)!r} is a damaged gzip file: {exc}") from None
    return raw


def _swf_header(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        if not line.startswith(";"):
            if line.strip():
                break
            continue
        m = re.match(r";\s*(\w+):\s*(.*)", line)
        if m:
            out.setdefault(m.group(1), m.group(2).strip())
    return out


def _swf_rows(text: str, source: str) -> np.ndarray:
    """The job lines as an (n, 18) array (numpy's C reader); a malformed line is one error naming it."""
    import warnings

    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)      # "input contained no data": the slow path says so
            data = np.loadtxt(io.StringIO(text), comments=";", dtype=float, ndmin=2)
        if data.shape[1] == SWF_FIELDS and data.shape[0] > 0 and np.isfinite(data).all():
            return data
    except ValueError:
        pass
    return _swf_diagnose(text, source)


def _swf_diagnose(text: str, source: str) -> np.ndarray:
    """The slow path of :func:`_swf_rows`: line by line, to name the first bad line."""
    numbers, lines = [], []
    for i, line in enumerate(text.splitlines(), start=1):
        body = line.split(";", 1)[0].strip()
        if not body:
            continue
        parts = body.split()
        if len(parts) != SWF_FIELDS:
            raise ParameterError(f"trace {source} line {i}: an SWF job line has {SWF_FIELDS} fields (got "
                                 f"{len(parts)})")
        lines.append(i)
        numbers.append(parts)
    if not numbers:
        raise ParameterError(f"trace {source} has no job lines")
    try:
        data = np.array(numbers, dtype=float)
    except ValueError:
        for i, parts in zip(lines, numbers, strict=True):
            try:
                [float(x) for x in parts]
            except ValueError:
                bad = next(x for x in parts if not _is_float(x))
                raise ParameterError(f"trace {source} line {i}: field {parts.index(bad) + 1} must be a number "
                                     f"(got {bad!r})") from None
        raise
    if not np.isfinite(data).all():
        r, c = np.argwhere(~np.isfinite(data))[0]
        raise ParameterError(f"trace {source} line {lines[r]}: field {c + 1} must be a finite number")
    return data


def _is_float(x: str) -> bool:
    try:
        float(x)
        return True
    except ValueError:
        return False


def read_swf(path, width: str = "requested", servers: int | None = None) -> Trace:
    """A Standard Workload Format log (see the module docstring for the mapping and the skips)."""
    check_choice("width", width, WIDTHS)
    p = Path(path)
    text = _open_bytes(p, "trace").decode("utf-8", errors="replace").removeprefix("\ufeff")  # (a BOM is no content)
    source = repr(str(p))
    header = _swf_header(text)
    data = _swf_rows(text, source)
    if servers is None and "MaxProcs" in header:
        try:
            servers = int(header["MaxProcs"].split()[0])
        except (ValueError, IndexError):
            raise ParameterError(f"trace {source}: header MaxProcs must be an integer (got "
                                 f"{header['MaxProcs']!r})") from None
        if servers < 1:
            raise ParameterError(f"trace {source}: header MaxProcs must be at least 1 (got {servers})")
    first, other = (7, 4) if width == "requested" else (4, 7)
    k = np.where(data[:, first] > 0, data[:, first], data[:, other])
    if (k != np.floor(k)).any():
        raise ParameterError(f"trace {source}: processors must be whole numbers (job "
                             f"{data[np.flatnonzero(k != np.floor(k))[0], 0]:g} has {k[k != np.floor(k)][0]:g})")
    runtime, submit, requested = data[:, 3], data[:, 1], data[:, 8]
    reasons = {"runtime <= 0": runtime <= 0, "processors <= 0": k <= 0, "submit < 0": submit < 0,
               f"wider than any machine (k > {MAX_WIDTH:,})": k > MAX_WIDTH}     # (an int64 cast overflowed)
    if servers is not None:
        reasons[f"wider than the machine (k > {servers})"] = k > servers
    keep, skipped = _skips(reasons, len(k))
    notes = [f"k from field {first + 1} (requested processors) when positive, else field {other + 1}"]
    estimate = np.where(requested > 0, np.maximum(requested, runtime), np.nan)
    raised = int(((requested > 0) & (requested < runtime) & keep).sum())
    missing = int(((requested <= 0) & keep).sum())
    if raised:
        notes.append(f"{raised} requested times below the runtime raised to it")
    if missing:
        notes.append(f"{missing} jobs without a requested time (field 9 <= 0)")
    jobs = pd.DataFrame({"job_id": data[keep, 0].astype(np.int64), "submit": submit[keep],
                         "tasks": k[keep].astype(np.int64), "runtime": runtime[keep], "barrier": True,
                         "estimate": estimate[keep], "user": data[keep, 11].astype(np.int64)})   # (field 12; -1: none)
    return Trace(_in_order(jobs), str(p), "swf", servers, skipped=skipped, notes=notes)


def _skips(reasons: dict, n: int) -> tuple[np.ndarray, dict]:
    """Jobs kept, and the count skipped for each reason (a job counts under its first reason)."""
    keep = np.ones(n, dtype=bool)
    skipped = {}
    for reason, bad in reasons.items():
        hit = keep & bad
        if hit.any():
            skipped[reason] = int(hit.sum())
        keep &= ~bad
    return keep, skipped


def _in_order(jobs: pd.DataFrame) -> pd.DataFrame:
    """Jobs in submission order, ties in file order (a stable sort)."""
    return jobs.iloc[np.argsort(jobs.submit.to_numpy(), kind="stable")].reset_index(drop=True)


#: the widest job a trace may hold: far beyond any machine (replay's --servers stops at 10,000,000), and exact
#: as an int64
MAX_WIDTH = 10**12


def read_trace_csv(path) -> Trace:
    """A CSV trace (see the module docstring); bad values are one error naming the row."""
    p = Path(path)
    source = repr(str(p))
    try:
        table = pd.read_csv(io.BytesIO(_open_bytes(p, "trace")))
    except (ValueError, pd.errors.ParserError) as exc:
        raise ParameterError(f"trace {source} is not a valid CSV: {exc}") from None
    need = {"submit", "tasks"}
    if not need <= set(table.columns) or not ({"runtime", "task_times"} & set(table.columns)):
        raise ParameterError(f"trace {source} must have columns submit, tasks and runtime or task_times (got "
                             f"{list(table.columns)})")
    unknown = sorted(set(table.columns) - {"job_id", "submit", "tasks", "runtime", "task_times", "barrier",
                                           "estimate", "user"})
    if unknown:
        raise ParameterError(f"trace {source} has unknown columns {unknown}")
    n = len(table)
    if n == 0:
        raise ParameterError(f"trace {source} has no jobs")
    submit = _column(table, "submit", source, low=0.0)
    tasks = _column(table, "tasks", source, low=1.0)
    if (tasks > MAX_WIDTH).any():                        # (1e20 overflowed the int64 cast to a negative width)
        row = int(np.flatnonzero(tasks > MAX_WIDTH)[0])
        raise ParameterError(f"trace {source} row {row + 2}: tasks must be at most {MAX_WIDTH:,} (got "
                             f"{tasks[row]:.6g})")
    if (tasks != np.floor(tasks)).any():
        raise ParameterError(f"trace {source} row {int(np.flatnonzero(tasks != np.floor(tasks))[0]) + 2}: tasks "
                             "must be a whole number")
    jobs = pd.DataFrame({"job_id": table["job_id"] if "job_id" in table else np.arange(n), "submit": submit,
                         "tasks": tasks.astype(np.int64)})
    jobs["barrier"] = _flags(table["barrier"], source) if "barrier" in table else True
    if "user" in table:                                  # (who submitted it: resampling draws users' weeks)
        users = _column(table, "user", source, low=0.0)
        if (users != np.floor(users)).any():
            raise ParameterError(f"trace {source} row {int(np.flatnonzero(users != np.floor(users))[0]) + 2}: user "
                                 "must be a whole number")
        jobs["user"] = users.astype(np.int64)
    jobs["estimate"] = _column(table, "estimate", source, low=0.0, strict=True) if "estimate" in table \
        else np.nan
    if "task_times" in table and "runtime" in table:
        raise ParameterError(f"trace {source} must have a runtime column or a task_times column, not both: a "
                             "job's time is one or the other")
    if "task_times" not in table:
        jobs["runtime"] = _column(table, "runtime", source, low=0.0, strict=True)
        if not jobs.barrier.all():
            raise ParameterError(f"trace {source}: a job with one runtime holds its workers together; plain jobs "
                                 "(barrier false) need task_times")
        jobs["estimate"] = np.maximum(jobs.estimate, jobs.runtime)
        return Trace(_in_order(jobs), str(p), "csv")
    times, offsets = _task_times(table, jobs.tasks.to_numpy(), source)
    jobs["runtime"] = np.nan
    order = np.argsort(jobs.submit.to_numpy(), kind="stable")
    sizes = jobs.tasks.to_numpy()[order]
    new_offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    new_times = np.concatenate([times[offsets[j]:offsets[j] + jobs.tasks.iat[j]] for j in order])
    return Trace(jobs.iloc[order].reset_index(drop=True), str(p), "csv", task_times=new_times,
                 task_offsets=new_offsets)


#: the header of the Philly job log as the Pollux artifact extracts it (``philly.csv``)
PHILLY_COLUMNS = ["timestamp", "duration", "num_gpus", "gpu_time", "cluster"]


def read_philly(path) -> Trace:
    """The Philly GPU cluster's job log in the Pollux extract (columns :data:`PHILLY_COLUMNS`; unsorted rows,
    one per job): rigid gangs of ``num_gpus`` GPUs for ``duration`` seconds, submitted at ``timestamp`` (wall
    clock, read as seconds since the log's first submission), with their virtual cluster in ``cluster``
    (replay each on its own size: :func:`barrier_queues.replay.replay_by_cluster`). The log records no machine
    size and no requested time. A row whose ``gpu_time`` is not ``duration x num_gpus`` is refused, naming it."""
    p = Path(path)
    source = repr(str(p))
    try:
        table = pd.read_csv(io.BytesIO(_open_bytes(p, "trace")), dtype={"cluster": str})
    except (ValueError, pd.errors.ParserError) as exc:
        raise ParameterError(f"trace {source} is not a valid CSV: {exc}") from None
    if list(table.columns) != PHILLY_COLUMNS:
        raise ParameterError(f"trace {source}: a Philly log has the columns {', '.join(PHILLY_COLUMNS)} (got "
                             f"{list(table.columns)})")
    if table.empty:
        raise ParameterError(f"trace {source} has no jobs")
    stamps = pd.to_datetime(table["timestamp"], format="%Y-%m-%d %H:%M:%S", errors="coerce")
    if stamps.isna().any():
        row = int(np.flatnonzero(stamps.isna().to_numpy())[0])
        raise ParameterError(f"trace {source} row {row + 2}: timestamp must be YYYY-MM-DD HH:MM:SS (got "
                             f"{table['timestamp'].iat[row]!r})")
    first = stamps.min()
    tasks = _column(table, "num_gpus", source, low=1.0)
    if (tasks != np.floor(tasks)).any() or (tasks > MAX_WIDTH).any():
        row = int(np.flatnonzero((tasks != np.floor(tasks)) | (tasks > MAX_WIDTH))[0])
        raise ParameterError(f"trace {source} row {row + 2}: num_gpus must be a whole number of at most "
                             f"{MAX_WIDTH:,}")
    runtime = _column(table, "duration", source, low=0.0, strict=True)
    gpu_time = _column(table, "gpu_time", source, low=0.0, strict=True)
    off = np.abs(gpu_time - runtime * tasks) > 1e-9 * gpu_time
    if off.any():
        row = int(np.flatnonzero(off)[0])
        raise ParameterError(f"trace {source} row {row + 2}: gpu_time {gpu_time[row]:g} is not duration x num_gpus "
                             f"= {runtime[row] * tasks[row]:g}")
    if table["cluster"].isna().any():
        raise ParameterError(f"trace {source} row {int(np.flatnonzero(table['cluster'].isna())[0]) + 2}: cluster "
                             "is empty")
    jobs = pd.DataFrame({"job_id": np.arange(len(table)),
                         "submit": (stamps - first).dt.total_seconds().to_numpy(dtype=float),
                         "tasks": tasks.astype(np.int64), "runtime": runtime, "barrier": True, "estimate": np.nan,
                         "cluster": table["cluster"].to_numpy()})
    return Trace(_in_order(jobs), str(p), "philly",
                 notes=[f"submit times in seconds since the first submission, {first:%Y-%m-%d %H:%M:%S}",
                        "a job's runtime is its duration; the log has no requested times"],
                 origin=f"{first:%Y-%m-%d %H:%M:%S}")


def window(trace: Trace, start: str, end: str) -> Trace:
    """The jobs of a log of wall-clock times (its ``origin``) submitted from ``start`` to ``end`` (both
    ``YYYY-MM-DD HH:MM:SS``, both included), their submit times counted from ``start``: the window a study
    replayed (the Helios study's of the Philly log: 2017-10-01 00:00:00 to 2017-11-30 23:59:00). Jobs running
    at ``start`` that were submitted before it are not in the window (as in that study's own cut)."""
    if trace.origin is None or not trace.rigid:
        raise ParameterError(f"trace {trace.source!r} has no wall-clock origin: a window needs a log of dates "
                             "(the Philly log)")
    bounds = []
    for name, text in (("start", start), ("end", end)):
        stamp = pd.to_datetime(text, format="%Y-%m-%d %H:%M:%S", errors="coerce")
        if pd.isna(stamp):
            raise ParameterError(f"{name} must be YYYY-MM-DD HH:MM:SS (got {text!r})")
        bounds.append((stamp - pd.Timestamp(trace.origin)).total_seconds())
    lo, hi = bounds
    if hi <= lo:
        raise ParameterError(f"end must be after start (got {start!r} to {end!r})")
    kept = trace.jobs[(trace.jobs.submit >= lo) & (trace.jobs.submit <= hi)].reset_index(drop=True)
    if kept.empty:
        raise ParameterError(f"trace {trace.source!r} has no job submitted from {start} to {end}")
    kept = kept.assign(submit=kept.submit - lo)
    return replace(trace, jobs=kept, origin=start, source=f"{trace.source} from {start} to {end}",
                   notes=[*trace.notes, f"the jobs submitted from {start} to {end}, submit times from {start}"])


def _column(table: pd.DataFrame, name: str, source: str, low: float, strict: bool = False) -> np.ndarray:
    values = pd.to_numeric(table[name], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values) | (values <= low if strict else values < low)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        value = table[name].iat[row]
        value = value.item() if isinstance(value, np.generic) else value      # (-5, not np.int64(-5))
        raise ParameterError(f"trace {source} row {row + 2}: {name} must be a finite number "
                             f"{'>' if strict else '>='} {low:g} (got {value!r})")
    return values


def _flags(column: pd.Series, source: str) -> np.ndarray:
    text = column.astype(str).str.strip().str.lower()
    ok = text.isin(["true", "false", "1", "0"])
    if not ok.all():
        row = int(np.flatnonzero(~ok.to_numpy())[0])
        raise ParameterError(f"trace {source} row {row + 2}: barrier must be true or false (got "
                             f"{column.iat[row]!r})")
    return text.isin(["true", "1"]).to_numpy()


def _task_times(table: pd.DataFrame, tasks: np.ndarray, source: str) -> tuple[np.ndarray, np.ndarray]:
    out, offsets, total = [], [], 0
    for row, (cell, k) in enumerate(zip(table["task_times"].tolist(), tasks, strict=True)):
        if cell is None or (isinstance(cell, float) and math.isnan(cell)) or not str(cell).strip():
            raise ParameterError(f"trace {source} row {row + 2}: task_times is empty (give the job's {k} task "
                                 "times separated by ';')")
        text = repr(cell) if isinstance(cell, float) else str(cell)   # (a lone number: pandas read it as one)
        try:
            values = [float(x) for x in text.split(";")]
        except ValueError:
            raise ParameterError(f"trace {source} row {row + 2}: task_times must be numbers separated by ';' "
                                 f"(got {text!r})") from None
        if len(values) != k or not all(math.isfinite(v) and v > 0 for v in values):
            raise ParameterError(f"trace {source} row {row + 2}: task_times must be {k} finite times > 0 (got "
                                 f"{text!r})")
        offsets.append(total)
        out += values
        total += k
    return np.array(out), np.array(offsets, dtype=np.int64)


def trace_from_event_log(path) -> Trace:
    """A Spark event log as a trace: each single-stage job with its successful tasks' measured times."""
    from .eventlog import parse_event_log

    tables = parse_event_log(path)
    jobs, tasks = tables.jobs.sort_values(["submission", "job_id"]), tables.tasks
    ok = tasks[~tasks.failed & ~tasks.killed]
    stages = tasks.groupby("job_id").stage_id.nunique()
    reasons = {"failed in the log": (jobs.result.notna() & (jobs.result != "JobSucceeded")).to_numpy(),
               "more than one stage (not replayed)": (jobs.job_id.map(stages).fillna(0) > 1).to_numpy(),
               "no successful task": ~jobs.job_id.isin(ok.job_id).to_numpy()}
    keep, skipped = _skips(reasons, len(jobs))
    kept = jobs[keep]
    times, offsets, sizes, total = [], [], [], 0
    for jid in kept.job_id:
        t = ok[ok.job_id == jid]
        last = t[t.stage_attempt == t.stage_attempt.max()].sort_values("partition")
        x = (last.finish - last.launch).to_numpy()
        times.append(np.maximum(x, 1e-9))
        offsets.append(total)
        sizes.append(len(x))
        total += len(x)
    t0 = float(kept.submission.min()) if len(kept) else 0.0
    table = pd.DataFrame({"job_id": kept.job_id.to_numpy(), "submit": kept.submission.to_numpy() - t0,
                          "tasks": np.array(sizes, dtype=np.int64), "runtime": np.nan,
                          "barrier": kept.barrier.to_numpy(), "estimate": np.nan})
    if table.empty:
        raise ParameterError(f"trace {str(path)!r}: no job of the event log can be replayed ({skipped})")
    servers, note = _event_log_slots(tables.app)
    return Trace(table, str(path), "spark-event-log", servers, task_times=np.concatenate(times),
                 task_offsets=np.array(offsets, dtype=np.int64), skipped=skipped,
                 notes=["task times: launch to finish of each successful task (Spark's per-task costs included)",
                        "submit times relative to the first job's submission", note])


def _event_log_slots(app: dict) -> tuple[int | None, str]:
    """The task slots the log records (the executors' cores over spark.task.cpus), and a note saying so; None
    when executors were removed during the run or none is recorded (then --servers must be given)."""
    cores = app.get("executor_cores") or {}
    try:
        cpus = int(app.get("task_cpus", 1))
    except (TypeError, ValueError):
        cpus = 0
    if not cores or app.get("executors_removed") or cpus < 1:
        why = ("executors were removed during the run" if app.get("executors_removed") else
               "no executor is recorded" if not cores else f"spark.task.cpus is {app.get('task_cpus')!r}")
        return None, f"workers: not taken from the log ({why}); give --servers"
    slots = sum(c // cpus for c in cores.values())
    return slots or None, (f"workers: {slots} task slots from the log ({len(cores)} executors, "
                           f"{sum(cores.values())} cores, spark.task.cpus = {cpus})")


#: the environment variable naming the folder of the real workload logs (make sets it from its TRACES variable)
TRACES_ENV = "BARRIER_QUEUES_TRACES"


def trace_folder(folder=None) -> Path:
    """The folder of the workload logs: ``folder`` if given, else the ``BARRIER_QUEUES_TRACES`` setting (make
    exports it); the logs are public data a user downloads from the Parallel Workloads Archive."""
    import os

    chosen = folder if folder is not None else os.environ.get(TRACES_ENV)
    if not chosen:
        raise ParameterError(f"the workload logs' folder must be given (a path, or the {TRACES_ENV} setting: "
                             "make sets it from its TRACES variable)")
    path = Path(chosen)
    if not path.is_dir():
        raise ParameterError(f"the workload logs' folder {str(path)!r} does not exist: download the logs from the "
                             "Parallel Workloads Archive (the manual's section Real workloads) or point TRACES at them")
    return path


def locate_trace(path) -> tuple[Path, str | None]:
    """Where the log ``path`` is: the path itself when it exists; a bare file name that does not exist here is
    looked up in the logs' folder (the ``BARRIER_QUEUES_TRACES`` setting), with a notice saying so, so that
    ``replay KTH-SP2.swf.gz`` runs from any folder once the setting names the logs' folder."""
    import os

    p = Path(path)
    if p.exists() or len(p.parts) != 1:
        return p, None
    folder = os.environ.get(TRACES_ENV)
    if not folder:
        raise ParameterError(f"trace {str(p)!r} does not exist here, and a bare log name is looked up in the "
                             f"{TRACES_ENV} folder, which is not set (export {TRACES_ENV}=/path/to/logs, or give "
                             "the log's path)")
    found = Path(folder) / p
    if not found.exists():
        raise ParameterError(f"trace {str(p)!r} does not exist here nor in the {TRACES_ENV} folder {folder!r}")
    return found, f"{str(p)!r} read from the {TRACES_ENV} folder: {str(found)!r}"


#: a job's times must survive the addition to its submit time: (submit + t) - submit equal to t within this
#: relative error for every job's shortest time (at submit 1e300 a runtime of 7 vanished without a word)
TIME_PRECISION = 1e-6


def _check_precision(trace: Trace) -> Trace:
    """Refuse a trace whose times are lost in floating point beside its submit times (one line naming the row's
    job)."""
    jobs = trace.jobs
    if not len(jobs):
        return trace
    submit = jobs.submit.to_numpy(dtype=float)
    if trace.rigid:
        short = jobs.runtime.to_numpy(dtype=float)
    else:
        short = np.minimum.reduceat(trace.task_times, trace.task_offsets) if trace.task_times.size else submit * 0
    with np.errstate(all="ignore"):
        kept = (submit + short) - submit
        bad = ~np.isfinite(submit + short) | (np.abs(kept - short) > TIME_PRECISION * short)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ParameterError(f"trace {trace.source!r}: job {jobs.job_id.iat[i]} (submit {submit[i]:.6g}, time "
                             f"{short[i]:.6g}): its times are lost in floating point beside its submit time; shift "
                             "the submit times to start near 0")
    return trace


def read_trace(path, width: str = "requested", servers: int | None = None) -> Trace:
    """Read an SWF log, a CSV trace or a Spark event log, recognised by content; times lost in floating point
    beside their submit times are refused (:data:`TIME_PRECISION`)."""
    trace = _read_trace(path, width, servers)
    if not len(trace.jobs):
        skipped = ", ".join(f"{n:,} {reason}" for reason, n in trace.skipped.items()) or "none"
        raise ParameterError(f"trace {str(path)!r} has no job that can be replayed (skipped: {skipped})")
    return _check_precision(trace)


def _read_trace(path, width: str, servers: int | None) -> Trace:
    p = Path(path)
    if p.is_dir():
        return trace_from_event_log(p)
    head = _open_bytes(p, "trace")[:4096].decode("utf-8", errors="replace").lstrip("\ufeff")
    first = next((line.strip() for line in head.splitlines() if line.strip()), "")
    if first.startswith("{"):
        return trace_from_event_log(p)
    if first.startswith(";") or (first and all(_is_float(x) for x in first.split())):
        return read_swf(p, width, servers)
    if first.replace(" ", "").split(",") == PHILLY_COLUMNS:
        return read_philly(p)
    if "submit" in first and "," in first:
        return read_trace_csv(p)
    try:
        return trace_from_event_log(p)          # a compressed event log (zstd, lz4, snappy)
    except Exception:                             # noqa: BLE001 - any failure: the format was not recognised
        raise ParameterError(f"trace {str(p)!r} is not an SWF log, a CSV trace with a submit column or a Spark "
                             "event log") from None


__all__ = ["PHILLY_COLUMNS", "TRACES_ENV", "WIDTHS", "Trace", "locate_trace", "read_philly", "read_swf", "read_trace",
           "read_trace_csv", "trace_folder", "trace_from_event_log", "window"]
