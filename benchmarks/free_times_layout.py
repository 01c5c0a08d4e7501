"""Benchmark: the central kernel's two layouts of the workers' free times, a heap and an ascending array.

Prints ns per job of one ``run_chunk`` call (200,000 jobs drawn once, best of
5, one core) with each layout, for s from 8 to 256 workers, 1-task jobs,
barrier jobs of k = s/4 and a hybrid of half barrier jobs of k = s/2, at half
of s/k jobs per unit time. Both layouts give the same outputs (tested); the
kernel takes the array up to ``SORTED_FREE_MAX`` workers
(``barrier_queues.schedulers.central``), where this table crosses over.

Usage::

    python benchmarks/free_times_layout.py
"""

from __future__ import annotations

import time

import numpy as np

from barrier_queues import BarrierSystem
from barrier_queues.inputs import draw_jobs
from barrier_queues.kernels import kernels_module
from barrier_queues.rules import kernel_params
from barrier_queues.schedulers.base import job_outputs
from barrier_queues.schedulers.central import SORTED_FREE_MAX


def ns_per_job(system: BarrierSystem, sorted_free: bool, jobs: int = 200_000, repeat: int = 5) -> float:
    chunk = draw_jobs(system, jobs, np.random.default_rng(1))
    code, stragglers, params = kernel_params(system)
    best = float("inf")
    for _ in range(repeat):
        out = job_outputs(jobs)
        t0 = time.perf_counter()
        kernels_module().run_chunk(
            chunk["arrival"], chunk["tasks"], chunk["barrier"], chunk["times"], chunk["offsets"], system.phases,
            code, stragglers, np.asarray(params), system.barriers == 2, False, 1.0, 0.0, np.empty(0),
            np.zeros(system.servers), np.arange(system.servers), np.zeros(1), out["start"], out["departure"],
            out["work"], out["useful"], out["completed"], np.empty(0, dtype=np.int64), np.empty(0), np.empty(0),
            sorted_free)
        best = min(best, time.perf_counter() - t0)
    return best / jobs * 1e9


def main() -> None:
    print(f"Central kernel, ns per job (best of 5; the kernel uses the array up to s = {SORTED_FREE_MAX})\n")
    print("| workers s | jobs | heap | ascending array | array / heap |")
    print("|---:|---|---:|---:|---:|")
    for s in (8, 16, 32, 64, 96, 128, 256):
        for label, k, fraction in (("k = 1", 1, 1.0), ("k = s/4", s // 4, 1.0), ("half k = s/2", s // 2, 0.5)):
            system = BarrierSystem(s, k, barrier_fraction=fraction, arrival_rate=0.5 * s / k)
            heap, array = ns_per_job(system, False), ns_per_job(system, True)
            print(f"| {s} | {label} | {heap:,.0f} | {array:,.0f} | {array / heap:.2f} |", flush=True)


if __name__ == "__main__":
    main()
