"""The benchmark scripts of the Benchmarks page (book/reference/benchmarks.md) run and print their tables: short
variants (a few thousand jobs, one run each, the CTMC's quick systems), checked for a row per system and rule, no
error row, and the identities a table shows (fcfs is 1.00x itself; with one k the three rules give the same mean
waiting). No test asserts a time: the numbers are the machine's."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], capture_output=True,
                          text=True, timeout=600, cwd=ROOT)


def _ok(script: str, *args: str) -> str:
    r = _run(script, *args)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    return r.stdout


def _rows(out: str) -> list[list[str]]:
    """The cells of every markdown table row, without header and separator rows."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in out.splitlines()
            if line.startswith("|")]
    return [r for r in rows if not set(r[0]) <= set("-:") and r[0] not in ("system", "(s,k,l)", "workers s")]


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_scheduling_benchmark_times_every_rule_and_the_failures():
    bench = _module("scheduling_speed")
    out = _ok("scheduling_speed.py", "--jobs", "3000", "--repeat", "1", "--workload", "data/workloads/borg-a.json",
              "--rates", "368,512")
    rows = _rows(out)
    plain = len(bench.SYSTEMS) + 2
    assert len(rows) == 3 * plain + 4 * len(bench.FAILURE_SYSTEMS)
    for name, rule, seconds, jobs_per_second, ratio, waiting in rows:
        waiting = waiting.removeprefix("unstable: ")           # an unstable system's mean is this run's, so marked
        assert float(seconds) > 0 and float(jobs_per_second.replace(",", "")) > 0 and float(waiting) >= 0, name
        assert ratio == "1.00" if rule == "fcfs" else float(ratio) > 0, (name, rule, ratio)
    one_k = [r for r in rows if r[0] == bench.SYSTEMS[0][0]]
    assert [r[1] for r in one_k] == ["fcfs", "first-fit", "backfill"]
    assert len({r[5] for r in one_k}) == 1                   # one k: the rules coincide
    failing = [r for r in rows if r[0] == bench.FAILURE_SYSTEMS[0][0]]
    assert [r[1] for r in failing] == ["fcfs", "fcfs, failures", "first-fit, failures", "backfill, failures"]
    assert float(failing[1][5].removeprefix("unstable: ")) > float(failing[0][5])   # failures add retries
    alone = _rows(_ok("scheduling_speed.py", "--jobs", "2000", "--repeat", "1", "--workload",
                      "data/workloads/borg-a.json", "--rates", "368", "--only-workload", "--no-failures"))
    assert [r[1] for r in alone] == ["fcfs", "first-fit", "backfill"]


def test_the_simulator_benchmark_prints_its_whole_process_table_and_refuses_a_missing_forkulator():
    bench = _module("simulator_speed")
    out = _ok("simulator_speed.py", "--jobs", "3000", "--repeat", "1", "--skip", "memory", "kernel", "sweep",
              "precision", "quick")
    rows = _rows(out)
    assert [r[0] for r in rows] == [c[0] for c in bench.CONFIGS]
    assert all(float(r[1]) > 0 for r in rows)
    missing = _run("simulator_speed.py", "--forkulator", str(ROOT / "no-such-forkulator"), "--jobs", "1000")
    assert missing.returncode == 2 and "--forkulator must be a built forkulator checkout" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_the_ctmc_benchmark_solves_its_quick_systems():
    rows = _rows(_ok("ctmc_scaling.py", "--quick"))
    assert [r[0] for r in rows] == ["(32,16,16)", "(48,16,16)", "(64,16,12)"]
    assert all(0 < float(r[-1]) < 1 for r in rows)          # rho_max


def test_the_free_times_benchmark_prints_both_layouts_for_every_row(monkeypatch, capsys):
    bench = _module("free_times_layout")
    full = bench.ns_per_job
    monkeypatch.setattr(bench, "ns_per_job", lambda system, sorted_free: full(system, sorted_free, 2000, 1))
    bench.main()
    rows = _rows(capsys.readouterr().out)
    assert len(rows) == 7 * 3
    assert all(float(r[2].replace(",", "")) > 0 and float(r[3].replace(",", "")) > 0 for r in rows)


@pytest.mark.parametrize("script", ["scheduling_speed.py", "simulator_speed.py"])
def test_a_bad_option_of_a_benchmark_is_one_line_and_exit_2(script):
    r = _run(script, "--jobs", "many")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "--jobs" in r.stderr


