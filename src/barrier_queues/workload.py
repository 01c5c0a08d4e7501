"""Workloads as job classes (Appendix B, section 4, "Job classes").

A workload is a list of classes ``c``, each with its share ``p_c`` of the
arrivals, ``k_c`` tasks, barrier or not, a task law ``F_c`` and, optionally,
**one shared time**: one draw of ``F_c`` for the whole job, which holds its
``k_c`` workers for that time (MJQM's multiserver job; with a shared time 1
and 2 barriers give the same system). An arriving job is of class ``c`` with
probability ``p_c``, independently. Shares that sum to 1 within 1e-6 are
normalised (a published 29-class mix rounded to six digits sums to
0.9999996584), others are refused. ``BarrierSystem(tasks_pmf=...)`` and
``barrier_fraction`` are the special cases of one law with barrier jobs, and
of two classes with one k.

Files (``--workload FILE``, :func:`read_workload`): JSON ::

    {"classes": [{"share": 0.9, "tasks": 1, "barrier": false, "task_dist": "exponential:rate=1"},
                 {"share": 0.1, "tasks": 32, "shared": true, "task_dist": "exponential:rate=1"}],
     "servers": 32, "arrival_rate": 2.4}

or TOML in the same shape, or MJQM's TOML input files as they are (``cores``,
``arrival.rate``, ``policy`` and ``[[class]]`` tables with ``cores``,
``arrival.prob``, ``service.distribution`` and ``service.mean``; defaults at
the top level), read as classes of barrier jobs with a shared time.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from ._validation import ParameterError, check_int, check_probability

#: shares must sum to 1 within this tolerance (then they are normalised)
SHARE_TOLERANCE = 1e-6
#: MJQM's policy names and the disciplines they are (others have no counterpart here)
MJQM_POLICIES = {"fifo": "fcfs", "first fit": "first-fit", "back filling": "backfill",
                 "server filling": "server-filling"}
#: the most classes a workload may have
MAX_CLASSES = 10_000


@dataclass(frozen=True)
class JobClass:
    """One class of jobs: ``share`` of the arrivals, ``tasks`` k, ``barrier``, its task law ``task_dist``
    (None: the system's), ``shared`` (one draw held by all k tasks) and a ``name``."""

    share: float
    tasks: int
    barrier: bool = True
    task_dist: object = None
    shared: bool = False
    name: str = ""

    def describe(self) -> dict:
        return {"name": self.name, "share": self.share, "tasks": self.tasks, "barrier": self.barrier,
                "task_dist": None if self.task_dist is None else self.task_dist.describe(), "shared": self.shared}


def parse_workload(classes, servers: int) -> tuple[JobClass, ...]:
    """Validated classes (a list of dicts or JobClass), shares normalised; one clear error per problem."""
    from .distributions import as_task_distribution, parse_task_distribution

    if isinstance(classes, dict) and "classes" in classes:
        classes = classes["classes"]
    if not isinstance(classes, list | tuple) or not classes:
        raise ParameterError("workload must be a non-empty list of job classes (got "
                             f"{type(classes).__name__ if classes else 'nothing'})")
    if len(classes) > MAX_CLASSES:
        raise ParameterError(f"workload must have at most {MAX_CLASSES:,} classes (got {len(classes):,})")
    out = []
    for i, c in enumerate(classes):
        if isinstance(c, JobClass):
            c = {"share": c.share, "tasks": c.tasks, "barrier": c.barrier, "task_dist": c.task_dist,
                 "shared": c.shared, "name": c.name}
        if not isinstance(c, dict):
            raise ParameterError(f"workload class {i} must be a table of share, tasks, barrier, task_dist, shared "
                                 f"(got {type(c).__name__})")
        unknown = sorted(set(c) - {"share", "tasks", "barrier", "task_dist", "shared", "name"})
        if unknown:
            raise ParameterError(f"workload class {i} has unknown keys {unknown} (valid: share, tasks, barrier, "
                                 "task_dist, shared, name)")
        if "share" not in c or "tasks" not in c:
            raise ParameterError(f"workload class {i} must give share and tasks (got {sorted(c)})")
        share = check_probability(f"workload class {i} share", c["share"])
        k = check_int(f"workload class {i} tasks", c["tasks"], low=1, high=servers, high_name=f"servers = {servers}")
        law = c.get("task_dist")
        if isinstance(law, str):
            law = parse_task_distribution(law)
        elif law is not None:
            law = as_task_distribution(law)
        for flag in ("barrier", "shared"):
            if flag in c and not isinstance(c[flag], bool):
                raise ParameterError(f"workload class {i} {flag} must be true or false (got {c[flag]!r})")
        out.append(JobClass(share, k, c.get("barrier", True), law, c.get("shared", False),
                            str(c.get("name", f"class {i}"))))
    total = math.fsum(c.share for c in out)
    if not abs(total - 1.0) <= SHARE_TOLERANCE:
        raise ParameterError(f"workload shares must sum to 1 within {SHARE_TOLERANCE:g} (got {total!r})")
    if all(c.share == 0 for c in out):
        raise ParameterError("workload must have a class with a share > 0")
    return tuple(JobClass(c.share / total, c.tasks, c.barrier, c.task_dist, c.shared, c.name) for c in out)


def _mjqm(doc: dict) -> dict:
    """MJQM's TOML input as our workload description (classes of barrier jobs with a shared time)."""
    from .distributions import parse_task_distribution

    def law(table: dict, where: str):
        service = table.get("service", {})
        name = service.get("distribution", doc.get("service", {}).get("distribution", "exponential"))
        if "mean" not in service:
            raise ParameterError(f"MJQM {where} must give service.mean")
        mean = float(service["mean"])
        if name == "exponential":
            return parse_task_distribution(f"exponential:rate={1 / mean!r}")
        if name == "deterministic":
            return parse_task_distribution(f"deterministic:value={mean!r}")
        raise ParameterError(f"MJQM {where} service.distribution must be exponential or deterministic here "
                             f"(got {name!r})")

    classes = [{"share": c.get("arrival", {}).get("prob"), "tasks": c.get("cores"), "barrier": True,
                "shared": True, "task_dist": law(c, f"class {i}"), "name": f"{c.get('cores')} cores"}
               for i, c in enumerate(doc["class"])]
    out = {"classes": classes}
    if "cores" in doc:
        out["servers"] = doc["cores"]
    rate = doc.get("arrival", {}).get("rate")
    if isinstance(rate, int | float):
        out["arrival_rate"] = float(rate)
    policy = doc.get("policy")
    if isinstance(policy, str):
        out["mjqm_policy"] = policy
        if policy in MJQM_POLICIES:
            out["scheduling"] = MJQM_POLICIES[policy]
    return out


def read_workload(path) -> dict:
    """A workload file (JSON, TOML, or MJQM's TOML) as ``{"classes": [...], "servers"?, "arrival_rate"?,
    "scheduling"?}``; the classes are not validated yet (that needs the servers)."""
    import tomllib

    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ParameterError(f"--workload must be a readable file (got {str(p)!r}: {exc.strerror})") from None
    if len(raw) > 50_000_000:
        raise ParameterError(f"--workload must be at most 50 MB (got {len(raw):,} bytes)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ParameterError(f"--workload must be a UTF-8 text file (JSON or TOML; got binary data in "
                             f"{str(p)!r})") from None
    try:
        doc = json.loads(text) if p.suffix.lower() == ".json" or text.lstrip().startswith("{") else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ParameterError(f"--workload {str(p)!r} is not valid JSON or TOML: {exc}") from None
    if not isinstance(doc, dict):
        raise ParameterError(f"--workload {str(p)!r} must hold a table with classes (got {type(doc).__name__})")
    if "class" in doc and isinstance(doc["class"], list):
        return _mjqm(doc)
    if "classes" not in doc:
        raise ParameterError(f"--workload {str(p)!r} must have 'classes' (ours) or '[[class]]' tables (MJQM)")
    out = {"classes": doc["classes"]}
    for key in ("servers", "arrival_rate", "scheduling"):
        if key in doc:
            out[key] = doc[key]
    return out


__all__ = ["JobClass", "MJQM_POLICIES", "parse_workload", "read_workload"]
