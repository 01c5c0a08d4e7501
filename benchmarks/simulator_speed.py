"""Benchmark: simulator speed (jobs per second) against baselines.

For each system of the simulator issue this prints the compiled kernel's
speed on one core (compile excluded), the end-to-end speed (random draws
included), and the plain-Python/heapq reference on the same model; for k = 1
(an M/M/s queue) it also times Ciw. Then it times replications on 1 process
versus all cores. Results are printed as markdown tables.

Usage: python benchmarks/simulator_speed.py [--jobs N] [--reference-jobs N]
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from barrier_queues.reference import simulate_reference
from barrier_queues.simulate import SimulationConfig, draw_jobs, run_replication, simulate

SYSTEMS = [
    ("1-barrier s=16 k=4 rho=0.7", SimulationConfig(servers=16, tasks=4, arrival_rate=2.8)),
    ("1-barrier s=64 k=16 rho=0.7", SimulationConfig(servers=64, tasks=16, arrival_rate=2.8)),
    ("hybrid p=0.5 s=16 k=8 rho=0.7", SimulationConfig(servers=16, tasks=8, barrier_fraction=0.5,
                                                        arrival_rate=1.4)),
    ("2-barrier (16,8,6) rho=0.5", SimulationConfig(servers=16, tasks=8, needed=6, barriers=2,
                                                     arrival_rate=0.5 * 16 / 6)),
    ("M/M/16 (k=1) rho=0.7", SimulationConfig(servers=16, tasks=1, arrival_rate=11.2)),
]


def time_reference(cfg, jobs):
    inputs = draw_jobs(cfg, jobs, np.random.default_rng(1))
    t0 = time.perf_counter()
    simulate_reference(inputs["arrival"], inputs["tasks"], inputs["barrier"], inputs["times"],
                       cfg.servers, cfg.stragglers, cfg.barriers == 2)
    return jobs / (time.perf_counter() - t0)


def time_ciw(servers, lam, jobs):
    import ciw

    network = ciw.create_network(arrival_distributions=[ciw.dists.Exponential(lam)],
                                 service_distributions=[ciw.dists.Exponential(1.0)],
                                 number_of_servers=[servers])
    ciw.seed(1)
    sim = ciw.Simulation(network)
    t0 = time.perf_counter()
    sim.simulate_until_max_customers(jobs, method="Finish")
    return jobs / (time.perf_counter() - t0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2_000_000, help="jobs per kernel run")
    parser.add_argument("--reference-jobs", type=int, default=20_000)
    args = parser.parse_args()
    print(f"# Simulator speed on {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, numpy {np.__version__}")
    run_replication(SYSTEMS[0][1], 1000, 0)  # compile outside the timings
    print("| system | kernel jobs/s (1 core) | end-to-end jobs/s | plain Python jobs/s | Ciw jobs/s "
          "| kernel / Python |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, cfg in SYSTEMS:
        t0 = time.perf_counter()
        rep = run_replication(cfg, args.jobs, 1)
        wall = time.perf_counter() - t0
        kernel = args.jobs / rep.kernel_seconds
        ref = time_reference(cfg, args.reference_jobs)
        ciw_speed = time_ciw(cfg.servers, cfg.arrival_rate, args.reference_jobs) if cfg.tasks == 1 else None
        ciw_text = f"{ciw_speed:,.0f}" if ciw_speed else "n/a"
        print(f"| {name} | {kernel:,.0f} | {args.jobs / wall:,.0f} | {ref:,.0f} | {ciw_text} | "
              f"{kernel / ref:,.0f}x |", flush=True)

    cfg = SYSTEMS[0][1]
    reps = 2 * (os.cpu_count() or 1)
    print(f"\n| replications of {args.jobs // 4:,} jobs ({SYSTEMS[0][0]}) | processes | seconds "
          "| jobs/s | speed-up |")
    print("|---|---:|---:|---:|---:|")
    base = None
    for workers in sorted({1, os.cpu_count() or 1}):
        t0 = time.perf_counter()
        simulate(cfg, jobs=args.jobs // 4, replications=reps, seed=1, workers=workers, progress=False)
        sec = time.perf_counter() - t0
        base = base or sec
        print(f"| {reps} | {workers} | {sec:.2f} | {reps * (args.jobs // 4) / sec:,.0f} | "
              f"{base / sec:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
