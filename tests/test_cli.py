"""The command line, run as users run it: subprocesses, a table of bad inputs, and a property-based fuzz."""

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from barrier_queues.cli import main

CLI = [sys.executable, "-m", "barrier_queues.cli"]
LOG = next((Path(__file__).parent / "data" / "spark-run-s2-k2" / "eventlog").glob("*.zstd"))


def run(*args):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)


def run_here(argv, hang_limit: int = 300):
    """The CLI in this process: (exit status, stdout, stderr). A call that outlives ``hang_limit`` seconds is a hang
    (a generous alarm that catches hangs, not a speed test)."""
    out, err = io.StringIO(), io.StringIO()

    def hung(*_):
        raise TimeoutError(f"barrier-queues {' '.join(argv)} hangs")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(hang_limit)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return code, out.getvalue(), err.getvalue()


def test_stability_json_closed_form():
    out = run("stability", "--servers", "16", "--tasks", "4", "--barriers", "1", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    for key in ("servers", "tasks", "needed", "barriers", "method", "rho_max", "rho_useful", "lambda_max"):
        assert key in data
    assert data["method"] == "closed-form" and "states" not in data
    assert data["rho_max"] == pytest.approx(0.900841445306055, rel=1e-12)


def test_stability_json_ctmc_reports_states():
    data = json.loads(run("stability", "-s", "12", "-k", "3", "-l", "2", "-b", "1", "--json").stdout)
    assert data["method"] == "ctmc" and data["states"] == 6
    assert round(data["lambda_max"], 4) == 5.4784


def test_stability_json_order_statistics_timeout_and_phases():
    data = json.loads(run("stability", "-s", "10", "-k", "10", "-l", "8", "-b", "2",
                          "--task-dist", "bimodal:p=0.9,rate1=10,rate2=0.1", "--json").stdout)
    assert data["method"] == "order-statistics" and data["task_law"]["law"] == "hyperexponential"
    data = json.loads(run("stability", "-s", "16", "-k", "8", "-b", "2", "--release", "timeout", "--timeout", "2",
                          "--json").stdout)
    assert data["method"] == "quadrature"
    data = json.loads(run("stability", "-s", "16", "-k", "4", "-b", "2", "--phases", "3", "--json").stdout)
    assert data["method"] == "order-statistics"


def test_stability_text_output():
    out = run("stability", "-s", "16", "-k", "8", "-l", "6")
    assert out.returncode == 0
    assert "ctmc (37 states)" in out.stdout and "rho_useful" in out.stdout


#: bad inputs tried, with the one line each gets (exit status 2); the fuzz below tries many more
BAD_INPUTS = [
    (("stability", "-s", "4", "-k", "8"), "tasks must be an integer with 1 <= tasks <= servers = 4 (got 8)"),
    (("stability", "-s", "8", "-k", "4", "-l", "6"), "needed must be an integer with 1 <= needed <= tasks"),
    (("stability", "-s", "8", "-k", "4", "--task-rate", "-1"), "task-rate must be a finite number > 0 (got '-1')"),
    (("stability", "-s", "8", "-k", "4", "--task-rate", "nan"), "task-rate must be a finite number > 0 (got 'nan')"),
    (("stability", "-s", "8", "-k", "4", "--task-rate", "1e309"), "task-rate must be a finite number > 0"),
    (("stability", "-s", "8", "-k", "4", "-b", "3"), "barriers must be an integer with 1 <= barriers <= 2 (got '3')"),
    (("stability", "-s", "eight", "-k", "4"), "servers must be an integer >= 1 (got 'eight')"),
    (("stability", "-s", "8", "-k", "4", "--task-dist", "weibull"), "task_dist must be one of"),
    (("stability", "-s", "8", "-k", "4", "--task-rate", "2", "--task-dist", "exp:rate=2"),
     "give at most one of task_rate"),
    (("stability", "-s", "64", "-k", "16", "-l", "16", "--method", "ctmc", "--max-states", "10"),
     "more than max_states = 10"),
    (("stability", "-s", "1000000", "-k", "100000", "-l", "5000"), "too large to count its states"),
    (("stability", "-s", "8", "-k", "4", "--release", "knee"), "barriers must be 2 for the knee release"),
    (("stability", "-s", "8", "-k", "4", "--min-fraction", "0.5"), "min_fraction must be None unless release"),
    (("simulate", "-s", "8", "--arrival-rate", "1"), "give --tasks K"),
    (("simulate", "-s", "8", "-k", "4"), "--arrival-rate must be given"),
    (("simulate", "-s", "8", "-k", "4", "--arrival-rate", "1", "--utilization", "0.5"),
     "give at most one of --arrival-rate and --utilization"),
    (("simulate", "-s", "8", "-k", "4", "--arrival-rate", "1", "--barrier-fraction", "2"),
     "barrier-fraction must be a finite number with 0 <= barrier-fraction <= 1"),
    (("simulate", "-s", "8", "-k", "4", "--tasks-pmf", "4:1", "--arrival-rate", "1"), "give exactly one of tasks"),
    (("simulate", "-s", "8", "-k", "4", "--arrival-rate", "1", "--revive", "0.5"),
     "revive_interval must be None without an overhead model"),
    (("simulate", "-s", "8", "-k", "4", "-l", "2", "--release", "knee", "--arrival-rate", "1"),
     "needed must equal tasks with release = 'knee'"),
    (("simulate", "-s", "8", "-k", "4", "--release", "timeout", "--arrival-rate", "1"), "timeout must be given"),
    (("simulate", "-s", "8", "-k", "4", "--probe-ratio", "2", "--arrival-rate", "1"),
     "probe_ratio must be None with placement = 'central'"),
    (("simulate", "-s", "8", "-k", "4", "--placement", "sample", "--probe-ratio", "0.5", "--arrival-rate", "1"),
     "probe-ratio must be a finite number >= 1 (got '0.5')"),
    (("simulate", "-s", "8", "-k", "4", "--sync", "spark", "--arrival-rate", "1"), "sync must be None with phases = 1"),
    (("simulate", "-s", "8", "-k", "4", "--arrival-rate", "1", "--seed", "-3"),
     "seed must be an integer with 0 <= seed <= 340282366920938463463374607431768211455 (got '-3')"),
    (("simulate", "-s", "8", "-k", "4", "--arrival-rate", "1", "--seed", "1.5"), "seed must be an integer"),
    (("simulate", "-s", "8", "-k", "4", "--arrival-rate", "1", "--jobs", "1"), "jobs must be an integer with 2 <="),
    (("simulate", "-s", "8", "-k", "4", "--arrival-rate", "1", "--jobs", "100", "--warmup", "99"),
     "warmup must be an integer with 0 <= warmup <= jobs - 2"),
    (("simulate", "-s", "8", "-k", "4", "--saturated", "--arrival-rate", "1"), "--arrival-rate must not be given"),
    (("simulate", "-s", "8", "-k", "4", "--arrival-rate", "1", "--force"), "--force must come with --jobs-csv"),
    (("simulate", "-s", "8", "-k", "4", "--arrival-rate", "1e300"), "arrival_rate must lie within a factor 1e9"),
    (("simulate", "-s", "16", "-k", "4", "--arrival-rate", "4", "--jobs", "5000"),
     "stability limit lambda_max = 3.60337"),
    (("simulate", "-s", "20000", "-k", "4", "--placement", "sample", "--arrival-rate", "1"),
     "servers must be at most 10,000 with placement = 'sample'"),
    (("simulate", "-s", "8", "-k", "8", "--arrival-rate", "1e-6", "--jobs", "100000000000", "--replications", "9"),
     "must be at most 5e+09 task draws"),
    (("bound", "-s", "16", "-k", "8", "--arrival-rate", "2", "--epsilon", "0.01"),
     "arrival_rate must be below 1 / E[spacing]"),
    (("bound", "-s", "16", "-k", "8", "--arrival-rate", "1", "--epsilon", "2"),
     "epsilon must be a finite number with 0 < epsilon < 1"),
    (("bound", "-s", "16", "-k", "8", "--arrival-rate", "1", "--epsilon", "0.01", "--task-dist",
      "erlang:shape=2,rate=2"),
     "unrecognized arguments"),
    (("plan", "-s", "16", "--utilization", "1.5"), "utilization must be a finite number with 0 < utilization < 1"),
    (("plan", "-s", "16", "--utilization", "0.5", "--seed", "3"), "--seed must come with --simulate-jobs"),
    (("plan", "-s", "16", "--utilization", "0.5", "--min-needed-fraction", "0.5"),
     "--min-needed-fraction must come with --barriers 2"),
    (("plan-phases", "-k", "4", "--max-share", "1"), "max-share must be a finite number with 0 < max-share < 1"),
    (("plan-phases", "-k", "4", "--task-rate", "2", "--task-dist", "exp:rate=2"), "give at most one of --task-rate"),
    (("sweep", "-s", "8", "-k", "", "--arrival-rate", "1", "--out", "x"), "a list must be comma-separated values"),
    (("sweep", "-s", "8", "-k", "4,16", "--arrival-rate", "1", "--out", "x"),
     "grid point 1 (servers=8, tasks=16, arrival_rate=1.0): tasks must be an integer with 1 <= tasks <= servers = 8"),
    (("sweep", "-s", "8", "-k", "4", "--arrival-rate", "1", "--out", "x", "--master", "local[2]"),
     "master must be given only with backend 'spark'"),
    (("spark-analyze", "nope"), "event log must be an existing file or directory"),
    (("spark-analyze", str(LOG), "--skip-jobs", "-3"), "skip-jobs must be an integer >= 0 (got '-3')"),
    (("spark-analyze", str(LOG), "--skip-jobs", "100"), "--skip-jobs must be below the number of jobs, 10"),
    (("spark-analyze", str(LOG), "--jobs-csv", str(LOG)), "--jobs-csv must not be one of the command's inputs"),
    (("spark-analyze", str(LOG), "--jobs-csv", "/nonexistent/x.csv"), "--jobs-csv must be in an existing folder"),
    (("spark-bench", "--arrival-rate", "0.5", "--out", str(Path(__file__).parent / "data" / "spark-run-s2-k2")),
     "--out must be a new or empty folder"),
    (("spark-bench", "--arrival-rate", "0.5", "--phases", "2", "--sync-points", "1", "--out", "x"),
     "sync_points must be 0 with phases > 1"),
    # one stability guard for every system: several k (no closed form) above FIFO's saturated limit
    (("simulate", "-s", "16", "--tasks-pmf", "2:0.8,16:0.2", "--utilization", "0.5", "--jobs", "2000"),
     "arrival_rate must be below the stability limit lambda_max = 1.29331 (saturated simulation, fcfs"),
    (("simulate", "-s", "16", "-k", "8", "--barrier-fraction", "0.5", "--utilization", "0.95", "--jobs", "2000"),
     "arrival_rate must be below the stability limit"),
    (("simulate", "--workload", str(Path(__file__).resolve().parents[1] / "data" / "workloads" / "borg-a.json"),
      "-b", "2", "--saturated", "--jobs", "2000", "--replications", "1", "--seed", "1"),
     "jobs must be larger for a saturated run of this system (got 2,000 per replication)"),
    # Spark masters that cannot run anything, refused by name before any work (not a Java traceback or a hang)
    (("sweep", "-s", "8", "-k", "4", "--arrival-rate", "1", "--out", "x", "--backend", "spark", "--master",
      "local[0]"), "master local[N] must have N >= 1 worker threads (got 'local[0]')"),
    (("sweep", "-s", "8", "-k", "4", "--arrival-rate", "1", "--out", "x", "--backend", "spark", "--master",
      "local-cluster[0,1,1024]"), "master local-cluster[N,C,MB] must have N >= 1 executors"),
    (("spark-bench", "--arrival-rate", "0.5", "--out", "x", "--master", "local-cluster[2,0,1024]"),
     "master local-cluster[N,C,MB] must have N >= 1 executors and C >= 1 cores each"),
    (("plan", "--servers", "1000000", "--utilization", "0.5"), "servers must be at most 100,000 for plan"),
    (("sweep", "-s", "8", "-k", "2", "--arrival-rate", "1", "--out", ""), "out must be a folder path (got '')"),
    (("sweep", "-s", "8", "-k", "-1,2", "--arrival-rate", "1", "--out", "x"),
     "tasks must be an integer >= 1 (got '-1')"),
    (("sweep", "-s", "8", "-k", "2", "--arrival-rate", "1", "--out", str(LOG / "x")),
     "out must be a folder path (got"),
    (("simulate", "-s", "8", "-k", "4", "--arrival-rate", "0.5", "--task-dist", f"empirical:file={LOG}"),
     "must be a text file of numbers (it holds binary data)"),
    (("spark-analyze", "/dev/null"), "event log must be a regular file or a rolled event-log directory"),
    # too few jobs for an estimate: said so, not a start rate over 3 starts (rho_max 2.78 was printed)
    (("simulate", "-s", "4", "-k", "2", "--saturated", "--jobs", "3", "--seed", "1"),
     "jobs must be at least 100 per replication for a saturated run (got 3)"),
]


@pytest.mark.parametrize("args, fragment", BAD_INPUTS, ids=[f"bad{i}" for i in range(len(BAD_INPUTS))])
def test_bad_input_exits_2_with_one_line(args, fragment):
    code, out, err = run_here(list(args))
    assert code == 2, (out, err)
    assert fragment in err, err
    assert err.count("\n") == 1 and err.startswith("barrier-queues: error: ")
    assert "Traceback" not in err


def test_there_are_at_least_fifty_bad_inputs_in_the_table():
    assert len(BAD_INPUTS) >= 50


def test_simulate_json_is_strict_and_has_the_documented_keys():
    out = run("simulate", "--servers", "16", "--tasks", "4", "--barriers", "1", "--arrival-rate", "2.8",
              "--jobs", "20000", "--replications", "2", "--seed", "3", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    for key in ("jobs", "utilization", "mean_waiting", "mean_sojourn", "quantiles", "ci", "jobs_per_second",
                "stable", "warmup"):
        assert key in data
    assert set(data["quantiles"]) == {"waiting", "sojourn", "execution"}
    assert "0.99" in data["quantiles"]["waiting"] and data["stable"] is True
    again = json.loads(run("simulate", "--servers", "16", "--tasks", "4", "--arrival-rate", "2.8",
                           "--jobs", "20000", "--replications", "2", "--seed", "3", "--json").stdout)
    assert again["quantiles"] == data["quantiles"]      # same seed, same results
    one = json.loads(run("simulate", "-s", "8", "-k", "2", "--arrival-rate", "2", "--jobs", "4000", "--seed", "1",
                         "--json").stdout, parse_constant=lambda c: pytest.fail(c))
    # one replication: quantile intervals are undefined, null with the reason
    assert one["quantile_ci"]["waiting"]["0.99"] == [None, None]
    assert "needs more data" in one["null_values"]["quantile_ci.waiting.0.99[0]"]


def test_simulate_variants_from_the_command_line(tmp_path):
    csv = tmp_path / "jobs.csv"
    data = json.loads(run("simulate", "-s", "16", "--tasks-pmf", "4:0.5,12:0.5", "--arrival-rate", "1.0",
                          "--overhead", "event", "--revive", "0.5", "--jobs", "5000", "--seed", "1",
                          "--jobs-csv", str(csv), "--json").stdout)
    assert data["config"]["tasks_pmf"] == {"4": 0.5, "12": 0.5}
    assert csv.read_text().startswith("replication,job,arrival,start")
    again = run("simulate", "-s", "16", "-k", "4", "--arrival-rate", "1.0", "--jobs", "5000", "--jobs-csv", str(csv))
    assert again.returncode == 2 and "exists; pass --force" in again.stderr
    assert run("simulate", "-s", "16", "-k", "4", "--arrival-rate", "1.0", "--jobs", "5000", "--jobs-csv", str(csv),
               "--force").returncode == 0
    sat = json.loads(run("simulate", "-s", "12", "-k", "3", "-l", "2", "--saturated", "--jobs", "20000",
                         "--replications", "4", "--seed", "1", "--json").stdout)
    assert sat["lambda_max_ci"][0] < 5.4784 < sat["lambda_max_ci"][1]
    knee = json.loads(run("simulate", "-s", "16", "-k", "8", "--release", "knee", "--min-fraction", "0.5",
                          "--min-wait", "0", "--arrival-rate", "1", "--jobs", "20000", "--seed", "1", "--json").stdout)
    assert 4 <= knee["mean_completed_tasks"] < 8 and 0 < knee["useful_utilization"] < knee["utilization"]
    sample = json.loads(run("simulate", "-s", "16", "-k", "4", "--placement", "sample", "--probe-ratio", "2",
                            "--utilization", "0.5", "--jobs", "20000", "--seed", "1", "--json").stdout)
    assert 0 < sample["held_share"] < 0.5 and sample["offered_utilization"] == pytest.approx(0.5)
    phases = json.loads(run("simulate", "-s", "8", "-k", "4", "--phases", "3", "--sync", "spark", "--sync-poll", "1",
                            "--arrival-rate", "0.1", "--jobs", "5000", "--seed", "1", "--json").stdout)
    assert phases["config"]["phases"] == 3 and phases["useful_utilization"] < phases["utilization"]


def test_simulate_refuses_an_unstable_load_and_allows_it_on_request():
    data = json.loads(run("simulate", "-s", "16", "-k", "4", "--arrival-rate", "4", "--jobs", "50000",
                          "--allow-unstable", "--seed", "1", "--json").stdout)
    assert data["stable"] is False


def test_bound_json_and_plan():
    data = json.loads(run("bound", "-s", "16", "-k", "8", "--arrival-rate", "1", "--epsilon", "1e-3",
                          "--json").stdout)
    for key in ("waiting_quantile", "sojourn_quantile", "theta", "form"):
        assert key in data
    assert data["waiting_quantile"] == pytest.approx(6.9078, abs=1e-3) and data["form"] == "gigi"
    gg = json.loads(run("bound", "-s", "16", "--tasks-pmf", "2:0.5,8:0.5", "--arrival-rate", "1",
                        "--epsilon", "0.01", "--form", "gg", "--json").stdout)
    assert gg["form"] == "gg"
    plan = json.loads(run("plan", "-s", "16", "--utilization", "0.5", "--json").stdout)
    assert plan["recommended"]["tasks"] == 8 and len(plan["curve"]) > 5
    assert "recommended: k = 8" in run("plan", "-s", "16", "--utilization", "0.5").stdout
    big = json.loads(run("plan", "-s", "100000", "--utilization", "0.5", "--json").stdout)
    assert big["grid"].startswith("128 k on a logarithmic grid") and len(big["curve"]) < 300
    phases = json.loads(run("plan-phases", "-k", "8", "--max-phases", "6", "--samples", "5000", "--json").stdout)
    assert 1 <= phases["recommended"]["phases"] <= 6 and len(phases["curve"]) == 6


def test_spark_analyze_json_on_a_real_event_log(tmp_path):
    csv = tmp_path / "jobs.csv"
    out = run("spark-analyze", str(LOG), "--json", "--skip-jobs", "2", "--jobs-csv", str(csv), "--bootstrap", "19")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    for key in ("jobs", "mean_waiting", "mean_sojourn", "overhead_samples", "ks_statistic", "ks_pvalue"):
        assert key in data
    assert data["jobs"] == 8 and len(data["overhead_samples"]) == 7
    assert 0 < data["ks_statistic"] < 1 and 0 < data["ks_pvalue"] <= 1
    assert data["mle_revive"] >= max(data["overhead_samples"]) and data["mle_rate"] > 0
    assert data["mle_ks_pvalue_method"] == "parametric bootstrap (19 refits)"
    assert data["spark_version"] == "4.3.0"
    assert csv.read_text().startswith("job_id,key,barrier,tasks,submission")


def test_spark_analyze_bad_logs(tmp_path):
    bad = tmp_path / "bad"
    bad.write_text('{"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": 1, "Stage IDs": [0]}\n{"Ev')
    out = run("spark-analyze", str(bad))
    assert out.returncode == 2 and "line 2: not a JSON event" in out.stderr


# --------------------------------------------------------------------------------------------------
# property-based: random and boundary values for every option of every subcommand

INT_VALUES = ["-1", "0", "1", "2", "3", "4", "8", "16", "1.0", "2.5", "1e3", "abc", "", "nan", "99999999999999999999"]
FLOAT_VALUES = ["-1", "0", "1e-320", "1e-12", "0.001", "0.3", "0.5", "0.999", "1", "2", "7.5", "1e9", "1e308",
                "inf", "-inf", "nan", "x", ""]
SMALL_SERVERS = ["1", "2", "3", "8", "16", "0", "-2", "1000001", "x"]
SMALL_JOBS = ["2", "3", "50", "500", "0", "-5", "1.5"]


def _option(name, values):
    return st.one_of(st.just([]), st.sampled_from(values).map(lambda v: [name, v]))


def _flag(name):
    return st.sampled_from([[], [name]])


SYSTEM = [("--tasks", INT_VALUES), ("--tasks-pmf", ["1:1", "1:0.5,2:0.5", "2:0.5,4:0.6", "0:1", "x", "4:0.5,4:0.5"]),
          ("--needed", INT_VALUES), ("--barriers", ["1", "2", "0", "3"]), ("--arrival-rate", FLOAT_VALUES),
          ("--utilization", FLOAT_VALUES), ("--arrival", ["poisson", "deterministic", "bursty"]),
          ("--task-rate", FLOAT_VALUES), ("--task-dist", ["erlang:shape=2,rate=2", "bimodal:p=0.9,rate1=2,rate2=0.2",
                                                          "deterministic:value=1", "exp:rate=nan", "weibull", ""]),
          ("--barrier-fraction", FLOAT_VALUES), ("--overhead", ["paper", "event", "spark"]), ("--revive", FLOAT_VALUES),
          ("--release", ["fixed", "knee", "timeout", "early"]), ("--min-fraction", FLOAT_VALUES),
          ("--min-wait", FLOAT_VALUES), ("--knee-gain", FLOAT_VALUES), ("--timeout", FLOAT_VALUES),
          ("--placement", ["central", "sample", "random"]), ("--probe-ratio", FLOAT_VALUES),
          ("--phases", ["1", "2", "3", "0", "-1", "x"]), ("--sync", ["ideal", "spark", "none"]),
          ("--sync-poll", FLOAT_VALUES)]


@st.composite
def simulate_argv(draw):
    argv = ["simulate", "--servers", draw(st.sampled_from(SMALL_SERVERS)), "--json"]
    for name, values in SYSTEM:
        argv += draw(_option(name, values))
    argv += draw(_option("--jobs", SMALL_JOBS)) or ["--jobs", "200"]
    argv += draw(_option("--replications", ["1", "2", "0", "x"]))
    argv += draw(_option("--warmup", ["0", "1", "10", "-1", "100000"]))
    argv += draw(_option("--workers", ["1", "2", "0"]))
    argv += draw(_option("--seed", ["0", "1", "18446744073709551615", "-1", "2.5"]))
    argv += draw(_flag("--saturated")) + draw(_flag("--allow-unstable"))
    argv += draw(_option("--precision", ["0.2", "0", "1", "nan", "-0.1"]))
    argv += draw(_option("--precision-abs", ["0.5", "0", "inf", "x"]))
    argv += draw(_option("--budget", ["100000", "1", "0", "1e20"]))
    return argv


@st.composite
def other_argv(draw):
    command = draw(st.sampled_from(["stability", "bound", "plan", "plan-phases", "spark-analyze"]))
    if command == "stability":
        argv = ["stability", "--servers", draw(st.sampled_from(SMALL_SERVERS + ["24"]))]
        for name, values in SYSTEM:
            if name in ("--tasks", "--needed", "--barriers", "--task-rate", "--task-dist", "--release",
                        "--min-fraction", "--min-wait", "--knee-gain", "--timeout", "--phases", "--sync",
                        "--sync-poll"):
                argv += draw(_option(name, values))
        argv += draw(_option("--method", ["auto", "closed-form", "ctmc", "order-statistics", "quadrature",
                                          "monte-carlo", "magic"]))
        argv += draw(_option("--max-states", ["1", "1000", "0", "x"]))
    elif command == "bound":
        argv = ["bound", "--servers", draw(st.sampled_from(SMALL_SERVERS)),
                "--epsilon", draw(st.sampled_from(["0.01", "0.001", "0", "1", "1e-300", "nan"]))]
        for name, values in SYSTEM:
            if name in ("--tasks", "--tasks-pmf", "--arrival-rate", "--utilization", "--task-rate",
                        "--barrier-fraction", "--arrival"):
                argv += draw(_option(name, values))
        argv += draw(_option("--form", ["gigi", "gg", "x"]))
    elif command == "plan":
        argv = ["plan", "--servers", draw(st.sampled_from(SMALL_SERVERS + ["10000"])),
                "--utilization", draw(st.sampled_from(FLOAT_VALUES))]
        argv += draw(_option("--epsilon", ["0.01", "0.1", "0.5", "0", "2"]))
        argv += draw(_option("--barriers", ["1", "2", "3"]))
        argv += draw(_option("--form", ["gigi", "gg"]))
        argv += draw(_option("--simulate-jobs", ["0", "200", "-1"]))
        argv += draw(_option("--replications", ["1", "2", "0"]))
        argv += draw(_option("--min-needed-fraction", FLOAT_VALUES))
        argv += draw(_option("--seed", ["1", "-1"]))
    elif command == "plan-phases":
        argv = ["plan-phases", "--tasks", draw(st.sampled_from(INT_VALUES))]
        argv += draw(_option("--task-rate", FLOAT_VALUES))
        argv += draw(_option("--task-dist", ["erlang:shape=2,rate=2", "x"]))
        argv += draw(_option("--sync-poll", FLOAT_VALUES)) + draw(_option("--max-share", FLOAT_VALUES))
        argv += draw(_option("--max-phases", ["1", "3", "0", "2000"])) + ["--samples", "2000"]
    else:
        argv = ["spark-analyze", draw(st.sampled_from([str(LOG), "nope", str(LOG.parent)]))]
        argv += draw(_option("--revive", FLOAT_VALUES)) + draw(_option("--arrival-rate", FLOAT_VALUES))
        argv += draw(_option("--skip-jobs", ["0", "2", "9", "10", "-3", "x"]))
        argv += draw(_option("--key-property", ["bq.job", "missing"]))
        argv += draw(_option("--bootstrap", ["0", "5", "-1"]))
    return argv + ["--json"]


def _impossible(value, path=""):
    """The impossible numbers in an answer: a measured utilization, held share or saturated load above 1, a
    negative time or a negative interval end of one (the offered load is a parameter and may exceed 1)."""
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _impossible(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [x for v in value for x in _impossible(v, path)]
    if not isinstance(value, int | float) or isinstance(value, bool):
        return []
    fraction = any(w in path for w in ("utilization", "held_share", "rho_max", "rho_useful")) and "offered" not in path
    time_like = any(w in path for w in ("waiting", "sojourn", "execution"))
    return [(path, value)] if (fraction and value > 1 + 1e-12) or (time_like and value < 0) else []


def _check_outcome(argv):
    code, out, err = run_here(argv)
    assert code in (0, 2), (argv, code, err[-2000:])
    assert "Traceback" not in err, (argv, err[-2000:])
    if code == 2:
        assert err.startswith("barrier-queues: error: ") and err.count("\n") == 1, (argv, err)
    else:
        data = json.loads(out, parse_constant=lambda c: pytest.fail(f"{argv}: non-strict JSON constant {c}"))
        assert "Warning" not in err, (argv, err[-2000:])               # a valid run prints no warnings
        assert not _impossible(data), (argv, _impossible(data))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(argv=simulate_argv())
def test_fuzz_simulate_ends_in_exit_0_or_2_with_strict_json(argv):
    _check_outcome(argv)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(argv=other_argv())
def test_fuzz_other_commands_end_in_exit_0_or_2_with_strict_json(argv):
    _check_outcome(argv)


@pytest.mark.parametrize("extra", [[], ["--overhead", "paper"], ["-b", "2", "--replications", "3"]])
def test_simulate_imports_neither_scipy_nor_pandas(extra):
    """A simulation's whole answer comes from numpy and the compiled kernels: the imports that cost a quick
    command most of its time (scipy alone about 0.14 s, pandas 0.3 s) stay out (counts modules, not seconds)."""
    code = ("import sys; from barrier_queues.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "heavy = sorted(m for m in ('scipy', 'pandas', 'numba', 'matplotlib') if m in sys.modules)\n"
            "print('HEAVY', heavy)")
    out = subprocess.run([sys.executable, "-c", code, "simulate", "-s", "16", "-k", "4", "--arrival-rate", "1.6",
                          "--jobs", "20000", "--seed", "1", "--json", *extra], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "HEAVY []"


@pytest.mark.parametrize("overhead", ["paper", "event"])
def test_simulate_at_a_load_with_spark_overhead(overhead):
    """--utilization works with Spark's overhead models (it used to be refused for want of an arrival rate)."""
    out = run("simulate", "-s", "16", "-k", "4", "--overhead", overhead, "--utilization", "0.5", "--jobs", "20000",
              "--seed", "3", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["offered_utilization"] == pytest.approx(0.5, rel=1e-12) and data["config"]["overhead"] == overhead


def _documented_commands() -> list[tuple[str, str]]:
    """``(file, command)`` for every ``barrier-queues`` command printed in the README, data/README and the book
    (elided examples with ``...``, commands named in prose and templates the book fills in itself are skipped)."""
    import re

    root = Path(__file__).resolve().parents[1]
    pattern = re.compile(r"(?:\.venv/bin/)?barrier-queues ((?:stability|simulate|sweep|bound|plan-phases|plan|"
                         r"spark-bench|spark-analyze|replay) [^`\n#|]*)")
    found = []
    for path in [root / "README.md", root / "data" / "README.md", *sorted((root / "book").glob("*.md")),
                 *sorted((root / "book" / "reference").glob("*.md"))]:
        for match in pattern.finditer(path.read_text().replace("\\\n", " ")):
            command = match.group(1).strip()
            if "..." in command or " -" not in command or "{" in command:
                continue
            found.append((path.name, command))
    return found


def test_every_command_shown_in_the_docs_parses():
    """Commands in the README, data/README and the book are correct as printed: each parses against the real
    parser (options that exist, required ones given). The next tests run them."""
    import shlex

    from barrier_queues.cli import build_parser

    parser = build_parser()
    checked = []
    for name, command in _documented_commands():
        try:
            parser.parse_args(shlex.split(command))
        except SystemExit as exc:
            pytest.fail(f"{name}: 'barrier-queues {command}' does not parse (exit {exc.code})")
        checked.append(command)
    assert len(checked) >= 30


#: a committed Spark run stands in for the run folder a printed spark-analyze command reads (made by the
#: spark-bench command printed before it)
SPARK_RUN = "data/spark/s4-k2-rho0.5"
#: most jobs a printed command runs with here (its short variant; the options are otherwise as printed)
SHORT_JOBS = 2000


def _short_variant(command: str, tmp: Path) -> list[str]:
    """The printed command as the test runs it: from the repository, its output folders moved under ``tmp``,
    at most :data:`SHORT_JOBS` jobs, a run folder of spark-analyze replaced by a committed run, globs expanded."""
    import glob
    import shlex

    root = Path(__file__).resolve().parents[1]
    argv = shlex.split(command)
    out = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("--out", "--archive", "--jobs-csv", "--jobs-out") and i + 1 < len(argv):
            out += [arg, str(tmp / f"{arg.strip('-')}-{len(out)}")]
            i += 2
            continue
        if arg == "--jobs" and i + 1 < len(argv):
            out += [arg, str(min(int(argv[i + 1]), SHORT_JOBS))]
            i += 2
            continue
        if argv[0] == "spark-analyze" and "eventlog" in arg:
            arg = str(root / SPARK_RUN / "eventlog" / "*")
        if argv[0] in ("replay", "sweep") and arg.endswith((".swf", ".swf.gz", ".csv.gz")):   # a log of TRACES
            folder = os.environ.get("BARRIER_QUEUES_TRACES")                       # (found by name, as printed)
            if not folder or not (Path(folder) / arg).is_file():
                pytest.skip(f"{arg}: the logs' folder (BARRIER_QUEUES_TRACES; make sets it) does not hold it")
        if "*" in arg:
            matches = sorted(glob.glob(arg if Path(arg).is_absolute() else str(root / arg)))
            assert matches, f"{command}: {arg} matches nothing"
            out += matches
        else:
            out.append(arg)
        i += 1
    return out


@pytest.mark.parametrize("name,command", [c for c in _documented_commands() if not c[1].startswith("spark-bench")],
                         ids=lambda v: v if len(v) < 40 else v[:40])
def test_every_command_shown_in_the_docs_runs(name, command, tmp_path):
    """Each printed command runs as printed and exits 0 (a short variant of a long one: at most 2,000 jobs per
    replication, output folders in a temporary folder; spark-analyze on a committed run). spark-bench commands run
    in the next test, on a real Spark."""
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([*CLI, *_short_variant(command, tmp_path)], capture_output=True, text=True, timeout=600,
                       cwd=root)
    assert r.returncode == 0, f"{name}: barrier-queues {command}\n{r.stderr[-2000:]}"
    assert "Traceback" not in r.stderr
    if "--json" in command:
        json.loads(r.stdout)


#: a printed spark-bench command runs here with this many measured jobs and one warm-up job: Spark's start-up
#: (about a minute here) is the cost, not the jobs
SPARK_SHORT_JOBS = 1


def _spark_bench_commands() -> list[tuple[str, str]]:
    """The printed spark-bench commands, each once: a command whose options (but --out) all appear, with the same
    values, in another printed command is run as part of that one (e.g. the same run printed with and without
    --seed and --archive); each costs a Spark start-up of a minute or two here."""
    import shlex

    def options(command):
        argv = shlex.split(command)[1:]
        pairs, i = set(), 0
        while i < len(argv):
            value = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("-") else None
            if argv[i] != "--out":
                pairs.add((argv[i], value))
            i += 2 if value is not None else 1
        return frozenset(pairs)

    printed = [(name, command, options(command)) for name, command in _documented_commands()
               if command.startswith("spark-bench")]
    kept = {}
    for name, command, opts in printed:
        if not any(opts < other for _, _, other in printed):
            kept.setdefault(opts, (name, command))
    return list(kept.values())


#: the printed spark-bench commands run two at a time (their tasks mostly sleep; each has its own local-cluster,
#: ports and folders): the suite's wall time, not what a command does, is what this changes
SPARK_BENCH_AT_ONCE = 2


@pytest.fixture(scope="module")
def spark_bench_runs(tmp_path_factory):
    """Every printed spark-bench command in its shortest valid form (1 measured job, no warm-up job), run once for
    the tests below: (argv, completed process) by (name, command)."""
    from concurrent.futures import ThreadPoolExecutor

    root = Path(__file__).resolve().parents[1]
    base = tmp_path_factory.mktemp("spark-bench")

    def one(item):
        i, (name, command) = item
        folder = base / f"command{i}"
        folder.mkdir()
        argv = _short_variant(command, folder)
        argv = [str(min(int(a), SPARK_SHORT_JOBS)) if j and argv[j - 1] == "--jobs" else a
                for j, a in enumerate(argv)]
        done = subprocess.run([*CLI, *argv, "--warmup-jobs", "0", "--time-limit", "500", "--json"],
                              capture_output=True, text=True, timeout=900, cwd=root)
        return (name, command), (argv, done)

    with ThreadPoolExecutor(SPARK_BENCH_AT_ONCE) as pool:
        return dict(pool.map(one, enumerate(_spark_bench_commands())))


@pytest.mark.slow
@pytest.mark.spark
@pytest.mark.parametrize("name,command", _spark_bench_commands(), ids=lambda v: v if len(v) < 40 else v[:40])
def test_every_spark_bench_command_shown_in_the_docs_runs(name, command, spark_bench_runs):
    """Each printed spark-bench command runs as printed on a real Spark (local-cluster) and completes its run
    folder (and its archive when it asks for one), in its shortest valid form: 1 measured job, no warm-up job
    (about 40 s each here, most of it the local-cluster's start; 3 jobs after a warm-up took about 80 s)."""
    from barrier_queues.spark_analysis import load_run

    argv, r = spark_bench_runs[(name, command)]
    assert r.returncode == 0, f"{name}: barrier-queues {command}\n{r.stderr[-2000:]}"
    assert "Traceback" not in r.stderr
    meta = json.loads(r.stdout)
    assert meta["status"] == "complete" and meta["submitted"] == SPARK_SHORT_JOBS
    run = load_run(meta["archive"] if "--archive" in argv else argv[argv.index("--out") + 1])
    assert (run.jobs.waiting >= 0).all()
    if "--failure-rate" not in argv:      # with injected failures a job may be aborted
        assert len(run.jobs) == SPARK_SHORT_JOBS


def test_an_output_is_never_one_of_the_inputs_even_with_force(tmp_path):
    times = tmp_path / "times.txt"
    times.write_text("1.0\n2.0\n0.5\n")
    before = times.read_bytes()
    r = run("simulate", "-s", "4", "-k", "2", "--task-dist", f"empirical:file={times}", "--arrival-rate", "0.5",
            "--jobs", "1000", "--jobs-csv", str(times), "--force")
    assert r.returncode == 2 and "--jobs-csv must not be one of the command's inputs" in r.stderr
    assert times.read_bytes() == before
    workload = tmp_path / "w.json"
    workload.write_text('{"classes": [{"share": 1, "tasks": 2}]}')
    r = run("simulate", "-s", "4", "--workload", str(workload), "--arrival-rate", "0.5", "--jobs", "1000",
            "--jobs-csv", str(workload), "--force")
    assert r.returncode == 2 and "must not be one of the command's inputs" in r.stderr


def test_workers_1_with_one_replication_runs():
    r = run("simulate", "-s", "4", "-k", "2", "--arrival-rate", "0.5", "--jobs", "2000", "--workers", "1", "--json")
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("extra", [["--utilization", "0.5"], ["--saturated", "--replications", "2"]])
def test_an_unseeded_run_reports_the_seed_it_drew_and_that_seed_repeats_it(extra):
    base = ["simulate", "-s", "4", "-k", "2", "--jobs", "2000", "--json", *extra]
    first = json.loads(run(*base).stdout)
    assert isinstance(first["seed"], int) and first["seed"] >= 0
    again = json.loads(run(*base, "--seed", str(first["seed"])).stdout)
    key = "mean_sojourn" if "--saturated" not in extra else "lambda_max"
    assert again[key] == first[key] and again["seed"] == first["seed"]


def test_a_reader_that_leaves_early_gets_no_traceback():
    """``barrier-queues ... | head -1``: the command ends quietly (status 1, nothing on stderr), through the
    installed entry point and through ``python -m barrier_queues.cli`` alike."""
    exe = shutil.which("barrier-queues", path=os.path.dirname(sys.executable))
    assert exe is not None
    for cmd in ([exe], [sys.executable, "-m", "barrier_queues.cli"]):
        proc = subprocess.Popen([*cmd, "simulate", "-s", "8", "-k", "2", "--arrival-rate", "1", "--jobs", "2000",
                                 "--seed", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.close()                 # the reader leaves before anything is printed
        err = proc.stderr.read()
        assert proc.wait(timeout=120) == 1, err
        assert err == b""


def test_a_parser_built_for_one_command_is_the_full_parser_for_that_command():
    """``build_parser(argv)`` adds the options of the command argv names only: the same options, defaults and
    help as the full parser's, and the other commands still listed (an unknown command's error names them)."""
    import argparse

    from barrier_queues.cli import _COMMANDS, build_parser

    def commands(parser):
        return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))

    full = commands(build_parser())
    for name in _COMMANDS:
        one = commands(build_parser([name, "--json"]))
        assert list(one.choices) == list(full.choices)
        assert one.choices[name].format_help() == full.choices[name].format_help()
        assert {a.dest: a.default for a in one.choices[name]._actions} == \
            {a.dest: a.default for a in full.choices[name]._actions}
        others = [n for n in _COMMANDS if n != name]
        assert all(len(one.choices[n]._actions) == 1 for n in others)     # only -h: not built


def test_only_the_command_sets_its_environment_before_numpy_loads():
    """``import barrier_queues`` in the ``barrier-queues`` script's own process (started by name, numpy not yet
    loaded) sets ``OPENBLAS_THREAD_TIMEOUT`` to 4 where the user has not; a host process (another name, or numpy
    already loaded) and a user's own value are left alone."""
    import os

    def value(argv0, numpy_first=False, env=None):
        code = ("import sys, os; sys.argv[0] = sys.argv[1]; " + ("import numpy; " if numpy_first else "")
                + "import barrier_queues; print(os.environ.get('OPENBLAS_THREAD_TIMEOUT'))")
        environ = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"} | (env or {})
        return subprocess.run([sys.executable, "-c", code, argv0], capture_output=True, text=True, check=True,
                              env=environ).stdout.strip()

    assert value("/usr/local/bin/barrier-queues") == "4"
    assert value("/venv/Scripts/barrier-queues.exe") == "4"             # (a Windows launcher's name)
    assert value("/usr/local/bin/python") == "None"
    assert value("/usr/local/bin/barrier-queues", numpy_first=True) == "None"
    assert value("/usr/local/bin/barrier-queues", env={"OPENBLAS_THREAD_TIMEOUT": "20"}) == "20"


def test_the_command_keeps_freed_memory_where_glibc_allows_it(monkeypatch, capsys):
    """``entry`` (the ``barrier-queues`` command) asks glibc's allocator to keep freed memory
    (``keep_freed_memory``: every ``mallopt`` accepted there); without glibc's ``mallopt`` it returns False and
    the command runs as before."""
    import gc
    import platform

    from barrier_queues import cli

    code = "from barrier_queues import cli; import barrier_queues; print(cli.keep_freed_memory())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(platform.libc_ver()[0] == "glibc")
    calls = []
    monkeypatch.setattr(cli, "keep_freed_memory", lambda: calls.append(1) or False)
    monkeypatch.setattr(sys, "argv", ["barrier-queues", "stability", "-s", "4", "-k", "2", "--json"])
    try:
        assert cli.entry() == 0 and calls == [1]
    finally:
        gc.unfreeze()                                     # (entry freezes the objects alive at its end)
    assert json.loads(capsys.readouterr().out)["servers"] == 4


def test_a_plan_refuses_simulations_too_short_to_say_anything():
    r = run("plan", "-s", "8", "--utilization", "0.5", "--simulate-jobs", "2", "--json")
    assert r.returncode == 2 and "simulate_jobs must be 0 or at least 10,000 (got 2)" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = run("plan", "-s", "8", "--utilization", "0.5", "--barriers", "2", "--simulate-jobs", "999", "--json")
    assert r.returncode == 2 and "at least 1,000" in r.stderr


def test_a_huge_run_is_refused_at_once_and_a_long_one_says_so_first():
    """1e10 jobs is past the draws a run may take (refused before any work); a run of 1,000 jobs of a million
    tasks each is allowed, and says on stderr, before it starts, that it takes a while (stdout stays JSON)."""
    r = run("simulate", "-s", "4", "-k", "1", "--arrival-rate", "1", "--jobs", "10000000000", "--json")
    assert r.returncode == 2 and "must be at most 5e+09 task draws (got 1e+10)" in r.stderr
    proc = subprocess.Popen([*CLI, "simulate", "-s", "1000000", "-k", "1000000", "--arrival-rate", "0.01",
                             "--jobs", "1000", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stderr.readline()
    finally:
        proc.kill()
        proc.wait()
    assert first.startswith("barrier-queues: this run draws 1e+09 task times; it takes a while")


def test_the_numbers_the_manual_quotes_are_what_its_commands_print():
    """The manual's quoted results, run as printed: the output shown under the stability example (every number,
    exactly), the knee example's limits ("the same options to stability": rho_max and its useful part, to the
    digits quoted) and the jobs, rounds and replications the precision example needs."""
    import re
    import shlex

    text = (Path(__file__).resolve().parents[1] / "book" / "reference" / "manual.md").read_text()
    block = re.search(r"^\$ barrier-queues (stability [^\n]*--json)\n((?:[^$`][^\n]*\n)+)", text, re.M)
    quoted = dict(re.findall(r'"(\w+)": (-?[\d.]+(?:e-?\d+)?)', block.group(2)))
    printed = json.loads(run(*shlex.split(block.group(1))).stdout)
    assert len(quoted) >= 5 and all(repr(printed[k]) == v for k, v in quoted.items()), (quoted, printed)
    knee = re.search(r"\$ barrier-queues (simulate -s 16 -k 8 -b 2 --release knee [^\\]*)\\\n\s+(--task-dist \S+)"
                     r"[^\n]*rho_max ([\d.]+) \(([\d.]+) useful\)", text)
    options = [o for o in shlex.split(knee.group(1) + knee.group(2)) if o != "simulate"]
    limit = json.loads(run("stability", *options, "--json").stdout)
    digits = len(knee.group(3).split(".")[1])
    assert [f"{limit['rho_max']:.{digits}f}", f"{limit['rho_useful']:.{digits}f}"] == [knee.group(3), knee.group(4)]
    precision = re.search(r"\$ barrier-queues (simulate [^\n#]*--precision 0\.01[^\n#]*?)\s+#", text).group(1)
    needs = re.search(r"The line above needs ([\d.]+) million jobs \((\d+) rounds, (\d+)\s+replications",
                      text.replace("\n", " "))
    got = json.loads(run(*shlex.split(precision), "--json").stdout)["precision"]
    assert [f"{got['jobs_used'] / 1e6:.1f}", str(got["rounds"]), str(got["replications"])] == list(needs.groups())


def test_the_readmes_tour_prints_what_its_text_says():
    """The five-minute tour at the top of the README: each command as printed (with --json to read it), and
    what the text beside it says: the (16,8,6) limit of Table I's CTMC, first-fit's gangs of 16 unstable at load
    0.35 while the one-task jobs are not, every class stable under aging with T = 5."""
    import shlex

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    tour = readme[readme.index("**A five-minute tour**"):readme.index("**Where each capability lives**")]
    commands = [line[len("$ barrier-queues "):] for line in tour.splitlines() if line.startswith("$ barrier-queues ")]
    assert len(commands) == 6
    results = {}
    for command in commands:
        code, out, err = run_here([*shlex.split(command), "--json"])
        assert code == 0, (command, err[-500:])
        results[command.split()[0] + (" " + command.split("--scheduling ")[1].split()[0]
                                      if "--scheduling" in command else "")] = json.loads(out)
    assert abs(results["stability"]["rho_max"] - 0.7531577761) < 1e-9
    first_fit = {c["tasks"]: c["stable"] for c in results["simulate first-fit"]["classes"]}
    assert first_fit == {1: True, 16: False}
    aging = results["simulate aging"]
    assert aging["stable"] is True and all(c["stable"] for c in aging["classes"])
    import barrier_queues as bq

    lo, hi = results["simulate"]["lambda_max_ci"]                  # (the last simulate: gangs of 8 on nodes of 8)
    assert lo <= 4 * bq.stability_limit(8, 8).lambda_max <= hi and round(bq.stability_limit(32, 8).lambda_max, 2) \
        == 3.54 and round(4 * bq.stability_limit(8, 8).lambda_max, 2) == 1.47
