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


#: keys of our workload files (top level); anything else is refused (a misspelt key is never ignored)
FILE_KEYS = ("classes", "servers", "arrival_rate", "arrival", "scheduling", "name", "description")
#: keys of MJQM's input files that this reader honours (top level, and in each [[class]])
MJQM_KEYS = {"identifier", "cores", "policy", "arrival", "service", "class"}
#: keys of MJQM's format that set how MJQM runs, not the model (its loader, ``from_toml`` in
#: libs/simulator/src/mjqm-settings/toml_loader.cpp): run length (``events``, ``repetitions``, or the same two in
#: a ``[simulation]`` table), its random generator, its output columns, and ``[[pivot]]``, MJQM's own sweep.
#: They are MJQM's, not typos: the model is read, and one notice says what comes from our options instead.
MJQM_RUN_KEYS = {"events", "repetitions", "simulation", "generator", "output", "pivot"}
MJQM_SIMULATION_KEYS = {"events", "repetitions"}
#: keys of an MJQM service law read here (MJQM's exponential and deterministic laws)
SERVICE_KEYS = {"distribution", "mean", "rate", "lambda", "value"}
MJQM_CLASS_KEYS = {"cores", "arrival", "service", "name"}
MJQM_ARRIVALS = {"exponential": "poisson", "deterministic": "deterministic"}


def _no_duplicates(pairs):
    """``json.loads`` hook: a key given twice in one object is refused (JSON would keep the last silently)."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise ParameterError(f"key {key!r} is given twice in one table")
        out[key] = value
    return out


def _number(value, where: str, *, positive: bool = True) -> float:
    """A finite number (> 0 when ``positive``) from a file; strings, booleans, inf and nan are refused."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or (
            positive and value <= 0):
        raise ParameterError(f"{where} must be a finite number{' > 0' if positive else ''} (got {value!r})")
    return float(value)


