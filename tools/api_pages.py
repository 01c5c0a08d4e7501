"""Write the API reference: one page per public module of ``barrier_queues`` under ``book/reference/api/``.

Each page is the module's docstring and its public members (``__all__`` where
the module defines it), rendered by Sphinx autodoc at build time; the index
page ``book/reference/api.md`` lists the modules with the first line of their
docstrings, grouped as the library is. ``--check`` writes nothing and exits 1
when a page is missing or stale (the tests run it), so a new module cannot be
left out of the reference.

Usage::

    python tools/api_pages.py [--check]
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "book" / "reference" / "api"
INDEX = ROOT / "book" / "reference" / "api.md"

#: the groups of the index, in order; a module not named here is refused (say where it belongs)
GROUPS = {
    "Describing a system": ["system", "distributions", "workload", "load", "nodes", "packing"],
    "Exact results": ["stability", "order_stats", "ctmc", "multiserver", "bounds", "release", "phases", "overhead",
                      "moldable_ctmc", "patience_chain"],
    "Simulation": ["simulate", "precision", "sweep", "planning", "saturated", "overload", "statistics", "failures",
                   "clocks",
                   "moldable", "moldable_policies"],
    "The model's axes": ["rules", "reference", "schedulers", "schedulers.base", "schedulers.central",
                         "schedulers.sampling", "schedulers.waitlist", "schedulers.moldable",
                         "schedulers.waitlist_reference", "inputs", "runs", "backends", "kernels"],
    "Spark": ["spark_bench", "eventlog", "spark_analysis", "spark_failures"],
    "Real workloads": ["traces", "trace_workload", "replay", "resampling"],
    "Results, figures and outputs": ["results", "figures", "outputs"],
}
#: modules without a page: the command line and its modules by command (documented by ``barrier-queues --help``,
#: the usage chapter and the manual)
SKIP = {"cli"}


def modules() -> list[str]:
    import barrier_queues

    names = [m.name.removeprefix("barrier_queues.")
             for m in pkgutil.walk_packages(barrier_queues.__path__, "barrier_queues.")]
    return sorted(n for n in names if not any(p.startswith("_") for p in n.split(".")) and n.split(".")[0] not in SKIP)


def summary(name: str) -> str:
    doc = importlib.import_module(f"barrier_queues.{name}").__doc__ or ""
    first = doc.strip().split("\n\n")[0]
    return " ".join(first.split())


def borrowed(name: str) -> list[str]:
    """Public names a module re-exports from another module of the package: documented on that module's page
    only (Sphinx refuses two targets for one cross-reference)."""
    module = importlib.import_module(f"barrier_queues.{name}")
    out = []
    for member in getattr(module, "__all__", []):
        obj = getattr(module, member, None)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):       # data (an instance) belongs where it is
            continue
        home = getattr(obj, "__module__", None) or ""
        if home.startswith("barrier_queues.") and home != module.__name__:
            out.append(member)
    return sorted(out)


def page(name: str) -> str:
    exclude = borrowed(name)
    return (f"# `barrier_queues.{name}`\n\n"
            "```{eval-rst}\n"
            f".. automodule:: barrier_queues.{name}\n"
            "   :members:\n"
            + (f"   :exclude-members: {', '.join(exclude)}\n" if exclude else "")
            + "```\n")


def index() -> str:
    lines = ["# API reference", "",
             "One page per module, generated from the docstrings by Sphinx autodoc when the book is built. Every",
             "public function states its model, units and the paper's equation; the most common tasks are on the",
             "[use the library](../usage.ipynb) page. `barrier_queues` re-exports the system description and the",
             "stability, CTMC, distribution, load, bound, planning, simulation and sweep functions at the top level",
             "(`import barrier_queues as bq; bq.simulate(...)`). The [extension guide](extending.md) shows how to",
             "add a service rule or a scheduler.", ""]
    for group, names in GROUPS.items():
        lines += [f"## {group}", "", "| module | what it models or does |", "|---|---|"]
        for name in names:
            text = summary(name).replace("|", "\\|")
            lines.append(f"| [`{name}`](api/{name.replace('.', '_')}.md) | {text} |")
        lines.append("")
    return "\n".join(lines)


def expected() -> dict[Path, str]:
    listed = [n for names in GROUPS.values() for n in names]
    missing = sorted(set(modules()) - set(listed))
    if missing:
        raise SystemExit(f"tools/api_pages.py: modules not in GROUPS (add them where they belong): {missing}")
    files = {API / f"{name.replace('.', '_')}.md": page(name) for name in listed}
    files[INDEX] = index()
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a page is missing or stale")
    args = parser.parse_args()
    files = expected()
    stale = [p for p, text in files.items() if not p.exists() or p.read_text() != text]
    extra = sorted(set(API.glob("*.md")) - set(files))
    if args.check:
        for p in stale + extra:
            print(f"stale or extra: {p.relative_to(ROOT)}", file=sys.stderr)
        return 1 if stale or extra else 0
    API.mkdir(parents=True, exist_ok=True)
    for p in stale:
        p.write_text(files[p])
    for p in extra:                      # pages of modules that no longer exist (this script wrote them)
        p.unlink()
    print(f"{len(stale)} page(s) written, {len(extra)} removed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
