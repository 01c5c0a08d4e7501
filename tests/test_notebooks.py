"""The book's notebooks: MyST/ipynb pairs in sync, executed, parameterised, rerunnable."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import papermill
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
SOURCES = sorted(BOOK.glob("*.md"))
NAMES = [p.stem for p in SOURCES]


def _cells(nb):
    return [(c.cell_type, c.source.strip(), sorted(c.metadata.get("tags", []))) for c in nb.cells]


def test_every_source_has_an_executed_notebook_and_vice_versa():
    assert NAMES, "no notebooks found"
    assert sorted(p.stem for p in BOOK.glob("*.ipynb")) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_pair_is_in_sync(name):
    text = jupytext.read(BOOK / f"{name}.md")
    executed = nbformat.read(BOOK / f"{name}.ipynb", as_version=4)
    assert _cells(text) == _cells(executed), (
        f"book/{name}.ipynb is out of date with book/{name}.md: run `make notebooks`")


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_executed_parameterised_and_clean(name):
    nb = nbformat.read(BOOK / f"{name}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", []), "first code cell must be tagged parameters"
    assert sum("parameters" in c.metadata.get("tags", []) for c in code) == 1
    assert all(c.execution_count is not None for c in code), "notebook not fully executed"
    assert not any(o.output_type == "error" for c in code for o in c.outputs)
    assert not any(o.output_type == "stream" and o.name == "stderr" for c in code for o in c.outputs)
    assert "papermill" not in nb.metadata
    assert nb.metadata.kernelspec.name == "python3"
    assert any(c.outputs for c in code)


def test_every_notebook_is_in_the_table_of_contents():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = {c["file"] for part in toc["parts"] for c in part["chapters"]} | {toc["root"]}
    assert {f"book/{n}" for n in NAMES} <= files
    assert "book/reference/api" in files


RERUNS = {
    "intro": {"servers": 8, "tasks": 3, "jobs": 5, "seed": 3, "check_traces": 20},
    "stability": {"servers": 8, "tasks": 4, "needed": 2, "fig2_servers": [4, 8], "fig3_servers": 6,
                  "fig3_tasks": 6, "sim_servers": [8], "sim_tasks": [1, 4, 8], "sim_jobs": 4000},
    "ctmc": {"servers": 12, "tasks": 6, "scaling_systems": [[8, 4, 4], [12, 6, 5]], "sim_jobs": 4000},
    "bounds": {"servers": 8, "tasks": 4, "fig5_fractions": [0.0, 0.5, 1.0], "fig6_examples": [[1, 4]],
               "fig6_fractions": [0.0, 0.5, 1.0], "fig7_utilizations": [0.4], "sim_jobs": 20000},
    # a live run on a real Spark (local-cluster): 2 executors, 8 jobs of k = 2
    "spark": {"live": True, "live_servers": 2, "live_tasks": [2], "live_jobs": 8, "live_arrival_rate": 0.4,
              "sim_jobs": 20000},
    "usage": {"servers": 8, "tasks": 2, "needed": 1, "utilization": 0.4, "sim_jobs": 20000},
    "tutorial": {"servers": 3, "arrival_rate": 2.0, "tasks": 3, "sim_jobs": 5000, "replications": 4,
                 "sweep_servers": 4, "sweep_tasks": "[1, 4]", "sweep_loads": [0.3, 0.6], "same_length_runs": 20},
    "partial": {"servers": 8, "tasks": 4, "fractions": [0.5], "waits": [0.0], "timeouts": [2.0], "sim_jobs": 4000},
    "sampling": {"servers_list": [8], "tasks_list": [1, 2, 4], "probe_ratios": [1.0, 2.0], "sparrow_servers": 8,
                 "sparrow_tasks": 2, "sat_jobs": 2000, "sim_jobs": 4000},
    "phases": {"phase_counts": [1, 2], "plan_tasks": [2], "plan_max_phases": 3, "sim_jobs": 4000},
    "scheduling": {"servers": 8, "fig5_tasks": 4, "fig5_fractions": [0.5], "small_loads": [0.2, 0.5],
                   "stability_loads": [0.3, 0.6], "sim_jobs": 3000, "sim_replications": 3, "capacity_jobs": 3000,
                   "borg_rates": [200], "borg_time": 15, "borg_saturated_jobs": 3000, "borg_replications": 2},
    "failures": {"servers": 8, "ks": [1, 4], "gammas": [0.05], "plan_work": 8.0, "sim_jobs": 2000,
                 "sim_replications": 3},
    "traces": {"load_scales": [1.0, 1.2], "extra_servers": [0, 20], "failure_rates": [0.0, 1e-6], "failure_seeds": [2],
               "shakes": 3, "resamples": 2},
    "clocks": {"servers": 8, "loads": [0.25], "hold_timeouts": [0.5, 10.0], "aging_afters": [0.0, 5.0],
               "budgets": [5.0], "starving_load": 0.25, "sim_jobs": 4000, "sim_replications": 2,
               "overload_jobs": 4000, "overload_replications": 2, "shakes": 2, "hold_ks": [2, 4]},
    "gpu": {"rules": ["fcfs", "sjf"], "shakes": 2, "ceiling_servers": 16},
    "moldable": {"servers": 8, "tasks": 8, "loads": [0.2, 0.6], "fixed_ns": [2, 8], "fractions": [1.0],
                 "sim_jobs": 3000, "sim_replications": 3},
    "claims": {},
}
#: notebooks that write figures and claims: reruns write into a temporary folder, never into results/
WRITERS = {"intro", "stability", "ctmc", "bounds", "spark", "partial", "sampling", "phases", "scheduling",
           "failures", "traces", "clocks", "gpu", "moldable"}


@pytest.mark.parametrize("name", NAMES)
def test_notebook_reruns_with_new_parameters(name, tmp_path):
    folder = os.environ.get("BARRIER_QUEUES_TRACES")
    log = {"traces": "KTH-SP2.swf.gz", "clocks": "philly-pollux.csv.gz", "gpu": "philly-pollux.csv.gz"}.get(name)
    if log and not (folder and (Path(folder) / log).is_file()):
        pytest.skip(f"the workload logs' folder (BARRIER_QUEUES_TRACES; make sets it from TRACES) lacks {log}")
    out = tmp_path / f"{name}.ipynb"
    parameters = dict(RERUNS[name])
    if name in WRITERS:
        parameters["results_dir"] = str(tmp_path / "results")
    if name == "spark":
        parameters["live_dir"] = str(tmp_path / "spark-live")
    if name == "claims":
        parameters["results_dir"] = str(ROOT / "results")
    before = {p.name: p.read_bytes() for p in (ROOT / "results").iterdir()}
    papermill.execute_notebook(str(BOOK / f"{name}.ipynb"), str(out), parameters=parameters,
                               kernel_name="python3", cwd=str(BOOK), progress_bar=False)
    nb = nbformat.read(out, as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1
    for key, value in parameters.items():
        shown = json.dumps(value) if isinstance(value, list | str) else value
        assert f"{key} = {shown}" in injected[0].source
    assert not any(o.output_type == "error" for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    # the committed results are untouched; the rerun's figures went where it was told
    assert {p.name: p.read_bytes() for p in (ROOT / "results").iterdir()} == before
    if name in WRITERS:
        pngs = sorted(p.stem for p in (tmp_path / "results").glob("*.png"))
        assert pngs and all((tmp_path / "results" / f"{stem}.{ext}").exists() for stem in pngs
                            for ext in ("pdf", "json"))


def test_committed_results_match_the_notebooks():
    """Every figure shown in a chapter is in results/ with PNG, PDF and provenance, and vice versa."""
    results = ROOT / "results"
    stems = sorted(p.stem for p in results.glob("*.png"))
    assert stems
    for stem in stems:
        assert (results / f"{stem}.pdf").exists() and (results / f"{stem}.json").exists()
        record = json.loads((results / f"{stem}.json").read_text())
        assert record["chapter"] in NAMES and record["files"] == [f"{stem}.png", f"{stem}.pdf"]
        source = (BOOK / f"{record['chapter']}.md").read_text()
        templates = re.findall(r'f"(\w+)\{\w+\}"', source)   # a name built per case, e.g. f"fig7_fig8_spark_s{servers}"
        assert f'"{stem}"' in source or any(stem.startswith(t) for t in templates), \
            f"{stem} is not written by book/{record['chapter']}.md"
    tables = sorted(p.stem for p in results.glob("*.csv"))
    assert "table1" in tables
    for stem in tables:
        record = json.loads((results / f"{stem}.json").read_text())
        assert record["kind"] == "table" and record["files"] == [f"{stem}.csv"]
        assert f'"{stem}"' in (BOOK / f"{record['chapter']}.md").read_text()
    provenance = {p.stem for p in results.glob("*.json") if not p.stem.startswith("claims-")}
    assert provenance == set(stems) | set(tables), "a provenance file without its figure or table"
    for name in WRITERS:
        claims = json.loads((results / f"claims-{name}.json").read_text())["claims"]
        assert claims and all(set(c) >= {"result", "claim", "test", "reproduced", "verdict", "note"} for c in claims)


def test_the_readme_and_the_intro_list_every_chapter():
    """The README's book table and the intro's chapter table name every chapter (two were once missing)."""
    readme = (ROOT / "README.md").read_text()
    intro = (BOOK / "intro.md").read_text()
    assert [n for n in NAMES if f"| `book/{n}` |" not in readme] == []
    assert [n for n in NAMES if n != "intro" and f"]({n}.ipynb) |" not in intro] == []


def test_the_committed_claims_page_lists_every_results_file():
    """The claims page was executed after the last chapter wrote its results (nbval would find it stale)."""
    notebook = nbformat.read(BOOK / "claims.ipynb", as_version=4)
    shown = " ".join(str(output.get("data", {}).get("text/html", "")) for cell in notebook.cells
                     if cell.cell_type == "code" for output in cell.get("outputs", []))
    provenance = [p for p in (ROOT / "results").glob("*.json") if not p.stem.startswith("claims-")]
    listed = re.findall(r"<summary>(\d+) figures and tables", shown)
    assert listed == [str(len(provenance))], \
        f"re-execute book/claims.ipynb: it lists {listed} results files, results/ has {len(provenance)}"


def test_the_claims_page_lists_every_checkable_statement():
    """At least 22 statements of the paper, each with a test, a number and a verdict; identities are marked."""
    from barrier_queues.results import VERDICTS, load_claims

    claims = load_claims(ROOT / "results")
    paper = claims[~claims.claim.str.startswith(("(ours)", "(Appendix", "(seed"))]
    assert len(paper) >= 22
    assert set(claims.verdict) <= set(VERDICTS)
    assert (paper.test.str.len() > 10).all() and (paper.reproduced.str.len() > 0).all()
    assert (paper.verdict == "identity").sum() >= 3          # statements true by construction say so


def test_a_rerun_with_new_parameters_never_writes_into_the_committed_results(tmp_path):
    """Without a results_dir, non-default parameters send the figures under _build/results, not to results/."""
    before = {p.name: p.read_bytes() for p in (ROOT / "results").iterdir()}
    out = tmp_path / "intro.ipynb"
    papermill.execute_notebook(str(BOOK / "intro.ipynb"), str(out), parameters={"jobs": 4, "seed": 11},
                               kernel_name="python3", cwd=str(BOOK), progress_bar=False)
    assert {p.name: p.read_bytes() for p in (ROOT / "results").iterdir()} == before
    text = "".join(o.get("text", "") for c in nbformat.read(out, as_version=4).cells if c.cell_type == "code"
                   for o in c.outputs)
    assert "results go to ../_build/results/intro-" in text


def test_the_partial_chapters_answer_follows_its_claim_rows():
    """The closing answer of the partial-barrier chapter is written by the notebook from its numbers; it says the
    knee beats the fixed-l frontier under heavy tails exactly when the claim row says "agrees" (an earlier,
    hand-written answer said so beside a row that said "differs")."""
    from barrier_queues.results import load_claims

    claims = load_claims(ROOT / "results")
    heavy = claims[(claims.chapter == "partial") & (claims.result == "Heavy tails")].verdict.item()
    light = claims[(claims.chapter == "partial") & (claims.result == "Light tails")].verdict.item()
    nb = nbformat.read(BOOK / "partial.ipynb", as_version=4)
    answer = next(o["data"]["text/markdown"] for c in nb.cells if c.cell_type == "code" for o in c.outputs
                  if o.get("data", {}).get("text/markdown", "").startswith("**Answer**"))
    assert ("does more useful work than a fixed" in answer) == (heavy == "agrees")
    assert ("stays below the fixed-$l$ frontier" in answer) == (heavy != "agrees")
    assert ("knee detector loses to the best fixed" in answer) == (light == "agrees")


@pytest.mark.parametrize("name", sorted(set(NAMES) - {"usage", "tutorial"}))
def test_code_is_folded_behind_the_narrative(name):
    """A reader sees text, figures, tables and verdicts; every code cell but the parameters (what a rerun
    changes) is folded one click away (hide-input). The usage and tutorial pages are exempt: their code is what they
    teach."""
    nb = nbformat.read(BOOK / f"{name}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    shown = [c.source[:60] for c in code if not {"parameters", "hide-input", "remove-input", "hide-cell",
                                                  "remove-cell"} & set(c.metadata.get("tags", []))]
    assert shown == [] and len(code) >= 2


@pytest.mark.parametrize("name", NAMES)
def test_a_misspelt_parameter_is_refused_by_name(name):
    """papermill injects any -p name as a new variable; the chapter refuses one it does not define (here before
    any work), instead of running with the default it was meant to replace."""
    from barrier_queues import ParameterError
    from barrier_queues.results import _book_defaults, check_parameters

    defaults = _book_defaults(name)
    namespace = {**defaults, "In": [], "Out": {}, "_ih": [], "json": json, "re": re, "VERDICTS": ("agrees",),
                 "check_parameters": check_parameters}
    check_parameters(name, namespace)
    with pytest.raises(ParameterError, match=f"unknown parameter servres for the {name} chapter: its parameters "
                                                 f"are {list(defaults)[0]}"):
        check_parameters(name, {**namespace, "servres": 8})


def test_papermill_with_an_unknown_parameter_name_stops_with_its_name(tmp_path):
    with pytest.raises(papermill.PapermillExecutionError, match="unknown parameter jobz for the intro chapter"):
        papermill.execute_notebook(str(BOOK / "intro.ipynb"), str(tmp_path / "intro.ipynb"), parameters={"jobz": 4},
                                   kernel_name="python3", cwd=str(BOOK), progress_bar=False)


def _is_figure_or_table(output) -> bool:
    data = output.get("data", {})
    markdown = data.get("text/markdown", "")
    return "image/png" in data or "text/html" in data or "\n|---" in markdown or markdown.startswith("|")


def _is_provenance(output) -> bool:
    markdown = output.get("data", {}).get("text/markdown", "")
    return markdown.startswith(("**Figure `", "**Table `", "**Source**: produced by "))


#: the usage and tutorial pages are exempt: each of their outputs sits under the few lines of code that produced it
SHOWS_PROVENANCE = sorted(set(NAMES) - {"usage", "tutorial"})


@pytest.mark.parametrize("name", SHOWS_PROVENANCE)
def test_every_figure_and_table_says_what_produced_it(name):
    """In the executed notebook, each figure or table is followed by its provenance line (results.Provenance)."""
    nb = nbformat.read(BOOK / f"{name}.ipynb", as_version=4)
    shown = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        pending = False
        for output in cell.outputs:
            if _is_provenance(output):
                pending = False
            elif _is_figure_or_table(output):
                assert not pending, f"{name}, cell {cell.id}: two figures or tables without provenance between them"
                pending = True
                shown += 1
        assert not pending, f"{name}, cell {cell.id}: a figure or table without its provenance line after it"
    assert shown > 0


@pytest.mark.slow
def test_book_builds_without_warnings(built_book):
    result, html = built_book
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    for name in NAMES:
        page = (html / "book" / f"{name}.html").read_text()
        if name in WRITERS:
            assert "<img" in page and "Fig" in page
    assert (html / "book" / "reference" / "api.html").exists()
    for documented in ("barrier_queues.simulate.simulate", "barrier_queues.bounds.bound",
                       "barrier_queues.spark_analysis.load_run", "barrier_queues.eventlog.parse_event_log"):
        module = documented.rsplit(".", 1)[0].removeprefix("barrier_queues.")
        assert f'id="{documented}"' in (html / "book" / "reference" / "api" / f"{module}.html").read_text()
    for page in (html / "book" / "reference" / "api").glob("*.html"):    # every module page has a documented member
        assert 'class="py ' in page.read_text() or page.stem == "schedulers", f"{page.name}: an empty API page"
    assert (html / "index.html").exists()


def test_the_api_reference_has_one_current_page_per_module():
    """tools/api_pages.py --check: every public module has its page, and the index lists it with its summary."""
    result = subprocess.run([sys.executable, str(ROOT / "tools" / "api_pages.py"), "--check"], capture_output=True,
                            text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    toc = (ROOT / "_toc.yml").read_text()
    assert "glob: book/reference/api/*" in toc


def test_the_book_and_readme_send_readers_only_to_what_they_have():
    """No page, docstring or README line points to the project's internal specification files or issue numbers;
    the models are the book's appendices, and every citation key used is in references.bib."""
    import re

    texts = {p: p.read_text() for p in [*BOOK.glob("*.md"), *(BOOK / "reference").glob("*.md"), ROOT / "README.md",
                                         *(ROOT / "src" / "barrier_queues").rglob("*.py")]}
    for path, text in texts.items():
        for bad in ("MODEL.md", "EXTENSIONS.md", "SPARK.md", "../shared", "issue #", "(#"):
            assert bad not in text, f"{path.relative_to(ROOT)} mentions {bad!r}"
    keys = set(re.findall(r"@\w+\{([^,]+),", (ROOT / "references.bib").read_text()))
    cited = {k for text in texts.values() for group in re.findall(r"\{cite(?::t|:p)?\}`([^`]+)`", text)
             for k in group.split(",")}
    assert cited and cited <= keys, f"cited but not in references.bib: {cited - keys}"
    for appendix in ("model", "extensions-model", "spark-model", "bibliography"):
        assert f"book/reference/{appendix}" in (ROOT / "_toc.yml").read_text()


@pytest.mark.parametrize("name", sorted(WRITERS - {"intro"}))
def test_what_we_found_is_computed_from_the_chapters_numbers(name):
    """Each chapter ends with "What we found", shown from the numbers: its executed output holds exactly
    results.findings of the chapter's committed claim rows (verdicts and numbers as the claims page has them)."""
    from barrier_queues.results import findings

    nb = nbformat.read(BOOK / f"{name}.ipynb", as_version=4)
    assert any(c.cell_type == "markdown" and c.source.lstrip().startswith("## What we found") for c in nb.cells)
    claims = json.loads((ROOT / "results" / f"claims-{name}.json").read_text())["claims"]
    expected = findings(claims)
    shown = [o.data.get("text/markdown", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
             if o.output_type == "display_data"]
    assert expected in shown, f"{name}: the What we found section is not the chapter's claims"
    assert all(c["verdict"] in expected for c in claims)
