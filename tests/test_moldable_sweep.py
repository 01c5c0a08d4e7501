"""Moldable jobs in a sweep: ``moldable`` and its policies' options are system fields, so a moldable point is a grid
point like any other (one folder format, one point runner): every row is simulate's result for its point and
seed, a policy's own option multiplies only that policy's points, and what the model does not define is refused
before anything is written."""

import json
import subprocess
import sys

import pandas as pd
import pytest

import barrier_queues as bq
from barrier_queues.sweep import grid_from_options, point_seed, point_system, sweep

RUN = {"jobs": 3_000, "replications": 3, "seed": 7, "progress": False}
GRID = {"servers": 6, "tasks": 6, "moldable": ["take-fraction", "patience", "fixed"], "take_fraction": [0.5, 1],
        "requirement": 3, "utilization": [0.2, 0.5]}
CLI = [sys.executable, "-m", "barrier_queues.cli", "sweep"]


def test_a_policys_own_option_multiplies_only_its_points():
    points = grid_from_options(GRID)
    assert [(p["utilization"], p["moldable"], p.get("take_fraction"), p.get("requirement")) for p in points] == [
        (u, m, f, n) for u in (0.2, 0.5) for m, f, n in (("take-fraction", 0.5, None), ("take-fraction", 1, None),
                                                         ("patience", None, None), ("fixed", None, 3))]


def test_every_row_is_simulate_at_its_point_seed(tmp_path):
    """Row = simulate(point_system(point), seed = point_seed(sweep seed, point)) bit for bit, mean workers
    included; the load as utilization rho = lambda k E[X] / s; the table on disk is the table returned."""
    table = sweep(GRID, tmp_path / "s", **RUN)
    assert len(table) == 8
    for row, point in zip(table.to_dict(orient="records"), grid_from_options(GRID), strict=True):
        assert row["arrival_rate"] == pytest.approx(point["utilization"], rel=1e-15)      # s = k: lambda = rho
        r = bq.simulate(point_system(point), jobs=3_000, replications=3, seed=point_seed(7, point),
                        progress=False).summary()
        assert row["stable"] == r["stable"]
        for key in ("waiting", "sojourn", "workers"):
            assert row[f"mean_{key}"] == r[f"mean_{key}"]
        assert [row["mean_workers_ci_low"], row["mean_workers_ci_high"]] == list(r["ci"]["workers"])
    on_disk = pd.read_csv(tmp_path / "s" / "results.csv")
    assert on_disk.mean_workers.tolist() == table.mean_workers.tolist()


def test_a_folder_grows_and_a_point_does_not_depend_on_its_grid(tmp_path):
    out = tmp_path / "s"
    first = sweep(GRID, out, **RUN)
    grown = sweep({**GRID, "utilization": [0.2, 0.5, 0.8]}, out, **RUN)
    assert len(grown) == 12
    old = grown[grown.utilization != 0.8].drop(columns="point").reset_index(drop=True)
    pd.testing.assert_frame_equal(old, first.drop(columns="point"), check_dtype=False)
    alone = sweep({"servers": 6, "tasks": 6, "moldable": "patience", "utilization": 0.5}, tmp_path / "one", **RUN)
    assert alone.mean_sojourn[0] == grown[(grown.moldable == "patience") & (grown.utilization == 0.5)
                                          ].mean_sojourn.item()


def test_a_folder_of_another_kind_is_refused_by_name(tmp_path):
    from barrier_queues.sweep import trace_sweep
    from tests.test_replay import SWF

    log = tmp_path / "t.swf"
    log.write_text(SWF)
    trace_sweep(log, {"scheduling": ["fcfs"]}, tmp_path / "trace")
    with pytest.raises(bq.ParameterError, match="holds a sweep of a trace, not of simulated systems"):
        sweep(GRID, tmp_path / "trace", **RUN)
    sweep({"servers": 6, "tasks": 6, "moldable": "patience", "utilization": 0.2}, tmp_path / "grid", **RUN)
    with pytest.raises(bq.ParameterError, match="holds a sweep of simulated systems, not of a trace"):
        trace_sweep(log, {"scheduling": ["fcfs"]}, tmp_path / "grid")
    old = tmp_path / "old"                       # a trace sweep of the former format: one table, rows in the manifest
    old.mkdir()
    manifest = json.loads((tmp_path / "trace" / "manifest.json").read_text())
    (old / "manifest.json").write_text(json.dumps({**manifest, "rows": {"0": "0123456789abcdef"}}))
    with pytest.raises(bq.ParameterError, match="former format of its own"):
        trace_sweep(log, {"scheduling": ["fcfs"]}, old)


