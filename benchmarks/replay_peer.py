"""Trace replay against a peer: pyss (the Python Scheduler Simulator of the SC'15 backfilling study), job by job,
and whole-process time side by side.

pyss is not part of this project: give the path of its ``simulation/pyss/src`` folder in a checkout of
jad-darrous/predictsim (``--pyss``) and a Python 2.7 (``--python2``; ``pyenv`` provides one). For each log and
each pair (pyss scheduler, our discipline) the script runs both as whole processes on the same SWF file (pyss's
``run_simulator.py`` writes an SWF of its schedule; ``barrier-queues replay --jobs-out`` writes ours), and
counts the jobs whose start time is the same. Where they differ, it replays the log again with the decision
order pyss uses (one scheduling pass after *each* event, submissions before completions at one instant, ties
in the order the events were made) through the decisions of our plain reference of the scheduler room
(:mod:`barrier_queues.schedulers.waitlist_reference`): a job whose start then equals pyss's is a difference
explained by that order alone.

Prints a markdown table; ``--out FILE`` also writes the record (refused if the file exists, unless ``--force``).

A pyss run stopped at ``--pyss-timeout`` (or an output it wrote, given with ``--pyss-output``) is compared on the
jobs it had finished: pyss writes a job when it ends, so their start times are final.

Usage: python benchmarks/replay_peer.py --pyss PATH [--python2 PY] [--logs KTH-SP2 LANL-CM5] [--pyss-timeout S]
       [--pyss-output SCHEDULER=FILE ...] [--out FILE]
"""

from __future__ import annotations

import argparse
import gzip
import heapq
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from barrier_queues.reference import service, service_args
from barrier_queues.replay import trace_system
from barrier_queues.rules import reference_rule, reference_service
from barrier_queues.schedulers.waitlist_reference import _Waitlist
from barrier_queues.traces import read_trace

#: pyss scheduler -> (our discipline, our estimates)
PAIRS = {"fcfs_scheduler": ("fcfs", "exact"), "perfect_easy_backfill_scheduler": ("backfill", "exact"),
         "easy_backfill_scheduler": ("backfill", "requested"), "list_scheduler": ("first-fit", "exact")}

#: pyss has no list (first-fit) scheduler. This Python 2 driver, written for this comparison (it is ours, not
#: pyss's), adds one on pyss's own machinery (its Scheduler base, CpuSnapshot, JobStartEvent and event loop) and
#: then runs pyss's run_simulator.py exactly as its command line does. The rule is the one pyss's fcfs_scheduler
#: applies to the queue's head, applied to every waiting job in submission order: a job starts when enough
#: processors are free now.
NATIVE = ("fcfs_scheduler", "perfect_easy_backfill_scheduler", "easy_backfill_scheduler")
LIST_DRIVER = """\
import sys, types
sys.path.insert(0, sys.argv[1])
sys.argv = [sys.argv[0]] + sys.argv[2:]
import schedulers
from schedulers.common import Scheduler, CpuSnapshot
from base.prototype import JobStartEvent


class ListScheduler(Scheduler):
    def __init__(self, options):
        super(ListScheduler, self).__init__(options)
        self.cpu_snapshot = CpuSnapshot(self.num_processors, options["stats"])
        self.waiting_queue_of_jobs = []

    def new_events_on_job_submission(self, job, current_time):
        self.cpu_snapshot.archive_old_slices(current_time)
        self.waiting_queue_of_jobs.append(job)
        return [JobStartEvent(current_time, j) for j in self._schedule_jobs(current_time)]

    def new_events_on_job_termination(self, job, current_time):
        self.cpu_snapshot.archive_old_slices(current_time)
        self.cpu_snapshot.delTailofJobFromCpuSlices(job)
        return [JobStartEvent(current_time, j) for j in self._schedule_jobs(current_time)]

    def _schedule_jobs(self, current_time):
        started, kept = [], []
        for job in self.waiting_queue_of_jobs:
            if self.cpu_snapshot.free_processors_available_at(current_time) >= job.num_required_processors:
                self.cpu_snapshot.assignJob(job, current_time)
                started.append(job)
            else:
                kept.append(job)
        self.waiting_queue_of_jobs = kept
        return started


module = types.ModuleType("schedulers.list_scheduler")
module.ListScheduler = ListScheduler
sys.modules["schedulers.list_scheduler"] = module
schedulers.list_scheduler = module
import run_simulator
from base.docopt import docopt
arguments = docopt(run_simulator.__doc__, version="1.0.0rc2")
config = {}
execfile(arguments["<config_file>"], config)
config["input_file"] = arguments["<swf_file>"]
config["output_swf"] = arguments["<output_file>"]
run_simulator.parse_and_run_simulator(config)
"""


