"""Fuzzing the readers of user files: workload files (ours and MJQM's) and traces (SWF, CSV). Random bytes, random
nesting, random keys and valid files with one field perturbed each end in a result or one ParameterError, never
another exception (a traceback) or a hang."""

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import barrier_queues as bq
from barrier_queues.traces import read_trace
from barrier_queues.workload import read_workload

# derandomize: the same examples on every run (CI is reproducible; a new seed is a deliberate change here)
SETTINGS = settings(max_examples=150, deadline=2000, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

GOOD_WORKLOAD = {"classes": [{"share": 0.7, "tasks": 2, "barrier": True, "task_dist": "exponential:rate=1"},
                             {"share": 0.3, "tasks": 4, "barrier": False}], "servers": 8, "arrival_rate": 0.5}
GOOD_MJQM = ('cores = 8\npolicy = "fifo"\narrival.rate = 0.5\n[[class]]\ncores = 1\narrival.prob = 0.9\n'
             'service.mean = 1\n[[class]]\ncores = 8\narrival.prob = 0.1\nservice.mean = 2\n')
GOOD_SWF = ("; MaxProcs: 8\n1 0 0 10 2 -1 -1 2 20 -1 1 1 1 -1 -1 -1 -1 -1\n"
            "2 5 0 30 8 -1 -1 8 40 -1 1 1 1 -1 -1 -1 -1 -1\n3 6 0 3 1 -1 -1 1 9 -1 1 1 1 -1 -1 -1 -1 -1\n")
GOOD_CSV = "job_id,submit,tasks,runtime,estimate\n1,0,2,10,20\n2,5,8,30,40\n3,6,1,3,9\n"


def _write(data: bytes, suffix: str) -> Path:
    folder = Path(tempfile.mkdtemp())
    path = folder / f"input{suffix}"
    path.write_bytes(data)
    return path


def _workload_outcome(path: Path) -> None:
    """Read the file and build a system of it: a result or one ParameterError."""
    try:
        doc = read_workload(path)
        bq.BarrierSystem(servers=int(doc.get("servers", 8)) if isinstance(doc.get("servers", 8), int) else 8,
                         workload=doc["classes"])
    except bq.ParameterError:
        pass


def _trace_outcome(path: Path) -> None:
    try:
        trace = read_trace(path)
        from barrier_queues.replay import replay

        replay(trace, servers=trace.servers or 8, scheduling="backfill")
    except bq.ParameterError:
        pass


@SETTINGS
@given(st.binary(max_size=400), st.sampled_from([".json", ".toml", ".txt"]))
def test_random_bytes_as_a_workload_file(data, suffix):
    _workload_outcome(_write(data, suffix))


@SETTINGS
@given(st.recursive(st.none() | st.booleans() | st.floats(allow_nan=True) | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                max_size=4), max_leaves=20))
def test_random_json_nesting_as_a_workload_file(value):
    _workload_outcome(_write(json.dumps(value, allow_nan=True).encode(), ".json"))


def _perturbations(doc):
    """Every path to a leaf of a JSON document."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield [k]
            for rest in _perturbations(v):
                yield [k, *rest]
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield [i]
            for rest in _perturbations(v):
                yield [i, *rest]


PATHS = list(_perturbations(GOOD_WORKLOAD))
ODD = st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=True) | st.text(max_size=6) \
    | st.lists(st.integers(), max_size=3) | st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)


@SETTINGS
@given(st.sampled_from(PATHS), ODD, st.booleans())
def test_a_valid_workload_file_with_one_field_perturbed(path, value, rename):
    doc = json.loads(json.dumps(GOOD_WORKLOAD))
    target = doc
    for step in path[:-1]:
        target = target[step]
    if rename and isinstance(target, dict):
        target[f"{path[-1]}x"] = target.pop(path[-1])
    else:
        target[path[-1]] = value
    _workload_outcome(_write(json.dumps(doc, allow_nan=True).encode(), ".json"))


@SETTINGS
@given(st.integers(0, len(GOOD_MJQM) - 1), st.text(max_size=5))
def test_a_valid_mjqm_file_with_a_few_characters_changed(at, text):
    _workload_outcome(_write((GOOD_MJQM[:at] + text + GOOD_MJQM[at + 1:]).encode(), ".toml"))


@SETTINGS
@given(st.binary(max_size=400), st.sampled_from([".swf", ".csv", ".txt"]))
def test_random_bytes_as_a_trace(data, suffix):
    _trace_outcome(_write(data, suffix))


@SETTINGS
@given(st.sampled_from([(GOOD_SWF, ".swf"), (GOOD_CSV, ".csv")]), st.integers(0, 200), st.text(max_size=4))
def test_a_valid_trace_with_a_few_characters_changed(good, at, text):
    body, suffix = good
    at = at % len(body)
    _trace_outcome(_write((body[:at] + text + body[at + 1:]).encode(), suffix))


@pytest.mark.parametrize("body, suffix", [(GOOD_SWF, ".swf"), (GOOD_CSV, ".csv")])
def test_the_unperturbed_traces_replay(body, suffix):
    trace = read_trace(_write(body.encode(), suffix))
    from barrier_queues.replay import replay

    assert len(replay(trace, servers=8, scheduling="backfill").jobs) == 3


@pytest.mark.parametrize("body, suffix", [(GOOD_SWF, ".swf"), (GOOD_CSV, ".csv")])
def test_every_one_character_change_of_a_valid_trace(body, suffix):
    """Exhaustively, each character of a valid trace deleted or replaced by one of a few others (hypothesis once
    found "; MaxProcs:" with its value deleted, an IndexError): a result or one ParameterError."""
    for at in range(len(body)):
        for text in ("", "x", ";", ":", "-", "\n", "9", ","):
            _trace_outcome(_write((body[:at] + text + body[at + 1:]).encode(), suffix))
