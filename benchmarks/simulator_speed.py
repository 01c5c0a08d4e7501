"""Benchmark: the simulator's speed as a user meets it, side by side with the paper authors' simulator.

Tables, printed as markdown:

1. **Whole process**, one command against one command on the same system
   and number of jobs: ``barrier-queues simulate ... --json`` (Python start,
   imports, kernel cache load, random draws, statistics) and, with
   ``--forkulator DIR``, forkulator's ``FJSimulator`` (JVM start, simulation,
   its output files), each timed from process start to exit, median of
   ``--repeat`` runs, with the peak resident memory of the process
   (``os.wait4``). Kernel-only speed (from the JSON) is shown beside it.
2. **Memory against jobs**: peak memory of ``simulate`` at 10^5 .. 10^7 jobs
   (statistics stream: it should not grow with the jobs).
3. **Kernel work**: jobs/s per core against the work per job (random draws
   and heap operations), and the plain-Python reference's speed on the same
   model; replications on 1 and all processes.
4. **Time to a stated precision**: ``simulate --precision 0.01`` per system,
   whole process, with the jobs it needed, beside forkulator's fixed-length
   run of as many jobs (forkulator has no stopping rule).
5. **Sweeps**: one ``barrier-queues sweep`` command over a 16-point grid,
   whole process, with 1 and all local worker processes and on Spark
   (``local[1]`` and ``local[N]``: the same code path as a cluster).

``--forkulator DIR`` expects a forkulator checkout that is already built
(its classes in ``DIR/bin``, as its ``forkulator.sh`` expects; build it as its
own README says); this script only runs it.

Usage::

    python benchmarks/simulator_speed.py [--jobs 2000000] [--repeat 3] [--forkulator DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: the command users run: the installed ``barrier-queues`` script beside this Python (``python -m
#: barrier_queues.cli`` if it is missing)
CLI = ([script] if (script := shutil.which("barrier-queues", path=os.path.dirname(sys.executable)))
       else [sys.executable, "-m", "barrier_queues.cli"])
#: (name, our CLI options, forkulator options or None): the paper's kinds of system, s from 12 to 32
CONFIGS = [
    ("1-barrier s=16 k=4 rho=0.7", "-s 16 -k 4 --arrival-rate 2.8", "-q b -w 16 -t 4 -A x 2.8 -S x 1.0"),
    ("2-barrier s=16 k=4 rho=0.4", "-s 16 -k 4 -b 2 --arrival-rate 1.6", "-q bb -w 16 -t 4 -A x 1.6 -S x 1.0"),
    ("1-barrier (s,k,l) = (12,6,4)", "-s 12 -k 6 -l 4 --arrival-rate 1.5", "-q bskl 4 -w 12 -t 6 -A x 1.5 -S x 1.0"),
    ("2-barrier (s,k,l) = (12,12,9), bimodal tasks",
     "-s 12 -k 12 -l 9 -b 2 --task-dist bimodal:p=0.9,rate1=2,rate2=0.2 --arrival-rate 0.2",
     "-q bbskl 9 -w 12 -t 12 -A x 0.2 -S bmx 2 0.2 0.1"),
    ("hybrid p=0.5 s=32 k=8 rho=0.6", "-s 32 -k 8 --barrier-fraction 0.5 --arrival-rate 2.4",
     "-q bh 0.5 -w 32 -t 8 -A x 2.4 -S x 1.0"),
    ("heterogeneous k in {4, 12} s=16 rho=0.5", "-s 16 --tasks-pmf 4:0.5,12:0.5 --arrival-rate 1.0", None),
    ("Spark overhead (paper's iid) s=16 k=4", "-s 16 -k 4 --overhead paper --arrival-rate 2.0",
     "-q b -w 16 -t 4 -A x 2.0 -S xmux 1.0 0 1 2.0"),
    ("M/M/32 (k = 1) rho=0.7", "-s 32 -k 1 --arrival-rate 22.4", "-q b -w 32 -t 1 -A x 22.4 -S x 1.0"),
]


def run_process(cmd: list[str], cwd=None) -> tuple[float, float, str]:
    """Wall seconds from start to exit, peak resident memory (MB) of the process, and its stdout."""
    out = tempfile.TemporaryFile()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, cwd=cwd)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    text = out.read().decode()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}")
    return seconds, usage.ru_maxrss / 1024, text


def ours(options: str, jobs: int, extra: str = "") -> list[str]:
    return [*CLI, "simulate", *options.split(), *extra.split(),
            "--jobs", str(jobs), "--seed", "1", "--json"]


def forkulator(directory: Path, options: str, jobs: int, outdir: str, interval: int = 1) -> list[str]:
    """forkulator.sh's command: ``jobs`` jobs, statistics over every ``interval``-th job (``-n jobs/i -i i``)."""
    jars = ":".join(str(directory / "lib" / j) for j in ("commons-math3-3.6.1.jar", "commons-cli-1.2.jar"))
    return ["java", "-Xmx5g", "-cp", f"{directory / 'bin'}:{jars}", "forkulator.FJSimulator", *options.split(),
            "-n", str(jobs // interval), "-i", str(interval), "-o", f"{outdir}/run"]


def median_run(cmd, repeat, cwd=None):
    runs = [run_process(cmd, cwd) for _ in range(repeat)]
    seconds = statistics.median(r[0] for r in runs)
    return seconds, max(r[1] for r in runs), runs[-1][2]


def whole_process(jobs: int, repeat: int, fk: Path | None, intervals: list[int]) -> None:
    print(f"\n## Whole process, {jobs:,} jobs, median of {repeat} runs (wall seconds from start to exit)\n")
    head = "| system | barrier-queues (s) | peak MB | kernel jobs/s |"
    for i in intervals if fk else []:
        head += f" forkulator -i {i} (s) | peak MB | speed-up |"
    print(head)
    print("|---|---:|---:|---:|" + ("---:|---:|---:|" * len(intervals) if fk else ""))
    for name, mine, theirs in CONFIGS:
        seconds, mb, text = median_run(ours(mine, jobs), repeat)
        kernel = json.loads(text)["kernel_jobs_per_second"]
        row = f"| {name} | {seconds:.2f} | {mb:,.0f} | {kernel:,.0f} |"
        for i in intervals if fk else []:
            if theirs is None:
                row += " n/a (no pmf of k) | | |"
                continue
            with tempfile.TemporaryDirectory() as tmp:
                fsec, fmb, _ = median_run(forkulator(fk, theirs, jobs, tmp, i), repeat, cwd=tmp)
            row += f" {fsec:.2f} | {fmb:,.0f} | {fsec / seconds:.1f}x |"
        print(row, flush=True)


def to_precision(target: float, fk: Path | None) -> None:
    """Time to a stated precision: ``simulate --precision target`` per system (replications added in rounds until
    every mean's 95 % half-width is at most ``target`` of the mean), whole process, beside forkulator's
    fixed-length run of the same number of jobs (``-i 100``; it has no stopping rule)."""
    print(f"\n## Time to {target:.0%} precision (every mean's 95 % half-width), whole process, one run each\n")
    head = "| system | jobs used | replications | met | barrier-queues (s) |"
    print(head + (" forkulator -i 100, same jobs (s) | speed-up |" if fk else ""))
    print("|---|---:|---:|---|---:|" + ("---:|---:|" if fk else ""))
    for name, mine, theirs in CONFIGS:
        seconds, _, text = run_process([*CLI, "simulate", *mine.split(),
                                         "--precision", str(target), "--seed", "1", "--json"])
        info = json.loads(text)["precision"]
        row = (f"| {name} | {info['jobs_used']:,} | {info['replications']:,} | {'yes' if info['met'] else 'no'} "
               f"| {seconds:.2f} |")
        if fk and theirs is None:
            row += " n/a (no pmf of k) | |"
        elif fk:
            with tempfile.TemporaryDirectory() as tmp:
                fsec, _, _ = run_process(forkulator(fk, theirs, info["jobs_used"], tmp, 100), cwd=tmp)
            row += f" {fsec:.2f} | {fsec / seconds:.1f}x |"
        print(row, flush=True)


def memory_against_jobs() -> None:
    print("\n## Peak memory against the number of jobs (statistics stream; per-job records are not kept)\n")
    print("| jobs | seconds | peak MB |")
    print("|---:|---:|---:|")
    for jobs in (100_000, 1_000_000, 10_000_000):
        seconds, mb, _ = run_process(ours(CONFIGS[0][1], jobs))
        print(f"| {jobs:,} | {seconds:.2f} | {mb:,.0f} |", flush=True)


def quick_answers(repeat: int) -> None:
    print(f"\n## Quick answers, median of {repeat} runs (wall seconds)\n")
    print("| command | seconds | x bare `import numpy` |")
    print("|---|---:|---:|")
    base, _, _ = median_run([sys.executable, "-c", "import numpy"], repeat)
    for label, cmd in (("python -c 'import numpy'", [sys.executable, "-c", "import numpy"]),
                       ("barrier-queues --help", [*CLI, "--help"]),
                       ("barrier-queues stability -s 16 -k 4", [sys.executable, "-m", "barrier_queues.cli",
                                                                 "stability", "-s", "16", "-k", "4"]),
                       ("barrier-queues bound -s 16 -k 8 --arrival-rate 1 --epsilon 1e-3",
                        [*CLI, "bound", "-s", "16", "-k", "8",
                         "--arrival-rate", "1", "--epsilon", "1e-3"])):
        seconds, _, _ = median_run(cmd, repeat)
        print(f"| `{label}` | {seconds:.3f} | {seconds / base:.2f} |", flush=True)


def kernel_work(jobs: int) -> None:
    import numpy as np

    from barrier_queues import BarrierSystem
    from barrier_queues.inputs import draw_jobs
    from barrier_queues.rules import reference_rule
    from barrier_queues.runs import run_replication
    from barrier_queues.schedulers.central import simulate_reference
    from barrier_queues.simulate import simulate

    print("\n## The kernel against its work (one core, random draws excluded)\n")
    print("| system | kernel jobs/s | draws + heap operations per job | ns per operation | plain Python jobs/s "
          "| kernel / Python |")
    print("|---|---:|---:|---:|---:|---:|")
    systems = [("1-barrier s=16 k=4", BarrierSystem(16, 4, arrival_rate=2.8)),
               ("1-barrier s=64 k=16", BarrierSystem(64, 16, arrival_rate=2.8)),
               ("2-barrier (16,8,6)", BarrierSystem(16, 8, 6, barriers=2, arrival_rate=1.2)),
               ("M/M/16 (k=1)", BarrierSystem(16, 1, arrival_rate=11.2))]
    run_replication(systems[0][1], 1000, 0)
    for name, system in systems:
        rep = run_replication(system, jobs, 1)
        kernel = jobs / rep.kernel_seconds
        k, s = system.tasks, system.servers
        ops = k * 2 * np.log2(s) + k + 1        # k pops and k pushes of log2(s) levels, k draws, one arrival
        inputs = draw_jobs(system, 20_000, np.random.default_rng(1))
        t0 = time.perf_counter()
        simulate_reference(inputs["arrival"], inputs["tasks"], inputs["barrier"], inputs["times"], s,
                           system.barriers == 2, **reference_rule(system))
        ref = 20_000 / (time.perf_counter() - t0)
        print(f"| {name} | {kernel:,.0f} | {ops:.0f} | {1e9 / (kernel * ops):.1f} | {ref:,.0f} | "
              f"{kernel / ref:,.0f}x |", flush=True)
    system = systems[0][1]
    reps = 2 * (os.cpu_count() or 1)
    print(f"\n| replications of {jobs // 4:,} jobs (1-barrier s=16 k=4) | processes | seconds | jobs/s | speed-up "
          "| cores busy (CPU s / s) |")
    print("|---|---:|---:|---:|---:|---:|")
    base = None
    for workers in sorted({1, os.cpu_count() or 1}):
        cpu0 = _cpu_seconds()
        t0 = time.perf_counter()
        simulate(system, jobs=jobs // 4, replications=reps, seed=1, workers=workers, progress=False)
        sec = time.perf_counter() - t0
        busy = (_cpu_seconds() - cpu0) / sec
        base = base or sec
        print(f"| {reps} | {workers} | {sec:.2f} | {reps * (jobs // 4) / sec:,.0f} | {base / sec:.2f} | {busy:.2f} |",
              flush=True)


def _cpu_seconds() -> float:
    """User + system CPU time of this process and its reaped children (the pool's workers)."""
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def sweep_speed(jobs: int) -> None:
    grid = ["-s", "16", "-k", "1,2,4,8", "--utilization", "0.3,0.5,0.6,0.7", "--jobs", str(jobs), "--seed", "1"]
    cores = os.cpu_count() or 1
    print(f"\n## A sweep of 16 points x {jobs:,} jobs, whole process (`barrier-queues sweep -s 16 -k 1,2,4,8 "
          f"--utilization 0.3,0.5,0.6,0.7 --jobs {jobs}`)\n")
    print("| backend | seconds | speed-up over 1 process |")
    print("|---|---:|---:|")
    base = None
    runs = [(f"local, --workers {w}", ["--workers", str(w)]) for w in sorted({1, cores})]
    try:
        import pyspark  # noqa: F401
        runs += [(f"spark, --master local[{w}]", ["--backend", "spark", "--master", f"local[{w}]"])
                 for w in sorted({1, cores})]
    except ImportError:
        print("| spark | pyspark not installed | |")
    for label, extra in runs:
        with tempfile.TemporaryDirectory() as tmp:
            seconds, _, _ = run_process([*CLI, "sweep", *grid, *extra,
                                         "--out", f"{tmp}/sweep"])
        base = base or seconds
        print(f"| {label} | {seconds:.1f} | {base / seconds:.2f} |", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="+", default=[2_000_000],
                        help="jobs per run (several: one table each)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--forkulator", type=Path, default=None, help="a built forkulator checkout (classes in bin/)")
    parser.add_argument("--intervals", type=int, nargs="+", default=[1, 100],
                        help="forkulator's sampling intervals -i to time (statistics over every i-th job; "
                             "1 = every job, as barrier-queues)")
    parser.add_argument("--precision", type=float, default=0.01, help="relative precision of the time-to-precision "
                        "table (default 0.01)")
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=["whole", "precision", "memory", "quick", "kernel", "sweep"])
    args = parser.parse_args()
    if args.forkulator is not None:
        if not (args.forkulator / "bin" / "forkulator" / "FJSimulator.class").exists():
            parser.error(f"--forkulator must be a built forkulator checkout ({args.forkulator}/bin/forkulator/"
                         "FJSimulator.class not found; build it as its README says)")
        if shutil.which("java") is None:
            parser.error("--forkulator needs java on PATH")
    import compileall

    import numpy

    import barrier_queues

    # the package's bytecode, current (as pip writes it when it installs a wheel): with PYTHONDONTWRITEBYTECODE set,
    # or after an edit of an editable install, every command would otherwise compile the modules again (~0.25 s)
    compileall.compile_dir(Path(barrier_queues.__file__).parent, quiet=1)
    print(f"# Simulator speed on {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"numpy {numpy.__version__}, {time.strftime('%Y-%m-%d')}")
    if "quick" not in args.skip:
        quick_answers(max(args.repeat, 5))
    if "whole" not in args.skip:
        for jobs in args.jobs:
            whole_process(jobs, args.repeat, args.forkulator, args.intervals)
    if "precision" not in args.skip:
        to_precision(args.precision, args.forkulator)
    if "memory" not in args.skip:
        memory_against_jobs()
    if "kernel" not in args.skip:
        kernel_work(min(args.jobs))
    if "sweep" not in args.skip:
        sweep_speed(min(args.jobs) // 4)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
