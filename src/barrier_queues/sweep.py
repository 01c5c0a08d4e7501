"""Sweeps over grids of systems, on this machine or on an existing Spark cluster.

:func:`sweep` simulates every point of a grid (the product of lists of
:class:`~barrier_queues.BarrierSystem` options, plus ``utilization`` as an
alternative to ``arrival_rate``) and returns one table row per point with its
parameters and the keys of ``simulate --json`` (means, interval ends,
quantiles, ``stable``).

* **Same numbers everywhere, keyed by the point.** A point draws its random
  streams from ``SeedSequence(seed, spawn_key=key)``, where the key is a hash
  of the point's parameters (:func:`point_key`: options at their default
  value left out, 16 and 16.0 alike), not of its place in the grid. So the
  local process pool and Spark give bit-identical tables whatever the
  partitioning and the order points finish in, and adding values to a grid,
  reordering it or adding an option at its default value keeps every
  existing point's numbers bit for bit; the table holds no timings.
* **Resumable and growable.** With an output folder, each finished point is
  written at once to ``points/<key>.json`` (atomically) and the folder's
  ``manifest.json`` fixes the run sizes, seed and library version (the
  grid is the latest one run); rerunning into the same folder, with the same
  grid or a larger one (in any order: the table follows the order asked
  for, the point files are untouched), computes only the points not yet there
  (a grid that leaves out a point of the folder is refused: its table would
  lose that row), so an
  interrupted sweep loses at most the points in flight. A different seed,
  jobs, warm-up or library version is refused. ``results.partial.csv`` (or
  ``.parquet``) is refreshed as points finish; ``results.csv`` is written
  only when every point is in (and the partial table removed).
* **More replications simulate only the new ones.** Each point also keeps
  its replications' statistics (``points/<key>.npz``: sums, histograms,
  per-class and failure counts, and replication 0's block means for the
  drift test; no pickle). A rerun with more replications continues the
  point's streams and simulates only the replications beyond those stored
  (:func:`grow_replications`); the new ones drop the warm-up the first run
  chose over its own replications, the rule of the rounds of a run to a
  precision (:mod:`barrier_queues.precision`). A grown point therefore
  depends only on the first run's replications and the total (2 -> 3 -> 5
  equals 2 -> 5, bit for bit, on every backend), and its ``warmup_rule``
  says which replications kept the first run's warm-up; it is not the
  fresh sweep of that many replications, whose warm-up is chosen over all
  of them (run that into a new folder). Fewer replications, down to the
  first run's, are read from the store; fewer still are a fresh point (the
  store is kept for a later, larger run).
* **Backends.** ``"local"``: a fork-based process pool (progress bar on a
  terminal). ``"spark"``: the points become Spark tasks (``local[N]``,
  ``local-cluster[...]`` or ``spark://``); each Python worker, which Spark
  reuses across tasks, loads the compiled kernels once (an extension module
  built at install time: no compilation at run time); Spark shows its own
  progress. On a real cluster every executor needs this package installed,
  and the output folder should be on a shared file system so that tasks can
  write their points (otherwise the driver writes them when the job ends).

Every kind of point has this one folder format and one point runner: a drawn
system's point (moldable jobs among them: the system's ``moldable`` field,
whose policy options multiply only that policy's points) runs
:func:`run_point`; a trace's point (:func:`trace_sweep`) is a replay, which
is deterministic, so it is written once, with no replications to grow.

The same backend choice (:mod:`barrier_queues.backends`) serves the library's
own sweeps (:func:`~barrier_queues.simulate_many` and everything built on it):
pass ``backend``/``master``, or, where a caller passes neither, set
``SWEEP_BACKEND=spark`` and ``SPARK_MASTER=...`` in the environment (as
``make book-full`` documents); it is read once, at the public function.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import sys
import time
import warnings
from dataclasses import fields, replace
from pathlib import Path

import numpy as np

from . import clocks
from ._validation import ParameterError, check_choice, check_int
from .backends import pool_map, resolve, spark_map
from .outputs import check_folder_path
from .stability import stability_error
from .statistics import load_stats, save_stats
from .system import BarrierSystem

#: the most points one sweep may have
MAX_POINTS = 1_000_000


def _grid_fields() -> tuple[str, ...]:
    """Options a grid may vary: the BarrierSystem fields (generated, not typed again), the pmf of k right
    after k, and ``utilization`` right after ``arrival_rate`` (the order in which grids multiply out)."""
    names = [f.name for f in fields(BarrierSystem)]
    names.remove("tasks_pmf")
    names.insert(names.index("tasks") + 1, "tasks_pmf")
    names.insert(names.index("arrival_rate") + 1, "utilization")
    return tuple(names)


#: options a grid may vary (BarrierSystem fields, plus utilization)
FIELDS = _grid_fields()


# --------------------------------------------------------------------------------------------------
# grids

def grid_from_options(options: dict) -> list[dict]:
    """The product of option lists (scalars count as one value), in a fixed order: one dict per point.

    Options vary fastest from the last named in :data:`FIELDS`. ``aging_after`` goes to the ``aging`` points
    alone (:func:`_own_options`).
    """
    unknown = sorted(set(options) - set(FIELDS))
    if unknown:
        raise ParameterError(f"grid options must be among {', '.join(FIELDS)} (got unknown {', '.join(unknown)})")
    names = [f for f in FIELDS if f in options and options[f] is not None]
    values = []
    for name in names:
        v = options[name]
        v = list(v) if isinstance(v, list | tuple) and name != "tasks_pmf" else [v]
        if not v:
            raise ParameterError(f"grid option {name} must have at least one value (got an empty list)")
        seen = []
        for x in v:
            key = json.dumps(_canonical(x), sort_keys=True, default=str)
            if key in seen:
                raise ParameterError(f"grid option {name} lists {x!r} twice (got {v}): the same points would run "
                                     "twice")
            seen.append(key)
        values.append(v)
    size = math.prod(len(v) for v in values)
    if size > MAX_POINTS:
        raise ParameterError(f"a grid must have at most {MAX_POINTS:,} points (got {size:,})")
    points = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values)]
    return _own_options(points)


def _foreign_options(point: dict) -> set:
    """The options of ``point`` that belong to a discipline or a moldable policy it does not have:
    ``aging_after`` away from ``aging``, a moldable policy's option (:data:`barrier_queues.moldable_policies.
    OPTIONS`) away from that policy's points."""
    from .moldable_policies import OPTIONS, owner

    foreign = {"aging_after"} if point.get("scheduling", "fcfs") != "aging" else set()
    if point.get("moldable") is not None:
        foreign |= {name for name in OPTIONS if owner(name) != point["moldable"]}
    return foreign & set(point)


def _own_options(points: list[dict]) -> list[dict]:
    """A discipline's or a moldable policy's own option goes to its points alone: ``aging_after`` to the
    ``aging`` points of a grid that lists other disciplines too, ``take_fraction`` to the take-fraction points
    of a grid that lists other policies (their points once each, not once per value)."""
    if not any(_foreign_options(p) for p in points):
        return points
    out, seen = [], set()
    for p in points:
        foreign = _foreign_options(p)
        p = {k: v for k, v in p.items() if k not in foreign}
        key = json.dumps(_canonical(p), sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            out.append(p)
    kept = {k for p in out for k in p}
    for name in sorted({k for p in points for k in p} - kept):         # given, but no point reads it
        from .moldable_policies import owner

        reader = "scheduling 'aging'" if name == "aging_after" else f"moldable {owner(name)!r}"
        raise ParameterError(f"{name} must be given only with {reader} (got no such point in the grid): no point "
                             "of this grid would read it")
    return out


def point_system(point: dict) -> BarrierSystem:
    """The validated system of one grid point (``utilization`` sets the arrival rate)."""
    kw = {k: v for k, v in point.items() if k != "utilization"}
    if "servers" not in kw:
        raise ParameterError("servers must be given for every grid point (an integer >= 1)")
    if "utilization" in point:
        from .load import system_at_utilization

        return system_at_utilization(kw, point["utilization"])
    return BarrierSystem(**kw)


def _describe(point: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.items())


def check_grid(grid: list[dict], allow_unstable: bool = False) -> list[BarrierSystem]:
    """Validate every point before anything runs; the error names the first bad point."""
    if not isinstance(grid, list) or not grid:
        raise ParameterError("grid must be a non-empty list of points (got an empty grid)")
    systems = []
    for i, point in enumerate(grid):
        if not isinstance(point, dict):
            raise ParameterError(f"grid point {i} must be a dict of options (got {type(point).__name__})")
        unknown = sorted(set(point) - set(FIELDS))
        try:
            if unknown:
                raise ParameterError(f"options must be among {', '.join(FIELDS)} (got unknown {', '.join(unknown)})")
            system = point_system(point)
            if system.arrival_rate is None:
                raise ParameterError("arrival_rate or utilization must be given")
            if not allow_unstable and (message := stability_error(system)):
                raise ParameterError(message)
        except ParameterError as exc:
            raise ParameterError(f"grid point {i} ({_describe(point)}): {exc}") from None
        systems.append(system)
    return systems


# --------------------------------------------------------------------------------------------------
# one point

def _plain(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, np.generic):
        return _plain(value.item())
    return value


def point_row(index: int, point: dict, system: BarrierSystem, summary: dict) -> dict:
    """One table row: the point's parameters and the summary's numbers (no timings)."""
    row = {"point": index}
    for k, v in point.items():
        row[k] = v if isinstance(v, int | float | str | bool) or v is None else json.dumps(v)
    row["arrival_rate"] = system.arrival_rate
    for key in ("jobs", "replications", "utilization", "offered_utilization", "useful_utilization",
                "mean_completed_tasks", "held_share", "mean_waiting", "mean_sojourn", "mean_execution", "stable"):
        if key in summary:
            row["measured_utilization" if key == "utilization" else key] = _plain(summary[key])
    if "mean_workers" in summary:                      # moldable jobs: the workers a job took
        row["mean_workers"] = _plain(summary["mean_workers"])
        lo, hi = summary["ci"]["workers"] or (None, None)
        row["mean_workers_ci_low"], row["mean_workers_ci_high"] = _plain(lo), _plain(hi)
    for m in ("waiting", "sojourn", "execution"):
        lo, hi = summary["ci"][m] or (None, None)        # None: unstable, no steady-state mean
        row[f"mean_{m}_ci_low"], row[f"mean_{m}_ci_high"] = _plain(lo), _plain(hi)
        for q, v in summary["quantiles"][m].items():
            row[f"{m}_q{q}"] = _plain(v)
            qlo, qhi = summary["quantile_ci"][m][q]
            row[f"{m}_q{q}_ci_low"], row[f"{m}_q{q}_ci_high"] = _plain(qlo), _plain(qhi)
    row["lambda_max"] = _plain(summary["stability"]["lambda_max"])
    if "aborted_share" in summary:                      # failures: aborts, attempts and goodput with intervals
        for key in ("aborted_share", "mean_attempts", "goodput", "work_per_job", "work_per_completed"):
            row[key] = _plain(summary[key])
            lo, hi = summary["failure_ci"][key] or (None, None)
            row[f"{key}_ci_low"], row[f"{key}_ci_high"] = _plain(lo), _plain(hi)
        row["aborted_jobs"] = summary["aborted_jobs"]
        row["mean_sojourn_submitted"] = _plain(summary["mean_sojourn_submitted"])     # aborted jobs until abort
        lo, hi = summary["failure_ci"]["sojourn_submitted"] or (None, None)
        row["mean_sojourn_submitted_ci_low"], row["mean_sojourn_submitted_ci_high"] = _plain(lo), _plain(hi)
        row["mean_abort_sojourn"] = _plain(summary["mean_abort_sojourn"])
    if "clocks" in summary:                             # gang clocks: what they turned away, with intervals
        c = summary["clocks"]
        row["lost_jobs"] = c["lost_jobs"]
        for key in ("lost_share", "lost_work_share", "requeues_per_job", "backoff_per_job"):
            row[key] = _plain(c[key])
            lo, hi = c["ci"][key] or (None, None)
            row[f"{key}_ci_low"], row[f"{key}_ci_high"] = _plain(lo), _plain(hi)
        for cls in c.get("classes", []):                 # per class: the share lost
            row[f"lost_share_k{cls['tasks']}{'' if cls['barrier'] else '_plain'}"] = _plain(cls["lost_share"])
    if "precision" in summary:                          # a run to a precision: met, the worst mean's, jobs used
        pr = summary["precision"]
        row["precision_met"] = pr["met"]
        row["precision_reached"] = _plain(max(pr["reached"].values()))
        row["jobs_used"] = pr["jobs_used"]
    row["warmup_rule"] = summary["warmup"]["rule"]
    return row


def run_point(args) -> tuple[dict, list | None]:
    """Simulate one point (in whichever process runs it): its row, written to the folder if one is given, and
    its replications' statistics when they are to be stored but could not be written here (else None).

    ``stored``: the statistics of replications an earlier run of the sweep kept (their file, or the loaded
    ``(stats, meta)`` for Spark executors that may not share the folder); only the replications beyond them
    are simulated (:func:`grow_replications`)."""
    from .simulate import simulate

    index, point, jobs, replications, seed, warmup, allow_unstable, folder, target, stored = args
    system = point_system(point)
    first = replications
    if stored is not None:
        stats, meta = load_stats(stored) if isinstance(stored, str) else stored
        first = meta["first_round"]
        result = grow_replications(system, jobs, replications, seed, stats)
    else:
        result = simulate(system, jobs=jobs, replications=replications, seed=seed, warmup=warmup, workers=1,
                          progress=False, allow_unstable=allow_unstable, backend="local", **(target or {}))
    row = point_row(index, point, system, result.summary())
    if first < replications:
        added = f"replication {replications}" if replications == first + 1 else \
            f"replications {first + 1}-{replications}"
        row["warmup_rule"] += f"; kept for {added}, added by a later run of the sweep"
    keep = None if target or (stored is not None and len(stats) >= replications) else _compact(result.stats)
    if folder is not None:
        try:
            _write_point(Path(folder), index, point, row, first, keep)
            keep = None
        except OSError:
            pass                             # an executor without the driver's file system: the driver writes it
    return row, keep


def grow_replications(system: BarrierSystem, jobs: int, replications: int, seed, stats: list):
    """A point's result with ``replications`` replications, from the statistics of its first ones (an
    earlier run's) and new replications continuing its streams (``seed.spawn``'s numbering).

    The rule of the rounds of a run to a precision (:mod:`barrier_queues.precision`): the first run's
    replications had their warm-up chosen together (MSER-5 on their averaged waiting times); the new ones
    drop the same number of jobs. So the result depends only on how many replications the first run had and
    how many there are now, not on how many runs added them; it differs from a fresh run of
    ``replications`` (whose warm-up is chosen over all of them). Stored replications beyond
    ``replications`` are left out."""
    from .precision import replication_streams
    from .runs import Replication, Task, run_replications
    from .simulate import SimulationResult

    have = min(len(stats), replications)
    tasks = [Task(system, jobs, s, False, stats[0].warmup, False, None, have + i)
             for i, s in enumerate(replication_streams(seed, have, replications))]
    new = run_replications(tasks, resolve("local"), 1, False, "", group=len(tasks)) if tasks else []
    for r in new:
        r.stats.block_means = {}                 # the drift test uses replication 0's, as in a precision run
    reps = [Replication(_stats=s) for s in stats[:have]] + new
    return SimulationResult(system, reps, sum(r.stats.seconds for r in new), seed, None)


def _compact(stats: list) -> list:
    """What a later run needs of a point's replications to add more: everything but the block means (of which
    it needs replication 0's waiting times, for the drift test) and the timings."""
    return [replace(s, block_means={"waiting": s.block_means["waiting"]} if i == 0 else {}, seconds=0.0,
                    kernel_seconds=0.0) for i, s in enumerate(stats)]


def _canonical(value):
    """A point's value as its key sees it: integral floats as integers, tuples as lists, numpy as Python."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def point_key(point: dict) -> str:
    """A point's identity: 16 hex digits of the SHA-256 of its parameters as canonical JSON, options at the
    :class:`BarrierSystem` default left out (``barriers=1`` and no ``barriers`` are one point)."""
    import hashlib

    defaults = {f.name: f.default for f in fields(BarrierSystem)}
    kept = {k: _canonical(v) for k, v in point.items() if not (k in defaults and _canonical(v) == defaults[k])}
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def point_seed(entropy: int, point: dict) -> np.random.SeedSequence:
    """The point's random streams: ``SeedSequence(entropy, spawn_key=...)`` with the key's 64 bits as two words,
    independent of where the point sits in its grid."""
    key = int(point_key(point), 16)
    return np.random.SeedSequence(entropy, spawn_key=(key >> 32, key & 0xFFFFFFFF))


_EMPIRICAL_FILE = re.compile(r"empirical:(?:[^,\"']*,)*file=([^,\"']+)")


def input_digests(point: dict) -> dict:
    """The files a point reads, each with the SHA-256 of its content: its workload file (a path given as
    ``workload``) and every empirical task-law file (``empirical:file=PATH``) named in the point or in that
    workload file. A point's key holds the files' *names*; a resumed sweep compares these digests so that a
    file edited since is never served from the cache (:func:`_finished` refuses the rerun, naming the file)."""
    import hashlib

    names: list[str] = []

    def visit(value, key=None):
        if isinstance(value, dict):
            for k, v in value.items():
                visit(v, k)
        elif isinstance(value, list | tuple):
            for v in value:
                visit(v)
        elif isinstance(value, str):
            if key == "workload":
                names.append(value)
                try:
                    names.extend(_EMPIRICAL_FILE.findall(Path(value).read_text(errors="replace")))
                except OSError:
                    pass                                   # a missing file is refused when the point is built
            names.extend(_EMPIRICAL_FILE.findall(value))

    visit(point)
    out = {}
    for name in dict.fromkeys(n.strip() for n in names):
        try:
            out[name] = hashlib.sha256(Path(name).read_bytes()).hexdigest()
        except OSError:
            continue
    return out


def _point_path(folder: Path, key: str, suffix: str = ".json") -> Path:
    return folder / "points" / f"{key}{suffix}"


def _write_point(folder: Path, index: int, point: dict, row: dict, first_round: int | None = None,
                 stats: list | None = None) -> None:
    """The point's row (``points/<key>.json``) and, when given, its replications' statistics
    (``points/<key>.npz``; an existing file is replaced only by more replications of the same first run),
    each written atomically."""
    key = point_key(point)
    if stats is not None:
        path = _point_path(folder, key, ".npz")
        old = _stored_meta(path)
        if old is None or (old["first_round"] == first_round and old["replications"] < len(stats)):
            save_stats(path, stats, {"key": key, "first_round": first_round, "replications": len(stats)})
    path = _point_path(folder, key)
    stored = {k: v for k, v in row.items() if k != "point"}          # its place in a grid is not the point's
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    doc = {"key": key, "params": point, "row": stored, "first_round": first_round, "inputs": input_digests(point)}
    tmp.write_text(json.dumps({**doc, "digest": _row_digest(doc)}, allow_nan=False) + "\n")
    os.replace(tmp, path)


def _stored_meta(path: Path) -> dict | None:
    """The meta of a point's stored replications; None when there is no readable file (a torn one is removed:
    its replications are computed again)."""
    import zipfile

    try:
        with np.load(path, allow_pickle=False) as data:
            return json.loads(str(data["meta"]))["meta"]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, zipfile.BadZipFile):
        path.unlink(missing_ok=True)
        return None


# --------------------------------------------------------------------------------------------------
# the sweep

def _manifest(grid, jobs, replications, entropy, warmup, allow_unstable, fmt, target=None) -> dict:
    from ._version import __version__

    manifest = {"grid": grid, "jobs": jobs, "replications": replications, "seed": entropy, "warmup": warmup,
                "allow_unstable": allow_unstable, "format": fmt, "library": __version__, "precision": target}
    return json.loads(json.dumps(manifest, default=str, sort_keys=True))   # as it reads back from the file


LOCK = ".lock"
#: sweep folders this process created (a refused sweep removes its folder if it is still empty)
_CREATED: set = set()
#: manifest entries a rerun into the same folder may change: the grid (points are found by their keys), the
#: replications (stored replications are kept, see the module docstring) and the table's format
GROWABLE = frozenset({"grid", "replications", "format"})


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:                       # alive, another user's
        return True
    return True


def _take_lock(folder: Path) -> Path:
    """An exclusive lock on a sweep folder: ``.lock`` created atomically (O_EXCL) with this process's id; a lock
    left by a process that no longer runs is taken over. Two sweeps never write into one folder at once."""
    try:
        if not folder.exists():
            _CREATED.add(folder.resolve())
        folder.mkdir(parents=True, exist_ok=True)
    except PermissionError:
        raise ParameterError(f"out must be in a writable place (cannot create {str(folder)!r})") from None
    lock = folder / LOCK
    for _ in range(3):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except PermissionError:
            raise ParameterError(f"out must be a writable folder ({str(folder)!r} is not writable)") from None
        except FileExistsError:
            try:
                pid = int(lock.read_text().strip() or "0")
            except (OSError, ValueError):
                pid = 0
            if pid and pid != os.getpid() and _pid_alive(pid):
                raise ParameterError(f"out folder {str(folder)!r} is in use by another sweep (process {pid}); wait "
                                     "for it to finish or choose another folder") from None
            lock.unlink(missing_ok=True)          # stale: its process is gone
            continue
        with os.fdopen(fd, "w") as f:
            f.write(f"{os.getpid()}\n")
        return lock
    raise ParameterError(f"out folder {str(folder)!r}: could not take its lock; choose another folder")


def _release_lock(lock: Path | None) -> None:
    """Release the folder's lock; a folder this process created and left empty (a sweep refused before its
    first point) is removed with it, so a refusal leaves nothing behind."""
    if lock is None:
        return
    try:
        if int(lock.read_text().strip() or "0") == os.getpid():
            lock.unlink()
    except (OSError, ValueError):
        pass
    folder = lock.parent.resolve()
    if folder in _CREATED:
        _CREATED.discard(folder)
        try:
            folder.rmdir()                      # only when empty
        except OSError:
            pass


def _open_folder(out, manifest: dict) -> tuple[Path, int]:
    """Create the sweep's folder, or reopen one of its earlier runs; returns (folder, seed entropy).

    ``manifest["seed"]`` None means "the folder's seed, or fresh entropy".
    """
    folder = check_folder_path("out", out)
    old = _read_manifest(folder)
    if old is not None and old.get("kind") != manifest.get("kind"):
        raise ParameterError(f"out folder {str(folder)!r} holds a sweep of {_KINDS.get(old.get('kind'), '?')}, not "
                             f"of {_KINDS[manifest.get('kind')]}; choose another folder")
    if old is not None:
        mine = {**manifest, "seed": old.get("seed") if manifest["seed"] is None else manifest["seed"]}
        # the grid may grow or change and the replications too: points are found by their keys
        diff = sorted(k for k in set(mine) | set(old) if k not in GROWABLE and old.get(k) != mine.get(k))
        if diff:
            raise ParameterError(f"out folder {str(folder)!r} holds a different sweep (its {', '.join(diff)} "
                                 "differ); rerun it with the same seed, jobs, warm-up, precision target and library "
                                 "version to resume or extend it, or choose another folder")
        if isinstance(old.get("grid"), list) and isinstance(manifest.get("grid"), list):
            kept = {point_key(p) for p in manifest["grid"] if isinstance(p, dict)}
            dropped = [p for p in old["grid"] if isinstance(p, dict) and point_key(p) not in kept]
            if dropped:
                raise ParameterError(f"out folder {str(folder)!r} holds a sweep of {len(old['grid'])} points, "
                                     f"{len(dropped)} of them not in this grid (for example {_describe(dropped[0])}):"
                                     " a folder's grid may grow or be reordered, never lose points (its table would "
                                     "lose their rows); give those values again, or choose another folder")
        entropy = _stored_seed(folder, old)
        _write_manifest(folder, {**mine, "seed": old["seed"]})
        return folder, entropy
    if folder.exists() and (not folder.is_dir() or any(p.name != LOCK for p in folder.iterdir())):
        raise ParameterError(f"out must be a new or empty folder, or one of this sweep's earlier runs "
                             f"({str(folder)!r} holds other files); choose another folder")
    entropy = int(manifest["seed"]) if manifest["seed"] is not None else np.random.SeedSequence().entropy
    (folder / "points").mkdir(parents=True, exist_ok=True)
    _write_manifest(folder, {**manifest, "seed": str(entropy)})
    return folder, entropy


def _read_manifest(folder: Path) -> dict | None:
    """A sweep folder's ``manifest.json`` (None when there is none); refused when it cannot be read."""
    path = folder / "manifest.json"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        raise ParameterError(f"out folder {str(folder)!r} has an unreadable manifest.json; choose another "
                             "folder") from None


def _stored_seed(folder: Path, manifest: dict) -> int:
    """The seed a sweep folder's manifest records (a decimal string of at most 128 bits); refused otherwise."""
    text = manifest.get("seed")
    if not (isinstance(text, str) and text.isdecimal() and int(text) < 2**128):
        raise ParameterError(f"out folder {str(folder)!r} has a manifest.json whose seed is not a number "
                             f"(got {text!r}); give --seed, or choose another folder")
    return int(text)


def _write_manifest(folder: Path, manifest: dict) -> None:
    tmp = folder / ".manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, folder / "manifest.json")


def _check_inputs(folder: Path, point: dict, stored: dict | None) -> None:
    """Refuse to resume a point whose input files changed since it was computed (its cached row and
    replications describe the old content)."""
    now = input_digests(point)
    if stored is None:
        stored = {}
    for name in sorted(set(now) | set(stored)):
        if stored.get(name) != now.get(name):
            raise ParameterError(f"--out {str(folder)!r}: its points were computed from {name!r}, whose content "
                                 "has changed since (or was not recorded); sweep into a new folder, or remove "
                                 "this one to compute it again")


def _finished(folder: Path | None, grid: list[dict], replications: int | None) -> tuple[dict, dict]:
    """The grid's points already in the folder (by key), as rows numbered by their place in this grid, and the
    points to grow, by place: their stored replications' file, when the first run of those had at most
    ``replications``. Any other point run with other replications is computed again and its row replaced; so
    is a point whose row file is torn or missing (its stored replications keep only what growing needs)."""
    if folder is None:
        return {}, {}
    for path in (folder / "points").glob(".*.tmp*"):
        path.unlink(missing_ok=True)               # a write cut by kill or Ctrl-C (we hold the folder's lock)
    rows, grow, damaged = {}, {}, 0
    for i, point in enumerate(grid):
        key = point_key(point)
        path = _point_path(folder, key)
        try:
            stored = json.loads(path.read_text())
            row = stored["row"]
            if stored.pop("digest") != _row_digest(stored) or not isinstance(row, dict):
                raise ValueError("edited or damaged")
        except FileNotFoundError:
            row = None
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            path.unlink(missing_ok=True)           # damaged since written (writes are atomic): computed again
            row, damaged = None, damaged + 1
        if row is not None:
            _check_inputs(folder, point, stored.get("inputs"))
        if row is not None and (replications is None or row.get("replications") == replications):
            rows[i] = {"point": i, **row}          # None: run to a precision
        elif row is not None and replications is not None:   # (a torn or missing row: the point afresh)
            meta = _stored_meta(_point_path(folder, key, ".npz"))
            if meta is not None and meta["first_round"] <= replications:
                grow[i] = str(_point_path(folder, key, ".npz"))
    if damaged:
        warnings.warn(f"out folder {str(folder)!r}: {damaged} point file(s) differ from what this sweep wrote "
                      "there (edited or damaged); those points are computed again", UserWarning, stacklevel=4)
    return rows, grow


def _check_format(fmt: str) -> str:
    """The table format, refused before any work when it cannot be written (parquet needs pyarrow)."""
    fmt = check_choice("format", fmt, ("csv", "parquet"))
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ParameterError("format 'parquet' needs pyarrow (pip install pyarrow); or use csv") from None
    return fmt


def _write_table(table, folder: Path, fmt: str, final: bool = True) -> None:
    """The sweep's table: ``results.<fmt>`` once every point is in, ``results.partial.<fmt>`` while points are
    missing (its name says so; it is removed when the full table is written). A full table also removes the
    other format's table of an earlier run of the same sweep (derived from the same points, it would be stale)."""
    target = folder / (f"results.{fmt}" if final else f"results.partial.{fmt}")
    tmp = folder / f".{target.name}.tmp"
    if fmt == "csv":
        table.to_csv(tmp, index=False, float_format="%.17g", lineterminator="\n")
    else:
        table.to_parquet(tmp, index=False)
    os.replace(tmp, target)
    if final:
        for other in ("csv", "parquet"):
            (folder / f"results.partial.{other}").unlink(missing_ok=True)
            if other != fmt:
                (folder / f"results.{other}").unlink(missing_ok=True)


def sweep(grid, out=None, jobs: int = 100_000, replications: int = 1, seed=None, warmup: int | None = None,
          backend: str | None = None, master: str | None = None, workers: int | None = None, fmt: str = "csv",
          allow_unstable: bool = False, progress: bool | None = None, precision: float | None = None,
          absolute_precision: float | None = None, budget: int | None = None):
    """Simulate every point of ``grid`` and return the table (see the module docstring).

    Parameters
    ----------
    grid : list of dict, or dict of option lists
        Points (dicts of :class:`BarrierSystem` options plus ``utilization``),
        or options whose list values are multiplied out (:func:`grid_from_options`).
    out : path, optional
        Folder for the manifest, per-point files and the table (resumable).
    jobs, replications, warmup : as for :func:`~barrier_queues.simulate`.
    seed : int >= 0, optional
        The sweep seed (default: fresh entropy, recorded in the manifest).
    backend : {"local", "spark"}, optional
        Default from ``SWEEP_BACKEND`` (else local); ``master`` from
        ``SPARK_MASTER`` (else ``local[*]``).
    precision, absolute_precision, budget : optional
        Every point run to this precision (:mod:`barrier_queues.precision`;
        ``replications`` is then the first round, default 10; ``budget`` jobs
        per point); the rows add ``precision_met``, ``precision_reached``
        (the worst mean's relative half-width) and ``jobs_used``.
    """

    from .simulate import check_run

    if isinstance(grid, dict):
        grid = grid_from_options(grid)
    jobs, replications, warmup = check_run(jobs, replications, warmup)
    target = None
    if precision is not None or absolute_precision is not None or budget is not None:
        from .precision import MIN_FIRST_ROUND, check_precision

        replications = MIN_FIRST_ROUND if replications == 1 else replications
        precision, absolute_precision, budget = check_precision(precision, absolute_precision, budget, jobs,
                                                                replications)
        target = {"precision": precision, "absolute_precision": absolute_precision, "budget": budget}
    where = resolve(backend, master)
    fmt = _check_format(fmt)
    check_grid(grid, allow_unstable)
    if seed is not None:
        seed = check_int("seed", seed, low=0, high=2**128 - 1, high_name="2**128 - 1")
    folder = lock = None
    if out is not None:
        manifest = _manifest(grid, jobs, replications, None if seed is None else str(seed), warmup, allow_unstable,
                             fmt, target)
        _open_folder_check(out)
        lock = _take_lock(check_folder_path("out", out))
        try:
            folder, entropy = _open_folder(out, manifest)
        except BaseException:
            _release_lock(lock)
            raise
    else:
        entropy = seed if seed is not None else np.random.SeedSequence().entropy
    try:
        return _sweep_points(grid, folder, entropy, jobs, replications, warmup, allow_unstable, fmt, workers,
                             progress, where, target)
    finally:
        _release_lock(lock)


def _open_folder_check(out) -> None:
    """Before the lock: a folder that is neither new, empty nor a sweep is refused without writing into it."""
    folder = check_folder_path("out", out)
    if (folder.exists() and not (folder / "manifest.json").exists()
            and (not folder.is_dir() or any(p.name != LOCK for p in folder.iterdir()))):
        raise ParameterError(f"out must be a new or empty folder, or one of this sweep's earlier runs "
                             f"({str(folder)!r} holds other files); choose another folder")


def _sweep_points(grid, folder, entropy, jobs, replications, warmup, allow_unstable, fmt, workers, progress,
                  where, target=None):
    done, grow = _finished(folder, grid, None if target else replications)
    if where.name == "spark":                      # executors may not share the folder: send the statistics
        grow = {i: load_stats(path) for i, path in grow.items()}
    todo = [(i, grid[i], jobs, replications, point_seed(entropy, grid[i]), warmup, allow_unstable,
             str(folder) if folder else None, target, grow.get(i)) for i in range(len(grid)) if i not in done]
    rows = dict(done)
    show = sys.stderr.isatty() if progress is None else progress
    last_write = time.monotonic()
    if todo and where.name == "local":
        rows.update(_run_local(todo, workers, show, folder, fmt, rows, last_write))
    elif todo:
        if workers is not None:
            raise ParameterError("workers must not be given with backend 'spark' (got it): Spark's executors run "
                                 "the points")
        for row, stats in spark_map(run_point, todo, where.master):
            i = row["point"]
            rows[i] = row
            if folder is not None:
                first = grow[i][1]["first_round"] if i in grow else replications
                _write_point(folder, i, grid[i], row, first, stats)
    table = _table(rows)
    if folder is not None:
        _write_table(table, folder, fmt)
    return table


def _table(rows: dict):
    """Rows by point index, columns in one order (point, grid fields as in FIELDS, results) whatever
    order the rows arrived or were read back in."""
    import pandas as pd

    table = pd.DataFrame([rows[i] for i in sorted(rows)])
    first = ["point"] + [f for f in FIELDS if f in table.columns]
    return table[first + [c for c in table.columns if c not in first]]


def _run_local(todo, workers, show, folder, fmt, rows, last_write) -> dict:
    from .runs import ensure_compiled

    for placement in {point_system(t[1]).placement for t in todo}:
        ensure_compiled(placement)          # once, before the fork
    new = {}
    for row, _ in pool_map(run_point, todo, workers, show, "sweep points", ordered=False):
        new[row["point"]] = row
        if folder is not None and time.monotonic() - last_write > 5:
            _write_table(_table({**rows, **new}), folder, fmt, final=False)
            last_write = time.monotonic()
    return new



# --------------------------------------------------------------------------------------------------
# a trace as the workload of a sweep

def _content_digest(path: Path) -> str:
    """md5 of a file's bytes, or of a folder's files (names and bytes, in name order: a Spark event log folder)."""
    import hashlib

    h = hashlib.md5()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        if path.is_dir():
            h.update(str(f.relative_to(path)).encode() + b"\0")
        with open(f, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


#: what each kind of sweep folder holds, for the refusal of a folder of another kind
_KINDS = {None: "simulated systems", "trace": "a trace",
          "moldable": "moldable jobs in the former format of their own (moldable jobs are grid points now)"}


def _row_digest(row: dict) -> str:
    """16 hex digits of the SHA-256 of a table row as read back from its file (empty cells as None): the folder's
    manifest keeps one per row written, so that a row edited or damaged since is computed again, not served."""
    import hashlib

    text = json.dumps({str(k): _canonical(v) for k, v in row.items()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _trace_folder(folder: Path, manifest: dict, points: list) -> dict:
    """A trace sweep's folder (the grid's format: ``manifest.json``, one ``points/<key>.json`` per point and
    the table): its stored rows by place in ``points``. Refuses a folder of another kind, or whose manifest
    differs from ``manifest`` in an entry but the trace's path (its content is its identity) and the grid, or
    whose points this grid leaves out, or a folder holding other files."""
    old = _read_manifest(folder)
    if old is None:
        if folder.exists() and any(p.name != LOCK for p in folder.iterdir()):
            raise ParameterError(f"out must be a new or empty folder, or one of this sweep's earlier runs "
                                 f"({str(folder)!r} holds other files); choose another folder")
        return {}
    if old.get("kind") != manifest["kind"]:
        raise ParameterError(f"out folder {str(folder)!r} holds a sweep of {_KINDS.get(old.get('kind'), '?')}, "
                             f"not of {_KINDS[manifest['kind']]}; choose another folder")
    if "rows" in old:                                   # (the keyed table that trace sweeps wrote before)
        raise ParameterError(f"out folder {str(folder)!r} holds a trace sweep in the former format of its own (one "
                             "table, no point files); sweep into a new folder")
    diff = sorted(k for k in (set(manifest) | set(old)) - {"format", "grid", "trace"} if old.get(k) != manifest.get(k))
    if diff:
        raise ParameterError(f"out folder {str(folder)!r} holds a sweep of other settings (differing: "
                             f"{', '.join(diff)}); rerun it with the same settings, or choose another folder")
    keys = {point_key(p) for p in points}
    dropped = [p for p in old.get("grid", []) if not isinstance(p, dict) or point_key(p) not in keys]
    if dropped:
        example = _describe(dropped[0]) if isinstance(dropped[0], dict) else dropped[0]
        raise ParameterError(f"out folder {str(folder)!r} holds {len(old.get('grid', []))} points, {len(dropped)} of "
                             f"them not in this grid (for example {example}): give those values again, or choose "
                             "another folder")
    return _finished(folder, points, None)[0]


def trace_sweep(trace_path, grid: dict, out, fmt: str = "csv", tau: float | None = None, trim: bool = False,
                width: str = "requested", **failures):
    """A trace as the workload of a sweep: one replay per combination of ``grid``'s values (``servers``,
    ``scheduling``, ``estimates``, ``load_scale``; :func:`barrier_queues.replay.replay_grid`'s rows), written to
    the folder ``out`` as ``results.<fmt>`` beside a ``manifest.json`` that names the trace by its content (md5),
    the settings (``tau``, ``trim``, ``width``, ``failures``, the gang clock's fields) and the grid's points.

    A replay is deterministic, so a point is never computed twice: rerun with more values to extend the
    folder (only the new points are replayed). Refused: a folder of another trace content or other settings,
    a grid that leaves out the folder's points, a folder holding other files. Returns the table."""
    import pandas as pd

    from ._version import __version__
    from .replay import BSLD_TAU, GRID_OPTIONS, check_estimates, replay_grid
    from .traces import read_trace

    _check_format(fmt)
    tau = BSLD_TAU if tau is None else tau
    clock_fields = set(clocks.FIELDS)
    clock = {k: v for k, v in failures.items() if v is not None and k in clock_fields}
    if str(clock.get("wait_budget", "")).strip().startswith("exp:"):
        clock["seed"] = failures.get("seed", 0)          # (patience is drawn: its seed is a setting)
    path = Path(trace_path)
    if not path.exists():
        raise ParameterError(f"trace must be an existing file or folder (got {str(trace_path)!r})")
    unknown = sorted(set(grid) - set(GRID_OPTIONS))
    if unknown:
        raise ParameterError(f"grid options must be among {', '.join(GRID_OPTIONS)} (got unknown {unknown})")
    trace = read_trace(path, width=width)
    defaults = {"servers": trace.servers, "scheduling": "fcfs", "estimates": "exact", "load_scale": 1.0}
    values = {}
    for name in GRID_OPTIONS:
        v = grid.get(name)
        v = [defaults[name]] if v is None else list(v) if isinstance(v, list | tuple) else [v]
        v = [defaults[name] if x is None else x for x in v]
        if not v or len(set(map(str, v))) < len(v):
            raise ParameterError(f"grid option {name} must list distinct values (got {v})")
        values[name] = v
    check_estimates(values["scheduling"], values["estimates"])
    points = [dict(zip(GRID_OPTIONS, combo, strict=True)) for combo in itertools.product(*values.values())]
    manifest = {"kind": "trace", "trace": str(path), "trace_md5": _content_digest(path), "bsld_tau": float(tau),
                "trim": bool(trim), "width": width,
                "failures": ({k: v for k, v in failures.items() if v is not None and k not in clock_fields}
                             if failures.get("failure_rate") is not None else {}),   # the seed only with failures
                "clocks": clock,
                "version": __version__}
    manifest = json.loads(json.dumps(manifest, default=str, sort_keys=True))   # as it reads back from the file
    folder = check_folder_path("out", out)
    lock = _take_lock(folder)
    try:
        rows = _trace_folder(folder, manifest, points)
        for i, point in enumerate(points):
            if i not in rows:
                replayed = replay_grid(trace, point, tau=tau, trim=trim, **failures).iloc[0].to_dict()
                row = {k: _plain(v) for k, v in {**replayed, **point}.items() if k != "point"}
                (folder / "points").mkdir(exist_ok=True)
                _write_point(folder, i, point, row)
                rows[i] = {"point": i, **row}
            rows[i] = {**rows[i], **point}             # (the grid's values as given: 1.0, not a stored 1)
        table = pd.DataFrame([{**{k: v for k, v in rows[i].items() if k != "point"}, "point": i}
                              for i in sorted(rows)])                  # (replay's columns, the point last)
        _write_manifest(folder, {**manifest, "format": fmt, "grid": points})
        _write_table(table, folder, _check_format(fmt))
        return table
    finally:
        _release_lock(lock)


__all__ = ["FIELDS", "check_grid", "grid_from_options", "grow_replications", "point_key", "point_row", "point_seed",
           "point_system", "run_point", "sweep", "trace_sweep"]
