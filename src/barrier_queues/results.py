"""Figures, tables and claims as files, with their provenance (the book's ``results/`` folder).

Every figure of the book is also written as PNG and PDF, and the main tables
as CSV, next to a JSON file saying what produced them: the chapter, the
library function, the parameters, the seed and, for simulation, the number of
jobs, replications and how the confidence intervals were formed. The same
record, a :class:`Provenance`, is shown under the figure or table in the book
(it renders as one line of Markdown); tables that are not written as files
get one from :func:`source`. Each chapter also writes the paper's claims it
checks with the numbers it reproduced; the "claims" page collects them.

Files are byte-for-byte reproducible: the PDF carries no creation date and
the JSON is written with sorted keys, so re-executing a notebook with the same
parameters leaves ``results/`` unchanged.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pandas as pd

from ._validation import ParameterError

#: where the book's notebooks write, relative to ``book/`` (their working directory)
DEFAULT_FOLDER = "../results"
#: where a re-execution with the default parameters writes instead of ``results/`` (``make test`` sets it)
RESULTS_ENV = "BARRIER_QUEUES_RESULTS_DIR"


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


def _library() -> str:
    return f"barrier-queues {version('barrier-queues')}"


def _value_text(value) -> str:
    """Compact text of a JSON-ready value: thousands separators, floats to 6 significant digits."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000:
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_value_text(v) for v in value) + "]"
    return str(value)


@dataclass(frozen=True)
class Provenance:
    """What produced a figure or table: library function, parameters, seed, simulation size and intervals.

    Shown under the figure or table in the book (``_repr_markdown_``: one
    line, parameters as code so that no value is read as markup) and written
    as ``<name>.json`` beside the figure's or table's files.
    ``simulation``, for simulated numbers: e.g. ``{"jobs": 50000,
    "replications": 4, "ci": "95 % t interval over replications"}``.
    """

    function: str
    parameters: dict
    seed: object = None
    simulation: dict | None = None
    name: str | None = None
    kind: str | None = None          # "figure" or "table" when written as files
    chapter: str | None = None
    files: tuple = ()
    chosen: str | None = None        # parameters we chose because the seed text lost the paper's

    def to_dict(self) -> dict:
        """The JSON record (numpy values, tuples and NaN made JSON-ready)."""
        return _plain({"name": self.name, "kind": self.kind, "chapter": self.chapter, "function": self.function,
                       "parameters": self.parameters, "seed": self.seed, "simulation": self.simulation,
                       "files": list(self.files), "chosen": self.chosen, "library": _library()})

    def _parts(self, code) -> list[str]:
        parts = [f"produced by {code(self.function)}"]
        params = _plain(self.parameters)
        if params:
            parts.append("parameters " + ", ".join(code(f"{k}={_value_text(v)}") for k, v in params.items()))
        if self.seed is not None:
            parts.append(f"seed {code(json.dumps(_plain(self.seed)))}")
        if self.simulation:
            sim = _plain(self.simulation)
            parts.append("simulation " + ", ".join(f"{k} {_value_text(v)}" for k, v in sim.items()))
        else:
            parts.append("no simulation")
        if self.chosen:
            parts.append(f"parameters we chose (the seed text lost the paper's): {self.chosen}")
        if self.files:
            parts.append("files " + ", ".join(code(f) for f in self.files) + f" (+ {code(self.name + '.json')})")
        return parts

    def text(self) -> str:
        """The provenance as one line of plain text."""
        label = f"{self.kind.capitalize()} {self.name}: " if self.kind and self.name else "Source: "
        return label + "; ".join(self._parts(str)) + "."

    def _repr_markdown_(self) -> str:
        """One line; a long one (over :data:`FOLD_PROVENANCE` characters: many runs or parameters) keeps its
        first part on the line and folds the parameters, seed and simulation under it."""
        import html

        label = f"**{self.kind.capitalize()} `{self.name}`**: " if self.kind and self.name else "**Source**: "
        parts = self._parts(lambda t: f"`{str(t).replace('`', chr(39))}`")
        line = label + "; ".join(parts) + "."
        if len(line) <= FOLD_PROVENANCE or len(parts) < 2:
            return line
        rest = self._parts(lambda t: f"<code>{html.escape(str(t))}</code>")[1:]
        return (label + parts[0] + ".\n\n<details><summary>its parameters</summary>\n" + "; ".join(rest)
                + ".\n</details>")

    def __repr__(self) -> str:
        return self.text()


