"""Spark event-log parsing and blocking-overhead samples."""

import json
from pathlib import Path

import pytest
import zstandard

from barrier_queues.eventlog import EventLogError, blocking_overhead, parse_event_log, read_events

ROOT = Path(__file__).resolve().parents[1]

RUN = Path(__file__).parent / "data" / "spark-run-s2-k2"
REAL = next((RUN / "eventlog").glob("*.zstd"))


def _raw_lines():
    return zstandard.ZstdDecompressor().decompress(REAL.read_bytes()).decode().splitlines()


def test_real_log_tables_match_the_raw_events():
    tables = parse_event_log(REAL)
    raw = [json.loads(line) for line in _raw_lines()]
    starts = {e["Job ID"]: e for e in raw if e["Event"] == "SparkListenerJobStart"}
    ends = {e["Job ID"]: e for e in raw if e["Event"] == "SparkListenerJobEnd"}
    jobs = tables.jobs.set_index("job_id")
    assert len(jobs) == 10 and len(tables.tasks) == 20
    assert jobs.barrier.all() and (jobs.tasks == 2).all() and (jobs.result == "JobSucceeded").all()
    assert sorted(jobs.key) == sorted([str(i) for i in range(8)] + ["warmup-0", "warmup-1"])
    origin = tables.app["origin_ms"]
    for jid, e in starts.items():
        assert jobs.loc[jid, "submission"] == (e["Submission Time"] - origin) / 1000
        assert jobs.loc[jid, "completion"] == (ends[jid]["Completion Time"] - origin) / 1000
    assert (jobs.sojourn - jobs.waiting - jobs.execution).abs().max() < 1e-9
    assert (tables.tasks.finish >= tables.tasks.launch).all()
    assert tables.app["spark_version"] == "4.3.0"
    # barrier tasks of one job launch together
    spread = tables.tasks.groupby("job_id").launch.agg(lambda x: x.max() - x.min())
    assert spread.max() < 0.05


def test_plain_and_rolled_forms_give_the_same_tables(tmp_path):
    lines = _raw_lines()
    plain = tmp_path / "app-plain"
    plain.write_text("\n".join(lines) + "\n")
    rolled = tmp_path / "eventlog_v2_app"
    rolled.mkdir()
    half = len(lines) // 2
    (rolled / "events_1_app").write_text("\n".join(lines[:half]) + "\n")
    (rolled / "events_2_app.zstd").write_bytes(
        zstandard.ZstdCompressor().compress(("\n".join(lines[half:]) + "\n").encode()))
    (rolled / "appstatus_app").write_text("")
    a, b, c = parse_event_log(REAL), parse_event_log(plain), parse_event_log(rolled)
    assert a.jobs.equals(b.jobs) and a.jobs.equals(c.jobs) and a.tasks.equals(c.tasks)


def _event(kind, **fields):
    return json.dumps({"Event": kind, **fields})


