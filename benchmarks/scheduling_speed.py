"""Benchmark: what a scheduling discipline costs per job, as a user meets it.

For each system, one ``barrier-queues simulate ... --json`` command per
discipline, each timed from process start to exit (median of ``--repeat``
runs), on the same jobs (same seed: the random inputs are the same, only
the rule differs). Beside it, the kernel's own jobs per second (from the
JSON) and, per discipline, the ratio to fcfs: the question is whether a
rule costs more than 2x the paper's FIFO per job and whether the cost of a
decision grows with the number of waiting jobs (first-fit looks at one head
per job class, backfill walks the jobs behind its reservation).

Failures (``--failures``, on by default; ``--no-failures`` skips them): on
the same jobs, fcfs without failures (the paper's FIFO kernel) beside
fcfs, first-fit and backfill with failures of running tasks (whole-stage
restarts, at most 4 attempts, a resubmit delay), each ratio against fcfs
without failures. A job with failures runs its attempts: more work per
job, in the waiting-list kernel, with worker ids where a non-barrier job's
abort must kill its tasks.

``--workload FILE --rates R1,R2`` adds a workload file (ours, or one of the
C++ peer MJQM's input files) at those arrival rates. ``--mjqm BINARY --mjqm-input NAME`` runs the
C++ peer MJQM (``simulator_toml``, built by you: it is not part of this project) on its own input file
(in ``Inputs/`` beside the binary) at the same rates under ``fifo`` and ``back filling``, side by side
with our ``fcfs`` and ``backfill`` on the same workload, each timed from process start to exit; MJQM
simulates ``--mjqm-events`` events (arrivals and departures: about half as many jobs) in one repetition
(its run completes, then it aborts computing an interval of one value: the time counts the whole run) and
is stopped after ``--mjqm-timeout`` seconds.

Usage::

    python benchmarks/scheduling_speed.py [--jobs 1000000] [--repeat 3] [--workload FILE --rates 368,512]
        [--mjqm PATH/simulator_toml --mjqm-input borgA.toml --mjqm-events 2000000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

#: the command users run: the installed ``barrier-queues`` script beside this Python (``python -m
#: barrier_queues.cli`` if it is missing)
CLI = ([script] if (script := shutil.which("barrier-queues", path=os.path.dirname(sys.executable)))
       else [sys.executable, "-m", "barrier_queues.cli"])
DISCIPLINES = ("fcfs", "first-fit", "backfill")
SYSTEMS = [
    ("1-barrier s=16 k=4 rho=0.7 (one k: the rules coincide)", "-s 16 -k 4 --arrival-rate 2.8"),
    ("hybrid s=16 k=8 p=0.5 rho=0.7 (Fig. 5)", "-s 16 -k 8 --barrier-fraction 0.5 --utilization 0.7"),
    ("heterogeneous k in {2, 16} s=16 rho=0.5", "-s 16 --tasks-pmf 2:0.8,16:0.2 --utilization 0.5"),
    ("many classes s=1024 k = 1..1024 rho=0.3", "-s 1024 --tasks-pmf "
     + ",".join(f"{2**i}:{p}" for i, p in enumerate([0.5, 0.2, 0.1, 0.05, 0.05, 0.03, 0.02, 0.02, 0.01, 0.01, 0.01]))
     + " --utilization 0.3"),
]
#: (name, options, failure options): each timed without failures under fcfs, then with failures under each rule
FAILURE_SYSTEMS = [
    ("1-barrier s=16 k=4 rho=0.7, failure rate 0.02", "-s 16 -k 4 --arrival-rate 2.8",
     "--failure-rate 0.02 --max-attempts 4 --resubmit-delay 0.1"),
    ("hybrid s=16 k=8 p=0.5 rho=0.6, failure rate 0.02", "-s 16 -k 8 --barrier-fraction 0.5 --utilization 0.6",
     "--failure-rate 0.02 --max-attempts 4 --resubmit-delay 0.1"),
    ("2-barrier s=16 k=4 rho=0.4, failure rate 0.05", "-s 16 -k 4 -b 2 --arrival-rate 1.6",
     "--failure-rate 0.05 --max-attempts 4 --resubmit-delay 0.1"),
]


def run(cmd: list[str]) -> tuple[float, dict]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if out.returncode != 0:
        return seconds, {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"}
    return seconds, json.loads(out.stdout)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workload", default=None, help="a workload file (ours or MJQM's) to time as well")
    parser.add_argument("--rates", default="368,512", help="arrival rates for --workload")
    parser.add_argument("--mjqm", default=None, help="MJQM's simulator_toml binary, to run side by side")
    parser.add_argument("--mjqm-input", default="borgA.toml", help="its input file (in Inputs/ beside it)")
    parser.add_argument("--mjqm-events", type=int, default=2_000_000)
    parser.add_argument("--mjqm-timeout", type=float, default=600.0)
    parser.add_argument("--only-workload", action="store_true", help="skip the built-in systems")
    parser.add_argument("--failures", action=argparse.BooleanOptionalAction, default=True,
                        help="time the failure systems too (default: yes)")
    args = parser.parse_args(argv)
    if args.mjqm:
        return mjqm_side_by_side(args)
    plain = [(d, f"--scheduling {d}") for d in DISCIPLINES]
    systems = [] if args.only_workload else [(name, options, plain) for name, options in SYSTEMS]
    if args.workload:
        systems += [(f"{args.workload} at {r}/unit time", f"--workload {args.workload} --arrival-rate {r}", plain)
                    for r in args.rates.split(",")]
    if args.failures and not args.only_workload:
        systems += [(name, options, [("fcfs", "--scheduling fcfs")]
                     + [(f"{d}, failures", f"--scheduling {d} {fail}") for d in DISCIPLINES])
                    for name, options, fail in FAILURE_SYSTEMS]
    print("| system | discipline | whole process (s) | kernel jobs/s | x fcfs (whole) | mean waiting (unstable: "
          "this run's) |")
    print("|---|---|---:|---:|---:|---:|")
    for name, options, rows in systems:
        base = None
        for d, rule in rows:
            cmd = [*CLI, "simulate", *options.split(), "--jobs",
                   str(args.jobs), "--seed", "1", *rule.split(), "--allow-unstable", "--json"]
            times, last = [], {}
            for _ in range(args.repeat):
                seconds, last = run(cmd)
                times.append(seconds)
            med = statistics.median(times)
            if "error" in last:
                print(f"| {name} | {d} | - | - | - | {last['error']} |")
                continue
            base = med if d == "fcfs" else base
            ratio = f"{med / base:.2f}" if base else "-"
            wait = (f"{last['mean_waiting']:.4g}" if last["stable"] is not False
                    else f"unstable: {last['run_means']['waiting']:.4g}")     # no steady state: this run's mean
            print(f"| {name} | {d} | {med:.2f} | {last['kernel_jobs_per_second']:,.0f} | {ratio} | {wait} |")
    return 0


def mjqm_side_by_side(args) -> int:
    """MJQM and barrier-queues on one workload at each rate, FIFO and backfilling, whole process, same jobs count."""
    import os
    from pathlib import Path

    binary = Path(args.mjqm).resolve()
    jobs = args.mjqm_events // 2
    print(f"| rate | rule | MJQM (s, {args.mjqm_events:,} events) | MJQM jobs/s | barrier-queues (s, {jobs:,} jobs) "
          "| barrier-queues jobs/s | ratio |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for rate in args.rates.split(","):
        for ours, theirs in (("fcfs", "fifo"), ("backfill", "back filling")):
            t0 = time.perf_counter()
            try:
                out = subprocess.run([str(binary), args.mjqm_input, "--arrival.rate", rate, "--policy", theirs,
                                      "--events", str(args.mjqm_events), "--repetitions", "1"], cwd=binary.parent,
                                     capture_output=True, text=True, timeout=args.mjqm_timeout, env=dict(os.environ))
                peer = time.perf_counter() - t0
                if "Repetition 0 Done" not in out.stdout:       # it aborts after the run, computing its interval
                    raise RuntimeError(f"MJQM did not finish its run: {out.stderr[-300:]}")
            except subprocess.TimeoutExpired:
                peer = float("inf")
            cmd = [*CLI, "simulate", "--workload", args.workload,
                   "--arrival-rate", rate, "--jobs", str(jobs), "--replications", "1", "--seed", "1",
                   "--scheduling", ours, "--allow-unstable", "--json"]
            seconds, _ = run(cmd)
            shown = f"> {args.mjqm_timeout:.0f}" if peer == float("inf") else f"{peer:.2f}"
            ratio = "-" if peer == float("inf") else f"{peer / seconds:.1f}x"
            print(f"| {rate} | {ours} | {shown} | {jobs / peer:,.0f} | {seconds:.2f} | {jobs / seconds:,.0f} "
                  f"| {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