#: a provenance line longer than this (characters of Markdown) folds its parameters (a long page stays readable)
FOLD_PROVENANCE = 250
#: a "What we found" list longer than this folds its full lines under one line of verdicts
FOLD_FINDINGS = 12


def _book_defaults(chapter: str) -> dict | None:
    """The default parameters of ``book/<chapter>.md`` (its cell tagged ``parameters``), or None if not found."""
    import re

    candidates = [Path(f"{chapter}.md"), Path(__file__).resolve().parents[2] / "book" / f"{chapter}.md"]
    for path in candidates:
        if path.is_file():
            text = path.read_text()
            m = re.search(r"```\{code-cell\}[^\n]*\n:tags: \[parameters\]\n(.*?)```", text, re.S)
            if m:
                namespace: dict = {}
                exec(compile(m.group(1), str(path), "exec"), {}, namespace)   # the chapter's own literals
                return namespace
    return None


#: names IPython puts into a notebook's namespace besides the chapter's own
_IPYTHON_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit", "open"})


def check_parameters(chapter: str, namespace: dict) -> None:
    """Refuse a papermill parameter the chapter does not have (``-p servres 8`` would otherwise be injected as a
    new variable and ignored, and the run would silently use the default ``servers``).

    Called first in the cell after the parameters, with ``globals()``: at that point the namespace holds the
    chapter's parameters, what papermill injected, IPython's own names and imports; a plain value (number,
    text, list, dict, None) under a name the chapter's parameter cell does not define was injected by mistake.
    """
    defaults = _book_defaults(chapter)
    if defaults is None:
        return
    plain = (bool, int, float, str, list, dict, tuple, type(None))
    unknown = sorted(name for name, value in namespace.items()
                     if not name.startswith("_") and name not in defaults and name not in _IPYTHON_NAMES
                     and not name.isupper() and isinstance(value, plain))     # CONSTANTS are imported, not -p
    if unknown:
        raise ParameterError(f"unknown parameter {', '.join(unknown)} for the {chapter} chapter: its parameters "
                             f"are {', '.join(defaults)}")


def parameter_list(value, name: str) -> list:
    """A notebook parameter that must be a list: as given, or parsed from the text papermill's ``-p`` passes
    (``-p live_tasks "[1, 2, 3]"`` arrives as the string ``"[1, 2, 3]"``; ``-y`` would give a list)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ParameterError(f"{name} must be a list such as [1, 2, 3] (got {value!r})") from None
    if not isinstance(value, list | tuple):
        raise ParameterError(f"{name} must be a list such as [1, 2, 3] (got {value!r})")
    return list(value)


def output_folder(chapter: str, results_dir=None, **parameters) -> str:
    """Where a chapter writes its figures, tables and claims.

    ``results_dir`` given: there. Otherwise the committed ``../results``
    when every parameter has the chapter's default value (``book/<chapter>.md``),
    and ``../_build/results/<chapter>-<hash of the parameters>`` when any
    differs, so that a papermill rerun with new parameters never writes into
    the committed results.
    """
    defaults = _book_defaults(chapter)
    given = {k: v for k, v in parameters.items() if k != "results_dir"}
    differ = [k for k, v in given.items()
              if defaults is None or k not in defaults or defaults[k] != v or type(defaults[k]) is not type(v)]
    if results_dir is not None:
        if differ and Path(results_dir).resolve() == Path(DEFAULT_FOLDER).resolve():
            raise ParameterError(f"results_dir must not be the committed {DEFAULT_FOLDER} when parameters differ "
                                 f"from the chapter's defaults (got {', '.join(differ)}): leave results_dir unset "
                                 "(the results then go under ../_build/results/) or choose another folder")
        return str(results_dir)
    if not differ:
        # the test suite re-executes the book into a folder of its own and compares it with results/
        return os.environ.get(RESULTS_ENV) or DEFAULT_FOLDER
    import hashlib

    digest = hashlib.sha1(json.dumps(_plain(given), sort_keys=True).encode()).hexdigest()[:10]
    folder = f"../_build/results/{chapter}-{digest}"
    print(f"parameters differ from the chapter's defaults: results go to {folder}, not to the committed results/")
    return folder


def _check_name(name: str) -> None:
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise ParameterError(f"name must be a plain file stem like 'fig2' (got {name!r})")


def source(function: str, parameters: dict, seed=None, simulation: dict | None = None,
           chosen: str | None = None) -> Provenance:
    """The provenance of a table (or any output) that is not written as a file; shown under it."""
    return Provenance(function, parameters, seed, simulation, chosen=chosen)


def _check_kind(folder: Path, name: str, kind: str) -> None:
    """A figure and a table share the provenance file ``<name>.json``: refuse to let one replace the other's."""
    existing = folder / f"{name}.json"
    if existing.is_file():
        try:
            other = json.loads(existing.read_text()).get("kind")
        except (OSError, ValueError, AttributeError):
            other = None
        if other in ("figure", "table") and other != kind:
            raise ParameterError(f"name {name!r}: {existing} already holds a {other}'s provenance; "
                                 f"give the {kind} a different name")


