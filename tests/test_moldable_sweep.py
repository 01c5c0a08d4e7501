"""Moldable jobs as a sweep (``sweep --moldable``, :func:`barrier_queues.sweep.moldable_sweep`): every row is
simulate_moldable's result for its point and seed, a folder grows and resumes without recomputing a point, and
every combination the model does not define is refused before anything is written."""

import json
import subprocess
import sys

import pandas as pd
import pytest

import barrier_queues as bq
import barrier_queues.moldable as moldable_module
from barrier_queues.moldable import simulate_moldable
from barrier_queues.sweep import moldable_sweep, point_seed

RUN = {"jobs": 3_000, "replications": 3, "seed": 7}
GRID = {"servers": 6, "tasks": 6, "moldable": ["take-fraction", "patience", "fixed"], "take_fraction": [0.5, 1],
        "requirement": 3, "utilization": [0.2, 0.5]}
CLI = [sys.executable, "-m", "barrier_queues.cli", "sweep"]


def _counting(monkeypatch) -> list:
    calls = []
    real = moldable_module.simulate_moldable
    monkeypatch.setattr(moldable_module, "simulate_moldable", lambda *a, **k: calls.append(a) or real(*a, **k))
    return calls


def test_every_row_is_simulate_moldable_at_its_point_seed(tmp_path):
    """Row = simulate_moldable(point, seed = point_seed(sweep seed, point)) bit for bit; a policy's own option
    multiplies only its points (2 take-fraction values, patience named with its default estimator, fixed n = 3);
    the load as utilization rho = lambda k E[X] / s; the table on disk is the table returned."""
    table = moldable_sweep(GRID, tmp_path / "s", **RUN)
    assert table.moldable.tolist() == ["take-fraction"] * 4 + ["patience"] * 2 + ["fixed"] * 2
    assert table.take_fraction.tolist()[:4] == [0.5, 0.5, 1, 1] and table.patience_wait[4] == "min"
    assert table.point.tolist() == list(range(8)) and table.columns[-1] == "point"
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    for row, point in zip(table.to_dict(orient="records"), manifest["points"], strict=True):
        lam = point["utilization"] * 6 / 6
        assert row["arrival_rate"] == pytest.approx(lam, rel=1e-15)
        r = simulate_moldable(6, 6, row["arrival_rate"], point["moldable"], point.get("take_fraction"),
                              point.get("patience_wait"), requirement=point.get("requirement"), jobs=3_000,
                              replications=3, seed=point_seed(7, point))
        assert row["stable"] == r["stable"]
        for key in ("waiting", "sojourn", "execution", "workers"):
            assert row[f"mean_{key}"] == r[f"mean_{key}"]
            assert [row[f"ci_low_{key}"], row[f"ci_high_{key}"]] == list(r["ci"][key])
    on_disk = pd.read_csv(tmp_path / "s" / "results.csv")
    assert on_disk.mean_waiting.tolist() == table.mean_waiting.tolist()


