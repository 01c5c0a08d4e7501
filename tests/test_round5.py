"""Nothing silently wrong, round 5 (issue 58): each case as a test that fails if the case comes back. A case is
an input a user can give; what it must get is exit 2 and one line naming the option, or a right answer."""

import json
import subprocess
import sys

import pytest

import barrier_queues as bq
from barrier_queues.release import release_law

CLI = [sys.executable, "-m", "barrier_queues.cli"]


def _run(*args, timeout=120):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


def _one_line_refusal(out, fragment: str) -> None:
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert fragment in out.stderr, out.stderr


@pytest.mark.parametrize("timeout", [100.0, 1e5, 1e9])
def test_a_timeout_far_beyond_the_tasks_is_the_fixed_release(timeout):
    """D = min(X_(k:k), T) with T far beyond every task: E[D] = H_k / mu, the fixed release's (an independent
    closed form). The quadrature over [0, T] in one piece returned 0 (ZeroDivisionError in stability)."""
    system = bq.BarrierSystem(servers=16, tasks=8, barriers=2, release="timeout", timeout=timeout)
    law = release_law(system)
    assert law.mean_departure == pytest.approx(sum(1 / i for i in range(1, 9)), rel=1e-9)
    assert law.mean_work == pytest.approx(8.0, rel=1e-9)


def test_stability_and_simulate_with_a_huge_timeout_answer_without_warnings():
    out = _run("stability", "-s", "16", "-k", "8", "-b", "2", "--release", "timeout", "--timeout", "100000",
               "--json")
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert json.loads(out.stdout)["lambda_max"] == pytest.approx(2 / sum(1 / i for i in range(1, 9)), rel=1e-9)
    out = _run("simulate", "-s", "16", "-k", "8", "-b", "2", "--release", "timeout", "--timeout", "1e9",
               "--utilization", "0.3", "--jobs", "2000", "--json")
    assert out.returncode == 0 and "Warning" not in out.stderr, out.stderr
    assert json.loads(out.stdout)["offered_utilization"] == pytest.approx(0.3)


def test_a_run_too_short_to_judge_does_not_pass_and_says_why_utilization_is_missing():
    out = _run("simulate", "-s", "8", "-k", "2", "--utilization", "0.3", "--jobs", "2", "--seed", "1", "--json")
    doc = json.loads(out.stdout)
    assert doc["utilization"] is None and "fewer than 100 measured jobs" in doc["utilization_note"]
    assert doc["stable"] is None and "too short to judge" in doc["stability"]["undecided"]
    text = _run("simulate", "-s", "8", "-k", "2", "--utilization", "0.3", "--jobs", "2", "--seed", "1").stdout
    assert "none measured" in text and "cannot tell: the run is too short" in text


@pytest.mark.parametrize("seed", [3, 4])
def test_a_class_that_never_started_is_not_passed(seed):
    """Rare 16-task gangs under first-fit at rho 0.95: with these seeds every gang that arrived was still
    waiting at the last arrival (fewer than the late-start test's 10 jobs); the verdict was "stable": true."""
    out = _run("simulate", "-s", "16", "--tasks-pmf", "1:0.999,16:0.001", "--utilization", "0.95", "--jobs",
               "5000", "--scheduling", "first-fit", "--seed", str(seed), "--json")
    doc = json.loads(out.stdout)
    gangs = [c for c in doc["stability"]["classes"] if c["tasks"] == 16][0]
    assert gangs["arrived"] == gangs["unstarted"] > 0
    assert doc["stable"] is not True and gangs["stable"] is not True
    if doc["stable"] is None:
        assert "no job of k = 16" in doc["stability"]["undecided"]


def test_text_output_is_in_words_not_python():
    text = _run("simulate", "--workload", "tests/data/workloads/mixed.json", "-s", "16", "--arrival-rate", "0.5",
                "--jobs", "3000", "--scheduling", "first-fit", "--seed", "2").stdout
    for python in ("None", "{'", "'}"):
        assert python not in text, text
    assert "task law exponential (rate 1)" in text and "no overhead model" in text
    text = _run("stability", "-s", "8", "-k", "2").stdout
    assert "{" not in text and "task law          exponential (rate 1)" in text