#: every figure or table written by this process: its provenance file -> the function that produced it
_WRITTEN: dict[Path, str] = {}


def _claim_name(folder: Path, name: str, function: str) -> None:
    """Refuse a name that another output of this run already wrote (a later table would replace an earlier
    one's files silently); the same output written again, e.g. a cell re-run, is allowed."""
    path = (folder / f"{name}.json").resolve()
    earlier = _WRITTEN.get(path)
    if earlier is not None and earlier != function:
        raise ParameterError(f"name {name!r}: this run already wrote {path.name} for {earlier!r}; "
                             f"give the output of {function!r} a different name")
    _WRITTEN[path] = function


def save_figure(fig, name: str, *, chapter: str, function: str, parameters: dict, seed=None,
                simulation: dict | None = None, folder=DEFAULT_FOLDER, chosen: str | None = None) -> Provenance:
    """Write ``<name>.png`` (150 dpi), ``<name>.pdf`` and ``<name>.json`` (provenance) into ``folder``; a figure
    with overlapping tick labels or text too small at the book's column width is refused
    (:func:`barrier_queues.figures.figure_problems`).

    Returns the :class:`Provenance`, which the book shows under the figure.
    """
    _check_name(name)
    from .figures import figure_problems

    problems = figure_problems(fig)
    if problems:
        raise ParameterError(f"figure {name!r} would trip a reader: {'; '.join(problems)}")
    out = Path(folder)
    _check_kind(out, name, "figure")
    _claim_name(out, name, function)
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / f"{name}.png", dpi=150, bbox_inches="tight")
    fig.savefig(out / f"{name}.pdf", bbox_inches="tight", metadata={"CreationDate": None, "ModDate": None})
    record = Provenance(function, parameters, seed, simulation, name, "figure", chapter,
                        (f"{name}.png", f"{name}.pdf"), chosen)
    _write_json(out / f"{name}.json", record.to_dict())
    return record


def save_table(table: pd.DataFrame, name: str, *, chapter: str, function: str, parameters: dict, seed=None,
               simulation: dict | None = None, folder=DEFAULT_FOLDER, chosen: str | None = None) -> Provenance:
    """Write ``<name>.csv`` (full float precision, no index) and ``<name>.json`` (provenance).

    Columns holding lists or tuples (e.g. confidence intervals) are written as
    their text. Returns the :class:`Provenance`, which the book shows under
    the table.
    """
    _check_name(name)
    if not isinstance(table, pd.DataFrame):
        raise ParameterError(f"table must be a pandas DataFrame (got {type(table).__name__})")
    out = Path(folder)
    _check_kind(out, name, "table")
    _claim_name(out, name, function)
    out.mkdir(parents=True, exist_ok=True)
    flat = table.copy()
    for c in flat.columns:
        if flat[c].map(lambda v: isinstance(v, list | tuple | dict)).any():
            flat[c] = flat[c].map(lambda v: json.dumps(_plain(v)))
    flat.to_csv(out / f"{name}.csv", index=False, float_format="%.10g", lineterminator="\n")
    record = Provenance(function, parameters, seed, simulation, name, "table", chapter, (f"{name}.csv",), chosen)
    _write_json(out / f"{name}.json", record.to_dict())
    return record


