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


MJQM_HEAD = 'cores = 4\npolicy = "fifo"\narrival.rate = 0.5\n'
MJQM_CLASS = '[[class]]\ncores = 1\narrival.prob = 1.0\nservice.mean = 1\n'


@pytest.mark.parametrize("name, text, fragment", [
    ("misspelt.json", '{"classes": [{"share": 1, "tasks": 1}], "utilisation": 0.5}',
     r"unknown key\(s\) \['utilisation'\]"),
    ("dup.json", '{"classes": [{"share": 1, "tasks": 1, "tasks": 2}]}', "key 'tasks' is given twice"),
    ("duptop.json", '{"servers": 4, "servers": 8, "classes": [{"share": 1, "tasks": 1}]}', "'servers' is given twice"),
    ("same.json", '{"classes": [{"share": 0.5, "tasks": 1}, {"share": 0.5, "tasks": 1}]}',
     "classes 0 and 1 are identical"),
    ("null.json", '{"classes": null}', "classes must be a non-empty list"),
    ("deep.json", "[" * 100_000 + "]" * 100_000, "nested too deeply|must hold a table"),
    ("rate.json", '{"classes": [{"share": 1, "tasks": 1}], "arrival_rate": "0.5"}',
     r"arrival_rate must be a finite number > 0 \(got '0.5'\)"),
    ("zero.toml", MJQM_HEAD + MJQM_CLASS.replace("service.mean = 1", "service.mean = 0"),
     r"class 0 service.mean must be a finite number > 0 \(got 0\)"),
    ("abc.toml", MJQM_HEAD + MJQM_CLASS.replace("service.mean = 1", 'service.mean = "abc"'),
     "class 0 service.mean must be a finite number"),
    ("inf.toml", MJQM_HEAD + MJQM_CLASS.replace("service.mean = 1", "service.mean = inf"),
     r"class 0 service.mean must be a finite number > 0 \(got inf\)"),
    ("service3.toml", MJQM_HEAD + MJQM_CLASS.replace("service.mean = 1", "service = 3"),
     r"class 0 service must be a table \(got 3\)"),
    ("arrival1.toml", MJQM_HEAD.replace("arrival.rate = 0.5", "arrival = 1.0") + MJQM_CLASS,
     r"arrival must be a table \(got 1.0\)"),
    ("classlist.toml", MJQM_HEAD + "class = [1, 2]\n", r"\[\[class\]\] entry 0 must be a table \(got 1\)"),
    ("policy3.toml", MJQM_HEAD.replace('"fifo"', "3") + MJQM_CLASS, r"policy must be a string.*\(got 3\)"),
    ("ratestr.toml", MJQM_HEAD.replace("arrival.rate = 0.5", 'arrival.rate = "0.5"') + MJQM_CLASS,
     r"arrival.rate must be a finite number > 0 \(got '0.5'\)"),
    ("gamma.toml", MJQM_HEAD + 'arrival.distribution = "gamma"\n' + MJQM_CLASS,
     "arrival.distribution must be one of exponential, deterministic"),
    ("unknown.toml", MJQM_HEAD + "utilisation = 0.5\n" + MJQM_CLASS,
     r"MJQM key\(s\) \['utilisation'\] are not read here"),
])
def test_every_field_of_a_workload_file_is_honoured_or_refused(tmp_path, name, text, fragment):
    """Round-4 inputs that were ignored, tracebacks or misleading: each is one ParameterError naming the file,
    the class and the field, from the API and as one line with exit 2 from the command line."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(bq.ParameterError, match=fragment):
        read_workload(path)
    out = subprocess.run([sys.executable, "-m", "barrier_queues.cli", "simulate", "--workload", str(path),
                          "-s", "4", "--arrival-rate", "0.5", "--jobs", "1000"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2 and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_a_byte_order_mark_a_fifo_and_mjqms_deterministic_arrivals(tmp_path):
    """A file that starts with a byte-order mark is read as its content; a FIFO or a folder is refused as what it
    is, at once (reading a FIFO blocked); MJQM's arrival.distribution = "deterministic" gives periodic arrivals
    (it was read as Poisson, bit for bit)."""
    import os

    bom = tmp_path / "bom.toml"
    bom.write_bytes("\ufeff".encode() + MJQM.read_bytes())
    assert read_workload(bom) == read_workload(MJQM)
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(bq.ParameterError, match="must be a regular file .*a FIFO"):
        read_workload(fifo)
    with pytest.raises(bq.ParameterError, match="must be a regular file .*a directory"):
        read_workload(tmp_path)
    det = tmp_path / "det.toml"
    det.write_text(MJQM.read_text().replace('arrival.distribution = "exponential"',
                                            'arrival.distribution = "deterministic"'))
    assert read_workload(det)["arrival"] == "deterministic" and read_workload(MJQM)["arrival"] == "poisson"
    runs = {}
    for path in (MJQM, det):
        out = subprocess.run([sys.executable, "-m", "barrier_queues.cli", "simulate", "--workload", str(path),
                              "--jobs", "5000", "--seed", "1", "--json"], capture_output=True, text=True, check=True)
        runs[path.name] = json.loads(out.stdout)
    assert runs["det.toml"]["config"]["arrival"] == "deterministic"
    assert runs["det.toml"]["mean_waiting"] != runs[MJQM.name]["mean_waiting"]


def test_the_documented_maximum_of_classes_runs():
    """10,000 classes (MAX_CLASSES) once did not finish 1,000 jobs in 60 s: every class had 51 x 3 histograms made
    up front. They are made when a class first has a job in a segment; the class rows still add up."""
    from barrier_queues.workload import MAX_CLASSES

    classes = [{"share": 1 / MAX_CLASSES, "tasks": 1 + i % 4, "name": f"c{i}"} for i in range(MAX_CLASSES)]
    out = bq.simulate(S(servers=8, workload=classes, arrival_rate=1.0), jobs=2000, replications=2, seed=1,
                      workers=1).summary()
    assert sum(c["jobs"] for c in out["classes"]) == out["jobs"]
    assert all(c["jobs"] > 0 for c in out["classes"])


FULL_MJQM = DATA / "one-or-all-mjqm-full.toml"


def test_mjqms_files_as_it_ships_them_are_read_with_one_notice(tmp_path):
    """Round 5's regression: MJQM's own run settings (events, repetitions, a [simulation] table, generator,
    output columns, [[pivot]]) were refused as unknown keys. The model is read (the same classes and the same
    numbers as the plain file), one notice line says the run length comes from --jobs and --replications, and
    a key MJQM does not have is still refused."""
    plain, full = read_workload(MJQM), read_workload(FULL_MJQM)
    assert (plain["classes"], plain["servers"], plain["arrival_rate"], plain["scheduling"]) == (
        full["classes"], full["servers"], full["arrival_rate"], full["scheduling"])
    assert len(full["notices"]) == 1 and "--jobs and --replications" in full["notices"][0]
    assert "events = 100000" in full["notices"][0] and "arrival.rate, policy" in full["notices"][0]
    args = ["simulate", "-s", "32", "--jobs", "3000", "--replications", "2", "--seed", "5", "--json"]
    outs = [subprocess.run([sys.executable, "-m", "barrier_queues.cli", *args[:1], "--workload", str(f), *args[1:]],
                           capture_output=True, text=True, timeout=120) for f in (MJQM, FULL_MJQM)]
    assert [o.returncode for o in outs] == [0, 0], outs[1].stderr
    assert outs[0].stderr == "" and len(outs[1].stderr.strip().splitlines()) == 1
    assert "run length comes from --jobs and --replications" in outs[1].stderr
    # the same system, so the same numbers, bit for bit
    a, b = (json.loads(o.stdout) for o in outs)
    assert a["mean_sojourn"] == b["mean_sojourn"]
    # a [simulation] table holding the run length is MJQM's too; anything else in it is refused
    text = FULL_MJQM.read_text().replace("events = 100000\nrepetitions = 10\n", "")
    sim = tmp_path / "sim.toml"
    # TOML: a [simulation] table comes after the top-level keys
    sim.write_text(text.split("[[class]]")[0] + "[simulation]\nevents = 5000\nrepetitions = 3\n\n[[class]]"
                   + text.split("[[class]]", 1)[1])
    assert "events = 5000, repetitions = 3" in read_workload(sim)["notices"][0]
    sim.write_text(sim.read_text().replace("repetitions = 3", "reps = 3"))
    with pytest.raises(bq.ParameterError, match=r"MJQM simulation key\(s\) \['reps'\] are not read here"):
        read_workload(sim)
    bad = tmp_path / "typo.toml"
    bad.write_text(FULL_MJQM.read_text().replace("repetitions = 10", "repetitons = 10"))
    with pytest.raises(bq.ParameterError, match=r"MJQM key\(s\) \['repetitons'\] are not read here"):
        read_workload(bad)


def test_every_input_file_of_an_mjqm_checkout_is_read_or_refused_in_one_line():
    """Every Inputs/*.toml of an MJQM checkout (BARRIER_QUEUES_MJQM names its folder; skipped without one, as the
    files are MJQM's and not ours to ship): each is read as a model, or refused in one line for a law or policy
    this library does not have (bounded Pareto service), never for MJQM's own run settings."""
    import os

    root = os.environ.get("BARRIER_QUEUES_MJQM")
    if not root or not (Path(root) / "Inputs").is_dir():
        pytest.skip("no MJQM checkout (set BARRIER_QUEUES_MJQM to its folder)")
    files = sorted((Path(root) / "Inputs").glob("*.toml"))
    assert files
    for f in files:
        try:
            doc = read_workload(f)
        except bq.ParameterError as exc:
            assert "not read here" not in str(exc) or "service key" in str(exc), (f, exc)
            assert "distribution must be" in str(exc), (f, exc)
        else:
            assert doc["classes"] and doc["servers"] > 0
