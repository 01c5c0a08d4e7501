"""Benchmark: trace replay as a user meets it, whole process (reading the file included), and a synthetic 1M-job
trace on 10,000 workers.

For each log of the logs' folder (``--traces``, default the ``BARRIER_QUEUES_TRACES`` setting) and each
discipline: the median wall time of ``barrier-queues replay LOG --scheduling D`` as a new process (``--repeat``
runs; most of it is the interpreter's start and the imports), the median of :func:`barrier_queues.replay.replay`
in this process (the trace already read: the scheduler room's kernel), and with ``--reference`` one in-process
run of the room's plain reference (:func:`barrier_queues.schedulers.waitlist.reference`, which holds one release
per worker: about 20 s a rule on LANL-CM5) on the same jobs, whose starts must equal the kernel's (checked). Then a
synthetic trace of ``--jobs`` rigid jobs (widths 1 to 4,096,
exponential runtimes, load 0.85) on 10,000 workers, written as a CSV and replayed as a new process, with the
process's peak memory (``ru_maxrss`` of the child) beside the CSV's size. Prints markdown tables. (pyss, the
peer, is timed side by side in ``benchmarks/replay_peer.py``.)

Usage: python benchmarks/replay_speed.py [--logs KTH-SP2 LANL-CM5] [--repeat 3] [--jobs 1000000] [--reference]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from barrier_queues._validation import ParameterError
from barrier_queues.replay import replay, trace_system
from barrier_queues.schedulers import waitlist
from barrier_queues.traces import read_trace, trace_folder

RULES = [("fcfs", "exact"), ("first-fit", "exact"), ("backfill", "exact"), ("backfill", "requested")]


def whole_process(argv: list[str], repeat: int) -> tuple[float, float]:
    """Median wall seconds of ``barrier-queues ARGV`` as a new process, and the largest peak memory (MB)."""
    times, peak = [], 0.0
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "barrier_queues.cli", "replay", *argv], check=True,
                       stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
        peak = max(peak, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before) / 1024
    return statistics.median(times), peak


def reference_starts(trace, discipline: str, estimates: str) -> np.ndarray:
    """The room's plain reference on the trace's jobs (each rigid job's runtime k times)."""
    system = trace_system(trace, scheduling=discipline, estimates=estimates)
    predicted = system.trace.inputs(estimates)["predicted"] if estimates != "exact" else None
    return np.asarray(waitlist.reference(system, system.trace.expanded_inputs(), predictions=predicted)["start"])


def logs_table(folder: Path, names: list[str], repeat: int, reference: bool) -> None:
    print("| log | jobs | rule | whole process (s) | compiled, in process (s) | plain-Python reference (s) | equal |")
    print("|---|---:|---|---:|---:|---:|---|")
    for name in names:
        path = folder / f"{name}.swf.gz"
        trace = read_trace(path)
        jobs = trace.jobs
        for discipline, estimates in RULES:
            wall, _ = whole_process([str(path), "--scheduling", discipline, "--estimates", estimates], repeat)
            if reference:
                t0 = time.perf_counter()
                ref = reference_starts(trace, discipline, estimates)
                ref_s = time.perf_counter() - t0
            runs = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                ours = replay(trace, scheduling=discipline, estimates=estimates).jobs.start.to_numpy()
                runs.append(time.perf_counter() - t0)
            checked = (f"{ref_s:.3f} | {np.array_equal(ours, ref)}" if reference else "not run | not checked")
            print(f"| {name} | {len(jobs):,} | {discipline} ({estimates}) | {wall:.3f} | "
                  f"{statistics.median(runs):.4f} | {checked} |")


def synthetic_table(n: int, repeat: int) -> None:
    rng = np.random.default_rng(1)
    servers = 10_000
    k = np.minimum(servers, np.ceil(2 ** rng.uniform(0, 12, n))).astype(np.int64)
    run = np.floor(rng.exponential(600, n)) + 1
    submit = np.floor(np.cumsum(rng.exponential(1 / (0.85 * servers / (k * run).mean()), n)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synthetic.csv"
        pd.DataFrame({"submit": submit, "tasks": k, "runtime": run, "estimate": 3 * run}).to_csv(path, index=False)
        size = path.stat().st_size / 2**20
        print(f"\nSynthetic trace: {n:,} jobs on {servers:,} workers, CSV {size:.0f} MB\n")
        print("| rule | whole process (s) | peak memory (MB) |")
        print("|---|---:|---:|")
        for discipline, estimates in RULES:
            wall, peak = whole_process([str(path), "--servers", str(servers), "--scheduling", discipline,
                                        "--estimates", estimates], repeat)
            print(f"| {discipline} ({estimates}) | {wall:.2f} | {peak:.0f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", default=os.environ.get("BARRIER_QUEUES_TRACES"))
    parser.add_argument("--logs", nargs="+", default=["KTH-SP2", "LANL-CM5"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--reference", action="store_true",
                        help="also run the plain reference (about 20 s a rule on LANL-CM5)")
    args = parser.parse_args()
    try:
        folder = trace_folder(args.traces)
    except ParameterError as exc:
        print(f"replay_speed.py: {exc}; give --traces FOLDER", file=sys.stderr)
        return 2
    logs_table(folder, args.logs, args.repeat, args.reference)
    synthetic_table(args.jobs, args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