def test_requested_estimates_are_refused_where_no_discipline_reads_them(tmp_path):
    from tests.test_replay import SWF

    log = tmp_path / "t.swf"
    log.write_text(SWF)
    for scheduling in ("fcfs", "first-fit", "server-filling"):
        _one_line_refusal(_run("replay", str(log), "--scheduling", scheduling, "--estimates", "requested"),
                          f"estimates must be 'exact' under {scheduling}")
    _one_line_refusal(_run("replay", str(log), "--scheduling", "fcfs,backfill", "--estimates", "exact,requested"),
                      "a grid of backfill alone")
    _one_line_refusal(_run("sweep", "--trace", str(log), "--out", str(tmp_path / "f"), "--scheduling",
                           "first-fit,backfill", "--estimates", "requested"), "estimates must be 'exact'")
    assert not (tmp_path / "f").exists()
    assert _run("replay", str(log), "--scheduling", "backfill", "--estimates", "requested").returncode == 0


@pytest.mark.parametrize("classes, fragment", [("2,4", "must start at 1 (got 2,4)"),
                                               ("1,4,2", "must be increasing"), ("1,1,4", "must be increasing"),
                                               ("", "--size-classes must not be empty")])
def test_size_classes_keep_every_job_and_are_in_order(tmp_path, classes, fragment):
    from tests.test_replay import SWF

    log = tmp_path / "t.swf"
    log.write_text(SWF)
    _one_line_refusal(_run("replay", str(log), "--size-classes", classes), fragment)


def test_an_empty_jobs_out_is_refused(tmp_path):
    from tests.test_replay import SWF

    log = tmp_path / "t.swf"
    log.write_text(SWF)
    _one_line_refusal(_run("replay", str(log), "--jobs-out", ""), "--jobs-out must not be empty")


def test_a_folder_whose_stored_replications_lack_the_queue_record_grows(tmp_path):
    """Statistics stored without the per-class queue record (an earlier version's folder) grown from 2 to 3
    replications: a KeyError 'queue_tau' before; now the other tests decide and the row is written."""
    from barrier_queues.statistics import load_stats, save_stats

    folder = tmp_path / "sw"
    args = ["sweep", "-s", "8", "-k", "2", "--utilization", "0.3", "--jobs", "2000", "--out", str(folder),
            "--seed", "1", "--json"]
    assert _run(*args, "--replications", "2").returncode == 0
    (npz,) = folder.glob("points/*.npz")
    stats, meta = load_stats(npz)
    for s in stats:
        s.extra.pop("queue")
    save_stats(npz, stats, meta)
    out = _run(*args, "--replications", "3")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert json.loads(out.stdout)["rows"][0]["stable"] is True


def test_edges_that_gave_wrong_numbers(tmp_path):
    """plan-phases' sync share is never below 0 (a polling barrier never releases before the ideal one);
    an empirical law of times near the largest double is refused (its sums overflowed to inf); the waiting
    bound is never above the sojourn bound (W <= S on every path)."""
    from barrier_queues.bounds import bound
    from barrier_queues.phases import plan_phases

    curve = plan_phases(4, "bimodal:p=0.5,rate1=1e-12,rate2=1", max_phases=12, samples=2000)["curve"]
    assert (curve.sync_share >= 0).all()
    big = tmp_path / "big.txt"
    big.write_text("1e308\n1.5e308\n1.7e308\n")
    _one_line_refusal(_run("plan-phases", "-k", "4", "--task-dist", f"empirical:file={big}"),
                      "must be task times at most 1e+300")
    for util in (0.9, 0.5):
        b = bound(bq.BarrierSystem(servers=8, tasks=2, arrival_rate=util * 8 / 2 / 1.5), 5e-324, "gg")
        assert b.waiting_quantile <= b.sojourn_quantile


MOLDABLE = ["simulate", "--moldable", "take-fraction", "--take-fraction", "0.5", "-s", "16", "-k", "16",
            "--utilization", "0.3", "--jobs", "2000"]


@pytest.mark.parametrize("extra, flag", [
    (["--max-attempts", "3"], "max_attempts must be None"), (["--probe-ratio", "2"], "probe_ratio must be None"),
    (["--min-fraction", "0.5"], "min_fraction must be None"), (["--sync", "spark"], "sync must be None"),
    (["--checkpoint-interval", "1"], "checkpoint_interval must be None"), (["--revive", "1"], "revive_interval must"),
    (["--force"], "--force must come with --jobs-csv"), (["--failure-rate", "0.1"], "failure_rate must be None with "
                                                                                    "moldable jobs"),
    (["--overhead", "event"], "overhead must be None with moldable jobs"),
    (["--scheduling", "first-fit"], "scheduling must be 'fcfs' and placement 'central' with moldable jobs"),
    (["--node-size", "4"], "node_size must be None with moldable jobs"),
    (["--phases", "2"], "phases must be 1 with moldable jobs"),
    (["--task-dist", "exp:rate=1", "--task-rate", "2"], "give at most one of task_rate")])
