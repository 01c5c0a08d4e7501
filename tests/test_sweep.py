"""Sweeps: one table per grid, the same on every backend, resumable, bad grids refused up front."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

import barrier_queues as bq
from barrier_queues.sweep import grid_from_options, point_key, point_seed, sweep

GRID = {"servers": [8, 16], "tasks": [2, 4], "utilization": [0.3, 0.6]}


def test_grid_is_the_product_in_a_fixed_order():
    grid = grid_from_options(GRID)
    assert len(grid) == 8 and grid[0] == {"servers": 8, "tasks": 2, "utilization": 0.3}
    assert grid[1] == {"servers": 8, "tasks": 2, "utilization": 0.6}


def test_sweep_rows_equal_simulate_with_the_points_own_seed(tmp_path):
    table = sweep(GRID, tmp_path / "out", jobs=3000, replications=2, seed=5, workers=2)
    assert list(table.point) == list(range(8))
    direct = [bq.simulate(bq.at_utilization(bq.BarrierSystem(servers=p["servers"], tasks=p["tasks"]),
                                            p["utilization"]), jobs=3000, replications=2, seed=point_seed(5, p))
              for p in grid_from_options(GRID)]
    assert list(table.mean_sojourn) == [r.summary()["mean_sojourn"] for r in direct]
    on_disk = pd.read_csv(tmp_path / "out" / "results.csv")
    assert list(on_disk.mean_sojourn) == list(table.mean_sojourn)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["seed"] == "5" and manifest["jobs"] == 3000 and len(manifest["grid"]) == 8


@pytest.mark.spark
def test_local_and_spark_backends_give_identical_tables(tmp_path):
    pytest.importorskip("pyspark")
    local = sweep(GRID, tmp_path / "local", jobs=2000, replications=2, seed=9, backend="local")
    spark = sweep(GRID, tmp_path / "spark", jobs=2000, replications=2, seed=9, backend="spark", master="local[2]")
    pd.testing.assert_frame_equal(local, spark)
    assert (tmp_path / "spark" / "results.csv").read_bytes() == (tmp_path / "local" / "results.csv").read_bytes()
    # more replications: Spark's executors get the stored replications from the driver and add the new ones
    local = sweep(GRID, tmp_path / "local", jobs=2000, replications=3, seed=9, backend="local")
    spark = sweep(GRID, tmp_path / "spark", jobs=2000, replications=3, seed=9, backend="spark", master="local[2]")
    pd.testing.assert_frame_equal(local, spark)
    assert "; kept for replication 3, added by a later run" in spark.warmup_rule[0]
    assert all((tmp_path / "spark" / "points" / p.name).read_bytes() == p.read_bytes()
               for p in (tmp_path / "local" / "points").glob("*.json"))


def test_a_point_key_ignores_the_grid_and_defaults():
    assert point_key({"servers": 16, "tasks": 4, "utilization": 0.5}) == \
        point_key({"utilization": 0.5, "tasks": 4.0, "servers": 16, "barriers": 1, "needed": None})
    assert point_key({"servers": 16, "tasks": 4, "utilization": 0.5}) != \
        point_key({"servers": 16, "tasks": 4, "utilization": 0.5, "barriers": 2})
    a, b = point_seed(7, {"servers": 16, "tasks": 4}), point_seed(7, {"servers": 16, "tasks": 4})
    assert a.generate_state(4).tolist() == b.generate_state(4).tolist()
    assert point_seed(8, {"servers": 16, "tasks": 4}).generate_state(4).tolist() != a.generate_state(4).tolist()


def test_a_grown_grid_keeps_every_existing_number_and_computes_only_the_new_points(tmp_path):
    """Rerun into the same folder with values added, the grid reordered and an option added at its default:
    the old points' files are not touched (same bytes, same modification time) and their rows are identical;
    the new table equals a fresh sweep of the whole grid. (More replications: the next test; a different seed
    is refused, above.)"""
    out = tmp_path / "grow"
    small = sweep({"servers": 8, "tasks": [2, 4], "utilization": 0.5}, out, jobs=2000, seed=3, workers=1)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (out / "points").glob("*.json")}
    time.sleep(0.01)
    grown = sweep({"servers": [16, 8], "tasks": [4, 2, 1], "utilization": [0.5, 0.3], "barriers": 1}, out,
                  jobs=2000, seed=3, workers=2)
    assert len(grown) == 12 and len(list((out / "points").glob("*.json"))) == 12
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (out / "points").glob("*.json")
            if p.name in before} == before
    cols = [c for c in small.columns if c != "point"]
    old_rows = grown[(grown.servers == 8) & (grown.utilization == 0.5) & grown.tasks.isin([2, 4])]
    pd.testing.assert_frame_equal(old_rows.sort_values("tasks")[cols].reset_index(drop=True),
                                  small.sort_values("tasks")[cols].reset_index(drop=True))
    fresh = sweep({"servers": [16, 8], "tasks": [4, 2, 1], "utilization": [0.5, 0.3]}, tmp_path / "fresh",
                  jobs=2000, seed=3, workers=2)
    pd.testing.assert_frame_equal(grown.drop(columns="barriers"), fresh)


def _counting_replications(monkeypatch) -> list:
    """Record the size of every replication simulated in this process from now on (workers=1 runs here)."""
    from barrier_queues import runs

    calls, real = [], runs.run_replication

    def counted(system, jobs, *args, **kwargs):
        calls.append(jobs)
        return real(system, jobs, *args, **kwargs)

    runs.ensure_compiled()
    monkeypatch.setattr(runs, "run_replication", counted)
    return calls


def _two_rounds(point: dict, jobs: int, first: int, total: int, seed: int) -> dict:
    """The row of a point grown from ``first`` to ``total`` replications, computed apart from the sweep: the
    first run is simulate(); the new replications are single runs of the next streams of the point's seed,
    each dropping the warm-up the first run chose."""
    from barrier_queues.runs import run_replication
    from barrier_queues.simulate import SimulationResult
    from barrier_queues.sweep import point_row, point_system

    system = point_system(point)
    first_run = bq.simulate(system, jobs=jobs, replications=first, seed=point_seed(seed, point), workers=1)
    streams = point_seed(seed, point).spawn(total)[first:]
    extra = [run_replication(system, jobs, s, warmup=first_run.stats[0].warmup) for s in streams]
    for r in extra:
        r.stats.block_means = {}
    result = SimulationResult(system, first_run.replications + extra, 0.0)
    return point_row(0, point, system, result.summary())


def test_more_replications_run_only_the_new_ones_and_keep_the_first_runs_warmup(tmp_path, monkeypatch):
    """A rerun with more replications simulates only the replications beyond those stored
    (``points/<key>.npz``), each dropping the warm-up the first run chose; the row equals that computation
    done apart, bit for bit, and does not depend on how many runs added the replications (2 -> 3 -> 5 and
    2 -> 5 agree). Fewer replications than stored (but not fewer than the first run's) simulate nothing;
    fewer than the first run's are a fresh point, and the stored replications are kept for later."""
    grid = {"servers": 8, "tasks": [2, 4], "utilization": 0.5}
    out, other = tmp_path / "grow", tmp_path / "other"
    calls = _counting_replications(monkeypatch)
    sweep(grid, out, jobs=3000, replications=2, seed=3, workers=1)
    sweep(grid, other, jobs=3000, replications=2, seed=3, workers=1)
    assert calls == [3000] * 8
    calls.clear()
    sweep(grid, out, jobs=3000, replications=3, seed=3, workers=1)
    assert calls == [3000] * 2                          # one new replication per point
    five = sweep(grid, out, jobs=3000, replications=5, seed=3, workers=1)
    at_once = sweep(grid, other, jobs=3000, replications=5, seed=3, workers=1)
    assert calls == [3000] * 2 + [3000] * 4 + [3000] * 6
    pd.testing.assert_frame_equal(five, at_once)
    for i, point in enumerate(grid_from_options(grid)):
        apart = _two_rounds(point, 3000, 2, 5, 3)
        got = five.iloc[i].to_dict()
        assert got.pop("warmup_rule") == apart.pop("warmup_rule") + (
            "; kept for replications 3-5, added by a later run of the sweep")
        assert {k: got[k] for k in apart if k != "point"} == {k: v for k, v in apart.items() if k != "point"}
    calls.clear()
    four = sweep(grid, out, jobs=3000, replications=4, seed=3, workers=1)
    assert calls == []
    four_apart = _two_rounds(grid_from_options(grid)[1], 3000, 2, 4, 3)
    assert four.mean_waiting[1] == four_apart["mean_waiting"]
    stored = {p.name: p.read_bytes() for p in (out / "points").glob("*.npz")}
    calls.clear()
    one = sweep(grid, out, jobs=3000, replications=1, seed=3, workers=1)
    assert calls == [3000] * 2 and (one.replications == 1).all()
    assert {p.name: p.read_bytes() for p in (out / "points").glob("*.npz")} == stored
    assert "kept for" not in one.warmup_rule[0]


def test_a_torn_store_of_replications_is_computed_again(tmp_path):
    grid = {"servers": 8, "tasks": 2, "utilization": 0.5}
    out = tmp_path / "torn"
    sweep(grid, out, jobs=3000, replications=2, seed=3, workers=1)
    (store,) = (out / "points").glob("*.npz")
    store.write_bytes(store.read_bytes()[:100])
    grown = sweep(grid, out, jobs=3000, replications=3, seed=3, workers=1)
    fresh = sweep(grid, tmp_path / "fresh", jobs=3000, replications=3, seed=3, workers=1)
    pd.testing.assert_frame_equal(grown, fresh)


def test_a_killed_sweep_resumes_and_loses_only_points_in_flight(tmp_path):
    out = tmp_path / "killed"
    args = [sys.executable, "-m", "barrier_queues.cli", "sweep", "-s", "16", "-k", "1,2,4,8", "--utilization",
            "0.3,0.5,0.7", "--jobs", "400000", "--seed", "3", "--workers", "1", "--out", str(out)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while len(list((out / "points").glob("*.json"))) < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    finished = {p.name: p.read_bytes() for p in (out / "points").glob("*.json")}
    assert 3 <= len(finished) < 12
    assert not (out / "results.csv").exists()              # a table of some points only is named partial
    if os.geteuid() != 0:                                   # root writes anywhere: the check means nothing then
        out.chmod(0o555)
        refused = subprocess.run(args[:-2] + ["--out", str(out), "--json"], capture_output=True, text=True)
        out.chmod(0o755)
        assert refused.returncode == 2 and "out must be a writable folder" in refused.stderr, refused.stderr
    resumed = subprocess.run(args[:-2] + ["--out", str(out), "--json"], capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert not (out / "results.partial.csv").exists()
    assert {p.name: p.read_bytes() for p in (out / "points").glob("*.json") if p.name in finished} == finished
    whole = sweep({"servers": 16, "tasks": [1, 2, 4, 8], "utilization": [0.3, 0.5, 0.7]}, tmp_path / "whole",
                  jobs=400_000, seed=3, workers=2)
    pd.testing.assert_frame_equal(pd.read_csv(out / "results.csv"), pd.read_csv(tmp_path / "whole" / "results.csv"))
    assert len(whole) == 12


def test_bad_grids_are_refused_before_anything_runs(tmp_path):
    with pytest.raises(bq.ParameterError, match="grid option tasks must have at least one value"):
        sweep({"servers": 8, "tasks": [], "arrival_rate": 1.0}, tmp_path / "a")
    with pytest.raises(bq.ParameterError, match="grid options must be among .* unknown speed"):
        sweep({"servers": 8, "tasks": 2, "speed": 1}, tmp_path / "b")
    with pytest.raises(bq.ParameterError, match=r"grid point 2 \(servers=8, tasks=16, arrival_rate=1.0\): tasks must"):
        sweep({"servers": 8, "tasks": [1, 2, 16], "arrival_rate": 1.0}, tmp_path / "c")
    with pytest.raises(bq.ParameterError, match=r"grid point 1 .*: arrival_rate must be below the stability limit"):
        sweep({"servers": 8, "tasks": 8, "arrival_rate": [0.1, 10.0]}, tmp_path / "d")
    assert not any((tmp_path / name).exists() for name in "abcd")


def test_a_folder_of_another_sweep_or_with_other_files_is_refused(tmp_path):
    sweep({"servers": 8, "tasks": 2, "arrival_rate": 1.0}, tmp_path / "s", jobs=500, seed=1)
    with pytest.raises(bq.ParameterError, match="holds a different sweep \\(its jobs differ\\)"):
        sweep({"servers": 8, "tasks": 2, "arrival_rate": 1.0}, tmp_path / "s", jobs=600, seed=1)
    with pytest.raises(bq.ParameterError, match="holds a different sweep \\(its seed differ\\)"):
        sweep({"servers": 8, "tasks": [2, 4], "arrival_rate": 1.0}, tmp_path / "s", jobs=500, seed=2)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(bq.ParameterError, match="out must be a new or empty folder"):
        sweep({"servers": 8, "tasks": 2, "arrival_rate": 1.0}, tmp_path / "other", jobs=500, seed=1)
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"


def test_a_sweep_folder_is_locked_while_a_sweep_writes_into_it(tmp_path):
    """An exclusive lock file (created atomically, holding the process id): a folder whose lock is held by a
    live process is refused before any work; a lock left by a dead process is taken over; the lock is released
    at the end (also after an error)."""
    import os

    from barrier_queues.sweep import LOCK

    grid = [{"servers": 4, "tasks": 2, "arrival_rate": 0.5}]
    folder = tmp_path / "sw"
    folder.mkdir()
    (folder / LOCK).write_text(f"{os.getppid()}\n")               # a live process that is not this one
    with pytest.raises(bq.ParameterError, match="is in use by another sweep"):
        bq.sweep(grid, folder, jobs=2_000, replications=2, seed=1)
    assert not (folder / "manifest.json").exists()                 # nothing written
    (folder / LOCK).write_text("999999999\n")                      # no such process: a stale lock
    table = bq.sweep(grid, folder, jobs=2_000, replications=2, seed=1)
    assert len(table) == 1 and not (folder / LOCK).exists()
    with pytest.raises(bq.ParameterError, match="holds a different sweep"):
        bq.sweep([{"servers": 4, "tasks": 2, "arrival_rate": 0.4}], folder, jobs=3_000, replications=2, seed=1)
    assert not (folder / LOCK).exists()


def _children(pid: int) -> list[int]:
    out = []
    for stat in os.listdir("/proc"):
        if stat.isdigit():
            try:
                fields = open(f"/proc/{stat}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(stat))
    return out


def _alive(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc (Linux)")
def test_workers_exit_when_their_parent_is_killed(tmp_path):
    """kill -9 of a sweep running on 2 worker processes: the workers, computing long replications, notice that
    their parent is gone and exit within seconds (they do not compute on for nobody)."""
    args = [sys.executable, "-m", "barrier_queues.cli", "sweep", "-s", "16", "-k", "1,2", "--utilization", "0.5",
            "--jobs", "50000000", "--seed", "3", "--workers", "2", "--out", str(tmp_path / "sw")]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers = []
    try:
        deadline = time.monotonic() + 60
        while len(workers) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
            workers = _children(proc.pid)
        assert len(workers) >= 2, workers
        time.sleep(1.0)                                        # the workers are computing
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 15
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(w) for w in workers)
    finally:
        proc.kill()
        proc.wait()
        for w in workers:
            if _alive(w):
                os.kill(w, signal.SIGKILL)


def _ctrl_c(args, ready, timeout):
    """Start ``args`` in its own process group with SIGINT at its default (as a terminal's foreground job), wait
    for ``ready(proc)``, send SIGINT to the group as Ctrl-C does; (exit status, stderr, what ready returned).
    The group is killed if it outlives the test."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        seen = ready(proc)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err, seen


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc (Linux)")
def test_ctrl_c_stops_a_sweep_at_once_with_exit_130_and_one_line(tmp_path):
    """Ctrl-C as a terminal sends it: SIGINT to the whole foreground process group (the sweep and its 2 worker
    processes; SIGINT reset to its default, since a non-interactive shell's background job ignores it). The sweep
    exits with status 130 and one line, no process of the group survives, no point starts after the signal (at
    most the 2 in flight finish), no table claims to be whole, the lock is released, and a resume completes the
    grid, keeping the points already computed."""
    out = tmp_path / "sw"
    args = [sys.executable, "-m", "barrier_queues.cli", "sweep", "-s", "16", "-k", "1,2,4,8", "--utilization",
            "0.5,0.6,0.7", "--jobs", "1000000", "--seed", "4", "--workers", "2", "--out", str(out)]

    def ready(proc):
        deadline = time.monotonic() + 300
        while len(list((out / "points").glob("*.json"))) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        return _children(proc.pid), len(list((out / "points").glob("*.json")))

    code, err, (workers, before) = _ctrl_c(args, ready, timeout=60)
    assert code == 130, err
    assert err == "barrier-queues: interrupted\n"
    time.sleep(1.0)
    assert not any(_alive(w) for w in workers)
    points = list((out / "points").glob("*.json"))
    assert before <= len(points) <= before + 2 < 12
    assert all(json.loads(p.read_text())["key"] == p.stem for p in points)      # each point file whole
    assert not (out / "results.csv").exists() and not (out / ".lock").exists()
    finished = {p.name: p.read_bytes() for p in points}
    resumed = subprocess.run(args + ["--json"], capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert len(pd.read_csv(out / "results.csv")) == 12
    assert {p.name: p.read_bytes() for p in (out / "points").glob("*.json") if p.name in finished} == finished


def test_ctrl_c_stops_a_simulation_with_exit_130_and_writes_nothing(tmp_path):
    """The same for ``simulate``, in process (one replication) and on 2 workers: exit 130, one line, within
    seconds, and no --jobs-csv file (it is written only when the run is complete)."""
    for workers in ("1", "2"):
        out = tmp_path / f"jobs{workers}.csv"
        args = [sys.executable, "-m", "barrier_queues.cli", "simulate", "-s", "16", "-k", "4", "--utilization", "0.6",
                "--jobs", "50000000", "--replications", workers, "--workers", workers, "--jobs-csv", str(out)]

        def ready(proc):
            time.sleep(3.0)                                     # started and simulating (50 M jobs take minutes)
            return proc.poll() is None

        code, err, running = _ctrl_c(args, ready, timeout=30)
        assert running
        # the run's notice that it takes a while (it draws 2e8 task times or more), then one line at Ctrl-C
        notice = "barrier-queues: this run draws " if int(workers) * 50_000_000 * 4 > 2e8 else None
        lines = err.splitlines()
        assert code == 130 and lines[-1] == "barrier-queues: interrupted"
        assert lines[:-1] == ([] if notice is None else [lines[0]]) and (notice is None or lines[0].startswith(notice))
        assert not out.exists()


def test_a_resumed_sweep_refuses_points_whose_input_files_changed(tmp_path, monkeypatch):
    """A point's key holds a workload file's or an empirical law's file *name*: resuming after the file was
    edited once served the old rows (mean_execution 1.553 from the old file instead of 4.660). The point
    records each input file's SHA-256 and the rerun is refused, naming the file; an unchanged file resumes."""
    import json

    monkeypatch.chdir(tmp_path)
    Path("times.txt").write_text("1.0\n2.0\n")
    Path("wl.json").write_text(json.dumps({"classes": [{"tasks": 2, "share": 1.0,
                                                        "task_dist": "empirical:file=times.txt"}]}))
    grids = {"workload": {"servers": 4, "workload": "wl.json", "arrival_rate": 0.3},
             "task law": {"servers": 4, "tasks": 2, "task_dist": "empirical:file=times.txt", "arrival_rate": 0.3}}
    for name, grid in grids.items():
        out = tmp_path / name.replace(" ", "-")
        first = bq.sweep(grid, out, jobs=2000, replications=2, seed=1, workers=1)
        again = bq.sweep(grid, out, jobs=2000, replications=2, seed=1, workers=1)      # unchanged: served
        assert again.mean_execution.tolist() == first.mean_execution.tolist()
        record = json.loads(next((out / "points").glob("*.json")).read_text())
        assert "times.txt" in record["inputs"]
        Path("times.txt").write_text("4.0\n5.0\n")
        with pytest.raises(bq.ParameterError, match="times.txt.*has changed"):
            bq.sweep(grid, out, jobs=2000, replications=2, seed=1, workers=1)
        Path("times.txt").write_text("1.0\n2.0\n")


def test_a_grid_listing_a_value_twice_and_an_unknown_backend_setting_are_refused(tmp_path, monkeypatch):
    with pytest.raises(bq.ParameterError, match="grid option tasks lists 2.0 twice"):
        grid_from_options({"servers": 8, "tasks": [2, 4, 2.0], "utilization": 0.3})
    monkeypatch.setenv("SWEEP_BACKEND", "sparky")
    out = subprocess.run([sys.executable, "-m", "barrier_queues.cli", "sweep", "-s", "4", "-k", "1",
                          "--utilization", "0.3", "--jobs", "1000", "--out", str(tmp_path / "s")],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "SWEEP_BACKEND must be one of 'local', 'spark' (got 'sparky')" in out.stderr
    assert not (tmp_path / "s").exists()


def test_a_grid_that_would_drop_points_of_the_folder_is_refused_and_nothing_changes(tmp_path):
    """A folder's grid may grow or be reordered (its table then follows the order asked for); a grid without
    some of its points is refused before anything is written: manifest, table and points keep their bytes."""
    out = tmp_path / "s"
    sweep({"servers": 8, "tasks": [2, 4], "utilization": 0.3}, out, jobs=1000, seed=1, workers=1)
    files = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(bq.ParameterError, match="2 points, 1 of them not in this grid"):
        sweep({"servers": 8, "tasks": [2, 8], "utilization": 0.3}, out, jobs=1000, seed=1, workers=1)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == files
    r = subprocess.run([sys.executable, "-m", "barrier_queues.cli", "sweep", "-s", "8", "-k", "4",
                        "--utilization", "0.3", "--jobs", "1000", "--seed", "1", "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "never lose points" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    regrown = sweep({"servers": 8, "tasks": [4, 2, 8], "utilization": 0.3}, out, jobs=1000, seed=1, workers=1)
    assert regrown.tasks.tolist() == [4, 2, 8]


def test_a_torn_point_file_or_table_is_repaired_by_the_next_run(tmp_path):
    """A point file cut in half (a crash mid-write outside the atomic rename, a full disk) is computed again,
    to the same numbers, and a cut table is written whole again."""
    out = tmp_path / "s"
    first = sweep({"servers": 8, "tasks": [2, 4], "utilization": 0.3}, out, jobs=2000, seed=1, workers=1)
    point = sorted((out / "points").glob("*.json"))[0]
    point.write_bytes(point.read_bytes()[:100])
    (out / "results.csv").write_bytes((out / "results.csv").read_bytes()[:50])
    with pytest.warns(UserWarning, match="1 point file"):       # (said in one line: the point is computed again)
        again = sweep({"servers": 8, "tasks": [2, 4], "utilization": 0.3}, out, jobs=2000, seed=1, workers=1)
    pd.testing.assert_frame_equal(again, first)
    sweep({"servers": 8, "tasks": [2, 4], "utilization": 0.3}, tmp_path / "fresh", jobs=2000, seed=1, workers=1)
    assert (out / "results.csv").read_bytes() == (tmp_path / "fresh" / "results.csv").read_bytes()
