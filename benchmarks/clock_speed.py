"""Benchmark: what a gang clock costs per job, as a user meets it.

For each system and rule, one ``barrier-queues simulate ... --json`` command without a clock and one with it,
on the same jobs (same seed: the arrivals and task times are the same; the clocks draw from a stream of their
own), each timed from process start to exit. The two commands of a row run one after the other, ``--repeat``
times (interleaved: a slow moment of the machine falls on both), and the table shows each one's median and
their ratio. The question is whether a clock costs more than 1.5x the same rule without it per job. ``hold``
is compared with fcfs (the hold is fcfs whose head keeps the free workers), ``aging`` with first-fit (it is
first-fit until a job has waited T).

Beside the times, what the clock did in the run (the share of jobs lost and the requeues per job; none for
aging, which loses no job): a clock that never fires would cost nothing to look at. A mixed workload under
fcfs without a clock runs the stability guard first (a short saturated estimate of FIFO's limit; a system
with a clock has no such limit and skips it): that constant is part of what its users wait for, and weighs
less the longer the run.

Usage::

    python benchmarks/clock_speed.py [--jobs 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))      # (the sibling script, run or loaded by path)
from scheduling_speed import CLI, run  # noqa: E402  (the command users run, and one timed run of it)

SYSTEMS = [
    ("k in {2, 16}, s=16, rho=0.3", "-s 16 --tasks-pmf 2:0.8,16:0.2 --utilization 0.3"),
    ("hybrid k=8, p=0.5, s=16, rho=0.5", "-s 16 -k 8 --barrier-fraction 0.5 --utilization 0.5"),
]
#: (clock, the rule without it, the rule and clock options)
CLOCKS = [
    ("budget runtime:2, leave", "fcfs", "--scheduling fcfs --wait-budget runtime:2"),
    ("budget runtime:2, leave", "first-fit", "--scheduling first-fit --wait-budget runtime:2"),
    ("budget runtime:2, leave", "backfill", "--scheduling backfill --wait-budget runtime:2"),
    ("exp:5 patience, requeue 1,8, limit 3", "first-fit",
     "--scheduling first-fit --wait-budget exp:5 --on-budget requeue --requeue-backoff 1,8 --requeue-limit 3"),
    ("as above, eviction order, jitter 0.1", "first-fit",
     "--scheduling first-fit --wait-budget exp:5 --on-budget requeue --requeue-backoff 1,8 --requeue-limit 3 "
     "--requeue-order eviction --requeue-jitter 0.1"),
    ("hold T=2, requeue 1,8", "fcfs", "--scheduling hold --hold-timeout 2 --on-budget requeue --requeue-backoff 1,8"),
    ("aging T=10", "first-fit", "--scheduling aging --aging-after 10"),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.repeat < 1:
        parser.error("--jobs and --repeat must be at least 1")
    print("| system | clock | rule without it (s) | with the clock (s) | x | lost | requeues per job |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, options in SYSTEMS:
        for clock, rule, with_clock in CLOCKS:
            common = [*CLI, "simulate", *options.split(), "--jobs", str(args.jobs), "--replications", "1",
                      "--seed", "1", "--allow-unstable", "--json"]
            plain, timed, last = [], [], {}
            for _ in range(args.repeat):                    # interleaved: without, with, without, with, ...
                plain.append(run([*common, "--scheduling", rule])[0])
                seconds, last = run([*common, *with_clock.split()])
                timed.append(seconds)
            if "error" in last:
                print(f"| {name} | {clock} | - | - | - | {last['error']} | - |")
                continue
            a, b = statistics.median(plain), statistics.median(timed)
            c = last.get("clocks")                          # (aging loses no job: no clock summary)
            lost, requeues = (f"{c['lost_share']:.2%}", f"{c['requeues_per_job']:.3f}") if c else ("-", "-")
            print(f"| {name} | {clock} | {rule} {a:.2f} | {b:.2f} | {b / a:.2f} | {lost} | {requeues} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
