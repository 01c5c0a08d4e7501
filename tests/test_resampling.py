"""Resampled logs (barrier_queues.resampling): users' weeks drawn anew; what each copy keeps, the load factor's
mean, the refusals, and the command line."""

import numpy as np
import pandas as pd
import pytest

import barrier_queues as bq
from barrier_queues.resampling import WEEK, resample, resampled_grid
from barrier_queues.statistics import t_interval
from barrier_queues.traces import Trace, read_trace


def _log(n=3000, users=40, weeks=6, seed=1):
    rng = np.random.default_rng(seed)
    jobs = pd.DataFrame({"job_id": np.arange(n), "submit": np.sort(rng.uniform(0, weeks * WEEK, n)),
                         "tasks": rng.choice([1, 2, 4, 8, 16], n), "runtime": rng.exponential(3600.0, n) + 1.0,
                         "barrier": True, "estimate": np.nan, "user": rng.integers(0, users, n)})
    return Trace(jobs, "synthetic", "csv", servers=32)


def test_a_resampled_log_is_made_of_the_users_weeks_at_their_offsets():
    """Every job of a copy is a job of the log (its user, width, runtime) at its own offset within a week, in
    submission order; with load 1 the copy has about the log's jobs."""
    log = _log()
    copy = resample(log, np.random.default_rng(4))
    jobs = log.jobs
    start = jobs.submit.min()

    def keys(table):
        return set(zip(table.user, table.tasks, table.runtime, np.round((table.submit - start) % WEEK, 6),
                       strict=True))

    assert keys(copy.jobs) <= keys(jobs)
    assert (np.diff(copy.jobs.submit.to_numpy()) >= 0).all() and copy.jobs.job_id.is_unique
    assert copy.jobs.submit.max() < start + (np.floor((jobs.submit.max() - start) / WEEK) + 1) * WEEK
    assert 0.5 < len(copy.jobs) / len(jobs) < 2


def test_the_load_factor_multiplies_the_expected_work():
    """E[work of a copy] = L x the log's work (each week draws L n_w blocks on average, each a uniform block).
    The mean over 40 copies must hold L in its 99.9 % t interval (fixed before the runs; the per-copy spread is
    wide, blocks differ a lot)."""
    log = _log(seed=2)
    work = (log.jobs.tasks * log.jobs.runtime).sum()
    rngs = np.random.default_rng(9).spawn(40)
    for load in (1.0, 1.5):
        ratios = [(c.jobs.tasks * c.jobs.runtime).sum() / work for c in (resample(log, r, load) for r in rngs)]
        lo, hi = t_interval(ratios, 0.999)
        assert lo <= load <= hi, (load, lo, hi)


def test_a_log_without_users_is_resampled_by_weeks_and_the_seed_repeats_a_copy():
    """Without users a block is a week of the whole log: at load 1 each week with jobs gets one week of the log,
    whole (its jobs at their offsets), an empty week stays empty; the note says so."""
    log = _log()
    no_users = Trace(log.jobs.drop(columns="user"), "synthetic", "csv", servers=32)
    copy = resample(no_users, np.random.default_rng(1))
    week = 7 * 86400.0
    start = float(no_users.jobs.submit.min())
    weeks = {int(w): g for w, g in no_users.jobs.groupby(np.floor((no_users.jobs.submit - start) / week))}
    got = {int(w): g for w, g in copy.jobs.groupby(np.floor((copy.jobs.submit - start) / week))}
    assert set(got) <= set(weeks)
    for w, g in got.items():                       # each week of the copy is one whole week of the log
        offsets = sorted(((g.submit - start) % week).round(6))
        assert any(offsets == sorted(((h.submit - start) % week).round(6)) for h in weeks.values()), w
    assert "resampled by weeks" in copy.notes[-1]
    a = resample(log, np.random.default_rng(5), 1.2)
    b = resample(log, np.random.default_rng(5), 1.2)
    assert a.jobs.equals(b.jobs)
    table, info = resampled_grid(log, {"scheduling": ["fcfs", "first-fit"]}, 3, seed=2)
    assert info["resamples"] == 3 and len(table) == 2
    assert (table.mean_waiting_shaken_low <= table.mean_waiting_shaken_high).all()


def test_the_swf_reader_keeps_the_user_and_a_csv_may_name_one(tmp_path):
    swf = tmp_path / "t.swf"
    swf.write_text("; MaxProcs: 8\n" + "\n".join(
        f"{i} {10 * i} 0 50 2 -1 -1 2 60 -1 1 {7 + i % 2} 1 -1 1 -1 -1 -1" for i in range(1, 5)) + "\n")
    assert read_trace(swf).jobs.user.tolist() == [8, 7, 8, 7]
    csv = tmp_path / "t.csv"
    csv.write_text("submit,tasks,runtime,user\n0,1,5,3\n1,2,5,4\n")
    assert read_trace(csv).jobs.user.tolist() == [3, 4]
    csv.write_text("submit,tasks,runtime,user\n0,1,5,3.5\n")
    with pytest.raises(bq.ParameterError, match="row 2: user must be a whole number"):
        read_trace(csv)


def test_the_command_line_resamples_and_refuses_what_does_not_go_with_it(tmp_path):
    from test_cli import run_here

    csv = tmp_path / "log.csv"
    _log(n=800).jobs[["submit", "tasks", "runtime", "user"]].to_csv(csv, index=False)
    code, out, err = run_here(["replay", str(csv), "--servers", "32", "--scheduling", "fcfs,first-fit",
                               "--resample", "3", "--resample-load", "1.2"])
    assert code == 0, err
    assert "resampled         3 logs" in out and "1.2 x the active users" in out
    for argv, message in ((["--resample", "3", "--shake", "3"], "must not be given together"),
                          (["--resample-load", "2"], "--resample-load must come with --resample N"),
                          (["--resample", "3", "--shake-by", "5"], "--shake-by must come with --shake N")):
        code, out, err = run_here(["replay", str(csv), "--servers", "32", *argv])
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