def test_an_option_moldable_jobs_do_not_read_is_refused(extra, flag):
    """Each was run and ignored once; moldable jobs are now a system of the one model (its field ``moldable``),
    so each is refused by the system's own validation, as for any other system."""
    _one_line_refusal(_run(*MOLDABLE, *extra), flag)


def test_a_moldable_run_too_short_or_beyond_every_policys_limit():
    """10 jobs cannot be judged (it said "stable": true at three times its limit); a load at or above
    s / (k E[X]) is refused without --allow-unstable, as simulate refuses one above its limit."""
    from barrier_queues.moldable import simulate_moldable

    short = simulate_moldable(16, 16, 0.5, "take-fraction", 1.0, barriers=2, jobs=10, replications=1, seed=1)
    assert short["stable"] is None and "too short to judge" in short["stability"]["undecided"]
    with pytest.raises(bq.ParameterError, match=r"arrival_rate must be below the stability limit lambda_max = 1 "
                                                r"\(work conservation"):
        simulate_moldable(16, 16, 1.0, "take-fraction", 0.5, jobs=100, replications=1, seed=1)
    over = simulate_moldable(16, 16, 3.0, "take-fraction", 1.0, barriers=2, jobs=2000, replications=1, seed=1,
                             allow_unstable=True)
    assert over["stable"] is False
    _one_line_refusal(_run(*MOLDABLE[:-4], "--utilization", "1", "--jobs", "100"), "arrival_rate must be below")


def test_a_replay_seed_without_failures_is_refused(tmp_path):
    from tests.test_replay import SWF

    log = tmp_path / "t.swf"
    log.write_text(SWF)
    _one_line_refusal(_run("replay", str(log), "--seed", "3"), "--seed must come with --failure-rate")
    assert _run("replay", str(log), "--seed", "3", "--failure-rate", "0.001").returncode == 0


@pytest.mark.parametrize("name, text, fragment", [
    ("empty.csv", "job_id,submit,tasks,task_times\n1,0,2,\n2,1,1,3.0\n", "row 2: task_times is empty"),
    ("both.csv", "job_id,submit,tasks,runtime,task_times\n1,0,2,10,1;2\n", "not both"),
    ("big.csv", "job_id,submit,tasks,runtime\n1,1.7e308,2,1e300\n2,1.7e308,1,3.0\n", "lost in floating point"),
    ("e300.csv", "job_id,submit,tasks,runtime\n1,1e300,2,7\n2,1e300,1,3.0\n", "job 1 (submit 1e+300, time 7)"),
    ("skip.swf", "; MaxProcs: 8\n1 0 0 -1 2 -1 -1 2 20 -1 1 1 1 -1 -1 -1 -1 -1\n",
     "has no job that can be replayed (skipped: 1 runtime <= 0)")])
def test_trace_inputs_that_ended_in_tracebacks_or_wrong_numbers(tmp_path, name, text, fragment):
    log = tmp_path / name
    log.write_text(text)
    _one_line_refusal(_run("replay", str(log), "--servers", "4"), fragment)
    _one_line_refusal(_run("sweep", "--trace", str(log), "--servers", "4", "--out", str(tmp_path / "f")), fragment)


def test_a_byte_order_mark_before_an_swf_log_is_not_content(tmp_path):
    from tests.test_replay import SWF

    plain, marked = tmp_path / "a.swf", tmp_path / "b.swf"
    plain.write_text(SWF)
    marked.write_bytes(b"\xef\xbb\xbf" + SWF.encode())
    a, b = (json.loads(_run("replay", str(p), "--json").stdout) for p in (plain, marked))
    assert a["mean_waiting"] == b["mean_waiting"] and a["jobs"] == b["jobs"] == 3


def test_an_out_that_names_a_file_is_not_a_folder(tmp_path):
    f = tmp_path / "afile"
    f.write_text("mine\n")
    _one_line_refusal(_run("sweep", "-s", "4", "-k", "2", "--utilization", "0.3", "--out", str(f)),
                      "out must be a folder (got")
    assert f.read_text() == "mine\n"


