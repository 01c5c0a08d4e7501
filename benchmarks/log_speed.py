"""Benchmark: an answer on a real log with its uncertainty, as a user meets it.

Two questions, each timed from process start to exit (reading the log included), the median of ``--repeat``
runs of each command, the commands of a table interleaved:

* KTH-SP2 under one rule: one replay, and the replay with ``--shake N`` shaken copies (every metric with its
  interval over them). The goal: 100 shaken replays in under 2 s.
* The Philly log per virtual cluster on nodes of 8 GPUs: one command per rule and their total, beside one
  command for every rule (``--scheduling`` a list: the log read once). The goal: every rule in under 2 s.

The logs are found in the folder of ``--traces`` (or the ``BARRIER_QUEUES_TRACES`` setting).

Usage::

    python benchmarks/log_speed.py --traces /path/to/logs [--shakes 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))      # (the sibling script, run or loaded by path)
from scheduling_speed import CLI, run  # noqa: E402  (the command users run, and one timed run of it)

#: the Helios study's sizes of Philly's virtual clusters, in GPUs (the GPU chapter's)
PHILLY_SIZES = ("6214e9:512,7f04ca:256,11cb48:128,b436b2:512,ee9e8c:512,e13805:128,6c71a0:256,2869ce:128,"
                "ed69ec:64,103959:64,0e4a51:256")
RULES = ("fcfs", "first-fit", "backfill", "sjf", "sjf-first-fit")


def _timed(commands: list[list[str]], repeat: int) -> list[tuple[float, dict]]:
    """Each command's median time over ``repeat`` interleaved runs, with its last output."""
    times = [[] for _ in commands]
    last = [{} for _ in commands]
    for _ in range(repeat):
        for i, cmd in enumerate(commands):
            seconds, last[i] = run(cmd)
            times[i].append(seconds)
    return [(statistics.median(t), out) for t, out in zip(times, last, strict=True)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", default=os.environ.get("BARRIER_QUEUES_TRACES"),
                        help="the logs' folder (default: the BARRIER_QUEUES_TRACES setting)")
    parser.add_argument("--kth", default="KTH-SP2.swf.gz", help="the SWF log of the first table")
    parser.add_argument("--philly", default="philly-pollux.csv.gz", help="the Philly log of the second table")
    parser.add_argument("--shakes", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    if args.shakes < 2 or args.repeat < 1:
        parser.error("--shakes must be at least 2 and --repeat at least 1")
    folder = Path(args.traces) if args.traces else None
    if folder is None or not (folder / args.kth).is_file() or not (folder / args.philly).is_file():
        parser.error(f"--traces must name the folder holding {args.kth} and {args.philly} (or set "
                     "BARRIER_QUEUES_TRACES)")
    kth = [*CLI, "replay", str(folder / args.kth), "--scheduling", "first-fit", "--json"]
    (one, _), (shaken, out) = _timed([kth, [*kth, "--shake", str(args.shakes)]], args.repeat)
    if "error" in out:
        parser.exit(2, f"log_speed.py: the shaken replay failed: {out['error']}\n")
    print(f"| {args.kth}, first-fit | whole process (s) | per replay (s) |")
    print("|---|---:|---:|")
    print(f"| one replay | {one:.2f} | {one:.3f} |")
    print(f"| the log and {args.shakes} shaken copies | {shaken:.2f} | {shaken / (args.shakes + 1):.4f} |")
    print()
    base = [*CLI, "replay", str(folder / args.philly), "--by-cluster", PHILLY_SIZES, "--node-size", "8", "--json"]
    commands = [[*base, "--scheduling", rule] for rule in RULES] + [[*base, "--scheduling", ",".join(RULES)]]
    timed = _timed(commands, args.repeat)
    rows, (together, runs) = timed[:-1], timed[-1]
    print(f"| {args.philly}, per VC on nodes of 8 | whole process (s) | jobs replayed | mean waiting (s) |")
    print("|---|---:|---:|---:|")
    for rule, (seconds, result) in zip(RULES, rows, strict=True):
        if "error" in result:
            print(f"| {rule} | {seconds:.2f} | {result['error']} | - |")
            continue
        pooled = result["all"]
        print(f"| {rule} | {seconds:.2f} | {pooled['measured_jobs']:,} | {pooled['mean_waiting']:,.1f} |")
    print(f"| every rule, one command each | {sum(s for s, _ in rows):.2f} | | |")
    if "error" in runs:
        print(f"| every rule in one command | {together:.2f} | {runs['error']} | - |")
    else:
        same = all(r["all"] == one["all"] for r, (_, one) in zip(runs["runs"], rows, strict=True))
        jobs = sum(r["all"]["measured_jobs"] for r in runs["runs"])
        print(f"| every rule in one command | {together:.2f} | {jobs:,} "
              f"| {'the same as each command' if same else 'differs from the commands'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
