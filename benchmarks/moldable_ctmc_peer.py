"""The exact moldable CTMC against the paper authors' own approximation and the simulator.

forkulator (brentondwalker/forkulator, not part of this project) analyses its take-fraction barrier server
(``tfb f``, 1 barrier, ``k = s`` tasks per job, Exp(mu) tasks) with a sparse CTMC that its header calls "a
really rough approximation": each composite task treated as exponential, all running tasks at one rate. Give
the path of a forkulator checkout (``--forkulator``); the script runs its ``python/takehalf-transitions-Hl-
sparse.py`` as a process (``-s S -l LAMBDA -f F -q Q``) and reads the line it prints (s, lambda, mu, mean
runtime, mean waiting, mean sojourn, ...). Beside it: :func:`barrier_queues.moldable_ctmc.moldable_ctmc` (exact,
the chain of Appendix B section 7) and :func:`barrier_queues.moldable.simulate_moldable` (10 replications of
50,000 jobs, 95 % t intervals). Prints a markdown table; ``--out FILE`` also writes the record (refused if it
exists, unless ``--force``).

Usage: python benchmarks/moldable_ctmc_peer.py --forkulator PATH [--servers 4 5] [--loads 0.2 0.4 0.6 0.8]
       [--fractions 0.5] [--queue 120] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from barrier_queues.moldable import simulate_moldable
from barrier_queues.moldable_ctmc import moldable_ctmc

SCRIPT = "python/takehalf-transitions-Hl-sparse.py"


def approximation(forkulator: Path, s: int, lam: float, f: float, queue: int) -> dict:
    """forkulator's rough CTMC: the line it prints that starts with ``s``."""
    out = subprocess.run([sys.executable, SCRIPT, "-s", str(s), "-l", repr(lam), "-f", repr(f), "-q", str(queue)],
                         cwd=forkulator, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        fields = line.split("\t")
        if len(fields) == 8 and fields[0] == str(s):
            return {"mean_execution": float(fields[3]), "mean_waiting": float(fields[4]),
                    "mean_sojourn": float(fields[5])}
    raise RuntimeError(f"no result line in {SCRIPT}'s output for s = {s}, lambda = {lam}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--forkulator", required=True, type=Path, help="a checkout of brentondwalker/forkulator")
    parser.add_argument("--servers", nargs="+", type=int, default=[4, 5])
    parser.add_argument("--loads", nargs="+", type=float, default=[0.2, 0.4, 0.6, 0.8],
                        help="lambda k / (s mu); with k = s and mu = 1 this is lambda")
    parser.add_argument("--fractions", nargs="+", type=float, default=[0.5])
    parser.add_argument("--queue", type=int, default=120, help="forkulator's queue truncation (its -q)")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--commit", default=None, help="forkulator's commit, when --forkulator is not a checkout")
    parser.add_argument("--force", action="store_true")
    args = parser.parse_args()
    if args.out is not None and args.out.exists() and not args.force:
        parser.error(f"--out {args.out} exists (give --force to replace it)")
    if not (args.forkulator / SCRIPT).is_file():
        parser.error(f"--forkulator {args.forkulator} has no {SCRIPT}")
    print("| s = k | f | load | W exact | W forkulator approx. | W simulated (95 %) | E exact | E approx. | "
          "E simulated |")
    print("|---:|---:|---:|---:|---:|---|---:|---:|---|", flush=True)
    rows = []
    for s in args.servers:
        for f in args.fractions:
            for load in args.loads:
                lam = load                                  # k = s, mu = 1: load = lambda k / (s mu) = lambda
                exact = moldable_ctmc(s, s, lam, "take-fraction", take_fraction=f)
                approx = approximation(args.forkulator, s, lam, f, args.queue)
                sim = simulate_moldable(s, s, lam, "take-fraction", take_fraction=f, jobs=50_000,
                                        replications=10, seed=2026)
                row = {"servers": s, "tasks": s, "take_fraction": f, "load": load, "arrival_rate": lam,
                       "exact": exact.as_dict(), "approximation": approx,
                       "simulated": {k: sim[f"mean_{k}"] for k in ("waiting", "execution", "sojourn", "workers")},
                       "simulated_ci": {k: sim["ci"][k] for k in ("waiting", "execution", "sojourn", "workers")},
                       "approximation_error": {k: approx[f"mean_{k}"] / getattr(exact, f"mean_{k}") - 1
                                               for k in ("waiting", "execution", "sojourn")}}
                rows.append(row)
                ci = row["simulated_ci"]
                print(f"| {s} | {f:g} | {load:g} | {exact.mean_waiting:.4f} | {approx['mean_waiting']:.4f} "
                      f"({100 * row['approximation_error']['waiting']:+.0f} %) | [{ci['waiting'][0]:.4f}, "
                      f"{ci['waiting'][1]:.4f}] | {exact.mean_execution:.4f} | {approx['mean_execution']:.4f} "
                      f"({100 * row['approximation_error']['execution']:+.1f} %) | [{ci['execution'][0]:.4f}, "
                      f"{ci['execution'][1]:.4f}] |", flush=True)
    if args.out is not None:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=args.forkulator, capture_output=True, text=True)
        record = {"about": "forkulator's own approximate CTMC of its take-fraction barrier server (run by "
                           "benchmarks/moldable_ctmc_peer.py; its code is not part of this project) beside this "
                           "project's exact chain (barrier_queues.moldable_ctmc) and simulator, k = s tasks per "
                           "job, Exp(1) tasks, 1 barrier.",
                  "peer": {"repository": "brentondwalker/forkulator", "script": SCRIPT,
                           "commit": args.commit or commit.stdout.strip() or None, "queue": args.queue},
                  "date": time.strftime("%Y-%m-%d"), "rows": rows}
        args.out.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
