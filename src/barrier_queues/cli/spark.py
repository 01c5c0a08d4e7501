"""``barrier-queues spark-bench`` and ``spark-analyze``: real Spark runs and their event logs
(:mod:`barrier_queues.cli`)."""

from __future__ import annotations

from .._validation import ParameterError
from .options import COMMAND_HELP, SEED, _float, _int, _scale


def _serving_verdict(event_log) -> dict | None:
    """The harness's serving check of the run an event log belongs to (``metadata.json`` of the run folder that
    holds ``eventlog/``), or None for a log outside such a folder."""
    import json
    from pathlib import Path

    log = Path(event_log).resolve()
    for folder in (log.parent.parent, log.parent, log.parent.parent.parent):
        meta = folder / "metadata.json"
        if (folder / "eventlog").is_dir() and meta.is_file():
            try:
                serving = json.loads(meta.read_text()).get("serving")
            except (OSError, ValueError):
                return None
            if isinstance(serving, dict):
                return {"honest": serving.get("honest"), "problems": serving.get("problems") or [],
                        "assessed": serving.get("assessed"), "metadata": str(meta)}
            return None
    return None


def _spark_analyze(args) -> dict:
    import pandas as pd

    from ..eventlog import blocking_overhead, parse_event_log
    from ..outputs import check_new_file
    from ..spark_analysis import overhead_tests

    if args.force and not args.jobs_csv:
        raise ParameterError("--force must come with --jobs-csv (got --force alone): nothing else is written")
    if args.jobs_csv:
        check_new_file("--jobs-csv", args.jobs_csv, force=args.force, inputs=[args.event_log])
    tables = parse_event_log(args.event_log, key_property=args.key_property)
    jobs = tables.jobs.sort_values("submission")
    if args.skip_jobs >= len(jobs):
        raise ParameterError(f"--skip-jobs must be below the number of jobs, {len(jobs)} (got {args.skip_jobs})")
    jobs = jobs.iloc[args.skip_jobs:]
    span = jobs.submission.iloc[-1] - jobs.submission.iloc[0]
    rate = args.arrival_rate or ((len(jobs) - 1) / span if span > 0 else None)      # every submitted job arrives
    warnings = list(tables.warnings)
    attempts = (tables.tasks.groupby("job_id").stage_attempt.max() + 1) if len(tables.tasks) else pd.Series(dtype=int)
    failed_mask = jobs.result.notna() & (jobs.result != "JobSucceeded")
    unknown = int(jobs.result.isna().sum())
    if unknown:
        warnings.append(f"{unknown} job(s) without a Job Result: counted as completed")
    failed, jobs = jobs[failed_mask], jobs[~failed_mask]
    if len(failed):
        kinds = ", ".join(sorted(set(failed.result)))
        warnings.append(f"{len(failed)} of {len(failed) + len(jobs)} jobs failed ({kinds}): reported under "
                        "'failed', left out of every mean, quantile and overhead test")
    if not len(jobs):
        warnings.append(f"no job of the log completed (all {len(failed)} failed): no waiting, sojourn or overhead "
                        "can be measured")
    without = jobs[~jobs.job_id.isin(tables.tasks.job_id)] if len(tables.tasks) else jobs
    if len(without):
        warnings.append(f"{len(without)} job(s) launched no task in the log (job {int(without.job_id.iat[0])} the "
                        "first): their waiting and execution are not measured from tasks")
    if "barrier" in jobs and len(jobs) and not jobs.barrier.any():
        warnings.append("no job of the log is a barrier job (no stage with the barrier flag, or no Stage Infos): "
                        "the blocking overhead is measured on barrier jobs only")
    resubmitted = jobs.job_id.map(attempts).fillna(1).gt(1)
    samples = blocking_overhead(tables)
    samples = samples[samples.job_id.isin(jobs.job_id)]
    done = len(jobs) > 0
    out = {"event_log": str(args.event_log), "spark_version": tables.app.get("spark_version"),
           "jobs": int(len(jobs)), "submitted_jobs": int(len(jobs) + len(failed)), "failed_jobs": int(len(failed)),
           "resubmitted_jobs": int(resubmitted.sum()),
           "tasks": int(tables.tasks.job_id.isin(jobs.job_id).sum()),
           "arrival_rate": rate, "mean_waiting": float(jobs.waiting.mean()) if done else None,
           "mean_sojourn": float(jobs.sojourn.mean()) if done else None,
           "mean_execution": float(jobs.execution.mean()) if done else None,
           "quantiles": {m: {str(q): float(jobs[m].quantile(q)) if done else None for q in (0.5, 0.9, 0.99)}
                         for m in ("waiting", "sojourn")},
           "failed": [{"job_id": int(j.job_id), "result": j.result, "stage_attempts": int(attempts.get(j.job_id, 1)),
                       "submission": float(j.submission), "completion": float(j.completion), "message": j.message}
                      for j in failed.itertuples()],
           "overhead_samples": [float(x) for x in samples.overhead], "revive": args.revive,
           "ks_statistic": None, "ks_pvalue": None, "warnings": warnings}
    out["serving"] = _serving_verdict(args.event_log)
    if out["serving"] is not None and not out["serving"].get("honest", True):
        out["warnings"].append("the harness judged this run not served honestly by its machine ("
                               + "; ".join(out["serving"].get("problems") or ["no reason recorded"])
                               + "): its times carry the machine's load, not only Spark's")
    if len(samples) >= 2 and rate:
        tests = overhead_tests(samples.overhead, args.revive, rate, bootstrap=args.bootstrap)
        out.update(ks_statistic=tests["model"]["ks_statistic"], ks_pvalue=tests["model"]["ks_pvalue"],
                   model_mean=tests["model_mean"], mle_revive=tests["mle"]["revive"], mle_rate=tests["mle"]["rate"],
                   mle_ks_pvalue=tests["mle"]["ks_pvalue"], mle_ks_pvalue_method=tests["mle"]["pvalue_method"],
                   uniform_ks_pvalue=tests["uniform"]["ks_pvalue"])
    if args.jobs_csv:
        tables.jobs.to_csv(args.jobs_csv, index=False)
        out["jobs_csv"] = args.jobs_csv
    return out