def event_by_event(trace, servers, discipline, estimates):
    """Our decisions in pyss's order: one after each submission and each completion, submissions first at one
    instant, then events in the order they were made. The plain reference's state and decisions
    (``_Waitlist``), driven by this event order instead of its own (all releases of an instant, then each
    arrival)."""
    system = trace_system(trace, servers, discipline, estimates)
    work, full = system.trace, system.trace.expanded_inputs()
    rule = reference_rule(system)
    q = _Waitlist(full["arrival"], full["tasks"], full["barrier"], full["times"], servers, True,
                  reference_service(system) or (lambda draws, k: service(draws, k, **service_args(rule))), 1, None)
    if estimates != "exact":
        q.predictions = [float(p) for p in work.inputs(estimates)["predicted"]]
    decide = {"fcfs": q.fcfs, "first-fit": q.first_fit, "backfill": q.backfill,
              "server-filling": q.server_filling}[discipline]
    counter = itertools.count()
    events = [(float(t), 1, next(counter), j) for j, t in enumerate(full["arrival"])]
    heapq.heapify(events)
    started = q.start_job

    def start_job(j, now):                             # (each start makes its completion event, in start order)
        started(j, now)
        heapq.heappush(events, (q.res["departure"][j], 2, next(counter), j))

    q.start_job = start_job
    while events:
        t, kind, _, j = heapq.heappop(events)
        if kind == 1:
            q.waiting.append(j)
        else:                                          # the job's k workers (from the reference's trace) return
            mine = {q.tr["worker"][q.offsets[j] + i] for i in range(q.tasks[j])}
            q.releases = [(e, w) for e, w in q.releases if w not in mine]
            heapq.heapify(q.releases)
            for w in mine:
                heapq.heappush(q.free, w)
        if q.waiting:
            decide(t)
    return np.array(q.res["start"])


def _read_pyss(out: Path) -> dict:
    """Job id -> start time from pyss's output SWF (submit + wait); a line cut by a stopped run is left out."""
    starts = {}
    for line in out.read_text().splitlines(keepends=True):
        f = line.split()
        if line.startswith(";") or len(f) < 18 or not line.endswith("\n"):
            continue
        starts[int(f[0])] = float(f[1]) + float(f[2])
    return starts


def run_pyss(pyss: Path, python2: str, swf: Path, scheduler: str, folder: Path,
             timeout: float | None = None) -> tuple[float | None, dict, bool]:
    """pyss's start times on ``swf``, its whole-process seconds, and whether it finished: a run stopped at
    ``timeout`` gives the jobs it had finished (pyss writes a job when it ends, so their starts are final)."""
    config = folder / f"{scheduler}.py"
    config.write_text(f'scheduler = {{"name": "{scheduler}", "predictor": {{"name": None}}, '
                      '"corrector": {"name": None}}\nnum_processors = None\nstats = False\n')
    out = folder / f"pyss-{scheduler}.swf"
    if scheduler in NATIVE:
        command = [python2, "run_simulator.py"]
    else:
        driver = folder / "list_driver.py"
        driver.write_text(LIST_DRIVER)
        command = [python2, str(driver), str(pyss)]
    t0 = time.perf_counter()
    try:
        subprocess.run([*command, str(swf), str(config), str(out)], cwd=pyss, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, _read_pyss(out), False
    return time.perf_counter() - t0, _read_pyss(out), True


def run_ours(swf: Path, discipline: str, estimates: str, folder: Path) -> tuple[float, dict]:
    out = folder / f"ours-{discipline}-{estimates}.csv"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "barrier_queues.cli", "replay", str(swf), "--scheduling", discipline,
                    "--estimates", estimates, "--jobs-out", str(out), "--force"], check=True,
                   stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - t0
    rows = np.loadtxt(out, delimiter=",", skiprows=1, ndmin=2)
    return seconds, dict(zip(rows[:, 0].astype(int).tolist(), rows[:, 2].tolist(), strict=True))