def test_an_unstable_point_has_no_means(tmp_path):
    """fixed n = k = 6 is split-merge: rho_max = 1/H_6 = 0.408, so rho = 0.9 is beyond it and is refused as any
    system beyond its known limit; with allow_unstable its row has no means and says it is not stable."""
    grid = {"servers": 6, "tasks": 6, "moldable": "fixed", "requirement": 6, "utilization": 0.9}
    with pytest.raises(bq.ParameterError, match="below the stability limit"):
        sweep(grid, tmp_path / "s", **RUN)
    table = sweep(grid, tmp_path / "s", allow_unstable=True, **RUN)
    assert table.stable.tolist() == [False] and table.mean_waiting.isna().all()


def test_the_command_prints_the_table_and_strict_json(tmp_path):
    args = ["-s", "8", "-k", "8", "--moldable", "take-fraction,take-random", "--take-fraction", "0.25,0.5",
            "--utilization", "0.3", "--jobs", "3000", "--replications", "3", "--seed", "1"]
    r = subprocess.run(CLI + args + ["--out", str(tmp_path / "a")], capture_output=True, text=True, check=True)
    lines = r.stdout.splitlines()
    assert "moldable" in lines[0] and "mean_workers" in lines[0] and len(lines) == 5
    assert lines[-1].startswith("3 points in")
    r = subprocess.run(CLI + args + ["--json", "--out", str(tmp_path / "b")], capture_output=True, text=True,
                       check=True)
    rows = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))["rows"]
    assert [x["moldable"] for x in rows] == ["take-fraction", "take-fraction", "take-random"]
    assert (pd.read_csv(tmp_path / "a" / "results.csv").mean_sojourn.tolist()
            == [x["mean_sojourn"] for x in rows])


def test_deterministic_arrivals_reach_every_point(tmp_path):
    grid = {"servers": 4, "tasks": 4, "arrival": "deterministic", "moldable": "take-random", "arrival_rate": 0.5}
    table = sweep(grid, tmp_path / "s", **RUN)
    poisson = sweep({**grid, "arrival": "poisson"}, tmp_path / "p", **RUN)
    assert table.mean_waiting[0] != poisson.mean_waiting[0]


@pytest.mark.parametrize("args, message", [
    (["--take-fraction", "0.5"], "take_fraction must be None without moldable jobs"),
    (["--moldable", "fixed", "--requirement", "2", "--take-fraction", "0.5"],
     "take_fraction must be given only with moldable 'take-fraction' (got no such point"),
    (["--moldable", "fixed"], "requirement must be given with moldable 'fixed'"),
    (["--moldable", "fixed", "--requirement", "9", "-k", "12"], "requirement must be at most servers = 8"),
    (["--moldable", "patience", "--scheduling", "first-fit"], "scheduling must be 'fcfs'"),
    (["--moldable", "patience", "--trim"], "--trim must come with --trace"),
    (["--moldable", "patience,patience"], "lists 'patience' twice"),
    (["--moldable", "take-half"], "moldable must be one of"),
])
def test_bad_moldable_sweeps_are_refused_before_any_file(tmp_path, args, message):
    base = ["-s", "8", "-k", "8", "--utilization", "0.3"]
    r = subprocess.run(CLI + base + args + ["--out", str(tmp_path / "new")], capture_output=True, text=True)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "new").exists()


def test_an_option_a_sweep_mode_does_not_read_is_refused_by_construction():
    """Each mode of sweep refuses every option it does not read, from the parser itself: an option added to
    sweep is refused by a mode until the mode reads it (no list of refused options to keep)."""
    from barrier_queues.cli import build_parser
    from barrier_queues.cli.sweep import _ALWAYS, _unread

    parser = build_parser(["sweep"])
    sweep_parser = next(a for a in parser._actions if a.dest == "command").choices["sweep"]
    sweep_parser.add_argument("--brand-new", default=None)
    args = parser.parse_args(["sweep", "--out", "x", "-s", "4", "--brand-new", "1", "--jobs", "50"])
    assert _unread(args, ("servers", *_ALWAYS)) == ["--jobs", "--brand-new"]
    assert _unread(args, ("servers", "jobs", "brand_new", *_ALWAYS)) == []