def _spark_bench(args) -> dict:
    import json
    from pathlib import Path

    from ..outputs import check_new_folder
    from ..spark_bench import SparkBenchConfig, archive_run, run_spark_bench

    if args.arrival_rate is None and not args.saturated:
        raise ParameterError("--arrival-rate must be given (jobs per second > 0), or --saturated")
    config = SparkBenchConfig(executors=args.executors, tasks=args.tasks, arrival_rate=args.arrival_rate,
                              jobs=args.jobs, warmup_jobs=args.warmup_jobs, task_mean=args.task_mean,
                              sync_points=args.sync_points, phases=args.phases, saturated=args.saturated,
                              revive_interval=args.revive, seed=args.seed, master=args.master,
                              time_limit=args.time_limit, tasks_pmf=args.tasks_pmf,
                              barrier_fraction=args.barrier_fraction, failure_rate=args.failure_rate,
                              stage=args.stage)
    out_dir = check_new_folder("--out", args.out, "measured data")      # before a run of many minutes
    if args.archive:
        if Path(args.archive).resolve() == out_dir.resolve():
            raise ParameterError("--archive must differ from --out (got the same folder)")
        check_new_folder("--archive", args.archive, "measured data")
    run_dir = run_spark_bench(config, out_dir, progress=not args.json)
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
    version = f"Spark {out['spark_version']}" if out.get("spark_version") else "no Spark version in the log"
    print(f"event log         {out['event_log']} ({version})")
    serving = out.get("serving")
    if serving is not None:
        print(f"served honestly   {'yes' if serving['honest'] else 'no'} (the harness's check, {serving['assessed']})")
    for w in out.get("warnings") or []:
        print(f"warning           {w}")
    rate = f"{out['arrival_rate']:.4g}/s" if out["arrival_rate"] else "unknown"
    print(f"jobs              {out['jobs']} completed ({out['tasks']} tasks) of {out['submitted_jobs']} submitted, "
          f"{out['failed_jobs']} failed, {out['resubmitted_jobs']} completed after a resubmission; "
          f"arrival rate {rate}")
    if out["mean_waiting"] is None:
        print("mean waiting      not defined: no job completed")
    else:
        print(f"mean waiting      {out['mean_waiting']:.4f} s;  mean sojourn {out['mean_sojourn']:.4f} s "
              "(completed jobs)")
    n = len(out["overhead_samples"])
    if n:
        print(f"blocking overhead {n} samples, mean {sum(out['overhead_samples']) / n:.4f} s")
    if out["ks_statistic"] is not None:
        print(f"KS vs min(U(0,{out['revive']}), Exp({out['arrival_rate']:.4g})): "
              f"D = {out['ks_statistic']:.4f}, p = {out['ks_pvalue']:.4f} (model mean {out['model_mean']:.4f} s)")
        print(f"maximum likelihood R = {out['mle_revive']:.4f} s, lambda = {out['mle_rate']:.4g}/s "
              f"(KS p = {out['mle_ks_pvalue']:.4f}, {out['mle_ks_pvalue_method']})")
    else:
        print("KS test           not run (fewer than 2 blocked jobs or unknown arrival rate)")