def test_the_folder_spark_bench_writes_replays_on_the_slots_its_log_records():
    """spark.eventLog.dir holding one application's log is that log, and the log's executors give the workers
    (8 executors of 1 core: 8 slots), the same replay as --servers 8."""
    folder = "data/spark/s8-k4-rho0.5/eventlog"
    own = json.loads(_run("replay", folder, "--json").stdout)
    given = json.loads(_run("replay", folder, "--servers", "8", "--json").stdout)
    assert own["servers"] == 8 and own["mean_waiting"] == given["mean_waiting"]
    assert any("8 task slots from the log" in n for n in own["trace"]["notes"])


def test_a_trace_sweep_point_cut_mid_number_is_computed_again(tmp_path):
    """The last row cut inside a number (11,648.65 read back as 116) was once served from a trace sweep's table
    and written back as valid; its points are now point files with a digest: one cut short is replayed, and the
    table comes out to the bytes of a fresh folder."""
    from tests.test_replay import SWF

    log = tmp_path / "t.swf"
    log.write_text(SWF)
    args = ["sweep", "--trace", str(log), "--scheduling", "fcfs,backfill"]
    assert _run(*args, "--out", str(tmp_path / "fresh")).returncode == 0
    assert _run(*args, "--out", str(tmp_path / "cut")).returncode == 0
    point = sorted((tmp_path / "cut" / "points").glob("*.json"))[-1]
    text = point.read_text()
    point.write_text(text[:text.index('"makespan": ') + len('"makespan": 1')])     # cut inside a number
    rerun = _run(*args, "--out", str(tmp_path / "cut"))
    assert rerun.returncode == 0 and "1 point file(s) differ" in rerun.stderr
    table = tmp_path / "cut" / "results.csv"
    assert table.read_bytes() == (tmp_path / "fresh" / "results.csv").read_bytes()


def test_a_bare_log_name_is_found_in_the_logs_folder_setting_and_said(tmp_path):
    """Readers round 3 (issue 59): the printed 'replay KTH-SP2.swf.gz' runs from the repository once the logs'
    folder setting names the folder; it says where it read the log, and without the setting says what to set."""
    import os

    from tests.test_replay import SWF

    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "tiny.swf").write_text(SWF)
    env = {**os.environ, "BARRIER_QUEUES_TRACES": str(tmp_path / "logs")}
    out = subprocess.run([*CLI, "replay", "tiny.swf", "--json"], capture_output=True, text=True, env=env,
                         cwd=tmp_path, timeout=60)
    assert out.returncode == 0 and json.loads(out.stdout)["jobs"] == 3
    assert "read from the BARRIER_QUEUES_TRACES folder" in out.stderr
    env.pop("BARRIER_QUEUES_TRACES")
    out = subprocess.run([*CLI, "replay", "tiny.swf"], capture_output=True, text=True, env=env, cwd=tmp_path,
                         timeout=60)
    _one_line_refusal(out, "export BARRIER_QUEUES_TRACES=")
    out = subprocess.run([sys.executable, "benchmarks/replay_speed.py"], capture_output=True, text=True, env=env,
                         timeout=60)
    _one_line_refusal(out, "give --traces FOLDER")


@pytest.mark.parametrize("option, command", [(["--tasks-pmf", "1:0.5,4:0.5"], "--saturated"),
                                             (["--workload", "tests/data/workloads/mixed.json"], "--saturated"),
                                             (["--scheduling", "first-fit"], "sweep ... --scheduling RULE"),
                                             (["--moldable", "fixed"], "simulate --moldable POLICY")])
def test_stability_names_the_command_that_answers_a_workload_it_does_not_take(option, command):
    """argparse's bare "unrecognized arguments" before (issue 59); each named command is run in the docs' tests."""
    _one_line_refusal(_run("stability", "-s", "8", "-k", "2", *option), command)


def test_a_saturated_run_under_another_rule_names_the_way_to_its_limit():
    _one_line_refusal(_run("simulate", "-s", "8", "-k", "2", "--saturated", "--scheduling", "first-fit"),
                      "'sweep ... --scheduling first-fit --utilization")


def _spark_lines():
    from tests.test_eventlog import _raw_lines

    return [json.loads(line) for line in _raw_lines()]


