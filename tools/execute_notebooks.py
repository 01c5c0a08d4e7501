"""Regenerate the book's executed notebooks from their MyST sources.

For each ``book/<name>.md``: convert to ``book/<name>.ipynb`` with
jupytext, execute it with papermill (default parameters, kernel ``python3``,
working directory ``book/``), then strip papermill's volatile metadata
(timestamps, durations) so that reruns give clean diffs. nbval re-executes the
same notebooks in the tests and compares their outputs.

Usage: ``python tools/execute_notebooks.py [name ...]``; ``--full`` runs the
committed notebooks at the paper's scale into ``_build/full`` instead
(``make book-full``), with their figures in ``_build/full/results``. Their
simulations go through :mod:`barrier_queues.sweep`'s backend: set
``SWEEP_BACKEND=spark SPARK_MASTER=spark://host:7077`` to run them on a
Spark cluster (the same numbers, bit for bit).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jupytext
import nbformat
import papermill

BOOK = Path(__file__).resolve().parents[1] / "book"
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}


def strip_volatile(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb.metadata.pop("papermill", None)
    nb.metadata.kernelspec = KERNELSPEC
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
    return nb


#: run order: the claims page collects what the chapters wrote, so it comes last
FIRST = ["intro", "stability", "ctmc", "bounds", "spark", "partial", "sampling", "phases", "scheduling", "failures",
         "traces", "clocks", "gpu", "moldable", "usage"]
LAST = ["claims"]

#: ``--full``: the paper's scale (more jobs and replications, epsilon = 1e-3 for the bounds)
FULL = {
    "stability": {"sim_jobs": 200_000, "sim_replications": 20},
    "ctmc": {"sim_jobs": 200_000, "sim_replications": 20,
             "scaling_systems": [[16, 8, 8], [24, 12, 12], [32, 16, 16], [32, 16, 12], [40, 16, 16],
                                 [48, 16, 16], [56, 16, 16], [64, 16, 12]]},
    "bounds": {"sim_jobs": 400_000, "sim_replications": 20, "epsilon": 0.001, "check_points": 50},
    "spark": {"sim_jobs": 400_000, "sim_replications": 20},
    "partial": {"sim_jobs": 200_000, "sim_replications": 20},
    "sampling": {"sat_jobs": 50_000, "sim_jobs": 100_000, "sim_replications": 20},
    "phases": {"sim_jobs": 200_000, "sim_replications": 20},
    "scheduling": {"sim_jobs": 200_000, "sim_replications": 20, "capacity_jobs": 500_000, "borg_time": 40_000},
    "failures": {"sim_jobs": 200_000, "sim_replications": 20},
    "moldable": {"sim_jobs": 200_000, "sim_replications": 20},
    "clocks": {"sim_jobs": 200_000, "sim_replications": 20},
    "usage": {"sim_jobs": 1_000_000},
}
WRITERS = {"intro", "stability", "ctmc", "bounds", "spark", "partial", "sampling", "phases", "scheduling", "failures",
           "clocks", "gpu", "moldable", "claims"}


def ordered(names: list[str]) -> list[str]:
    rank = {n: i for i, n in enumerate(FIRST)} | {n: 1000 + i for i, n in enumerate(LAST)}
    return sorted(names, key=lambda n: (rank.get(n, 500), n))


def execute(name: str) -> float:
    source = BOOK / f"{name}.md"
    target = BOOK / f"{name}.ipynb"
    nb = jupytext.read(source)
    nb.metadata.kernelspec = KERNELSPEC
    for i, cell in enumerate(nb.cells):   # stable ids: reruns give clean diffs
        cell.id = f"{name}-{i}"
    jupytext.write(nb, target, fmt="ipynb")
    t0 = time.perf_counter()
    papermill.execute_notebook(str(target), str(target), kernel_name="python3", cwd=str(BOOK),
                               progress_bar=False, log_output=False)
    seconds = time.perf_counter() - t0
    nbformat.write(strip_volatile(nbformat.read(target, as_version=4)), target)
    return seconds


def execute_full(name: str, out: Path) -> float:
    """Run the committed notebook at full scale into ``out`` (figures into ``out/results``)."""
    parameters = dict(FULL.get(name, {}))
    if name in WRITERS:
        parameters["results_dir"] = str(out / "results")
    t0 = time.perf_counter()
    papermill.execute_notebook(str(BOOK / f"{name}.ipynb"), str(out / f"{name}.ipynb"), parameters=parameters,
                               kernel_name="python3", cwd=str(BOOK), progress_bar=False, log_output=False)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebook names (default: every book/*.md)")
    parser.add_argument("--full", action="store_true",
                        help="paper-scale parameters; outputs into _build/full, the book is left as it is")
    args = parser.parse_args(argv)
    names = ordered(args.names or [p.stem for p in BOOK.glob("*.md")])
    out = BOOK.parent / "_build" / "full"
    if args.full:
        out.mkdir(parents=True, exist_ok=True)
    timings = {}
    for name in names:
        timings[name] = execute_full(name, out) if args.full else execute(name)
        print(f"{name}: executed in {timings[name]:.1f} s", flush=True)
    print(f"total: {sum(timings.values()):.1f} s")
    if args.full:
        (out / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