def test_the_replay_benchmark_times_every_rule_and_checks_the_reference(tmp_path):
    """A short variant on a small synthetic log written here (the real logs are not in the repository): every
    rule a row, each equal to the plain reference; the synthetic trace's rows."""
    import gzip

    rng = __import__("numpy").random.default_rng(2)
    lines = ["; MaxProcs: 16"]
    t = 0
    for j in range(1, 301):
        t += int(rng.integers(0, 50))
        run, k = int(rng.integers(1, 400)), int(rng.integers(1, 17))
        lines.append(f"{j} {t} 0 {run} {k} -1 -1 {k} {run * 2} -1 1 1 1 -1 -1 -1 -1 -1")
    (tmp_path / "tiny.swf.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    rows = _rows(_ok("replay_speed.py", "--traces", str(tmp_path), "--logs", "tiny", "--repeat", "1",
                     "--jobs", "5000", "--reference"))
    logs = [r for r in rows if r[0] == "tiny"]
    assert [r[2] for r in logs] == ["fcfs (exact)", "first-fit (exact)", "backfill (exact)", "backfill (requested)"]
    assert all(r[6] == "True" and float(r[3]) > 0 and float(r[4]) > 0 for r in logs)
    assert len([r for r in rows if r[0] != "tiny" and r[0] != "log" and r[0] != "rule"]) == 4


def test_the_moldable_peer_benchmark_refuses_what_it_cannot_run(tmp_path):
    """forkulator is not part of the project (the benchmark runs a checkout the user built): without one the
    script refuses in one line; a --json-out that exists is refused without --force."""
    missing = _run("moldable_peer.py", "--forkulator", str(ROOT / "no-such-forkulator"))
    assert missing.returncode == 2 and "--forkulator must be a built forkulator checkout" in missing.stderr
    assert "Traceback" not in missing.stderr
    fake = tmp_path / "fk" / "bin" / "forkulator"
    fake.mkdir(parents=True)
    (fake / "FJSimulator.class").write_bytes(b"")
    taken = tmp_path / "out.json"
    taken.write_text("{}")
    r = _run("moldable_peer.py", "--forkulator", str(tmp_path / "fk"), "--json-out", str(taken))
    assert r.returncode == 2 and "exists" in r.stderr and taken.read_text() == "{}"
    r = _run("moldable_peer.py", "--forkulator", str(tmp_path / "fk"), "--runs", "1")
    assert r.returncode == 2 and "--runs must be at least 2" in r.stderr


def test_the_forkulator_table_is_the_recorded_run():
    """The Benchmarks page's moldable table beside forkulator prints data/peers/forkulator_moldable.json, row for
    row, and its verdict column follows from the numbers (means within the combined half-widths)."""
    import json
    import math

    record = json.loads((ROOT / "data" / "peers" / "forkulator_moldable.json").read_text())
    readme = (ROOT / "book" / "reference" / "benchmarks-rules.md").read_text()
    for r in record["rows"]:
        line = (f"| {r['policy']} | `{r['forkulator']}` | {r['load']:g} | {r['forkulator_sojourn']:.4g} ± "
                f"{r['forkulator_sojourn_half']:.2g} | {r['ours_sojourn']:.4g} ± {r['ours_sojourn_half']:.2g} | "
                f"{'yes' if r['agree'] else 'no'} |")
        assert line in readme, line
        for key in ("waiting", "sojourn"):
            within = abs(r[f"forkulator_{key}"] - r[f"ours_{key}"]) <= math.hypot(r[f"forkulator_{key}_half"],
                                                                               r[f"ours_{key}_half"])
            assert within or not r["agree"]


def test_the_moldable_ctmc_peer_benchmark_refuses_what_it_cannot_run(tmp_path):
    """Without a forkulator checkout holding the approximation's script, one line and exit 2; an --out that
    exists is refused without --force and left as it was."""
    missing = _run("moldable_ctmc_peer.py", "--forkulator", str(tmp_path))
    assert missing.returncode == 2 and "has no python/takehalf-transitions-Hl-sparse.py" in missing.stderr
    assert "Traceback" not in missing.stderr
    taken = tmp_path / "out.json"
    taken.write_text("{}")
    r = _run("moldable_ctmc_peer.py", "--forkulator", str(tmp_path), "--out", str(taken))
    assert r.returncode == 2 and "exists" in r.stderr and taken.read_text() == "{}"