def _analyze(tmp_path, name, events):
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    out = _run("spark-analyze", str(path), "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["warnings"]


def test_spark_analyze_warns_of_what_it_cannot_measure(tmp_path):
    """A log whose every job failed, one without the barrier flag (no Stage Infos), and a job that launched no
    task: each reported as such (silent before: "jobs": 0, and no word of the missing flag or tasks)."""
    events = _spark_lines()
    assert not any("no job" in w or "launched no task" in w for w in _analyze(tmp_path, "plain", events))
    failed = [dict(e, **({"Job Result": {"Result": "JobFailed"}} if e["Event"] == "SparkListenerJobEnd" else {}))
              for e in events]
    assert any("no job of the log completed" in w for w in _analyze(tmp_path, "failed", failed))
    flagless = [dict(e, **({"Stage Infos": []} if e["Event"] == "SparkListenerJobStart" else {})) for e in events]
    assert any("no job of the log is a barrier job" in w for w in _analyze(tmp_path, "flagless", flagless))
    first_job = next(e["Job ID"] for e in events if e["Event"] == "SparkListenerJobStart")
    stages = {s for e in events if e["Event"] == "SparkListenerJobStart" and e["Job ID"] == first_job
              for s in e["Stage IDs"]}
    taskless = [e for e in events if not (e["Event"].startswith("SparkListenerTask") and e.get("Stage ID") in stages)]
    assert any("launched no task" in w for w in _analyze(tmp_path, "taskless", taskless))


@pytest.mark.parametrize("k", [8, 20])
def test_a_fixed_requirement_above_the_servers_is_refused_whatever_k(k):
    """n = 17 on 16 workers was cut to k = 8 silently but refused with k = 20; one rule now, simulator and chain."""
    from barrier_queues.moldable_ctmc import moldable_ctmc

    _one_line_refusal(_run("simulate", "--moldable", "fixed", "--requirement", "17", "-s", "16", "-k", str(k),
                           "--utilization", "0.3", "--jobs", "1000"), "requirement must be at most servers = 16")
    with pytest.raises(bq.ParameterError, match="requirement must be at most servers = 2"):
        moldable_ctmc(2, k, 0.01, "fixed", requirement=3)


def test_messages_name_values_as_a_user_wrote_them(tmp_path):
    """'(got np.int64(-5))' and argparse's 'expected one argument' for a negative pmf key: now -5, named."""
    log = tmp_path / "neg.csv"
    log.write_text("job_id,submit,tasks,runtime\n1,0,-5,10\n")
    _one_line_refusal(_run("replay", str(log), "--servers", "4"), "tasks must be a finite number >= 1 (got -5)")
    _one_line_refusal(_run("simulate", "-s", "8", "--tasks-pmf", "-5:1", "--utilization", "0.3"), "(got -5)")


def test_running_out_of_memory_in_replay_gives_replays_advice(tmp_path, monkeypatch, capsys):
    """A gzip holding one 190 MB line was told to 'use fewer jobs, replications or states', options replay does
    not take."""
    from barrier_queues import cli, traces
    from tests.test_replay import SWF

    log = tmp_path / "t.swf"
    log.write_text(SWF)

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(traces, "read_trace", no_memory)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["replay", str(log)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "replay a smaller log" in err and "replications" not in err


def test_a_chain_too_large_at_any_load_says_so_not_that_the_load_is_unstable():
    from barrier_queues.moldable_ctmc import moldable_ctmc

    with pytest.raises(bq.ParameterError, match="too large at any load") as err:
        moldable_ctmc(8, 8, 0.1, "take-fraction", take_fraction=0.5, max_states=2000)
    assert "stable" not in str(err.value) and "lower load" not in str(err.value)


def test_widths_beyond_any_machine_never_overflow_to_negative(tmp_path):
    """1e20 processors overflowed the int64 cast to a negative width and replayed with a negative utilization."""
    csv = tmp_path / "w.csv"
    csv.write_text("job_id,submit,tasks,runtime\n1,0,1e20,10\n2,1,2,3\n")
    _one_line_refusal(_run("replay", str(csv), "--servers", "4"), "tasks must be at most 1,000,000,000,000")
    swf = tmp_path / "w.swf"
    swf.write_text("1 0 0 10 100000000000000000000 -1 -1 100000000000000000000 20 -1 1 1 1 -1 -1 -1 -1 -1\n"
                   "2 5 0 10 2 -1 -1 2 20 -1 1 1 1 -1 -1 -1 -1 -1\n")
    doc = json.loads(_run("replay", str(swf), "--servers", "4", "--json").stdout)
    assert doc["utilization"] > 0 and doc["trace"]["skipped"] == {"wider than any machine (k > 1,000,000,000,000)": 1}


def test_a_trace_sweep_seed_without_failures_is_refused(tmp_path):
    from tests.test_replay import SWF

    log = tmp_path / "t.swf"
    log.write_text(SWF)
    _one_line_refusal(_run("sweep", "--trace", str(log), "--seed", "4", "--out", str(tmp_path / "f")),
                      "--seed must come with --failure-rate")