#: verdicts a claim can get
VERDICTS = ("agrees", "differs", "partly", "identity", "not measured")


def record_claims(chapter: str, claims: list[dict], folder=DEFAULT_FOLDER, chosen: list[dict] | None = None
                  ) -> Provenance:
    """Write a chapter's checked claims (and the parameters it chose) to ``claims-<chapter>.json``.

    Each claim is a dict with ``result`` (e.g. "Fig. 2"), ``claim`` (the
    paper's statement, in its words), ``test`` (what was checked, precisely),
    ``reproduced`` (our number or finding) and ``verdict``: ``"agrees"`` (the
    paper's own statement holds), ``"differs"``, ``"partly"`` (holds for some
    of the settings tested, the note says which), ``"identity"`` (true by
    construction: reported, not a reproduction) or ``"not measured"``;
    optionally a ``note`` and a ``tolerance`` (where a verdict reads a number against a bound we chose: the
    bound and where it comes from). ``chosen``: ``{"result", "parameters", "why"}``
    for each result whose parameters the seed text lost.
    Returns the :class:`Provenance` of the claims table (shown under it).
    """
    need = {"result", "claim", "test", "reproduced", "verdict"}
    for c in claims:
        if not need <= set(c):
            raise ParameterError(f"claims must each have {sorted(need)} (missing {sorted(need - set(c))})")
        if c["verdict"] not in VERDICTS:
            raise ParameterError(f"verdict must be one of {', '.join(VERDICTS)} (got {c['verdict']!r})")
        if "tolerance" in c and not (isinstance(c["tolerance"], str) and c["tolerance"].strip()):
            raise ParameterError(f"a claim's tolerance must say where it comes from (got {c['tolerance']!r})")
    for c in chosen or []:
        if not {"result", "parameters", "why"} <= set(c):
            raise ParameterError("chosen parameters must each have result, parameters and why")
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"claims-{chapter}.json"
    _write_json(path, {"chapter": chapter, "claims": [{"note": "", **c} for c in claims], "chosen": chosen or []})
    return source("results.record_claims: the checks of this chapter's cells above",
                  {"chapter": chapter, "claims": len(claims),
                   **{v: sum(c["verdict"] == v for c in claims) for v in VERDICTS if any(c["verdict"] == v
                                                                                       for c in claims)},
                   "file": path.name})


def show_table(table: pd.DataFrame, name: str, folder=DEFAULT_FOLDER, rows: int = 10, columns=None,
               digits: int = 3, whole: pd.DataFrame | None = None, fold: str | None = None) -> None:
    """Show a long table as a reader meets it: its first ``rows`` rows (and ``columns``), rounded to ``digits``,
    then one line saying how much is left out and where the whole table is (``name``.csv, written by
    :func:`save_table`). With the chapter's default parameters that is a download link to the committed
    ``results/`` file; a rerun with other parameters names the folder it wrote instead.

    ``whole``: the table written as ``name``.csv when ``table`` is a summary of it (a pivot, a selection);
    the line then gives the whole table's size. ``fold``: a one-line title under which the table is folded
    (shown on a click), for a table the text summarises in sentences: a long page stays readable."""
    from IPython.display import HTML, Markdown, display

    shown = table if columns is None else table[list(columns)]
    cut = len(shown) > rows + 2
    part = shown.head(rows).round(digits) if cut else shown.round(digits)
    if fold is None:
        display(part)
    else:
        import html

        display(HTML(f"<details><summary>{html.escape(fold)} ({len(part)} rows, {len(part.columns)} columns; "
                     f"click to show)</summary>\n{part.to_html(index=False, border=0, na_rep='')}\n</details>"))
    if not cut and columns is None and whole is None:
        return
    parts = [f"{rows} of {len(table)} rows" if cut else f"all {len(table)} rows"]
    if columns is not None:
        parts.append(f"{len(shown.columns)} of {len(table.columns)} columns")
    default = Path(folder).resolve() == Path(os.environ.get(RESULTS_ENV) or DEFAULT_FOLDER).resolve()
    where = (f"{{download}}`results/{name}.csv <../results/{name}.csv>`" if default
             else f"`{Path(folder) / (name + '.csv')}`")
    if whole is None:
        display(Markdown(f"*Shown: {', '.join(parts)}; the whole table: {where}.*"))
    else:
        display(Markdown(f"*Shown: {', '.join(parts)} of a summary; the whole table "
                         f"({len(whole)} rows, {len(whole.columns)} columns): {where}.*"))


