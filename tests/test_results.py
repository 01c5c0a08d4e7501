"""Figures, tables and claims written as files with provenance, byte-for-byte reproducibly."""

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from barrier_queues import ParameterError  # noqa: E402
from barrier_queues.results import (  # noqa: E402
    load_chosen,
    load_claims,
    load_results,
    record_claims,
    save_figure,
    save_table,
    source,
)


def _figure():
    fig, ax = plt.subplots()
    ax.plot(np.arange(10), np.arange(10) ** 2, "o-")
    ax.set_title("test")
    return fig


def test_save_figure_writes_png_pdf_and_provenance_reproducibly(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        fig = _figure()
        rec = save_figure(fig, "fig0", chapter="intro", function="figures.fig0", folder=folder,
                          parameters={"servers": np.int64(4), "rates": np.array([0.5, 1.0]), "eps": float("nan")},
                          seed=7, simulation={"jobs": 1000, "replications": 2})
        plt.close(fig)
    for suffix in ("png", "pdf", "json"):
        assert (first / f"fig0.{suffix}").read_bytes() == (second / f"fig0.{suffix}").read_bytes()
    assert (first / "fig0.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (first / "fig0.pdf").read_bytes()[:5] == b"%PDF-"
    data = json.loads((first / "fig0.json").read_text())
    assert data["parameters"] == {"servers": 4, "rates": [0.5, 1.0], "eps": None} and data["seed"] == 7
    assert data["library"].startswith("barrier-queues ") and data["files"] == ["fig0.png", "fig0.pdf"]
    assert data == rec.to_dict() and data["kind"] == "figure" and data["name"] == "fig0"
    table = load_results(first)
    assert list(table.name) == ["fig0"] and table.chapter[0] == "intro"


def test_provenance_is_shown_as_one_line_of_markdown(tmp_path):
    rec = save_figure(_figure(), "fig0", chapter="intro", function="figures.fig0", folder=tmp_path,
                      parameters={"servers": np.int64(16), "tasks": [1, 2]}, seed=20251214,
                      simulation={"jobs": 200_000, "replications": 4, "ci": "95 % t interval"})
    md = rec._repr_markdown_()
    assert md == ("**Figure `fig0`**: produced by `figures.fig0`; parameters `servers=16`, `tasks=[1, 2]`; "
                  "seed `20251214`; simulation jobs 200,000, replications 4, ci 95 % t interval; "
                  "files `fig0.png`, `fig0.pdf` (+ `fig0.json`).")
    assert "\n" not in md and repr(rec).startswith("Figure fig0: produced by figures.fig0; parameters servers=16")
    plain = source("ctmc.ctmc_stability", {"servers": 12, "note": "a `quoted` value"})
    assert plain._repr_markdown_() == ("**Source**: produced by `ctmc.ctmc_stability`; parameters `servers=12`, "
                                       "`note=a 'quoted' value`; no simulation.")
    assert repr(plain) == "Source: produced by ctmc.ctmc_stability; parameters servers=12, note=a `quoted` value; " \
                          "no simulation."


def test_a_long_provenance_line_folds_its_parameters():
    """Over FOLD_PROVENANCE characters (22 runs named, say) the line keeps what produced the result and folds
    the rest under it, as HTML (escaped: no value is read as markup)."""
    runs = [f"s8-k{k}-rho0.{r}<x>" for k in range(1, 12) for r in (3, 5)]
    md = source("spark_analysis.serving_check", {"runs": runs})._repr_markdown_()
    head, folded = md.split("\n\n", 1)
    assert head == "**Source**: produced by `spark_analysis.serving_check`."
    assert folded.startswith("<details><summary>its parameters</summary>") and folded.endswith("</details>")
    assert "s8-k1-rho0.3&lt;x&gt;" in folded and "<x>" not in folded


def test_save_table_writes_csv_and_provenance_that_read_back(tmp_path):
    table = pd.DataFrame({"k": [1, 2], "rho": [1 / 3, 0.5], "ci": [(0.1, 0.2), (0.3, 0.4)]})
    rec = save_table(table, "tab0", chapter="spark", function="spark_analysis.run_summary",
                     parameters={"runs": ["a", "b"]}, folder=tmp_path)
    back = pd.read_csv(tmp_path / "tab0.csv")
    assert list(back.k) == [1, 2] and back.rho[0] == pytest.approx(1 / 3, rel=1e-9)
    assert [json.loads(x) for x in back.ci] == [[0.1, 0.2], [0.3, 0.4]]
    first = (tmp_path / "tab0.csv").read_bytes()
    save_table(table, "tab0", chapter="spark", function="spark_analysis.run_summary",
               parameters={"runs": ["a", "b"]}, folder=tmp_path)
    assert (tmp_path / "tab0.csv").read_bytes() == first
    assert json.loads((tmp_path / "tab0.json").read_text()) == rec.to_dict()
    assert rec.files == ("tab0.csv",) and load_results(tmp_path).kind.tolist() == ["table"]
    with pytest.raises(ParameterError, match="table must be a pandas DataFrame"):
        save_table([1, 2], "tab1", chapter="c", function="f", parameters={}, folder=tmp_path)


def test_a_figure_and_a_table_cannot_share_a_name(tmp_path):
    save_table(pd.DataFrame({"a": [1]}), "same", chapter="c", function="f", parameters={}, folder=tmp_path)
    with pytest.raises(ParameterError, match="already holds a table's provenance"):
        save_figure(_figure(), "same", chapter="c", function="f", parameters={}, folder=tmp_path)
    assert json.loads((tmp_path / "same.json").read_text())["kind"] == "table"
    assert not (tmp_path / "same.png").exists()
    save_figure(_figure(), "other", chapter="c", function="f", parameters={}, folder=tmp_path)
    with pytest.raises(ParameterError, match="already holds a figure's provenance"):
        save_table(pd.DataFrame({"a": [1]}), "other", chapter="c", function="f", parameters={}, folder=tmp_path)


def test_two_tables_of_one_run_cannot_share_a_name(tmp_path):
    """A later table under an earlier one's name would replace its files unseen: refused; the same table written
    again (a cell re-run) is not."""
    save_table(pd.DataFrame({"a": [1]}), "runs", chapter="c", function="first", parameters={}, folder=tmp_path)
    save_table(pd.DataFrame({"a": [1]}), "runs", chapter="c", function="first", parameters={}, folder=tmp_path)
    with pytest.raises(ParameterError, match="already wrote runs.json for 'first'"):
        save_table(pd.DataFrame({"b": [2]}), "runs", chapter="c", function="second", parameters={}, folder=tmp_path)
    assert pd.read_csv(tmp_path / "runs.csv").columns.tolist() == ["a"]


def test_claims_round_trip_and_bad_input(tmp_path):
    shown = record_claims("stability", [{"result": "Table I", "claim": "c", "test": "t", "reproduced": "r",
                                         "verdict": "agrees"}], folder=tmp_path)
    assert repr(shown) == ("Source: produced by results.record_claims: the checks of this chapter's cells above; "
                           "parameters chapter=stability, claims=1, agrees=1, file=claims-stability.json; "
                           "no simulation.")
    record_claims("bounds", [{"result": "Fig. 7", "claim": "u", "test": "t", "reproduced": "v", "verdict": "differs",
                              "note": "why"}], folder=tmp_path,
                  chosen=[{"result": "Fig. 7", "parameters": {"s": 16}, "why": "lost"}])
    table = load_claims(tmp_path)
    assert list(table.chapter) == ["bounds", "stability"] and list(table.verdict) == ["differs", "agrees"]
    assert list(table.note) == ["why", ""]
    assert load_chosen(tmp_path).to_dict("records") == [{"chapter": "bounds", "result": "Fig. 7",
                                                         "parameters": {"s": 16}, "why": "lost"}]
    with pytest.raises(ParameterError, match=r"missing \['test', 'verdict'\]"):
        record_claims("x", [{"result": "r", "claim": "c", "reproduced": "p"}], folder=tmp_path)
    with pytest.raises(ParameterError, match="verdict must be one of agrees, differs"):
        record_claims("x", [{"result": "r", "claim": "c", "test": "t", "reproduced": "p", "verdict": "close"}],
                      folder=tmp_path)
    with pytest.raises(ParameterError, match="chosen parameters must each have result, parameters and why"):
        record_claims("x", [], folder=tmp_path, chosen=[{"result": "r"}])
    assert not (tmp_path / "claims-x.json").exists()
    with pytest.raises(ParameterError, match="name must be a plain file stem"):
        save_figure(_figure(), "../x", chapter="c", function="f", parameters={}, folder=tmp_path)
    with pytest.raises(ParameterError, match="name must be a plain file stem"):
        save_table(pd.DataFrame({"a": [1]}), "a\\b", chapter="c", function="f", parameters={}, folder=tmp_path)


def test_spark_figure_marks_unstable_simulations_instead_of_plotting_their_numbers():
    from barrier_queues import figures

    rows = []
    for k in (1, 2, 4):
        for src_name in ("Spark", "plain", "paper overhead", "event overhead"):
            unstable = src_name == "paper overhead" and k == 4
            v = 1e6 if unstable else 1.0 + k
            rows.append({"k/s": k / 4, "utilization": 0.5, "source": src_name, "stable": not unstable,
                         **{c: v for c in ("sojourn_q", "waiting_q", "mean_sojourn", "mean_waiting")},
                         **{f"{c}_ci": (v * 0.9, v * 1.1) for c in ("sojourn_q", "waiting_q", "mean_sojourn",
                                                                     "mean_waiting")}})
    fig = figures.fig78_spark(pd.DataFrame(rows), 0.99)
    for ax in fig.axes:
        drawn = np.concatenate([np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines()])
        assert 1e6 not in drawn                                  # the unstable number is not drawn
        marks = [line for line in ax.get_lines() if list(line.get_ydata()) == [0.97]]
        assert len(marks) == 1 and marks[0].get_xdata()[0] == pytest.approx(1.0 + 0.012)
    assert "simulation unstable (no steady state)" in [t.get_text() for t in fig.legends[0].get_texts()]   # below all
    plt.close(fig)


def test_a_list_parameter_given_as_text_by_papermill_is_parsed():
    from barrier_queues.results import parameter_list

    assert parameter_list("[1, 2, 3]", "live_tasks") == [1, 2, 3]
    assert parameter_list([2], "live_tasks") == [2]
    with pytest.raises(ParameterError, match=r"live_tasks must be a list such as \[1, 2, 3\] \(got '1,2'\)"):
        parameter_list("1,2", "live_tasks")


def test_committed_results_are_written_only_with_the_default_parameters(monkeypatch, tmp_path):
    """A papermill rerun: defaults (compared by value and type) write to the committed results/, anything else
    to a folder of its own; an explicit results_dir of the committed results/ with other parameters is refused."""
    from pathlib import Path

    from barrier_queues.results import DEFAULT_FOLDER, RESULTS_ENV, output_folder

    monkeypatch.chdir(Path(__file__).resolve().parents[1] / "book")
    monkeypatch.delenv(RESULTS_ENV, raising=False)
    assert output_folder("failures", None, servers=16) == DEFAULT_FOLDER
    assert output_folder("failures", None, servers=16.0).startswith("../_build/results/failures-")
    with pytest.raises(ParameterError, match="results_dir must not be the committed ../results when parameters "
                                             "differ from the chapter's defaults \\(got servers\\)"):
        output_folder("failures", "../results", servers=17)
    assert output_folder("failures", "../results", servers=16) == "../results"
    assert output_folder("failures", str(tmp_path), servers=17) == str(tmp_path)


def test_show_table_cuts_a_long_table_and_says_where_the_whole_one_is(tmp_path, monkeypatch):
    """A long table shows its first rows and one line with the rest's place: a download link to the committed
    results/ file with the chapter's default parameters (also when make test redirects the writes), the folder
    written otherwise; a short table is shown whole, without the line."""
    from IPython.core.formatters import format_display_data

    from barrier_queues import results

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj: shown.append(format_display_data(obj)[0]))
    table = pd.DataFrame({"a": range(30), "b": [0.123456] * 30, "c": ["x"] * 30})
    monkeypatch.delenv(results.RESULTS_ENV, raising=False)
    results.show_table(table, "t", folder=results.DEFAULT_FOLDER, rows=5, columns=["a", "b"])
    assert shown[0]["text/plain"].count("\n") == 5 and "0.123" in shown[0]["text/plain"]
    assert "5 of 30 rows, 2 of 3 columns" in shown[1]["text/markdown"]
    assert "{download}`results/t.csv <../results/t.csv>`" in shown[1]["text/markdown"]
    monkeypatch.setenv(results.RESULTS_ENV, str(tmp_path))
    shown.clear()
    results.show_table(table, "t", folder=str(tmp_path), rows=5)
    assert "{download}`results/t.csv" in shown[1]["text/markdown"]
    shown.clear()
    results.show_table(table, "t", folder=str(tmp_path / "other"), rows=5)
    assert str(tmp_path / "other" / "t.csv") in shown[1]["text/markdown"]
    shown.clear()
    results.show_table(table.head(6), "t", rows=5)
    assert len(shown) == 1
    shown.clear()
    results.show_table(table.head(3), "t", folder=str(tmp_path), rows=5, whole=table)
    assert "all 3 rows of a summary; the whole table (30 rows, 3 columns)" in shown[1]["text/markdown"]


def test_a_figure_a_reader_would_trip_over_is_refused(tmp_path):
    """save_figure runs figures.figure_problems on every figure of the book: tick labels that overlap (long
    labels on a narrow axis) and a legend too small once a wide figure is scaled to the text column are
    refused, naming the figure; the same figure with room for its labels and figures.legend_fontsize passes."""
    from barrier_queues.figures import MIN_TEXT_PX, figure_problems, legend_fontsize

    def draw(fixed: bool):
        crowded, ax = plt.subplots(figsize=(5, 3))
        ax.plot(range(6), range(6))
        ax.set_xticks(range(6), [f"{'k' if fixed else 'tasks per job k'} = {i}" for i in range(6)])
        wide, ax = plt.subplots(figsize=(12, 4))
        ax.plot(range(6), range(6), label="a line")
        ax.legend(fontsize=legend_fontsize(wide, 8) if fixed else 8)
        return crowded, wide

    crowded, wide = draw(False)
    assert [p.split(" (")[0] for p in figure_problems(crowded)] == [
        "panel 1: x tick labels 'tasks per job k = 0' and 'tasks per job k = 1' overlap"]
    assert [p.split(" px")[0] for p in figure_problems(wide)] == ["a legend's text shows 7.9"]
    for name, fig in (("crowded", crowded), ("wide", wide)):
        with pytest.raises(ParameterError, match=f"figure '{name}' would trip a reader"):
            save_figure(fig, name, chapter="t", function="f", parameters={}, folder=tmp_path)
    assert not list(tmp_path.iterdir())
    for fig in draw(True):
        assert figure_problems(fig) == []
        save_figure(fig, f"clear{id(fig)}", chapter="t", function="f", parameters={}, folder=tmp_path)
    assert legend_fontsize(crowded, 8) == 8 and legend_fontsize(wide, 8) * 100 / 72 * 676 / 1320 >= MIN_TEXT_PX
    plt.close("all")


def test_a_long_list_of_findings_folds_its_lines_under_the_verdicts():
    from barrier_queues.results import FOLD_FINDINGS, findings

    claims = [{"result": f"Fig. {i}", "claim": "a claim", "reproduced": f"{i}.0", "verdict": "agrees"}
              for i in range(FOLD_FINDINGS + 1)]
    short = findings(claims[:FOLD_FINDINGS])
    assert "<details>" not in short and short.count("\n* ") == FOLD_FINDINGS
    long = findings(claims)
    head, rest = long.split("<details>", 1)
    assert head.startswith(f"**{FOLD_FINDINGS + 1} statements checked** (13 agree):")
    assert "Fig. 12 (*agrees*)." in head and "we find" not in head
    assert rest.count("\n* ") == FOLD_FINDINGS + 1 and rest.rstrip().endswith("</details>")


def test_fig1s_job_labels_are_readable_at_the_columns_width():
    """Fig. 1's job numbers showed about 6 px tall in the book: every label now shows at least
    figures.MIN_TEXT_PX at the text column's width, and sits inside its bar (narrow bars go unlabelled)."""
    import matplotlib.pyplot as plt

    import barrier_queues as bq
    from barrier_queues import figures

    panels = []
    for barriers in (1, 2):
        system = bq.BarrierSystem(servers=8, tasks=3, arrival_rate=0.8, barriers=barriers)
        task_table, job_table = bq.trace(system, jobs=8, seed=3)
        panels.append((f"{barriers}", task_table, job_table, barriers))
    fig = figures.fig1_schedules(panels, 8)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    scale = min(1.0, figures.COLUMN_PX / (fig.get_tightbbox(renderer).width * figures.INLINE_DPI))
    texts = [t for ax in fig.axes for t in ax.texts]
    assert texts
    for text in texts:
        assert text.get_fontsize() * figures.INLINE_DPI / 72 * scale >= figures.MIN_TEXT_PX
    for ax in fig.axes:
        bars = [p.get_paths()[0].get_extents() for p in ax.collections if len(p.get_paths())]
        for text in ax.texts:
            box = text.get_window_extent(renderer).transformed(ax.transData.inverted())
            assert any(b.x0 <= box.x0 and box.x1 <= b.x1 for b in bars), text.get_text()
    plt.close(fig)


def test_a_claims_tolerance_must_say_where_it_comes_from(tmp_path):
    """A claim row may carry a tolerance (the bound a verdict reads a number against, and its source); an empty
    one is refused, and a given one reaches the chapter's claims file."""
    import json

    import pytest

    from barrier_queues import ParameterError, results

    row = {"result": "r", "claim": "c", "test": "t", "reproduced": "1.0", "verdict": "agrees"}
    with pytest.raises(ParameterError, match="tolerance"):
        results.record_claims("x", [{**row, "tolerance": " "}], folder=tmp_path)
    results.record_claims("x", [{**row, "tolerance": "ours: 10 %"}, row], folder=tmp_path)
    saved = json.loads((tmp_path / "claims-x.json").read_text())["claims"]
    assert saved[0]["tolerance"] == "ours: 10 %" and "tolerance" not in saved[1]
    assert list(results.load_claims(tmp_path).tolerance) == ["ours: 10 %", ""]      # (what the claims page shows)
