"""Print the markdown tables of ``data/README.md`` from the committed Spark runs.

Usage::

    python tools/spark_runs_table.py data/spark            # runs with Poisson arrivals (and barrier() runs)
    python tools/spark_runs_table.py data/spark-saturated  # saturated runs: Spark's stability limit
    python tools/spark_runs_table.py data/spark-mixed      # mixed workloads: several k, barrier and plain jobs
    python tools/spark_runs_table.py data/spark-failures   # injected failures: attempts, aborts, gaps

Every number comes from the run folders through :mod:`barrier_queues.spark_analysis`
(the same functions as the Spark chapter), so the README's tables can be
regenerated rather than copied by hand. Reads only; writes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from barrier_queues import spark_analysis as sa
from barrier_queues import stability_limit


def _size_kb(path: Path) -> int:
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1024)


def _ms(x: float) -> str:
    return f"{1000 * x:.0f}"


def poisson_table(runs: list) -> list[str]:
    head = ("| run | s | k | phases | lambda (1/s) | task mean (s) | seed | measured jobs | lambda achieved "
            "| rho offered / achieved | run time (s) | Python start-up median (ms) | task cost median (ms) "
            "| load per core | blocked jobs | mean waiting (s) [95 % CI] | mean sojourn (s) | served honestly "
            "| size (KB) |")
    lines = [head, "|---|" + "---:|" * 17 + "---:|"]
    for r in runs:
        s = sa.run_summary(r)
        c = s["serving"]
        lo, hi = s["mean_waiting_ci"]
        lines.append(
            f"| `{r.name}` | {r.executors} | {r.tasks_per_job} | {r.sync_points + 1} | {r.arrival_rate:g} "
            f"| {r.task_mean:.3g} | {r.metadata['config']['seed']} | {s['jobs']} | {s['achieved_arrival_rate']:.3f} "
            f"| {s['offered_utilization']:.2f} / {s['achieved_utilization']:.3f} "
            f"| {round(r.metadata['total_seconds'])} | {_ms(c['python_startup_median'])} "
            f"| {_ms(c['task_cost_median'])} | {c['load_per_core']:.2f} | {s['overhead_samples']} "
            f"| {s['mean_waiting']:.2f} [{lo:.2f}, {hi:.2f}] | {s['mean_sojourn']:.2f} "
            f"| {'yes' if c['honest'] else 'no'} | {_size_kb(r.path)} |")
    return lines


def saturated_table(runs: list) -> list[str]:
    head = ("| run | s | k | task mean (s) | seed | jobs | Spark lambda_max (1/s) [95 % CI] | model lambda_max "
            "(eq. 5) | Spark / model | run time (s) | task cost median (ms) | load per core | served honestly "
            "| size (KB) |")
    lines = [head, "|---|" + "---:|" * 12 + "---:|"]
    for r in runs:
        est = sa.saturation_rate(r)
        exact = stability_limit(r.executors, r.tasks_per_job, task_rate=1 / r.task_mean)
        c = sa.serving_check(r)
        lo, hi = est["lambda_max_ci"]
        lines.append(
            f"| `{r.name}` | {r.executors} | {r.tasks_per_job} | {r.task_mean:.3g} | {r.metadata['config']['seed']} "
            f"| {est['jobs']} | {est['lambda_max']:.3f} [{lo:.3f}, {hi:.3f}] | {exact.lambda_max:.3f} "
            f"| {est['lambda_max'] / exact.lambda_max:.2f} | {round(r.metadata['total_seconds'])} "
            f"| {_ms(c['task_cost_median'])} | {c['load_per_core']:.2f} | {'yes' if c['honest'] else 'no'} "
            f"| {_size_kb(r.path)} |")
    return lines


def mixed_table(runs: list) -> list[str]:
    head = ("| run | s | workload | task mean (s) | lambda (1/s) | seed | measured jobs | lambda achieved "
            "| run time (s) | task cost median (ms) | load per core | barrier jobs overtaken | mean waiting of "
            "barrier jobs (s) | served honestly | size (KB) |")
    lines = [head, "|---|---:|---|" + "---:|" * 11 + "---:|"]
    for r in runs:
        config = r.metadata["config"]
        workload = (f"barrier k = {config['tasks_pmf']}" if config.get("tasks_pmf")
                    else f"k = {config['tasks']}, barrier share {config.get('barrier_fraction', 1.0):g}")
        jobs = r.jobs.sort_values("arrival")
        over = sa.overtakes(jobs.last_launch.to_numpy(), jobs.arrival.to_numpy(), jobs.barrier.to_numpy(dtype=bool))
        gangs = jobs.barrier.to_numpy(dtype=bool)
        arrivals = jobs.arrival.to_numpy()
        c = sa.serving_check(r)
        lines.append(
            f"| `{r.name}` | {r.executors} | {workload} | {r.task_mean:.3g} | {r.arrival_rate:g} | {config['seed']} "
            f"| {len(jobs)} | {(len(arrivals) - 1) / (arrivals[-1] - arrivals[0]):.3f} "
            f"| {round(r.metadata['total_seconds'])} | {_ms(c['task_cost_median'])} | {c['load_per_core']:.2f} "
            f"| {(over[gangs] > 0).mean():.1%} | {jobs.waiting[gangs].mean():.2f} "
            f"| {'yes' if c['honest'] else 'no'} | {_size_kb(r.path)} |")
    return lines


def failures_table(paths: list) -> list[str]:
    from barrier_queues import spark_failures as sf

    head = ("| run | stage | failure rate (1/s) | seed | jobs | aborted (Spark / model) | mean attempts (Spark / "
            "model) | jobs as the model says | resubmissions | partial reruns | gap to the next attempt, median (s) "
            "| kill lag, median (s) | run time (s) | served honestly | size (KB) |")
    lines = [head, "|---|---|" + "---:|" * 12 + "---:|"]
    for p in paths:
        f = sf.failure_summary(p)
        meta = json.loads((p / "metadata.json").read_text())
        serving = meta.get("serving") or {}
        lines.append(
            f"| `{p.name}` | {f['stage']} | {f['failure_rate']:g} | {meta['config']['seed']} | {f['jobs']} "
            f"| {f['aborted_share']:.2f} / {f['predicted_aborted_share']:.2f} | {f['mean_attempts']:.2f} / "
            f"{f['predicted_mean_attempts']:.2f} | {f['jobs_as_predicted']} | {f['resubmissions']} "
            f"| {f['partial_reruns']} "
            f"| {f['gap_median']:.2f} | {f['kill_lag_median']:.2f} | {round(meta['total_seconds'])} "
            f"| {'yes' if serving.get('honest') else 'no'} | {_size_kb(p)} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="a folder of run folders (each with metadata.json)")
    args = parser.parse_args(argv)
    paths = sa.discover_runs(args.folder)
    if paths and all(json.loads((p / "metadata.json").read_text())["config"].get("failure_rate")
                     for p in paths):
        print("\n".join(failures_table(paths)))
        return 0
    runs = [sa.load_run(p) for p in paths]
    if not runs:
        print(f"{args.folder}: no run folders (with metadata.json) found", file=sys.stderr)
        return 2
    mixed = [r for r in runs if sa.is_mixed(r)]
    runs = [r for r in runs if not sa.is_mixed(r)]
    saturated = [r for r in runs if r.saturated]
    if saturated and len(saturated) != len(runs):
        print(f"{args.folder}: mixes saturated and Poisson runs; give one kind per folder", file=sys.stderr)
        return 2
    tables = ([saturated_table(runs) if saturated else poisson_table(runs)] if runs else []) + \
        ([mixed_table(mixed)] if mixed else [])
    print("\n\n".join("\n".join(t) for t in tables))      # one table per kind of run
    return 0


if __name__ == "__main__":
    sys.exit(main())
