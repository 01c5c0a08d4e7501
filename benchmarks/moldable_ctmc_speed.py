"""Whole-process time of the exact moldable CTMC with its incomplete-LU preconditioner, beside the earlier one.

Each measurement is a fresh process (``python benchmarks/moldable_ctmc_speed.py --one ...``) that solves one
system with :func:`barrier_queues.moldable_ctmc.moldable_ctmc` and prints its means: what a user meets, import and
chain included. ``now`` is the preconditioner of :data:`barrier_queues.moldable_ctmc.ILU` (the natural,
breadth-first order, drop tolerance 1e-2, fill factor 3); ``before`` the one it replaced (COLAMD, 1e-4, 10). The
two run interleaved, ``--repeats`` times each; the table gives the medians and the largest relative difference of
their means (both solve pi Q = 0 to a GMRES residual of 1e-13).

Usage: python benchmarks/moldable_ctmc_speed.py [--systems 5:0.3 5:0.6 6:0.3 6:0.6] [--policy take-fraction]
       [--take-fraction 0.5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

SETTINGS = {"now": None, "before": {"drop_tol": 1e-4, "fill_factor": 10, "permc_spec": "COLAMD"}}


def one(s: int, load: float, policy: str, fraction: float | None, setting: str) -> None:
    """Solve one system (s = k workers and tasks, Exp(1) tasks, utilization ``load``) and print its means."""
    import barrier_queues.moldable_ctmc as mc

    if SETTINGS[setting] is not None:
        mc.ILU = SETTINGS[setting]
    r = mc.moldable_ctmc(s, s, load, policy, take_fraction=fraction)
    print(json.dumps({"states": r.states, "mean_waiting": r.mean_waiting, "mean_execution": r.mean_execution}))


def measure(system: str, policy: str, fraction: float | None, setting: str) -> tuple[float, dict]:
    s, load = system.split(":")
    cmd = [sys.executable, __file__, "--one", s, load, setting, "--policy", policy]
    if fraction is not None:
        cmd += ["--take-fraction", repr(fraction)]
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return time.perf_counter() - start, json.loads(out.splitlines()[-1])


def _system(text: str) -> str:
    """``s:utilization`` with an integer 1 <= s <= 8 and 0 < utilization < 1."""
    try:
        s, load = text.split(":")
        if 1 <= int(s) <= 8 and 0 < float(load) < 1:
            return f"{int(s)}:{float(load)!r}"
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"a system must be s:utilization with 1 <= s <= 8, 0 < utilization < 1 "
                                     f"(got {text!r})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", nargs="+", type=_system, default=["5:0.3", "5:0.6", "6:0.3", "6:0.6"],
                        help="s:utilization (k = s, Exp(1) tasks)")
    parser.add_argument("--policy", default="take-fraction")
    parser.add_argument("--take-fraction", type=float, default=0.5)
    parser.add_argument("--repeats", type=int, choices=range(1, 21), default=3, metavar="1..20")
    parser.add_argument("--one", nargs=3, metavar=("S", "LOAD", "SETTING"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    fraction = args.take_fraction if args.policy == "take-fraction" else None
    if args.one:
        one(int(args.one[0]), float(args.one[1]), args.policy, fraction, args.one[2])
        return
    print(f"moldable CTMC, {args.policy}, k = s, Exp(1) tasks; whole process, median of {args.repeats}")
    print("| system | utilization | states | now (s) | before (s) | speed-up | max relative difference of the means |")
    print("|---|---|---|---|---|---|---|")
    for system in args.systems:
        times = {"now": [], "before": []}
        means = {}
        for _ in range(args.repeats):
            for setting in times:                    # interleaved: the machine's drift hits both alike
                t, out = measure(system, args.policy, fraction, setting)
                times[setting].append(t)
                means[setting] = out
        diff = max(abs(means["now"][m] - means["before"][m]) / abs(means["before"][m])
                   for m in ("mean_waiting", "mean_execution") if means["before"][m])
        now, before = statistics.median(times["now"]), statistics.median(times["before"])
        s, load = system.split(":")
        print(f"| s = k = {s} | {load} | {means['now']['states']:,} | {now:.2f} | {before:.2f} | {before / now:.1f}x | "
              f"{diff:.1e} |")


if __name__ == "__main__":
    main()
