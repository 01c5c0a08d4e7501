"""Benchmark: size and solve time of the backlogged 1-barrier CTMC.

Prints a markdown table (states, seconds, states per second) for the systems
named in the foundations issue and larger ones. Each system runs in a fresh
subprocess so that its peak memory (max RSS) is its own.

Usage: python benchmarks/ctmc_scaling.py [--quick] [s,k,l ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

DEFAULT = ["32,16,16", "48,16,16", "64,16,12", "80,20,10", "56,16,16", "64,16,16"]
QUICK = ["32,16,16", "48,16,16", "64,16,12"]


def run_one(spec: str) -> dict:
    import barrier_queues as bq

    s, k, l_ = map(int, spec.split(","))
    t0 = time.perf_counter()
    res = bq.ctmc_stability(s, k, l_, max_states=50_000_000)
    total = time.perf_counter() - t0
    return {"s": s, "k": k, "l": l_, "feasible": res.feasible_states, "states": res.states,
            "build_s": res.seconds_build, "solve_s": res.seconds_solve, "total_s": total,
            "rho_max": res.rho_max, "residual": res.residual,
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("systems", nargs="*", help="s,k,l triples")
    parser.add_argument("--quick", action="store_true", help="only the three issue systems")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child)))
        return 0
    systems = args.systems or (QUICK if args.quick else DEFAULT)
    print(f"# CTMC scaling on {platform.machine()} with {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")
    print("| (s,k,l) | feasible states | reachable states | build (s) | solve (s) | total (s) "
          "| states/s | peak RSS (MB) | rho_max |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for spec in systems:
        out = subprocess.run([sys.executable, __file__, "--child", spec], capture_output=True,
                             text=True, check=True)
        r = json.loads(out.stdout)
        print(f"| ({r['s']},{r['k']},{r['l']}) | {r['feasible']:,} | {r['states']:,} | "
              f"{r['build_s']:.2f} | {r['solve_s']:.2f} | {r['total_s']:.2f} | "
              f"{r['states'] / r['total_s']:,.0f} | {r['max_rss_mb']:,.0f} | {r['rho_max']:.10f} |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