def _synthetic(path, jobs):
    """Write a minimal event log; jobs: (id, submit, [(executor, launch, finish)]) in seconds."""
    lines, tid = [], 0
    for jid, submit, tasks in jobs:
        lines.append(_event("SparkListenerJobStart", **{
            "Job ID": jid, "Submission Time": int(submit * 1000), "Stage IDs": [jid],
            "Stage Infos": [{"RDD Info": [{"Barrier": True}]}], "Properties": {"bq.job": f"j{jid}"}}))
        for ex, launch, finish in tasks:
            info = {"Task ID": tid, "Index": tid, "Attempt": 0, "Launch Time": int(launch * 1000),
                    "Executor ID": ex, "Host": "h", "Finish Time": 0, "Getting Result Time": 0,
                    "Failed": False, "Killed": False}
            lines.append(_event("SparkListenerTaskStart", **{"Stage ID": jid, "Task Info": info}))
            lines.append(_event("SparkListenerTaskEnd", **{
                "Stage ID": jid, "Task End Reason": {"Reason": "Success"},
                "Task Info": {**info, "Finish Time": int(finish * 1000)},
                "Task Metrics": {"Executor Run Time": int((finish - launch) * 800)}}))
            tid += 1
        last = max(f for _, _, f in tasks)
        lines.append(_event("SparkListenerJobEnd", **{"Job ID": jid, "Completion Time": int(last * 1000) + 5,
                                                       "Job Result": {"Result": "JobSucceeded"}}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_blocking_overhead_on_a_log_with_known_answers(tmp_path):
    log = _synthetic(tmp_path / "synthetic", [
        (0, 0.0, [("0", 0.1, 1.0), ("1", 0.1, 1.5)]),     # starts at once
        (1, 0.2, [("0", 1.9, 3.0), ("1", 1.9, 2.5)]),     # blocked: 2 free at 1.5, launched 1.9
        (2, 5.0, [("0", 5.05, 6.0), ("1", 5.05, 6.0)]),   # arrives to an idle cluster
        (3, 5.5, [("0", 6.75, 7.0), ("1", 6.75, 7.0)]),   # blocked: free at 6.0, launched 6.75
    ])
    samples = blocking_overhead(parse_event_log(log)).set_index("job_id")
    assert list(samples.index) == [1, 3]
    assert samples.loc[1, "ready"] == pytest.approx(1.5) and samples.loc[1, "overhead"] == pytest.approx(0.4)
    assert samples.loc[3, "overhead"] == pytest.approx(0.75)
    jobs = parse_event_log(log).jobs.set_index("job_id")
    assert jobs.loc[1, "waiting"] == pytest.approx(1.7) and jobs.loc[1, "key"] == "j1"


def test_truncated_line_is_a_clear_error(tmp_path):
    lines = _raw_lines()
    bad = tmp_path / "truncated"
    bad.write_text("\n".join(lines[:40]) + "\n" + lines[40][: len(lines[40]) // 2])
    with pytest.raises(EventLogError, match=r"truncated, line 41: not a JSON event .*truncated or corrupt"):
        parse_event_log(bad)


@pytest.mark.parametrize("drop, fragment", [
    ("SparkListenerJobEnd", "has a SparkListenerJobStart but no SparkListenerJobEnd"),
    ("SparkListenerTaskEnd", "has a SparkListenerTaskStart but no SparkListenerTaskEnd"),
    ("SparkListenerTaskStart", "has a SparkListenerTaskEnd but no SparkListenerTaskStart"),
    ("SparkListenerJobStart", "no SparkListenerJobStart events"),
])
def test_missing_events_are_clear_errors(tmp_path, drop, fragment):
    lines = [line for line in _raw_lines() if json.loads(line)["Event"] != drop]
    bad = tmp_path / "missing"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(EventLogError, match=fragment):
        parse_event_log(bad)


def test_other_bad_inputs(tmp_path):
    with pytest.raises(EventLogError, match="must be an existing file or directory"):
        parse_event_log(tmp_path / "nope")
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(EventLogError, match="has no events_<n>_\\* files"):
        parse_event_log(tmp_path / "empty_dir")
    weird = tmp_path / "weird"
    weird.write_text('["not", "an", "event"]\n')
    with pytest.raises(EventLogError, match="line 1: a JSON object with an 'Event' field"):
        list(read_events(weird))
    lz4 = tmp_path / "app.lz4"
    lz4.write_bytes(b"\x04\x22\x4d\x18")
    with pytest.raises(EventLogError, match="lz4-compressed event logs are not supported"):
        parse_event_log(lz4)
    for name, text, message in (
            ("nan", '{"Event": "SparkListenerJobStart", "Submission Time": NaN}', "line 1: NaN is not a number"),
            ("inf", '{"Event": "SparkListenerJobStart", "Submission Time": -Infinity}',
             "line 1: -Infinity is not a number"),
            ("deep", "[" * 100_000 + "]" * 100_000, "line 1: a JSON value nested too deeply"),
            ("huge", '{"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": 1e300, "Stage IDs": []}',
             "line 1: field 'Submission Time' must be a number with \\|value\\| <= 1e\\+14"),
            ("no-tasks", '{"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": 1000, "Stage IDs": '
             '[0]}\n{"Event": "SparkListenerJobEnd", "Job ID": 0, "Completion Time": 2000, "Job Result": '
             '{"Result": "JobSucceeded"}}', "has 1 job\\(s\\) but no task events")):
        (tmp_path / name).write_text(text + "\n")
        with pytest.raises(EventLogError, match=message):
            parse_event_log(tmp_path / name)


def test_compression_is_detected_by_magic_bytes_not_by_name(tmp_path):
    import gzip

    text = ("\n".join(_raw_lines()) + "\n").encode()
    (tmp_path / "log.gz").write_bytes(gzip.compress(text))
    (tmp_path / "looks-plain.txt").write_bytes(zstandard.ZstdCompressor().compress(text))
    (tmp_path / "looks-zstd.zstd").write_bytes(text)
    base = parse_event_log(REAL)
    for name in ("log.gz", "looks-plain.txt", "looks-zstd.zstd"):
        assert parse_event_log(tmp_path / name).jobs.equals(base.jobs), name
    (tmp_path / "binary").write_bytes(b"\xff\xfe\x00garbage\x80\x81")
    with pytest.raises(EventLogError, match="binary, line 1: not UTF-8 text"):
        parse_event_log(tmp_path / "binary")
    (tmp_path / "cut.zstd").write_bytes(zstandard.ZstdCompressor().compress(text)[:200])
    with pytest.raises(EventLogError, match="the zstd stream is corrupt or cut short"):
        parse_event_log(tmp_path / "cut.zstd")


def test_two_applications_or_duplicate_jobs_are_refused_with_the_line(tmp_path):
    lines = _raw_lines()
    twice = tmp_path / "twice"
    twice.write_text("\n".join(lines + lines) + "\n")
    with pytest.raises(EventLogError, match=r"twice, line \d+: a second SparkListenerApplicationStart"):
        parse_event_log(twice)
    no_app = [line for line in lines if "SparkListenerApplicationStart" not in line]
    dup = tmp_path / "dup"
    dup.write_text("\n".join(no_app + [line for line in no_app if "SparkListenerJobStart" in line][:1]) + "\n")
    with pytest.raises(EventLogError, match=r"dup, line \d+: job \d+ starts a second time"):
        parse_event_log(dup)


def test_impossible_times_drop_the_job_with_a_counted_warning(tmp_path):
    log = _synthetic(tmp_path / "neg", [
        (0, 0.0, [("0", 0.1, 1.0), ("1", 0.1, 1.5)]),
        (1, 2.0, [("0", 2.1, 1.9), ("1", 2.1, 3.0)]),       # a task finishing before its launch
        (2, 5.0, [("0", 5.05, 6.0), ("1", 5.05, 6.0)]),
    ])
    tables = parse_event_log(log)
    assert list(tables.jobs.job_id) == [0, 2] and set(tables.tasks.job_id) == {0, 2}
    assert len(tables.warnings) == 1 and tables.warnings[0].startswith("1 job(s) dropped for impossible times, "
                                                                        "the first at neg, line")


def test_missing_or_mistyped_fields_name_the_line(tmp_path):
    lines = _raw_lines()
    i = next(n for n, line in enumerate(lines) if "SparkListenerTaskEnd" in line)
    event = json.loads(lines[i])
    del event["Task Info"]["Finish Time"]
    bad = tmp_path / "nofinish"
    bad.write_text("\n".join(lines[:i] + [json.dumps(event)] + lines[i + 1:]) + "\n")
    with pytest.raises(EventLogError, match=rf"nofinish, line {i + 1}: .*has no field 'Finish Time'"):
        parse_event_log(bad)
    event = json.loads(lines[i])
    event["Task Info"]["Launch Time"] = "soon"
    bad.write_text("\n".join(lines[:i] + [json.dumps(event)] + lines[i + 1:]) + "\n")
    with pytest.raises(EventLogError, match=rf"line {i + 1}: field 'Launch Time' must be a number"):
        parse_event_log(bad)


def test_spark_analyze_reports_failed_jobs_apart_and_leaves_them_out_of_the_means(tmp_path):
    """On the project's own failure run (s = 8, k = 4, barrier ResultStage, gamma = 0.15) 56 of 103 jobs end in
    JobFailed: they were once counted as completed (jobs 103, a mean over all, no warning). They are reported
    under 'failed' with their result and message, and the means are those of the JobSucceeded jobs; a log whose
    jobs all fail has no means; a Job Result given as a bare string is read, not a traceback."""
    import json
    import subprocess
    import sys

    run = ROOT / "data" / "spark-failures" / "s8-k4-result-g0.15" / "eventlog"
    log = next(run.iterdir())
    cmd = [sys.executable, "-m", "barrier_queues.cli", "spark-analyze", str(log), "--json"]
    doc = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    jobs = parse_event_log(log).jobs
    ok = jobs[jobs.result == "JobSucceeded"]
    assert doc["submitted_jobs"] == len(jobs) == 103 and doc["failed_jobs"] == 56 and doc["jobs"] == len(ok) == 47
    assert doc["mean_sojourn"] == pytest.approx(float(ok.sojourn.mean()), rel=1e-12)
    assert {f["result"] for f in doc["failed"]} == {"JobFailed"} and len(doc["failed"]) == 56
    assert all("barrier" in f["message"] for f in doc["failed"])
    assert any("56 of 103 jobs failed" in w for w in doc["warnings"])

    lines = [json.loads(line) for line in _synthetic(tmp_path / "ok", [(0, 0.0, [("0", 0.1, 1.0)]),
                                                                       (1, 2.0, [("0", 2.1, 3.0)])]).read_text()
             .splitlines()]
    for e in lines:
        if e["Event"] == "SparkListenerJobEnd":
            e["Job Result"] = "JobFailed"
    (tmp_path / "failed").write_text("\n".join(json.dumps(e) for e in lines) + "\n")
    out = subprocess.run(cmd[:4] + [str(tmp_path / "failed"), "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["jobs"] == 0 and doc["failed_jobs"] == 2 and doc["mean_waiting"] is None
    text = subprocess.run(cmd[:4] + [str(tmp_path / "failed")], capture_output=True, text=True)
    assert text.returncode == 0 and "no job completed" in text.stdout


def test_spark_analyze_carries_the_harness_serving_verdict():
    """A run the harness judged not served honestly (16 executors on 2 cores: load 3.28 per core) says so in the
    text, in --json (serving, with its problems) and in a warning; a log outside a run folder has no verdict."""
    import json
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "barrier_queues.cli", "spark-analyze"]
    bad = next((ROOT / "data" / "spark-capacity" / "s16-k8-rho0.5" / "eventlog").iterdir())
    doc = json.loads(subprocess.run(cmd + [str(bad), "--json"], capture_output=True, text=True, check=True).stdout)
    assert doc["serving"]["honest"] is False and any("3.28 exceeds 1.5" in p for p in doc["serving"]["problems"])
    assert any("not served honestly" in w for w in doc["warnings"])
    text = subprocess.run(cmd + [str(bad)], capture_output=True, text=True, check=True).stdout
    assert "served honestly   no" in text
    alone = json.loads(subprocess.run(cmd + [str(REAL), "--json"], capture_output=True, text=True,
                                      check=True).stdout)
    assert alone["serving"] is None or alone["serving"]["honest"] is True


def test_a_stage_a_later_job_lists_again_keeps_its_tasks_with_the_job_that_ran_them(tmp_path):
    """Spark lists a shuffle map stage again in a later job that reuses its output (skipped there) and resubmits
    it in that job after a fetch failure (stage attempt 1). Job 0 ran stage 0's first tasks; job 1 reran one
    of them: each keeps its own tasks, and neither is dropped for impossible times."""
    def task(tid, stage, attempt, launch, finish, reason="Success"):
        info = {"Task ID": tid, "Index": tid % 2, "Attempt": 0, "Launch Time": launch, "Executor ID": "0",
                "Host": "h", "Finish Time": 0, "Getting Result Time": 0, "Failed": reason != "Success",
                "Killed": False}
        return [_event("SparkListenerTaskStart", **{"Stage ID": stage, "Stage Attempt ID": attempt,
                                                    "Task Info": info}),
                _event("SparkListenerTaskEnd", **{"Stage ID": stage, "Stage Attempt ID": attempt,
                                                  "Task End Reason": {"Reason": reason},
                                                  "Task Info": {**info, "Finish Time": finish},
                                                  "Task Metrics": {"Executor Run Time": finish - launch}})]
    start = {"Stage Infos": [{"RDD Info": [{"Barrier": False}]}], "Properties": {}}
    lines = [_event("SparkListenerJobStart", **{"Job ID": 0, "Submission Time": 0, "Stage IDs": [0, 1], **start}),
             *task(0, 0, 0, 10, 100), *task(1, 0, 0, 10, 120), *task(2, 1, 0, 130, 200), *task(3, 1, 0, 130, 210),
             _event("SparkListenerJobEnd", **{"Job ID": 0, "Completion Time": 215,
                                              "Job Result": {"Result": "JobSucceeded"}}),
             _event("SparkListenerJobStart", **{"Job ID": 1, "Submission Time": 1000, "Stage IDs": [0, 2], **start}),
             *task(4, 2, 0, 1010, 1050, reason="FetchFailed"), *task(5, 2, 0, 1010, 1100),
             *task(6, 0, 1, 1200, 1300), *task(7, 2, 1, 1310, 1400),
             _event("SparkListenerJobEnd", **{"Job ID": 1, "Completion Time": 1405,
                                              "Job Result": {"Result": "JobSucceeded"}})]
    log = tmp_path / "reused"
    log.write_text("\n".join(lines) + "\n")
    tables = parse_event_log(log)
    owner = tables.tasks.set_index("task_id").job_id
    assert owner.tolist() == [0, 0, 0, 0, 1, 1, 1, 1] and not tables.warnings
    assert list(tables.jobs.job_id) == [0, 1] and tables.jobs.tasks.tolist() == [4, 4]
    assert tables.tasks.set_index("task_id").stage_attempt[6] == 1


def test_spark_analyze_on_a_log_without_its_version_says_so(tmp_path):
    """A log without SparkListenerLogStart (a synthetic or cut one) is analysed; its text names no 'Spark None'."""
    import subprocess
    import sys

    log = _synthetic(tmp_path / "noversion", [(0, 0.0, [("0", 0.1, 1.0), ("1", 0.1, 1.5)]),
                                              (1, 2.0, [("0", 2.1, 3.0), ("1", 2.1, 3.0)])])
    r = subprocess.run([sys.executable, "-m", "barrier_queues.cli", "spark-analyze", str(log)], capture_output=True,
                       text=True, check=True)
    assert "(no Spark version in the log)" in r.stdout.splitlines()[0] and "None" not in r.stdout
