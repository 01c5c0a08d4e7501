"""The command line, run as users run it (a subprocess)."""

import json
import subprocess
import sys

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