def _table(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise ParameterError(f"{where} must be a table (got {value!r})")
    return value


def _mjqm_service(value, where: str, source: str, default_law: str) -> dict:
    """An MJQM service table, checked: a law read here (exponential or deterministic; ``default_law`` when it
    names none) and only the keys read (:data:`SERVICE_KEYS`)."""
    service = _table(value, f"--workload {source}: {where}")
    name = service.get("distribution", default_law)
    if name not in ("exponential", "deterministic"):
        raise ParameterError(f"--workload {source}: {where}.distribution must be exponential or deterministic "
                             f"here (got {name!r})")
    extra = sorted(set(service) - SERVICE_KEYS)
    if extra:
        raise ParameterError(f"--workload {source}: MJQM {where} key(s) {extra} are not read here (read: "
                             f"{', '.join(sorted(SERVICE_KEYS))})")
    return service


def _mjqm_law(table: dict, where: str, source: str, top_service: dict):
    """One MJQM class's service law (its ``service`` table over the file's top-level one) as a task law."""
    from .distributions import parse_task_distribution

    service = _mjqm_service(table.get("service", {}), f"{where} service", source,
                            top_service.get("distribution", "exponential"))
    name = service.get("distribution", top_service.get("distribution", "exponential"))
    # MJQM's loader: an exponential law takes mean, or rate (alias lambda); a deterministic one value or mean
    given = {k: v for k, v in {**top_service, **service}.items() if k != "distribution"}
    if len(given) != 1:
        raise ParameterError(f"--workload {source}: {where} must give exactly one of service.mean, "
                             f"service.rate (lambda) or service.value (got {sorted(given) or 'none'})")
    (key, value), = given.items()
    mean = _number(value, f"--workload {source}: {where} service.{key}")
    if key in ("rate", "lambda"):
        if name != "exponential":
            raise ParameterError(f"--workload {source}: {where} service.{key} is read for an exponential law "
                                 "only (give service.mean)")
        mean = 1 / mean
    elif key == "value" and name != "deterministic":
        raise ParameterError(f"--workload {source}: {where} service.value is read for a deterministic law "
                             "only (give service.mean)")
    if name == "exponential":
        return parse_task_distribution(f"exponential:rate={1 / mean!r}")
    return parse_task_distribution(f"deterministic:value={mean!r}")


def _mjqm(doc: dict, source: str) -> dict:
    """MJQM's TOML input as our workload description (classes of barrier jobs with a shared time); every key
    it holds is honoured or refused."""
    unknown = sorted(set(doc) - MJQM_KEYS - MJQM_RUN_KEYS)
    if unknown:
        raise ParameterError(f"--workload {source}: MJQM key(s) {unknown} are not read here (read: "
                             f"{', '.join(sorted(MJQM_KEYS))}; MJQM's run settings "
                             f"{', '.join(sorted(MJQM_RUN_KEYS))} are noted)")
    notices = _mjqm_run_notices(doc, source)
    top_service = _mjqm_service(doc.get("service", {}), "service", source, "exponential")
    top_arrival = _table(doc.get("arrival", {}), f"--workload {source}: arrival")
    extra = sorted(set(top_arrival) - {"distribution", "rate"})
    if extra:
        raise ParameterError(f"--workload {source}: MJQM arrival key(s) {extra} are not read here (read: "
                             "distribution, rate)")

    entries = doc["class"]
    if not entries:
        raise ParameterError(f"--workload {source}: MJQM [[class]] must hold at least one class")
    classes = []
    for i, c in enumerate(entries):
        c = _table(c, f"--workload {source}: MJQM [[class]] entry {i}")
        extra = sorted(set(c) - MJQM_CLASS_KEYS)
        if extra:
            raise ParameterError(f"--workload {source}: class {i} key(s) {extra} are not read here (read: "
                                 f"{', '.join(sorted(MJQM_CLASS_KEYS))})")
        arrival = _table(c.get("arrival", {}), f"--workload {source}: class {i} arrival")
        if set(arrival) != {"prob"}:
            raise ParameterError(f"--workload {source}: class {i} must give arrival.prob and nothing else in "
                                 f"arrival (got {sorted(arrival)})")
        classes.append({"share": _number(arrival["prob"], f"--workload {source}: class {i} arrival.prob",
                                         positive=False),
                        "tasks": c.get("cores"), "barrier": True, "shared": True,
                        "task_dist": _mjqm_law(c, f"class {i}", source, top_service),
                        "name": str(c.get("name", f"{c.get('cores')} cores"))})
    out = {"classes": classes}
    if "cores" in doc:
        out["servers"] = doc["cores"]
    if "rate" in top_arrival:
        out["arrival_rate"] = _number(top_arrival["rate"], f"--workload {source}: arrival.rate")
    distribution = top_arrival.get("distribution", "exponential")
    if distribution not in MJQM_ARRIVALS:
        raise ParameterError(f"--workload {source}: arrival.distribution must be one of "
                             f"{', '.join(MJQM_ARRIVALS)} here (got {distribution!r})")
    out["arrival"] = MJQM_ARRIVALS[distribution]
    if "policy" in doc:
        out.update(_mjqm_policy(doc["policy"], source))
    if notices:
        out["notices"] = ["; ".join(notices)]                  # one notice line
    return out


def _mjqm_policy(policy, source: str) -> dict:
    """MJQM's policy (a name, or a table with ``name`` and the policy's parameters) and our discipline for it."""
    if isinstance(policy, dict) and isinstance(policy.get("name"), str):
        # MJQM's table form: policy.name and that policy's own parameters (smash.window, quick swap's
        # threshold, ...); a policy with a counterpart here takes none, so a parameter is refused
        params = sorted(set(policy) - {"name"})
        if params and policy["name"] in MJQM_POLICIES:
            raise ParameterError(f"--workload {source}: MJQM policy {policy['name']!r} takes no parameters "
                                 f"here (got {params})")
        policy = policy["name"]
    if not isinstance(policy, str):
        raise ParameterError(f"--workload {source}: policy must be a string, one of "
                             f"{', '.join(repr(p) for p in MJQM_POLICIES)} (got {policy!r})")
    out = {"mjqm_policy": policy}
    if policy in MJQM_POLICIES:
        out["scheduling"] = MJQM_POLICIES[policy]
    return out


def _mjqm_run_notices(doc: dict, source: str) -> list[str]:
    """What MJQM's run settings in ``doc`` become here, as notices; a malformed ``[simulation]`` table is
    refused (its keys are MJQM's run length and nothing else)."""
    run = {k: doc[k] for k in ("events", "repetitions") if k in doc}
    if "simulation" in doc:
        sim = _table(doc["simulation"], f"--workload {source}: simulation")
        extra = sorted(set(sim) - MJQM_SIMULATION_KEYS)
        if extra:
            raise ParameterError(f"--workload {source}: MJQM simulation key(s) {extra} are not read here (read: "
                                 f"{', '.join(sorted(MJQM_SIMULATION_KEYS))})")
        run.update(sim)
    notes = []
    if run:
        told = ", ".join(f"{k} = {v!r}" for k, v in sorted(run.items()))
        notes.append(f"MJQM's run length ({told}) is not used: the run length comes from --jobs and "
                     "--replications")
    if "generator" in doc:
        notes.append(f"MJQM's generator {doc['generator']!r} is not used: draws come from numpy's PCG64 and --seed")
    if "output" in doc:
        notes.append("MJQM's output columns are not used: this tool reports its own")
    if "pivot" in doc:
        pivots = doc["pivot"] if isinstance(doc["pivot"], list) else [doc["pivot"]]
        keys = sorted({_pivot_key(k, v) for p in pivots if isinstance(p, dict) for k, v in p.items()})
        notes.append(f"MJQM's [[pivot]] (a sweep over {', '.join(keys) or 'nothing'}) is not run: this run uses "
                     "the file's own values and the command line's; give a swept value with its option "
                     "(--arrival-rate, --scheduling) or run 'sweep'")
    return notes


def _pivot_key(key: str, value) -> str:
    """A pivot entry's dotted name (``arrival = {rate = [...]}`` is ``arrival.rate``)."""
    if isinstance(value, dict) and len(value) == 1:
        (inner, inner_value), = value.items()
        return _pivot_key(f"{key}.{inner}", inner_value)
    return key


def read_workload(path) -> dict:
    """A workload file (JSON, TOML, or MJQM's TOML) as ``{"classes": [...], "servers"?, "arrival_rate"?,
    "arrival"?, "scheduling"?}``; the classes are not validated yet (that needs the servers). Keys are
    checked at every level: unknown and duplicated keys are refused, as are files that are not regular
    files (a FIFO would block the reader)."""
    import tomllib

    from .outputs import read_input_file

    p = Path(path)
    source = repr(str(p))
    raw = read_input_file("--workload", p)
    if len(raw) > 50_000_000:
        raise ParameterError(f"--workload must be at most 50 MB (got {len(raw):,} bytes)")
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")           # a byte-order mark is not content
    except UnicodeDecodeError:
        raise ParameterError(f"--workload must be a UTF-8 text file (JSON or TOML; got binary data in "
                             f"{source})") from None
    is_json = p.suffix.lower() == ".json" or text.lstrip().startswith(("{", "["))
    try:
        doc = json.loads(text, object_pairs_hook=_no_duplicates) if is_json else tomllib.loads(text)
    except ParameterError as exc:
        raise ParameterError(f"--workload {source}: {exc}") from None
    except RecursionError:
        raise ParameterError(f"--workload {source} is nested too deeply to be a workload file") from None
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ParameterError(f"--workload {source} is not valid {'JSON' if is_json else 'TOML'}: {exc}") from None
    if not isinstance(doc, dict):
        raise ParameterError(f"--workload {source} must hold a table with classes (got {type(doc).__name__})")
    if "class" in doc:
        if not isinstance(doc["class"], list):
            raise ParameterError(f"--workload {source}: MJQM [[class]] must be a list of tables "
                                 f"(got {doc['class']!r})")
        return _mjqm(doc, source)
    if "classes" not in doc:
        raise ParameterError(f"--workload {source} must have 'classes' (ours) or '[[class]]' tables (MJQM)")
    unknown = sorted(set(doc) - set(FILE_KEYS))
    if unknown:
        raise ParameterError(f"--workload {source} has unknown key(s) {unknown} (valid: {', '.join(FILE_KEYS)})")
    classes = doc["classes"]
    if not isinstance(classes, list) or not classes:
        raise ParameterError(f"--workload {source}: classes must be a non-empty list of class tables "
                             f"(got {json.dumps(classes)[:60]})")
    for i, c in enumerate(classes):
        for j in range(i):
            if c == classes[j]:
                raise ParameterError(f"--workload {source}: classes {j} and {i} are identical; give one class "
                                     "with their summed share (or names that tell them apart)")
    out = {"classes": classes}
    if "arrival_rate" in doc:
        out["arrival_rate"] = _number(doc["arrival_rate"], f"--workload {source}: arrival_rate")
    for key in ("servers", "scheduling", "arrival"):
        if key in doc:
            out[key] = doc[key]
    return out


__all__ = ["FILE_KEYS", "JobClass", "MJQM_POLICIES", "parse_workload", "read_workload"]