def findings(claims: list[dict]) -> str:
    """A chapter's checked statements as the Markdown of its "What we found" section: the verdicts counted, then
    one line per statement with the number reproduced and its verdict (so the summary is computed from the same
    rows as the claims page, never written by hand). Over :data:`FOLD_FINDINGS` statements, one line names
    each with its verdict and the full lines are folded under it."""
    counts = {v: sum(c["verdict"] == v for c in claims) for v in VERDICTS}
    word = {"agrees": "agree", "differs": "differ", "identity": "identities"}
    head = ", ".join(f"{n} {word.get(v, v) if n > 1 else v}" for v, n in counts.items() if n)
    lines = [f"**{len(claims)} statement{'s' if len(claims) != 1 else ''} checked** ({head}):", ""]
    items = [f"* {c['result']}: {c['claim'].strip()} — we find {c['reproduced'].strip()} (*{c['verdict']}*)."
             for c in claims]
    if len(claims) <= FOLD_FINDINGS:
        return "\n".join(lines + items)
    summary = "; ".join(f"{c['result']} (*{c['verdict']}*)" for c in claims)
    return "\n".join(lines + [summary + ".", "", "<details><summary>each statement with its number</summary>", "",
                              *items, "", "</details>"])


def load_claims(folder=DEFAULT_FOLDER) -> pd.DataFrame:
    """All recorded claims: ``chapter, result, claim, test, reproduced, verdict, note, tolerance`` (the tolerance
    an empty text where a row has none)."""
    rows = []
    for path in sorted(Path(folder).glob("claims-*.json")):
        data = json.loads(path.read_text())
        rows += [{"chapter": data["chapter"], "tolerance": "", **c} for c in data["claims"]]
    return pd.DataFrame(rows, columns=["chapter", "result", "claim", "test", "reproduced", "verdict", "note",
                                       "tolerance"])


def load_chosen(folder=DEFAULT_FOLDER) -> pd.DataFrame:
    """Every result whose parameters we chose: ``chapter, result, parameters, why``."""
    rows = []
    for path in sorted(Path(folder).glob("claims-*.json")):
        data = json.loads(path.read_text())
        rows += [{"chapter": data["chapter"], **c} for c in data.get("chosen", [])]
    return pd.DataFrame(rows, columns=["chapter", "result", "parameters", "why"])


def load_results(folder=DEFAULT_FOLDER) -> pd.DataFrame:
    """Provenance of every saved figure and table, one row each (``name, kind, chapter, function, ...``)."""
    rows = [json.loads(p.read_text()) for p in sorted(Path(folder).glob("*.json"))
            if not p.name.startswith("claims-")]
    return pd.DataFrame(rows, columns=["name", "kind", "chapter", "function", "parameters", "seed", "simulation",
                                       "files", "chosen", "library"])


__all__ = ["DEFAULT_FOLDER", "VERDICTS", "Provenance", "check_parameters", "findings", "load_chosen", "load_claims",
           "load_results", "output_folder", "parameter_list", "record_claims", "save_figure", "save_table",
           "show_table", "source"]
