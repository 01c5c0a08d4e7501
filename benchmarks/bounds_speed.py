"""Benchmark: how long the network-calculus bounds take (the timing checks that used to be tests).

Prints a markdown table: a 50-point bound curve (s = 16, k = 8, 50 arrival
rates, eps = 1e-3; waiting, sojourn and service quantiles) in each form, and
one bound for a large cluster; median of ``--repeat`` runs in this process
(imports excluded; see ``simulator_speed.py`` for whole-process timings).

Usage: python benchmarks/bounds_speed.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from barrier_queues import BarrierSystem
from barrier_queues.bounds import bound
from barrier_queues.planning import plan


def timed(function, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        function()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    bound(BarrierSystem(servers=16, tasks=8, arrival_rate=1.0), 1e-3)       # warm caches and imports
    print("| computation | seconds (median) |")
    print("|---|---:|")
    for form in ("gigi", "gg"):
        def curve(form=form):
            for lam in np.linspace(0.1, 1.4, 50):
                bound(BarrierSystem(servers=16, tasks=8, arrival_rate=float(lam)), 1e-3, form)
        print(f"| 50-point bound curve, {form} form, s = 16, k = 8 | {timed(curve, args.repeat):.3f} |", flush=True)
    big = BarrierSystem(servers=4096, tasks=1024, arrival_rate=0.5 * 4096 / 1024 / 4096 * 1024)
    print(f"| one bound, s = 4096, k = 1024 | {timed(lambda: bound(big, 1e-3), args.repeat):.3f} |", flush=True)
    print(f"| plan, s = 16, rho = 0.5 (16 values of k) | {timed(lambda: plan(16, 0.5), args.repeat):.3f} |")
    print(f"| plan, s = 100,000, rho = 0.5 (log grid + refinement) | {timed(lambda: plan(100_000, 0.5), 1):.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