def test_a_folder_grows_resumes_and_a_point_does_not_depend_on_its_grid(tmp_path, monkeypatch):
    """A rerun with one more load runs only the 4 new points and keeps the old rows; a table cut in half is
    completed to the same bytes; the same point in a one-point grid has the same numbers."""
    out = tmp_path / "s"
    first = moldable_sweep(GRID, out, **RUN)
    calls = _counting(monkeypatch)
    grown = moldable_sweep({**GRID, "utilization": [0.2, 0.5, 0.8]}, out, **RUN)
    assert len(grown) == 12 and len(calls) == 4
    old = grown[grown.utilization != 0.8].drop(columns="point").reset_index(drop=True)
    pd.testing.assert_frame_equal(old, first.drop(columns="point"), check_dtype=False)
    whole = (out / "results.csv").read_bytes()
    (out / "results.csv").write_bytes(whole[: len(whole) // 2])
    calls.clear()
    moldable_sweep({**GRID, "utilization": [0.2, 0.5, 0.8]}, out, **RUN)
    assert (out / "results.csv").read_bytes() == whole and 0 < len(calls) < 12
    alone = moldable_sweep({"servers": 6, "tasks": 6, "moldable": "patience", "utilization": 0.5},
                           tmp_path / "one", **RUN)
    assert alone.mean_sojourn[0] == grown[(grown.moldable == "patience") & (grown.utilization == 0.5)
                                          ].mean_sojourn.item()


def test_an_unstable_point_has_no_means_and_says_why(tmp_path):
    """fixed n = k = 6 is split-merge: rho_max = 1/H_6 = 0.408, so rho = 0.9 is beyond it; take-fraction 1 at
    rho 1.2 is beyond the work-conserving limit lambda k E[X] < s; each unstable row says why."""
    table = moldable_sweep({"servers": 6, "tasks": 6, "moldable": ["fixed", "take-fraction"], "requirement": 6,
                            "take_fraction": 1, "utilization": [0.9, 1.2]}, tmp_path / "s", **RUN)
    assert table.stable.tolist() == [False, False, True, False]
    assert table.mean_waiting.isna().tolist() == [True, True, False, True]
    assert table.reason.notna().tolist() == [True, True, False, True] and "drift" in table.reason[0]


def test_an_edited_task_law_file_is_not_served_from_the_folder(tmp_path):
    law = tmp_path / "times.txt"
    law.write_text("0.5\n1.5\n")
    grid = {"servers": 4, "tasks": 4, "moldable": "take-random", "task_dist": f"empirical:file={law}",
            "utilization": 0.4}
    moldable_sweep(grid, tmp_path / "s", **RUN)
    law.write_text("4\n6\n")
    with pytest.raises(bq.ParameterError, match="differing: inputs"):
        moldable_sweep(grid, tmp_path / "s", **RUN)


@pytest.mark.parametrize("args, message", [
    (["--take-fraction", "0.5"], "--take-fraction must come with --moldable"),
    (["--moldable", "fixed", "--take-fraction", "0.5"], "take_fraction applies to moldable 'take-fraction' only"),
    (["--moldable", "fixed"], "requirement must be given with moldable 'fixed'"),
    (["--moldable", "fixed", "--requirement", "9", "-k", "12"], "requirement must be at most servers = 8"),
    (["--moldable", "patience", "--scheduling", "first-fit"], "must not be combined with --scheduling"),
    (["--moldable", "patience", "--warmup", "10"], "must not be combined with --warmup"),
    (["--moldable", "patience", "--clock-preset", "kueue"], "must not be combined with --clock-preset"),
    (["--moldable", "patience", "--trim"], "must not be combined with --trim"),
    (["--moldable", "patience", "--arrival-rate", "0.1"], "exactly one of arrival_rate and utilization"),
    (["--moldable", "patience,patience"], "must list distinct values"),
    (["--moldable", "take-half"], "moldable must be one of"),
])
def test_bad_moldable_sweeps_are_refused_before_any_file(tmp_path, args, message):
    base = ["-s", "8", "-k", "8", "--utilization", "0.3"]
    if "--arrival-rate" in args:
        base = base[:4] + ["--utilization", "0.3"]
    r = subprocess.run(CLI + base + args + ["--out", str(tmp_path / "new")], capture_output=True, text=True)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "new").exists()


def test_other_folders_and_settings_are_refused_leaving_the_folder_as_it_was(tmp_path):
    out = tmp_path / "s"
    moldable_sweep(GRID, out, **RUN)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    for grid, run, message in [({**GRID, "utilization": 0.2}, RUN, "not in this grid"),
                               (GRID, {**RUN, "seed": 8}, "differing: seed"),
                               (GRID, {**RUN, "jobs": 4_000}, "differing: jobs")]:
        with pytest.raises(bq.ParameterError, match=message):
            moldable_sweep(grid, out, **run)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    sim = tmp_path / "sim"
    subprocess.run(CLI + ["-s", "4", "-k", "2", "--utilization", "0.3", "--jobs", "2000", "--seed", "1", "--out",
                          str(sim)], capture_output=True, check=True)
    with pytest.raises(bq.ParameterError, match="holds a sweep of simulated systems, not of moldable jobs"):
        moldable_sweep(GRID, sim, **RUN)


def test_the_command_prints_the_table_and_strict_json(tmp_path):
    args = ["-s", "8", "-k", "8", "--moldable", "take-fraction,take-random", "--take-fraction", "0.25,0.5",
            "--utilization", "0.3", "--jobs", "3000", "--replications", "3", "--seed", "1"]
    r = subprocess.run(CLI + args + ["--out", str(tmp_path / "a")], capture_output=True, text=True, check=True)
    lines = r.stdout.splitlines()
    assert "moldable" in lines[0] and len(lines) == 5 and lines[-1].startswith("3 points in")
    r = subprocess.run(CLI + args + ["--json", "--out", str(tmp_path / "b")], capture_output=True, text=True,
                       check=True)
    rows = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))["rows"]
    assert [x["moldable"] for x in rows] == ["take-fraction", "take-fraction", "take-random"]
    assert (pd.read_csv(tmp_path / "a" / "results.csv").mean_sojourn.tolist()
            == [x["mean_sojourn"] for x in rows])


def test_deterministic_arrivals_reach_every_point(tmp_path):
    """--arrival deterministic reaches every point (its row is simulate_moldable's with that arrival law)."""
    table = moldable_sweep({"servers": 4, "tasks": 4, "arrival": "deterministic", "moldable": "take-random",
                            "arrival_rate": 0.5}, tmp_path / "s", **RUN)
    point = json.loads((tmp_path / "s" / "manifest.json").read_text())["points"][0]
    r = simulate_moldable(4, 4, 0.5, "take-random", arrival="deterministic", jobs=3_000, replications=3,
                          seed=point_seed(7, point))
    poisson = simulate_moldable(4, 4, 0.5, "take-random", jobs=3_000, replications=3, seed=point_seed(7, point))
    assert table.mean_waiting[0] == r["mean_waiting"] != poisson["mean_waiting"]


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

