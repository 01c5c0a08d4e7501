"""Figures and claims as files, with their provenance (the book's ``results/`` folder).

Every figure of the book is also written as PNG and PDF, next to a JSON file
saying what produced it: the chapter, the library function, the parameters,
the seed and, for simulation, the number of jobs, replications and how the
confidence intervals were formed. Each chapter also writes the paper's claims
it checks with the numbers it reproduced; the "claims" page collects them.

Files are byte-for-byte reproducible: the PDF carries no creation date and
the JSON is written with sorted keys, so re-executing a notebook with the same
parameters leaves ``results/`` unchanged.
"""

from __future__ import annotations

import json
import math
from importlib.metadata import version
from pathlib import Path

import pandas as pd

from ._validation import ParameterError

#: where the book's notebooks write, relative to ``book/`` (their working directory)
DEFAULT_FOLDER = "../results"


def _plain(value):
    """JSON-ready copies of numpy scalars/arrays, tuples and NaN (as null)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(_plain(data), indent=2, sort_keys=True) + "\n")


def save_figure(fig, name: str, *, chapter: str, function: str, parameters: dict, seed=None,
                simulation: dict | None = None, folder=DEFAULT_FOLDER) -> dict:
    """Write ``<name>.png`` (150 dpi), ``<name>.pdf`` and ``<name>.json`` (provenance) into ``folder``.

    ``simulation`` (for simulated points): e.g. ``{"jobs": 50000,
    "replications": 4, "ci": "95 % t interval over replications"}``.
    Returns the provenance record.
    """
    if not name or "/" in name or name.startswith("."):
        raise ParameterError(f"name must be a plain file stem like 'fig2' (got {name!r})")
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / f"{name}.png", dpi=150, bbox_inches="tight")
    fig.savefig(out / f"{name}.pdf", bbox_inches="tight", metadata={"CreationDate": None, "ModDate": None})
    record = {"figure": name, "chapter": chapter, "function": function, "parameters": parameters, "seed": seed,
              "simulation": simulation, "files": [f"{name}.png", f"{name}.pdf"],
              "library": f"barrier-queues {version('barrier-queues')}"}
    _write_json(out / f"{name}.json", record)
    return _plain(record)


def record_claims(chapter: str, claims: list[dict], folder=DEFAULT_FOLDER) -> Path:
    """Write a chapter's checked claims to ``claims-<chapter>.json``.

    Each claim is a dict with ``result`` (e.g. "Fig. 2"), ``claim`` (the
    paper's statement), ``reproduced`` (our number or finding, as text),
    ``agrees`` (bool) and optionally ``note`` (where and why we differ).
    """
    need = {"result", "claim", "reproduced", "agrees"}
    for c in claims:
        if not need <= set(c):
            raise ParameterError(f"claims must each have {sorted(need)} (missing {sorted(need - set(c))})")
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"claims-{chapter}.json"
    _write_json(path, {"chapter": chapter, "claims": [{"note": "", **c} for c in claims]})
    return path


def load_claims(folder=DEFAULT_FOLDER) -> pd.DataFrame:
    """All recorded claims: ``chapter, result, claim, reproduced, agrees, note``."""
    rows = []
    for path in sorted(Path(folder).glob("claims-*.json")):
        data = json.loads(path.read_text())
        rows += [{"chapter": data["chapter"], **c} for c in data["claims"]]
    return pd.DataFrame(rows, columns=["chapter", "result", "claim", "reproduced", "agrees", "note"])


def load_figures(folder=DEFAULT_FOLDER) -> pd.DataFrame:
    """Provenance of every saved figure, one row each."""
    rows = [json.loads(p.read_text()) for p in sorted(Path(folder).glob("*.json"))
            if not p.name.startswith("claims-")]
    return pd.DataFrame(rows)


__all__ = ["DEFAULT_FOLDER", "load_claims", "load_figures", "record_claims", "save_figure"]