def compare(log: Path, pyss: Path, python2: str, pairs: dict, timeout: float | None = None,
            outputs: dict | None = None) -> list[dict]:
    outputs = outputs or {}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        swf = folder / log.name.removesuffix(".gz")
        with gzip.open(log) if log.suffix == ".gz" else open(log, "rb") as src, open(swf, "wb") as dst:
            shutil.copyfileobj(src, dst)
        trace = read_trace(swf)
        jobs = trace.jobs
        lines = swf.read_text().splitlines(keepends=True)
        body = [line.split() for line in lines if line.strip() and not line.lstrip().startswith(";")]
        filled = all(int(float(f[8])) <= 0 for f in body)
        if trace.skipped or filled:
            # Both simulators get the same jobs and the same runtimes. pyss keeps the jobs the format marks
            # unusable (a runtime of 0 still holds its place in the queue): the lines our reader skips are left
            # out. pyss caps a job's runtime at its requested time (field 9), and raises it to 1 s when that is
            # -1: in a log with no requested times it would run every job for 1 s, so field 9 is set to the
            # runtime (our exact runs read the runtime only).
            kept = set(jobs.job_id.tolist())
            out = []
            for line in lines:
                f = line.split()
                if not f or line.lstrip().startswith(";"):
                    out.append(line)
                elif int(f[0]) in kept:
                    if filled:
                        f[8] = f[3]
                    out.append(" ".join(f) + "\n")
            swf.write_text("".join(out))
        for scheduler, (discipline, estimates) in pairs.items():
            if scheduler in outputs:                  # a pyss output the user made: no timing
                peer_s, peer, complete = None, _read_pyss(outputs[scheduler]), None
            else:
                peer_s, peer, complete = run_pyss(pyss, python2, swf, scheduler, folder, timeout)
            ours_s, ours = run_ours(swf, discipline, estimates, folder)
            ids = sorted(peer)
            differ = [i for i in ids if ours.get(i) != peer[i]]
            explained = 0
            if differ:
                alt = dict(zip(jobs.job_id.tolist(), event_by_event(trace, trace.servers, discipline,
                                                                     estimates).tolist(), strict=True))
                explained = sum(alt[i] == peer[i] for i in differ)
            row = {"log": log.name, "pyss": scheduler, "ours": f"{discipline} ({estimates})",
                   "removed_from_both": dict(trace.skipped),
                   "requested_set_to_runtime": filled, "jobs": len(ids), "same_start": len(ids) - len(differ),
                   "explained_by_event_order": explained, "unexplained": len(differ) - explained,
                   "unexplained_jobs": differ[:20] if len(differ) > explained else [],
                   "pyss_finished": complete,
                   "pyss_seconds": None if peer_s is None else round(peer_s, 2), "ours_seconds": round(ours_s, 3),
                   "speedup": None if peer_s is None else round(peer_s / ours_s, 1)}
            rows.append(row)
            print_row(row)
    return rows


def print_row(r: dict) -> None:
    print(f"| {r['log']} | {r['pyss']} | {r['ours']} | {r['jobs']:,} | {r['same_start']:,} | "
          f"{r['explained_by_event_order']:,} | {r['unexplained']:,} | {r['pyss_seconds'] or '-'} | "
          f"{r['ours_seconds']} | {str(r['speedup']) + 'x' if r['speedup'] else '-'} |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pyss", required=True, type=Path, help="pyss's simulation/pyss/src folder")
    parser.add_argument("--python2", default=None, help="a Python 2.7 interpreter (default: pyenv's 2.7.18)")
    parser.add_argument("--traces", type=Path, default=os.environ.get("BARRIER_QUEUES_TRACES"),
                        help="the logs' folder (default: BARRIER_QUEUES_TRACES)")
    parser.add_argument("--logs", nargs="+", default=["KTH-SP2"])
    parser.add_argument("--schedulers", nargs="+", default=list(PAIRS), choices=list(PAIRS),
                        help="pyss schedulers to compare (default: all four; list_scheduler is the driver above)")
    parser.add_argument("--pyss-timeout", type=float, default=None,
                        help="stop a pyss run after this many seconds and compare the jobs it had finished")
    parser.add_argument("--pyss-output", nargs="+", default=[], metavar="SCHEDULER=FILE",
                        help="compare an output SWF pyss wrote (on this log, as this script gives it) instead of "
                             "running pyss for that scheduler")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--commit", default=None, help="pyss's commit, when --pyss is not a git checkout")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    if args.out is not None and args.out.exists() and not args.force:
        parser.error(f"--out {args.out} exists (give --force to replace it)")
    python2 = args.python2 or str(Path(subprocess.run(["pyenv", "prefix", "2.7.18"], capture_output=True,
                                                      text=True, check=True).stdout.strip()) / "bin" / "python")
    if args.traces is None:
        parser.error("--traces must be given (or BARRIER_QUEUES_TRACES set)")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=args.pyss, capture_output=True, text=True)
    print("| log | pyss | ours | jobs | same start | explained by event order | unexplained | pyss s | ours s | "
          "speed-up |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|", flush=True)
    pairs = {name: PAIRS[name] for name in args.schedulers}
    outputs = {}
    for item in args.pyss_output:
        name, _, path = item.partition("=")
        if name not in pairs or not Path(path).is_file():
            parser.error(f"--pyss-output must be SCHEDULER=FILE with a scheduler among {', '.join(pairs)} and an "
                         f"existing file (got {item!r})")
        outputs[name] = Path(path)
    rows = [r for name in args.logs for r in compare(args.traces / f"{name}.swf.gz", args.pyss, python2, pairs,
                                                     args.pyss_timeout, outputs)]
    if args.out is not None:
        record = {"about": "Runs of the peer pyss (the Python Scheduler Simulator of the SC'15 backfilling study, in "
                           "jad-darrous/predictsim) made on this project's machine by benchmarks/replay_peer.py; its "
                           "code is not part of this project.",
                  "peer": {"repository": "jad-darrous/predictsim", "folder": "simulation/pyss/src",
                           "commit": args.commit or commit.stdout.strip() or None, "python": python2},
                  "date": time.strftime("%Y-%m-%d"), "rows": rows}
        args.out.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
