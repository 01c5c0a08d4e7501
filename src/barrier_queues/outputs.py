"""Where results go: output paths checked before work starts, and strict JSON.

* :func:`check_new_file` / :func:`check_new_folder`: a command never writes
  over an existing file or folder unless asked (``force``), never over one of
  its own inputs (even with ``force``), and checks its output path before a
  long computation, so a bad path never costs a finished run.
* :func:`strict_json`: JSON without NaN or Infinity (RFC 8259); every value
  that is not a finite number becomes ``null`` and is listed, with the
  reason, under ``"null_values"``.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from ._validation import ParameterError
from .statistics import MIN_UTILIZATION_JOBS


def _same(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def read_input_file(name: str, path) -> bytes:
    """The bytes of an input file named by option ``name``, refused by what it is when it is not a regular file
    (a FIFO would block the reader; a folder cannot be read) or cannot be read."""
    import stat

    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except OSError as exc:
        raise ParameterError(f"{name} must be a readable file (got {str(p)!r}: {exc.strerror})") from None
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "not a regular file"
        raise ParameterError(f"{name} must be a regular file (got {str(p)!r}: {kind})")
    try:
        return p.read_bytes()
    except OSError as exc:
        raise ParameterError(f"{name} must be a readable file (got {str(p)!r}: {exc.strerror})") from None


def check_new_file(name: str, path, force: bool = False, inputs=()) -> Path:
    """``path`` as a Path if a new file may be written there; raises :class:`ParameterError` otherwise.

    Refused: a path that is (or lies inside) one of ``inputs``, a folder, a
    file that exists (unless ``force``), a parent folder that does not exist.
    """
    p = Path(path)
    for src in inputs:
        src = Path(src)
        if _same(p, src) or (src.is_dir() and p.resolve().is_relative_to(src.resolve())) \
                or p.resolve() == src.resolve():
            raise ParameterError(f"{name} must not be one of the command's inputs ({str(p)!r} is {str(src)!r}); "
                                 "choose another file")
    if p.is_dir():
        raise ParameterError(f"{name} must be a file path, not a folder (got {str(p)!r})")
    if not p.parent.is_dir():
        raise ParameterError(f"{name} must be in an existing folder ({str(p.parent)!r} does not exist)")
    if p.exists() and not force:
        raise ParameterError(f"{name} must be a new file ({str(p)!r} exists; pass --force to overwrite it)")
    if not os.access(p.parent, os.W_OK):
        raise ParameterError(f"{name} must be in a writable folder ({str(p.parent)!r} is not writable)")
    return p


def check_folder_path(name: str, path) -> Path:
    """``path`` as a Path if it can name a folder: not empty, and no part of it above it an existing file."""
    if path is None or str(path).strip() == "":
        raise ParameterError(f"{name} must be a folder path (got {str(path)!r})")
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise ParameterError(f"{name} must be a folder (got {str(folder)!r}, an existing file that is not a "
                             "folder)")
    for parent in folder.parents:
        if parent.exists() and not parent.is_dir():
            raise ParameterError(f"{name} must be a folder path (got {str(folder)!r}: {str(parent)!r} is a file, "
                                 "not a folder)")
    return folder


def check_new_folder(name: str, path, what: str = "data") -> Path:
    """``path`` as a Path if it is a new or empty folder (measured data is never overwritten, even with force)."""
    folder = check_folder_path(name, path)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        held = "a file" if not folder.is_dir() else ("a run" if (folder / "metadata.json").exists() else "other files")
        raise ParameterError(f"{name} must be a new or empty folder, so that no {what} is overwritten "
                             f"({str(folder)!r} already holds {held}; choose another folder)")
    parent = folder.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not os.access(parent, os.W_OK):
        raise ParameterError(f"{name} must be in a writable place ({str(parent)!r} is not writable)")
    return folder


_FEW_JOBS = f"fewer than {MIN_UTILIZATION_JOBS} measured jobs: too few for an estimate of a long-run fraction"

#: why a value is null in strict JSON, by key
NULL_REASONS = {
    "lambda_max": "no exact stability limit is known for this system (the drift test decides)",
    "method": "no exact stability limit is known for this system",
    "offered_utilization": "the mean work per job of this system has no known closed form",
    "kendall_tau": "too few jobs for the drift test",
    "pvalue": "too few values for the test",
    "lag1": "too few batches for the independence test",
    "utilization": _FEW_JOBS,
    "useful_utilization": _FEW_JOBS,
    "measured_utilization": _FEW_JOBS,
    "held_share": _FEW_JOBS,
    "ks_statistic": "fewer than 2 blocked jobs or an unknown arrival rate",
    "ks_pvalue": "fewer than 2 blocked jobs or an unknown arrival rate",
}


def strict_json(obj, **dumps) -> str:
    """``json.dumps`` with every non-finite number as null, listed under ``null_values`` with its reason.

    Interval ends are null where an interval needs more data (e.g. a
    quantile interval over one replication).
    """
    nulls: dict[str, str] = {}

    def walk(value, path: str, key: str):
        if isinstance(value, dict):
            return {str(k): walk(v, f"{path}.{k}" if path else str(k), str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [walk(v, f"{path}[{i}]", key) for i, v in enumerate(value)]
        if hasattr(value, "item") and getattr(value, "shape", None) == ():
            value = value.item()
        if isinstance(value, float) and not math.isfinite(value):
            nulls[path] = NULL_REASONS.get(key, "an interval or statistic that needs more data (e.g. 2 or more "
                                                "replications; for a quantile, 50 or more jobs beyond it in each)"
                                           if "ci" in path else
                                           f"not a finite number ({value!r})")
            return None
        if isinstance(value, str | int | float | bool) or value is None:
            return value
        if hasattr(value, "tolist"):
            return walk(value.tolist(), path, key)
        return str(value)

    clean = walk(obj, "", "")
    if nulls and isinstance(clean, dict):
        clean["null_values"] = nulls
    return json.dumps(clean, allow_nan=False, **dumps)


__all__ = ["NULL_REASONS", "check_new_file", "check_new_folder", "strict_json"]
