"""The command line, run as users run it (a subprocess)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "barrier_queues.cli"]


def run(*args):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)


def test_stability_json_closed_form():
    out = run("stability", "--servers", "16", "--tasks", "4", "--barriers", "1", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    for key in ("servers", "tasks", "needed", "barriers", "method", "rho_max", "rho_useful",
                "lambda_max"):
        assert key in data
    assert data["method"] == "closed-form" and "states" not in data
    assert data["rho_max"] == pytest.approx(0.900841445306055, rel=1e-12)


def test_stability_json_ctmc_reports_states():
    data = json.loads(run("stability", "-s", "12", "-k", "3", "-l", "2", "-b", "1", "--json").stdout)
    assert data["method"] == "ctmc" and data["states"] == 6
    assert round(data["lambda_max"], 4) == 5.4784


def test_stability_json_order_statistics():
    data = json.loads(run("stability", "-s", "10", "-k", "10", "-l", "8", "-b", "2",
                          "--task-dist", "bimodal:p=0.9,rate1=10,rate2=0.1", "--json").stdout)
    assert data["method"] == "order-statistics"
    assert data["task_law"]["law"] == "hyperexponential"


def test_stability_text_output():
    out = run("stability", "-s", "16", "-k", "8", "-l", "6")
    assert out.returncode == 0
    assert "ctmc (37 states)" in out.stdout and "rho_useful" in out.stdout


@pytest.mark.parametrize("args, fragment", [
    (("stability", "-s", "4", "-k", "8"), "tasks must be an integer with 1 <= tasks <= servers = 4 (got 8)"),
    (("stability", "-s", "8", "-k", "4", "-l", "6"), "needed must be an integer with 1 <= needed <= tasks"),
    (("stability", "-s", "8", "-k", "4", "--task-rate", "-1"), "task_rate must be a finite number > 0"),
    (("stability", "-s", "8", "-k", "4", "-b", "3"), "invalid choice: 3"),
    (("stability", "-s", "eight", "-k", "4"), "invalid int value: 'eight'"),
    (("stability", "-s", "8", "-k", "4", "--task-dist", "weibull"), "task_dist must be one of"),
])
def test_bad_input_exits_2_with_one_message(args, fragment):
    out = run(*args)
    assert out.returncode == 2
    assert fragment in out.stderr
    assert "Traceback" not in out.stderr


def test_simulate_json_has_the_documented_keys():
    out = run("simulate", "--servers", "16", "--tasks", "4", "--barriers", "1", "--arrival-rate", "2.8",
              "--jobs", "20000", "--replications", "2", "--seed", "3", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    for key in ("jobs", "utilization", "mean_waiting", "mean_sojourn", "quantiles", "ci",
                "jobs_per_second", "stable"):
        assert key in data
    assert set(data["quantiles"]) == {"waiting", "sojourn", "execution"}
    assert "0.99" in data["quantiles"]["waiting"] and data["stable"] is True
    again = json.loads(run("simulate", "--servers", "16", "--tasks", "4", "--arrival-rate", "2.8",
                           "--jobs", "20000", "--replications", "2", "--seed", "3", "--json").stdout)
    assert again["quantiles"] == data["quantiles"]      # same seed, same results


def test_simulate_variants_from_the_command_line(tmp_path):
    csv = tmp_path / "jobs.csv"
    data = json.loads(run("simulate", "-s", "16", "--tasks-pmf", "4:0.5,12:0.5", "--arrival-rate", "1.0",
                          "--overhead", "event", "--revive", "0.5", "--jobs", "5000", "--seed", "1",
                          "--jobs-csv", str(csv), "--json").stdout)
    assert data["config"]["tasks_pmf"] == {"4": 0.5, "12": 0.5}
    assert csv.read_text().startswith("replication,job,warmup,arrival")
    sat = json.loads(run("simulate", "-s", "12", "-k", "3", "-l", "2", "--saturated", "--jobs", "20000",
                         "--seed", "1", "--json").stdout)
    assert sat["lambda_max_ci"][0] < 5.4784 < sat["lambda_max_ci"][1]


def test_simulate_refuses_an_unstable_load_and_allows_it_on_request():
    out = run("simulate", "-s", "16", "-k", "4", "--arrival-rate", "4", "--jobs", "5000")
    assert out.returncode == 2 and "stability limit lambda_max = 3.60337" in out.stderr
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
    text = run("plan", "-s", "16", "--utilization", "0.5").stdout
    assert "recommended: k = 8" in text


@pytest.mark.parametrize("args, fragment", [
    (("simulate", "-s", "8", "--arrival-rate", "1"), "give --tasks K"),
    (("simulate", "-s", "8", "-k", "4"), "--arrival-rate must be given"),
    (("simulate", "-s", "8", "-k", "4", "--arrival-rate", "1", "--barrier-fraction", "2"),
     "barrier_fraction must be a number with 0 <= barrier_fraction <= 1"),
    (("bound", "-s", "16", "-k", "8", "--arrival-rate", "2", "--epsilon", "0.01"),
     "arrival_rate must be below 1 / E[spacing]"),
    (("bound", "-s", "16", "-k", "8", "--arrival-rate", "1", "--epsilon", "2"), "epsilon must be a number"),
    (("plan", "-s", "16", "--utilization", "1.5"), "utilization must be a number with 0 < utilization < 1"),
])
def test_more_bad_input_exits_2(args, fragment):
    out = run(*args)
    assert out.returncode == 2, out.stdout
    assert fragment in out.stderr and "Traceback" not in out.stderr


def test_spark_analyze_json_on_a_real_event_log(tmp_path):
    log = next((Path(__file__).parent / "data" / "spark-run-s2-k2" / "eventlog").glob("*.zstd"))
    csv = tmp_path / "jobs.csv"
    out = run("spark-analyze", str(log), "--json", "--skip-jobs", "2", "--jobs-csv", str(csv))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    for key in ("jobs", "mean_waiting", "mean_sojourn", "overhead_samples", "ks_statistic", "ks_pvalue"):
        assert key in data
    assert data["jobs"] == 8 and len(data["overhead_samples"]) == 7
    assert 0 < data["ks_statistic"] < 1 and 0 < data["ks_pvalue"] <= 1
    # the maximum-likelihood R is at least the largest sample (the likelihood is 0 below it)
    assert data["mle_revive"] >= max(data["overhead_samples"]) and data["mle_rate"] > 0
    assert data["spark_version"] == "4.3.0"
    assert csv.read_text().startswith("job_id,key,barrier,tasks,submission")


def test_spark_analyze_bad_logs(tmp_path):
    bad = tmp_path / "bad"
    bad.write_text('{"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": 1, "Stage IDs": [0]}\n{"Ev')
    out = run("spark-analyze", str(bad))
    assert out.returncode == 2 and "line 2: not a JSON event" in out.stderr
    out = run("spark-analyze", str(tmp_path / "missing"))
    assert out.returncode == 2 and "must be an existing file or directory" in out.stderr
