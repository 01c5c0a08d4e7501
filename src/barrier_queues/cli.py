"""Command line: ``barrier-queues <command> ...``.

Commands
--------
stability
    Maximum stable load of a 1- or 2-barrier (s,k,l) system (Table I, CTMC,
    order statistics). ``--json`` prints one JSON object.
simulate
    Simulate a barrier system (any of MODEL.md section 2's variants) and print
    utilization, means and quantiles of waiting, sojourn and execution time
    with confidence intervals; ``--saturated`` estimates the stability limit.
bound
    Waiting, sojourn and service quantile bounds of a 1-barrier system
    (stochastic network calculus, paper section III).
plan
    The number of tasks per job k (and l) that minimises delay for a cluster.
spark-bench
    Run barrier jobs on a real Spark (local-cluster by default) and record them.
spark-analyze
    Summarise a Spark event log: waiting and sojourn times, blocking-overhead
    samples and their KS test against min(U(0,R), Exp(lambda)).

Bad input prints one line ``barrier-queues: error: ...`` naming the
parameter and its valid range, and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from ._validation import ParameterError


def _stability(args) -> dict:
    from .stability import stability_limit

    lim = stability_limit(args.servers, args.tasks, args.needed, args.barriers,
                          task_rate=args.task_rate, task_dist=args.task_dist,
                          method=args.method, max_states=args.max_states)
    out = lim.to_dict()
    if out["states"] is None:
        out.pop("states")
    out["lambda_max_unit"] = "jobs per unit time" + (" (mu = 1)" if args.task_rate == 1.0
                                                      and args.task_dist is None else "")
    return out


def _print_stability(out: dict) -> None:
    name = f"({out['servers']},{out['tasks']},{out['needed']}) {out['barriers']}-barrier"
    print(f"system            {name}")
    print(f"task law          {out['task_law']}")
    print(f"method            {out['method']}" + (f" ({out['states']:,} states)"
                                                   if "states" in out else ""))
    print(f"lambda_max        {out['lambda_max']:.10g}  {out['lambda_max_unit']}")
    print(f"rho_max           {out['rho_max']:.10g}")
    print(f"rho_useful        {out['rho_useful']:.10g}")
    print(f"task_throughput   {out['task_throughput']:.10g}  tasks per worker per mean task time")


def _simulate(args) -> dict:
    from .simulate import SimulationConfig, saturated_throughput, simulate

    if args.tasks is None and args.tasks_pmf is None:
        raise ParameterError("give --tasks K (1 <= K <= servers) or --tasks-pmf 'k:p,...' (got neither)")
    config = SimulationConfig(
        servers=args.servers, tasks=args.tasks if args.tasks_pmf is None else None,
        arrival_rate=None if args.saturated else args.arrival_rate, needed=args.needed,
        barriers=args.barriers, task_rate=args.task_rate, task_dist=args.task_dist,
        tasks_pmf=args.tasks_pmf, barrier_fraction=args.barrier_fraction, arrival=args.arrival,
        overhead=args.overhead, revive_interval=args.revive)
    if args.saturated:
        out = saturated_throughput(config, jobs=args.jobs, replications=args.replications,
                                   seed=args.seed, workers=args.workers,
                                   progress=False if args.json else None)
        out["mode"] = "saturated"
    else:
        if args.arrival_rate is None:
            raise ParameterError("--arrival-rate must be given (a number > 0), or --saturated")
        result = simulate(config, jobs=args.jobs, replications=args.replications, seed=args.seed,
                          warmup=args.warmup, workers=args.workers,
                          progress=False if args.json else None,
                          allow_unstable=args.allow_unstable)
        out = result.summary()
        out["mode"] = "queue"
        if args.jobs_csv:
            result.to_frame().to_csv(args.jobs_csv, index=False)
            out["jobs_csv"] = args.jobs_csv
    out["config"] = config.describe()
    out["seed"] = args.seed
    return out


def _print_simulation(out: dict) -> None:
    cfg = out["config"]
    k = cfg["tasks"] if cfg["tasks"] is not None else f"pmf {cfg['tasks_pmf']}"
    print(f"system        s = {cfg['servers']}, k = {k}, l = {cfg['needed']}, {cfg['barriers']}-barrier, "
          f"barrier fraction {cfg['barrier_fraction']}, task law {cfg['task_dist']}")
    if out["mode"] == "saturated":
        print(f"saturated     {out['replications']} x {out['jobs']:,} jobs (warm-up {out['warmup']:,})")
        for key in ("lambda_max", "rho_max", "rho_useful"):
            lo, hi = out[f"{key}_ci"]
            print(f"{key:<13} {out[key]:.6g}   {int(out['level'] * 100)}% CI [{lo:.6g}, {hi:.6g}]")
        return
    print(f"arrivals      {cfg['arrival']}, rate {cfg['arrival_rate']}; overhead {cfg['overhead']}")
    print(f"jobs          {out['jobs']:,} measured ({out['replications']} replication(s), warm-up "
          f"{out['warmup']:,} each); CI method {out['ci']['method']}")
    print(f"utilization   {out['utilization']:.4f} measured, offered {out['offered_utilization']}")
    stab = out["stability"]
    print(f"stable        {out['stable']} (analytic lambda_max {stab['lambda_max']} by {stab['method']}; "
          f"waiting-time drift tau {stab['kendall_tau']:.2f})")
    print(f"{'':13} {'mean':>10} {'95% CI':>24} " + " ".join(f"{'q' + q:>10}" for q in out["quantiles"]["waiting"]))
    for name in ("waiting", "sojourn", "execution"):
        lo, hi = out["ci"][name]
        qs = " ".join(f"{v:>10.4f}" for v in out["quantiles"][name].values())
        print(f"{name:<13} {out['mean_' + name]:>10.4f} [{lo:>10.4f}, {hi:>10.4f}] {qs}")
    print(f"speed         {out['jobs_per_second']:,.0f} jobs/s end to end, "
          f"{out['kernel_jobs_per_second']:,.0f} jobs/s in the kernel")


def _bound(args) -> dict:
    from .bounds import bound
    from .simulate import SimulationConfig

    if (args.tasks is None) == (args.tasks_pmf is None):
        raise ParameterError("give exactly one of --tasks K and --tasks-pmf 'k:p,...'")
    config = SimulationConfig(servers=args.servers, tasks=args.tasks, tasks_pmf=args.tasks_pmf,
                              arrival_rate=args.arrival_rate, task_rate=args.task_rate,
                              barrier_fraction=args.barrier_fraction)
    out = bound(config, args.epsilon, args.form).to_dict()
    out["config"] = config.describe()
    return out


def _print_bound(out: dict) -> None:
    print(f"form              {out['form']} ({'martingale' if out['form'] == 'gigi' else 'union bound'})")
    print(f"epsilon           {out['epsilon']:g}")
    for key in ("waiting_quantile", "sojourn_quantile", "service_quantile"):
        print(f"{key:<17} {out[key]:.6g}")
    print(f"theta             {out['theta']:.6g} (theta* = {out['theta_star']:.6g}); "
          f"E[spacing] = {out['mean_spacing']:.6g}")


def _plan(args) -> dict:
    from .bounds import plan

    result = plan(args.servers, args.utilization, args.epsilon, args.barriers, args.form,
                  simulate_jobs=args.simulate_jobs, seed=args.seed,
                  min_needed_fraction=args.min_needed_fraction)
    return {"recommended": result["recommended"], "servers": args.servers,
            "utilization": args.utilization, "epsilon": args.epsilon, "barriers": args.barriers,
            "curve": result["curve"].to_dict(orient="records")}


def _print_plan(out: dict) -> None:
    import pandas as pd

    rec = out["recommended"]
    print(f"servers {out['servers']}, utilization {out['utilization']}, {out['barriers']}-barrier, "
          f"task mean s/k (constant work per job)")
    print(pd.DataFrame(out["curve"]).round(4).to_string(index=False))
    print(f"recommended: k = {rec['tasks']}, l = {rec['needed']} ({rec['criterion']} = {rec['value']:.4g})")


def _spark_analyze(args) -> dict:
    from .eventlog import blocking_overhead, parse_event_log
    from .spark_analysis import overhead_tests

    tables = parse_event_log(args.event_log, key_property=args.key_property)
    jobs = tables.jobs.sort_values("submission")
    if args.skip_jobs:
        jobs = jobs.iloc[args.skip_jobs:]
    if len(jobs) == 0:
        raise ParameterError(f"--skip-jobs must be below the number of jobs, {len(tables.jobs)} "
                             f"(got {args.skip_jobs})")
    span = jobs.submission.iloc[-1] - jobs.submission.iloc[0]
    rate = args.arrival_rate or ((len(jobs) - 1) / span if span > 0 else None)
    samples = blocking_overhead(tables)
    samples = samples[samples.job_id.isin(jobs.job_id)]
    out = {"event_log": str(args.event_log), "spark_version": tables.app.get("spark_version"),
           "jobs": int(len(jobs)), "tasks": int(tables.tasks.job_id.isin(jobs.job_id).sum()),
           "arrival_rate": rate, "mean_waiting": float(jobs.waiting.mean()),
           "mean_sojourn": float(jobs.sojourn.mean()), "mean_execution": float(jobs.execution.mean()),
           "quantiles": {m: {str(q): float(jobs[m].quantile(q)) for q in (0.5, 0.9, 0.99)}
                         for m in ("waiting", "sojourn")},
           "overhead_samples": [float(x) for x in samples.overhead], "revive": args.revive,
           "ks_statistic": None, "ks_pvalue": None}
    if len(samples) >= 2 and rate:
        tests = overhead_tests(samples.overhead, args.revive, rate)
        out.update(ks_statistic=tests["model"]["ks_statistic"], ks_pvalue=tests["model"]["ks_pvalue"],
                   model_mean=tests["model_mean"], mle_revive=tests["mle"]["revive"],
                   mle_rate=tests["mle"]["rate"], mle_ks_pvalue=tests["mle"]["ks_pvalue"],
                   uniform_ks_pvalue=tests["uniform"]["ks_pvalue"])
    if args.jobs_csv:
        tables.jobs.to_csv(args.jobs_csv, index=False)
        out["jobs_csv"] = args.jobs_csv
    return out


def _spark_bench(args) -> dict:
    from .spark_bench import SparkBenchConfig, _check_new_folder, archive_run, run_spark_bench

    _check_new_folder("--out", Path(args.out))          # before a run of many minutes, not after it
    if args.archive:
        _check_new_folder("--archive", Path(args.archive))
    config = SparkBenchConfig(executors=args.executors, tasks=args.tasks, arrival_rate=args.arrival_rate,
                              jobs=args.jobs, warmup_jobs=args.warmup_jobs, task_mean=args.task_mean,
                              sync_points=args.sync_points, revive_interval=args.revive, seed=args.seed,
                              master=args.master, time_limit=args.time_limit)
    run_dir = run_spark_bench(config, args.out, progress=not args.json)
    meta = json.loads((run_dir / "metadata.json").read_text())
    meta["run_dir"] = str(run_dir)
    if args.archive:
        meta["archive"] = str(archive_run(run_dir, args.archive))
    return meta


def _print_bench(out: dict) -> None:
    print(f"run folder        {out['run_dir']}  (status: {out['status']})")
    print(f"Spark {out['spark']}, Java {out['java']}, Python {out['python']}, master {out['master']}")
    print(f"submitted         {out.get('submitted')} jobs at {out.get('achieved_arrival_rate') or 0:.4g}/s "
          f"(offered utilization {out.get('offered_utilization') or 0:.3g}); total {out['total_seconds']:.1f} s")
    serving = out.get("serving") or {}
    if "honest" in serving:
        print(f"served honestly   {'yes' if serving['honest'] else 'no: ' + '; '.join(serving['problems'])} "
              f"(s = {serving['executors']} executors on {serving['cores']} cores; Python start-up median "
              f"{1000 * serving['python_startup_median']:.0f} ms)")
    elif serving:
        print(f"served honestly   not assessed ({serving.get('error')})")
    print(f"analyse with      barrier-queues spark-analyze {out['run_dir']}/eventlog/* "
          f"--skip-jobs {out['config']['warmup_jobs']}")
    if out.get("archive"):
        print(f"archived to       {out['archive']}")


def _print_spark(out: dict) -> None:
    print(f"event log         {out['event_log']} (Spark {out['spark_version']})")
    rate = f"{out['arrival_rate']:.4g}/s" if out["arrival_rate"] else "unknown"
    print(f"jobs              {out['jobs']} ({out['tasks']} tasks), arrival rate {rate}")
    print(f"mean waiting      {out['mean_waiting']:.4f} s;  mean sojourn {out['mean_sojourn']:.4f} s")
    n = len(out["overhead_samples"])
    if n:
        print(f"blocking overhead {n} samples, mean {np.mean(out['overhead_samples']):.4f} s")
    if out["ks_statistic"] is not None:
        print(f"KS vs min(U(0,{out['revive']}), Exp({out['arrival_rate']:.4g})): "
              f"D = {out['ks_statistic']:.4f}, p = {out['ks_pvalue']:.4f} (model mean {out['model_mean']:.4f} s)")
        print(f"maximum likelihood R = {out['mle_revive']:.4f} s, lambda = {out['mle_rate']:.4g}/s "
              f"(KS p = {out['mle_ks_pvalue']:.4f})")
    else:
        print("KS test           not run (fewer than 2 blocked jobs or unknown arrival rate)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="barrier-queues",
        description="Stability, CTMC, simulation and bounds for barrier-mode parallel systems "
                    "(Walker & Fidler 2025).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    st = sub.add_parser("stability", help="maximum stable load (Table I, CTMC, order statistics)",
                        description="Maximum stable job rate and utilization of a barrier system.")
    st.add_argument("--servers", "-s", type=int, required=True, help="workers s >= 1")
    st.add_argument("--tasks", "-k", type=int, required=True, help="tasks per job, 1 <= k <= s")
    st.add_argument("--needed", "-l", type=int, default=None,
                    help="tasks that must finish, 1 <= l <= k (default k)")
    st.add_argument("--barriers", "-b", type=int, choices=(1, 2), default=1,
                    help="1: start barrier; 2: start and departure barrier (default 1)")
    st.add_argument("--task-rate", type=float, default=1.0,
                    help="rate mu of exponential tasks (default 1)")
    st.add_argument("--task-dist", default=None,
                    help="task law, e.g. 'bimodal:p=0.9,rate1=10,rate2=0.1', 'erlang:shape=4,rate=4',"
                         " 'deterministic:value=1', 'empirical:file=PATH' (2-barrier only)")
    st.add_argument("--method", default="auto",
                    choices=("auto", "closed-form", "ctmc", "order-statistics"))
    st.add_argument("--max-states", type=int, default=12_000_000,
                    help="refuse CTMCs with more feasible states (default 12,000,000)")
    st.add_argument("--json", action="store_true", help="print one JSON object")
    st.set_defaults(run=_stability, show=_print_stability)

    sim = sub.add_parser("simulate", help="simulate a barrier system (queue or saturated)",
                         description="Simulate a barrier system with the compiled kernel.")
    sim.add_argument("--servers", "-s", type=int, required=True, help="workers s >= 1")
    sim.add_argument("--tasks", "-k", type=int, default=None, help="tasks per job, 1 <= k <= s")
    sim.add_argument("--needed", "-l", type=int, default=None, help="tasks that must finish (default k)")
    sim.add_argument("--barriers", "-b", type=int, choices=(1, 2), default=1)
    sim.add_argument("--arrival-rate", type=float, default=None, help="job arrival rate lambda > 0")
    sim.add_argument("--arrival", choices=("poisson", "deterministic"), default="poisson")
    sim.add_argument("--task-rate", type=float, default=1.0, help="rate mu of exponential tasks")
    sim.add_argument("--task-dist", default=None, help="task law spec, e.g. 'erlang:shape=4,rate=4'")
    sim.add_argument("--barrier-fraction", type=float, default=1.0,
                     help="probability p that a job is a barrier job (hybrid systems)")
    sim.add_argument("--tasks-pmf", default=None, help="pmf of k, e.g. '4:0.5,12:0.5'")
    sim.add_argument("--overhead", choices=("paper", "event"), default=None,
                     help="Spark blocking overhead model")
    sim.add_argument("--revive", type=float, default=1.0, help="revive interval R (default 1)")
    sim.add_argument("--jobs", type=int, default=100_000, help="jobs per replication")
    sim.add_argument("--replications", type=int, default=1)
    sim.add_argument("--warmup", type=int, default=None, help="jobs dropped per replication (default 10%%)")
    sim.add_argument("--workers", type=int, default=None, help="processes (default: all cores)")
    sim.add_argument("--seed", type=int, default=None)
    sim.add_argument("--saturated", action="store_true",
                     help="all jobs at time 0: estimate the stability limit lambda_max")
    sim.add_argument("--allow-unstable", action="store_true",
                     help="simulate even at or above the known stability limit")
    sim.add_argument("--jobs-csv", default=None, help="write the per-job table to this CSV file")
    sim.add_argument("--json", action="store_true", help="print one JSON object")
    sim.set_defaults(run=_simulate, show=_print_simulation)

    bd = sub.add_parser("bound", help="quantile bounds of a 1-barrier system (section III)",
                        description="Waiting, sojourn and service quantile bounds (network calculus).")
    bd.add_argument("--servers", "-s", type=int, required=True)
    bd.add_argument("--tasks", "-k", type=int, default=None)
    bd.add_argument("--tasks-pmf", default=None, help="pmf of k, e.g. '4:0.5,12:0.5'")
    bd.add_argument("--arrival-rate", type=float, required=True)
    bd.add_argument("--task-rate", type=float, default=1.0)
    bd.add_argument("--barrier-fraction", type=float, default=1.0)
    bd.add_argument("--epsilon", type=float, required=True, help="violation probability, 0 < eps < 1")
    bd.add_argument("--form", choices=("gigi", "gg"), default="gigi")
    bd.add_argument("--json", action="store_true")
    bd.set_defaults(run=_bound, show=_print_bound)

    pl = sub.add_parser("plan", help="the k (and l) that minimises delay",
                        description="Choose tasks per job for a cluster (task mean s/k, rho = lambda).")
    pl.add_argument("--servers", "-s", type=int, required=True)
    pl.add_argument("--utilization", type=float, required=True, help="0 < rho < 1")
    pl.add_argument("--epsilon", type=float, default=0.01, help="quantile 1 - eps (default 0.01)")
    pl.add_argument("--barriers", "-b", type=int, choices=(1, 2), default=1)
    pl.add_argument("--form", choices=("gigi", "gg"), default="gigi")
    pl.add_argument("--simulate-jobs", type=int, default=0, help="also simulate each k (jobs per run)")
    pl.add_argument("--min-needed-fraction", type=float, default=1.0,
                    help="2-barrier: consider l >= this fraction of k (default 1: l = k)")
    pl.add_argument("--seed", type=int, default=None)
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(run=_plan, show=_print_plan)

    sb = sub.add_parser("spark-bench", help="run barrier jobs on a real Spark",
                        description="Poisson arrivals of k-task barrier jobs on Spark; writes a run folder.")
    sb.add_argument("--executors", "-s", type=int, default=4, help="single-core executors s")
    sb.add_argument("--tasks", "-k", type=int, default=2, help="barrier tasks per job k <= s")
    sb.add_argument("--arrival-rate", type=float, required=True, help="jobs per second")
    sb.add_argument("--jobs", type=int, default=100, help="measured jobs")
    sb.add_argument("--warmup-jobs", type=int, default=3)
    sb.add_argument("--task-mean", type=float, default=None, help="mean task sleep, s (default s/k)")
    sb.add_argument("--sync-points", type=int, default=0, help="barrier() calls inside each task")
    sb.add_argument("--revive", type=float, default=1.0, help="spark.scheduler.revive.interval, s")
    sb.add_argument("--seed", type=int, default=1)
    sb.add_argument("--master", default=None, help="spark://host:port (default local-cluster[s,1,MB])")
    sb.add_argument("--time-limit", type=float, default=3600.0, help="seconds for the whole run")
    sb.add_argument("--out", required=True, help="run folder to create")
    sb.add_argument("--archive", default=None,
                    help="also write a compact copy (gzip tables, zstd event log) to this folder, e.g. data/spark/RUN")
    sb.add_argument("--json", action="store_true")
    sb.set_defaults(run=_spark_bench, show=_print_bench)

    sa = sub.add_parser("spark-analyze", help="summarise a Spark event log",
                        description="Waiting/sojourn times and blocking overhead from a Spark event log "
                                    "(plain, zstd or rolled).")
    sa.add_argument("event_log", help="event-log file or rolled event-log directory")
    sa.add_argument("--revive", type=float, default=1.0,
                    help="spark.scheduler.revive.interval in seconds (default 1)")
    sa.add_argument("--arrival-rate", type=float, default=None,
                    help="job arrival rate (default: measured from submission times)")
    sa.add_argument("--skip-jobs", type=int, default=0, help="drop the first N jobs (warm-up)")
    sa.add_argument("--key-property", default="bq.job", help="thread-local property with the job tag")
    sa.add_argument("--jobs-csv", default=None, help="write the per-job table to this CSV file")
    sa.add_argument("--json", action="store_true")
    sa.set_defaults(run=_spark_analyze, show=_print_spark)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        out = args.run(args)
    except ParameterError as exc:
        parser.exit(2, f"barrier-queues: error: {exc}\n")
    if args.json:
        print(json.dumps(out, sort_keys=True, default=str))
    else:
        args.show(out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
