"""Regenerate the book's executed notebooks from their MyST sources.

For each ``book/<name>.md``: convert to ``book/<name>.ipynb`` with
jupytext, execute it with papermill (default parameters, kernel ``python3``,
working directory ``book/``), then strip papermill's volatile metadata
(timestamps, durations) so that reruns give clean diffs. nbval re-executes the
same notebooks in the tests and compares their outputs.

Usage: ``python tools/execute_notebooks.py [name ...]``
"""

from __future__ import annotations

import argparse
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebook names (default: every book/*.md)")
    args = parser.parse_args(argv)
    names = args.names or sorted(p.stem for p in BOOK.glob("*.md"))
    for name in names:
        print(f"{name}: executed in {execute(name):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
