"""Moldable jobs beside the paper authors' own simulator, forkulator, on the same configurations.

For each policy (forkulator's queue spec in brackets), on ``s`` workers and jobs of ``k`` exponential tasks
(mean 1) with Poisson arrivals: ``--runs`` independent forkulator runs of ``--jobs`` jobs each (it takes no
seed: each run draws its own; it has no warm-up cut either, so runs start empty and are long) and our
``simulate --moldable`` with as many replications of as many jobs (MSER-5 warm-up). Printed per policy: the
mean waiting and sojourn of each side with its 95 % t interval over the runs, whether the two means differ by
less than the root of the sum of the squared half-widths, and the whole-process time of one run of ``--jobs`` jobs on
each side (a JVM start and forkulator's simulation; a Python start, our kernel and our statistics), median
over the runs, and the ratio.

``--forkulator DIR`` expects a built forkulator checkout (its classes in ``DIR/bin``; build it as its README
says, or ``javac -d bin -cp lib/commons-math3-3.6.1.jar:lib/commons-cli-1.2.jar $(find src -name '*.java')``);
it is not part of this project. ``--json-out FILE`` also writes the rows (refused if FILE exists, unless
``--force``).

Usage::

    python benchmarks/moldable_peer.py --forkulator /tmp/fk [--servers 16 --tasks 16 --jobs 50000 --runs 5]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from barrier_queues.statistics import t_interval

CLI = ([script] if (script := shutil.which("barrier-queues", path=os.path.dirname(sys.executable)))
       else [sys.executable, "-m", "barrier_queues.cli"])
#: (our name, our options, forkulator's queue spec, load rho = lambda k / s)
CASES = [
    ("take-fraction 0.5", "--moldable take-fraction --take-fraction 0.5", "tfb 0.5", 0.6),
    ("take-fraction 0.5, 2 barriers", "--moldable take-fraction --take-fraction 0.5 --barriers 2", "tfbb 0.5", 0.4),
    ("take-fraction 1", "--moldable take-fraction --take-fraction 1", "tfb 1.0", 0.6),
    ("take-random", "--moldable take-random", "tfbr", 0.6),
    ("take-random-all", "--moldable take-random-all", "tfbra", 0.2),
    ("patience (min)", "--moldable patience --patience-wait min", "tp", 0.6),
    ("patience (mean)", "--moldable patience --patience-wait mean", "tpa", 0.6),
    ("patience (height)", "--moldable patience --patience-wait height", "tpwha", 0.6),
]


def forkulator_run(directory: Path, spec: str, servers: int, tasks: int, rate: float, jobs: int, out: Path):
    cmd = ["java", "-Xmx2g", "-cp", f"{directory / 'bin'}:{directory / 'lib' / 'commons-math3-3.6.1.jar'}:"
           f"{directory / 'lib' / 'commons-cli-1.2.jar'}", "forkulator.FJSimulator", "-q", *spec.split(),
           "-w", str(servers), "-t", str(tasks), "-A", "x", repr(rate), "-S", "x", "1.0", "-n", str(jobs), "-i", "1",
           "-o", str(out)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=out.parent, timeout=3600)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"forkulator failed: {' '.join(cmd)}\n{done.stderr[-2000:]}")
    fields = done.stdout.strip().splitlines()[-1].split("\t")   # its summary line: sojourn 6th, waiting 7th
    return float(fields[5]), float(fields[6]), seconds


def ours(options: str, servers: int, tasks: int, rate: float, jobs: int, replications: int, seed: int):
    cmd = [*CLI, "simulate", "-s", str(servers), "-k", str(tasks), "--arrival-rate", repr(rate), *options.split(),
           "--jobs", str(jobs), "--replications", str(replications), "--seed", str(seed), "--json"]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"barrier-queues failed: {' '.join(cmd)}\n{done.stderr[-2000:]}")
    return json.loads(done.stdout), seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forkulator", type=Path, required=True, help="a built forkulator checkout (bin/)")
    parser.add_argument("--servers", type=int, default=16)
    parser.add_argument("--tasks", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json-out", type=Path, default=None)
    parser.add_argument("--force", action="store_true", help="overwrite --json-out")
    args = parser.parse_args(argv)
    if not (args.forkulator / "bin" / "forkulator" / "FJSimulator.class").exists():
        parser.error(f"--forkulator must be a built forkulator checkout ({args.forkulator}/bin/forkulator/"
                     "FJSimulator.class is missing)")
    if args.runs < 2:
        parser.error("--runs must be at least 2 (an interval over runs)")
    if args.json_out is not None and args.json_out.exists() and not args.force:
        parser.error(f"--json-out {args.json_out} exists (--force to overwrite)")
    print(f"s = {args.servers}, k = {args.tasks}, exponential tasks (mean 1), {args.jobs:,} jobs per run, "
          f"{args.runs} runs per side")
    print("| policy | forkulator | load | forkulator waiting | ours waiting | forkulator sojourn | ours sojourn | "
          "within combined 95 % | forkulator run (s) | ours run (s) | speed-up |")
    print("|---|---|---:|---|---|---|---|---|---:|---:|---:|")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, options, spec, rho in CASES:
            rate = rho * args.servers / args.tasks
            theirs = [forkulator_run(args.forkulator, spec, args.servers, args.tasks, rate, args.jobs,
                                     Path(tmp) / f"run{i}") for i in range(args.runs)]
            summary, _ = ours(options, args.servers, args.tasks, rate, args.jobs, args.runs, args.seed)
            single = [ours(options, args.servers, args.tasks, rate, args.jobs, 1, args.seed + i)[1]
                      for i in range(args.runs)]
            row = {"policy": name, "forkulator": spec, "load": rho, "arrival_rate": rate, "stable": summary["stable"]}
            agree = True
            for col, key in ((1, "waiting"), (0, "sojourn")):
                lo_f, hi_f = t_interval([r[col] for r in theirs])     # the project's 95 % t interval
                fm, fh = (lo_f + hi_f) / 2, (hi_f - lo_f) / 2
                om = summary[f"mean_{key}"]
                lo, hi = summary["ci"][key] if summary["ci"].get(key) else (math.nan, math.nan)
                oh = (hi - lo) / 2
                agree &= abs(fm - om) <= math.hypot(fh, oh)     # within the combined half-widths
                row[f"forkulator_{key}"], row[f"forkulator_{key}_half"] = fm, fh
                row[f"ours_{key}"], row[f"ours_{key}_half"] = om, oh
            row["agree"] = bool(agree)
            row["forkulator_seconds"] = statistics.median(r[2] for r in theirs)
            row["ours_seconds"] = statistics.median(single)
            rows.append(row)
            print(f"| {name} | `{spec}` | {rho:g} "
                  f"| {row['forkulator_waiting']:.4g} ± {row['forkulator_waiting_half']:.2g} "
                  f"| {row['ours_waiting']:.4g} ± {row['ours_waiting_half']:.2g} "
                  f"| {row['forkulator_sojourn']:.4g} ± {row['forkulator_sojourn_half']:.2g} "
                  f"| {row['ours_sojourn']:.4g} ± {row['ours_sojourn_half']:.2g} | {'yes' if agree else 'no'} "
                  f"| {row['forkulator_seconds']:.2f} | {row['ours_seconds']:.2f} "
                  f"| {row['forkulator_seconds'] / row['ours_seconds']:.1f}x |", flush=True)
    if args.json_out is not None:
        args.json_out.write_text(json.dumps({"servers": args.servers, "tasks": args.tasks, "jobs": args.jobs,
                                             "runs": args.runs, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
