"""Failures on a real Spark: attempts, aborts and resubmission gaps from a run's event log, beside the model.

A ``spark-bench --failure-rate G --stage result|shuffle-map`` run injects
failures (:class:`barrier_queues.spark_bench.SparkBenchConfig`): each task
attempt's failure clock and sleep come from seeds of their own (the clock's
includes the task attempt id, which the event log records), so this
module recomputes both and works out, job by job, what the model of
Appendix B, section 5 says (the plain per-job rule
:func:`~barrier_queues.schedulers.waitlist_reference.job_attempts`, with
Spark's caps: one attempt for a ResultStage, four for a ShuffleMapStage).
From the event log it reads what Spark did: the barrier stage's attempts
(``Stage Attempt ID`` of its tasks), whether the job succeeded, the instant
of each failure (the failed task's end), when the other tasks were killed,
and when the next attempt's first task launched (Spark waits
``RESUBMIT_TIMEOUT`` = 0.2 s, then the stage waits for its executors).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pandas as pd

from ._validation import ParameterError
from .eventlog import parse_event_log
from .failures import SPARK_ATTEMPTS, SPARK_RESUBMIT_DELAY


def harness_draws(config: dict, job: int, k: int, task_ids: list) -> tuple[list, list]:
    """The sleeps (one per task) and failure clocks (per attempt and task, attempt-major) the harness drew for a
    job, whose attempts ran as the task ids ``task_ids[a][part]`` (from the event log): the seeds of
    ``spark_bench._task``. A task the log does not show (an abort can end a stage before every task of its last
    attempt reports) gets a clock that never rings: its attempt fails only through the tasks shown."""
    seed, mean, rate = int(config["seed"]), float(config["task_mean"]), float(config["failure_rate"])
    sleeps = [random.Random(seed * 1_000_003 + job * 1009 + part).expovariate(1.0 / mean) for part in range(k)]
    clocks = [random.Random((seed * 1_000_003 + job * 1009 + part) * 7919 + int(ids[part])).expovariate(rate)
              if part in ids else float("inf") for ids in task_ids for part in range(k)]
    return sleeps, clocks


def predicted(config: dict, job: int, k: int, task_ids: list) -> dict:
    """The model's attempts for one job of the run (identical work, the stage type's cap, no restart cost), on
    the draws of the attempts Spark ran; if the model needs an attempt Spark did not run, ``attempts`` is one
    more than Spark ran (a mismatch either way)."""
    from .failures import get
    from .schedulers.waitlist_reference import job_attempts

    cap = SPARK_ATTEMPTS[config.get("stage", "result")]
    sleeps, clocks = harness_draws(config, job, k, task_ids)
    ran = len(task_ids)
    fail = {"max_attempts": min(cap, ran), "identical": True, "tau": None, "delta": None, "restart": 0.0,
            "attempt": get("identical").attempt}
    attempts, useful, aborted = job_attempts(sleeps, clocks, [np.nan] * len(clocks), k, fail)
    if aborted and ran < cap:                       # every attempt Spark ran failed, and the model would retry
        return {"attempts": ran + 1, "aborted": False, "useful": 0.0}
    return {"attempts": len(attempts), "aborted": aborted, "useful": useful}


def _run_files(path) -> tuple[dict, pd.DataFrame, Path]:
    folder = Path(path)
    try:
        meta = json.loads((folder / "metadata.json").read_text())
    except (OSError, ValueError):
        raise ParameterError(f"run folder must hold a readable metadata.json (got {str(folder)!r})") from None
    if meta.get("config", {}).get("failure_rate") is None:
        raise ParameterError(f"run folder {str(folder)!r} must be a failure run (spark-bench --failure-rate)")
    arrivals = None
    for name in ("arrivals.csv", "arrivals.csv.gz"):
        if (folder / name).exists():
            arrivals = pd.read_csv(folder / name, dtype={"tag": str})
    logs = sorted(p for p in (folder / "eventlog").glob("*") if not p.name.startswith("."))
    if arrivals is None or len(logs) != 1:
        raise ParameterError(f"run folder {str(folder)!r} must hold arrivals.csv(.gz) and one event log")
    return meta, arrivals, logs[0]


def failure_jobs(path) -> pd.DataFrame:
    """One row per measured job of a failure run: what Spark did and what the model predicts.

    Columns: ``tag``, ``job`` (harness index), ``k``, ``arrival`` (harness
    submission, s from the log's origin), ``attempts`` and ``aborted`` (from
    the event log), ``predicted_attempts`` and ``predicted_aborted`` (the
    model on the same draws), ``partial_reruns`` (resubmissions in which
    Spark reran fewer than ``k`` partitions: it reruns only those whose map
    output is missing, and a task that finished just after the failure kept
    its output), ``gaps`` (per resubmission: next attempt's first
    launch minus the failure instant, s), ``kill_lags`` (per failed attempt:
    last killed task's end minus the failure instant, s), ``first_launch``,
    ``completion``, ``waiting`` and ``sojourn`` (s).
    """
    meta, arrivals, log_path = _run_files(path)
    config = dict(meta["config"])
    config["task_mean"] = meta.get("task_mean", config.get("task_mean"))
    log = parse_event_log(log_path)
    origin = log.app["origin_ms"] / 1000
    measured = arrivals[~arrivals.warmup.astype(bool)]
    jobs = log.jobs.dropna(subset=["key"]).set_index("key")
    rows = []
    for _, a in measured.iterrows():
        if a.tag not in jobs.index:
            raise ParameterError(f"job {a.tag} of the harness is not in the event log {str(log_path)!r}")
        j = jobs.loc[a.tag]
        t = log.tasks[log.tasks.job_id == j.job_id]
        barrier_stage = t[t.stage_id == t.stage_id.min()]
        k = int(a.tasks) if "tasks" in a else int(config["tasks"])
        attempts = int(barrier_stage.stage_attempt.nunique())
        gaps, kills = [], []
        for s in sorted(barrier_stage.stage_attempt.unique()):
            this = barrier_stage[barrier_stage.stage_attempt == s]
            failed = this[this.failed & ~this.killed]
            if failed.empty:
                continue
            t_f = float(failed.finish.min())
            killed = this[this.killed]
            kills.append(float(killed.finish.max()) - t_f if len(killed) else 0.0)
            nxt = barrier_stage[barrier_stage.stage_attempt == s + 1]
            if len(nxt):
                gaps.append(float(nxt.launch.min()) - t_f)
        ids = [dict(zip(g["partition"], g["task_id"], strict=True))
               for _, g in barrier_stage.groupby("stage_attempt")]
        partial = sum(len(d) < k for d in ids[1:])         # resubmissions that reran fewer than k partitions
        model = predicted(config, int(a.tag), k, ids)
        arrival = float(a.submitted) - origin
        rows.append({"tag": a.tag, "job": int(a.tag), "k": k, "arrival": arrival, "attempts": attempts,
                     "aborted": j.result != "JobSucceeded", "predicted_attempts": model["attempts"],
                     "predicted_aborted": model["aborted"], "gaps": gaps, "kill_lags": kills,
                     "partial_reruns": partial,
                     "first_launch": j.first_launch, "completion": j.completion,
                     "waiting": j.first_launch - arrival, "sojourn": j.completion - arrival})
    return pd.DataFrame(rows)


def failure_summary(path) -> dict:
    """A failure run in numbers: jobs, aborted share, mean attempts, how many jobs the model predicts exactly
    (attempts and outcome), resubmission gaps (median, 90 % and their excess over 0.2 s) and kill lags."""
    meta, _, _ = _run_files(path)
    table = failure_jobs(path)
    gaps = np.concatenate([np.asarray(g, dtype=float) for g in table.gaps]) if len(table) else np.empty(0)
    kills = np.concatenate([np.asarray(g, dtype=float) for g in table.kill_lags]) if len(table) else np.empty(0)
    match = (table.attempts == table.predicted_attempts) & (table.aborted == table.predicted_aborted)
    return {"run": Path(path).name, "stage": meta["config"].get("stage", "result"),
            "failure_rate": meta["config"]["failure_rate"], "jobs": int(len(table)),
            "aborted_share": float(table.aborted.mean()),
            "predicted_aborted_share": float(table.predicted_aborted.mean()),
            "mean_attempts": float(table.attempts.mean()),
            "predicted_mean_attempts": float(table.predicted_attempts.mean()),
            "jobs_as_predicted": int(match.sum()), "resubmissions": int(gaps.size),
            "partial_reruns": int(table.partial_reruns.sum()),
            "gap_median": float(np.median(gaps)) if gaps.size else float("nan"),
            "gap_p90": float(np.quantile(gaps, 0.9)) if gaps.size else float("nan"),
            "gap_excess_median": float(np.median(gaps) - SPARK_RESUBMIT_DELAY) if gaps.size else float("nan"),
            "kill_lag_median": float(np.median(kills)) if kills.size else float("nan"),
            "mean_sojourn_completed": float(table.sojourn[~table.aborted].mean()) if (~table.aborted).any()
            else float("nan")}


__all__ = ["failure_jobs", "failure_summary", "harness_draws", "predicted"]