def test_the_moldable_ctmc_speed_benchmark_prints_both_preconditioners_and_their_agreement():
    r = _run("moldable_ctmc_speed.py", "--systems", "3:0.4", "--repeats", "1")
    assert r.returncode == 0, r.stderr[-2000:]
    (row,) = [line.strip("|").split("|") for line in r.stdout.splitlines() if line.startswith("| s = k = 3 ")]
    assert float(row[3]) > 0 and float(row[4]) > 0 and float(row[6]) < 1e-8
    bad = _run("moldable_ctmc_speed.py", "--systems", "3-0.4")
    assert bad.returncode == 2 and "s:utilization" in bad.stderr and "Traceback" not in bad.stderr


def test_the_clock_benchmark_times_each_clock_beside_its_rule_on_the_same_jobs():
    bench = _module("clock_speed")
    rows = _rows(_ok("clock_speed.py", "--jobs", "3000", "--repeat", "1"))
    assert len(rows) == len(bench.SYSTEMS) * len(bench.CLOCKS)
    for (name, clock, plain, timed, ratio, lost, requeues), (label, rule, _) in zip(
            rows, bench.CLOCKS * len(bench.SYSTEMS), strict=True):
        assert clock == label and plain.startswith(rule + " "), (name, clock)
        a, b = float(plain.split()[-1]), float(timed)
        # the cells are rounded to 0.01: each time within 0.005 of the one the ratio was computed from
        assert a > 0 and b > 0
        assert (b - 0.005) / (a + 0.005) - 0.005 <= float(ratio) <= (b + 0.005) / max(a - 0.005, 1e-9) + 0.005
        if clock.startswith("aging"):
            assert lost == requeues == "-"                    # aging loses no job
        else:
            assert 0 <= float(lost.rstrip("%")) <= 100 and float(requeues) >= 0
    first = rows[0]
    assert float(first[5].rstrip("%")) > 1                    # the clock fires: fcfs's wide gangs run out of time
    assert any(float(r[6]) > 0 for r in rows if "requeue" in r[1])
    assert _run("clock_speed.py", "--jobs", "0").returncode == 2


def test_the_log_benchmark_times_shaken_replays_and_every_rule_per_cluster(tmp_path):
    """benchmarks/log_speed.py on two small logs in a folder (an SWF log, and a Philly log with every VC the
    script sizes): one replay and the shaken ones, each rule per VC on nodes of 8, and the total; a folder
    without the logs or too few shakes is one line and exit 2."""
    bench = _module("log_speed")
    (tmp_path / "k.swf").write_text("; MaxProcs: 16\n" + "".join(
        f"{i} {30 * i} 0 {60 + i % 7} {1 + i % 8} -1 -1 {1 + i % 8} 100 -1 1 {i % 5} 1 -1 1 -1 -1 -1\n"
        for i in range(1, 200)))
    vcs = [part.split(":")[0] for part in bench.PHILLY_SIZES.split(",")]
    lines = ["timestamp,duration,num_gpus,gpu_time,cluster"]
    for i in range(300):
        k = (1, 2, 4, 8, 16)[i % 5]
        lines.append(f"2017-10-01 {i // 60:02d}:{i % 60:02d}:00,{100.0 + i},{k},{(100.0 + i) * k},{vcs[i % len(vcs)]}")
    (tmp_path / "p.csv").write_text("\n".join(lines) + "\n")
    out = _ok("log_speed.py", "--traces", str(tmp_path), "--kth", "k.swf", "--philly", "p.csv", "--shakes", "3",
              "--repeat", "1")
    rows = [r for r in _rows(out) if r[1] != "whole process (s)"]              # (the two tables' headers)
    assert [r[0] for r in rows] == ["one replay", "the log and 3 shaken copies", *bench.RULES,
                                    "every rule, one command each", "every rule in one command"]
    shaken = rows[1]
    assert abs(float(shaken[1]) / 4 - float(shaken[2])) <= 0.005 + 1e-4          # per replay: the time over 4 runs
    per_rule = [float(r[1]) for r in rows[2:2 + len(bench.RULES)]]
    assert all(r[2].replace(",", "").isdigit() for r in rows[2:2 + len(bench.RULES)])   # (no error row)
    assert abs(sum(per_rule) - float(rows[-2][1])) <= 0.005 * len(per_rule) + 1e-9
    assert rows[-1][3] == "the same as each command"
    assert _run("log_speed.py", "--traces", str(tmp_path / "none")).returncode == 2
    assert _run("log_speed.py", "--traces", str(tmp_path), "--shakes", "1").returncode == 2
