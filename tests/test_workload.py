"""Workloads as job classes: files (ours and MJQM's), shares, draws, kernels = references, exact results."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import barrier_queues as bq
from barrier_queues.inputs import draw_jobs
from barrier_queues.load import mean_work
from barrier_queues.order_stats import harmonic
from barrier_queues.schedulers import central, waitlist
from barrier_queues.workload import read_workload

DATA = Path(__file__).parent / "data" / "workloads"
MJQM = DATA / "one-or-all-mjqm.toml"
MIXED = DATA / "mixed.json"
S = bq.BarrierSystem


def test_files_ours_and_mjqms_are_read_as_classes():
    doc = read_workload(MJQM)
    assert doc["servers"] == 32 and doc["arrival_rate"] == 2.4 and doc["scheduling"] == "fcfs"
    system = S(servers=32, workload=doc["classes"], arrival_rate=2.4)
    assert [(c.tasks, c.share, c.shared, c.barrier) for c in system.workload] == [(1, 0.9, True, True),
                                                                                   (32, 0.1, True, True)]
    mixed = S(servers=16, workload=str(MIXED), arrival_rate=0.5)
    assert [c.name for c in mixed.workload] == ["small plain", "gang", "whole cluster"]
    assert mixed.barrier_fraction == pytest.approx(0.4)
    assert list(mixed.ks) == [2, 8, 16]


def test_shares_within_1e6_of_one_are_normalised_and_others_refused():
    near = [{"share": 0.9 - 3.4e-7, "tasks": 1}, {"share": 0.1, "tasks": 4}]
    system = S(servers=8, workload=near)
    assert math.fsum(c.share for c in system.workload) == pytest.approx(1.0, abs=1e-15)
    with pytest.raises(bq.ParameterError, match="workload shares must sum to 1 within 1e-06"):
        S(servers=8, workload=[{"share": 0.8, "tasks": 1}, {"share": 0.1, "tasks": 4}])
    assert S(servers=8, tasks_pmf={1: 0.9 - 3.4e-7, 4: 0.1}).tasks_pmf[1][1] == pytest.approx(0.1 / (1 - 3.4e-7))
    with pytest.raises(bq.ParameterError, match="workload class 1 tasks must be an integer with 1 <= "):
        S(servers=8, workload=[{"share": 0.5, "tasks": 1}, {"share": 0.5, "tasks": 9}])
    with pytest.raises(bq.ParameterError, match="tasks must be None with a workload"):
        S(servers=8, tasks=2, workload=near)


def test_a_shared_time_holds_every_worker_for_one_draw():
    system = S(servers=16, workload=str(MIXED), arrival_rate=0.5)
    inputs = draw_jobs(system, 5000, np.random.default_rng(1))
    whole = np.flatnonzero(inputs["cls"] == 2)
    assert whole.size > 300 and (inputs["tasks"][whole] == 16).all()
    for j in whole[:50]:
        o = inputs["offsets"][j]
        assert np.unique(inputs["times"][o:o + 16]).size == 1
    gang = np.flatnonzero(inputs["cls"] == 1)
    assert inputs["barrier"][gang].all() and not inputs["barrier"][inputs["cls"] == 0].any()
    # each class draws from its own law: Erlang(2, 2) has mean 1, Exp(0.5) mean 2
    times = [inputs["times"][inputs["offsets"][j]:inputs["offsets"][j] + 8] for j in gang]
    assert np.mean(np.concatenate(times)) == pytest.approx(1.0, rel=0.05)


@pytest.mark.parametrize("discipline", ["fcfs", "first-fit", "backfill"])
@pytest.mark.parametrize("barriers", [1, 2])
def test_workload_kernels_equal_their_references(discipline, barriers):
    system = S(servers=16, workload=str(MIXED), arrival_rate=0.4, barriers=barriers,
               scheduling="first-fit" if discipline == "fcfs" else discipline)
    inputs = draw_jobs(system, 3000, np.random.default_rng(2))
    kernel = waitlist.run_inputs(system, inputs, discipline=discipline)
    ref = waitlist.reference(system, inputs, discipline=discipline)
    for key in ("start", "departure", "work", "useful", "completed"):
        assert np.array_equal(np.asarray(kernel[key]), np.asarray(ref[key])), key
    if discipline == "fcfs":
        fifo = central.run_inputs(system.replace(scheduling="fcfs"), inputs)
        for key in ("start", "departure", "work"):
            assert np.array_equal(fifo[key], kernel[key]), key


def test_mean_work_of_a_workload():
    system = S(servers=16, workload=str(MIXED), arrival_rate=0.5)
    expected = 0.6 * 2 * 1 + 0.3 * 8 * 1 + 0.1 * 16 * 2
    assert mean_work(system)[0] == pytest.approx(expected)
    res = bq.simulate(system, jobs=40_000, replications=4, seed=3)
    assert res.summary()["utilization"] == pytest.approx(0.5 * expected / 16, rel=0.02)


def _one_or_all_limit(s, beta, mu=1.0):
    """FIFO multiserver-job one-or-all limit (Olliaro et al. 2023; EXTENSIONS.md section 4): (1 + E[G]) / E[C]."""
    eg = (1 - beta) / beta
    ec = 1 / mu
    for g in range(0, 4000):
        w = beta * (1 - beta) ** g
        ec += w * (max(g - s, 0) / (s * mu) + harmonic(min(g, s)) / mu)
    return (1 + eg) / ec


def test_the_one_or_all_multiserver_limit_against_a_saturated_run():
    exact = _one_or_all_limit(32, 0.1)
    assert exact == pytest.approx(3.0261, abs=1e-4)
    system = S(servers=32, workload=read_workload(MJQM)["classes"])
    est = bq.saturated_throughput(system, jobs=200_000, replications=8, seed=4)
    lo, hi = est["lambda_max_ci"]
    assert lo <= exact <= hi, (lo, exact, hi)


def test_per_class_results_and_the_command_line_reading_an_mjqm_file():
    out = subprocess.run([sys.executable, "-m", "barrier_queues.cli", "simulate", "--workload", str(MJQM),
                          "--jobs", "20000", "--replications", "2", "--seed", "5", "--json"],
                         capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    assert doc["config"]["servers"] == 32 and doc["config"]["arrival_rate"] == 2.4
    assert [(c["tasks"], c["barrier"]) for c in doc["classes"]] == [(1, True), (32, True)]
    share = doc["classes"][1]["share"]
    assert 0.08 < share < 0.12
    override = subprocess.run([sys.executable, "-m", "barrier_queues.cli", "simulate", "--workload", str(MJQM),
                               "--arrival-rate", "1.0", "--scheduling", "first-fit", "--jobs", "5000", "--json"],
                              capture_output=True, text=True, check=True)
    doc = json.loads(override.stdout)
    assert doc["config"]["arrival_rate"] == 1.0 and doc["config"]["scheduling"] == "first-fit"