# --------------------------------------------------------------------------------------------------


def _add_spark_bench(sub) -> None:
    sb = sub.add_parser("spark-bench", help=COMMAND_HELP["spark-bench"],
                        description="Poisson arrivals of k-task barrier jobs on Spark; writes a run folder.")
    sb.add_argument("--executors", "-s", type=_int("executors", 1, 4096), default=4, help="single-core executors s")
    sb.add_argument("--tasks", "-k", type=_int("tasks", 1, 4096), default=2, help="barrier tasks per job k <= s")
    sb.add_argument("--tasks-pmf", default=None,
                    help="mixed workload: pmf of k, e.g. '2:0.5,8:0.5' (--tasks is then its largest k)")
    sb.add_argument("--barrier-fraction", type=_float("barrier-fraction", 0, 1), default=1.0,
                    help="share of barrier jobs; the others are plain stages of k tasks (default 1)")
    sb.add_argument("--arrival-rate", type=_scale("arrival-rate"), default=None,
                    help="jobs per second (required unless --saturated)")
    sb.add_argument("--jobs", type=_int("jobs", 1, 1_000_000), default=100, help="measured jobs")
    sb.add_argument("--warmup-jobs", type=_int("warmup-jobs", 0, 1000), default=3)
    sb.add_argument("--task-mean", type=_scale("task-mean"), default=None,
                    help="mean sleep of one phase, s (default s/(k m))")
    sb.add_argument("--phases", type=_int("phases", 1, 1000), default=1, help="iid sleeps per task, barrier() between")
    sb.add_argument("--sync-points", type=_int("sync-points", 0, 1000), default=0,
                    help="barrier() calls splitting one sleep (older runs)")
    sb.add_argument("--saturated", action="store_true", help="submit every job at once (the start rate is the limit)")
    sb.add_argument("--revive", type=_scale("revive"), default=1.0,
                    help="spark.scheduler.revive.interval, s")
    sb.add_argument("--seed", type=SEED, default=1)
    sb.add_argument("--master", default=None, help="spark://host:port (default local-cluster[s,1,MB])")
    sb.add_argument("--time-limit", type=_scale("time-limit"), default=3600.0,
                    help="seconds for the whole run")
    sb.add_argument("--failure-rate", type=_scale("failure-rate"), default=None,
                    help="inject failures: each task attempt fails at this rate per second of running (default none)")
    sb.add_argument("--stage", choices=("result", "shuffle-map"), default="result",
                    help="the barrier stage as the job's ResultStage (aborted at a failure; default) or as a "
                         "ShuffleMapStage (resubmitted, 4 attempts in all)")
    sb.add_argument("--out", required=True, help="run folder to create")
    sb.add_argument("--archive", default=None,
                    help="also write a compact copy (gzip tables, zstd event log) to this folder, e.g. data/spark/RUN")
    sb.add_argument("--json", action="store_true")
    sb.set_defaults(run=_spark_bench, show=_print_bench)


def _add_spark_analyze(sub) -> None:
    sa = sub.add_parser("spark-analyze", help=COMMAND_HELP["spark-analyze"],
                        description="Waiting/sojourn times and blocking overhead from a Spark event log "
                                    "(plain, gzip, zstd or rolled).")
    sa.add_argument("event_log", help="event-log file or rolled event-log directory")
    sa.add_argument("--revive", type=_scale("revive"), default=1.0,
                    help="spark.scheduler.revive.interval in seconds (default 1)")
    sa.add_argument("--arrival-rate", type=_scale("arrival-rate"), default=None,
                    help="job arrival rate (default: measured from submission times)")
    sa.add_argument("--skip-jobs", type=_int("skip-jobs", 0), default=0, help="drop the first N jobs (warm-up)")
    sa.add_argument("--key-property", default="bq.job", help="thread-local property with the job tag")
    sa.add_argument("--bootstrap", type=_int("bootstrap", 0, 100_000), default=0,
                    help="parametric-bootstrap replicates for the KS p-value at fitted parameters (default 0: "
                         "report the plain p-value, which is too large at fitted parameters)")
    sa.add_argument("--jobs-csv", default=None, help="write the per-job table to this new CSV file")
    sa.add_argument("--force", action="store_true", help="overwrite --jobs-csv if it exists")
    sa.add_argument("--json", action="store_true")
    sa.set_defaults(run=_spark_analyze, show=_print_spark)
