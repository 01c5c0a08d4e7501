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


# ------------------------------------------------------------------------------------------------
# sweep folders: a folder of each kind, one of its files damaged, then the same sweep run on it again

FOLDER_SWEEPS = {
    "grid": ["sweep", "-s", "8", "-k", "2", "--utilization", "0.3,0.5", "--jobs", "500", "--replications", "2",
             "--seed", "7"],
    "trace": ["sweep", "--trace", "{trace}", "--scheduling", "fcfs,first-fit", "--servers", "8,16"],
    "moldable": ["sweep", "--moldable", "fixed,take-fraction", "-s", "8", "-k", "4", "--requirement", "2",
                 "--take-fraction", "0.5", "--utilization", "0.3", "--jobs", "500", "--replications", "2",
                 "--seed", "7"],
}


def _sweep_outcome(args: list[str], folder: Path) -> tuple[int, str, str]:
    """The command's exit status, standard output (the folder's name replaced) and standard error."""
    import contextlib
    import io

    from barrier_queues import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main([*args, "--out", str(folder)])
        except SystemExit as exit_:
            code = exit_.code
    return code, out.getvalue().replace(str(folder), "OUT"), err.getvalue()


@pytest.fixture(scope="module")
def sweep_folders(tmp_path_factory):
    """Each kind's folder as a first run leaves it, and what a second run on it prints."""
    base = tmp_path_factory.mktemp("folders")
    trace = base / "t.swf"
    trace.write_text(GOOD_SWF)
    made = {}
    for kind, args in FOLDER_SWEEPS.items():
        args = [a.replace("{trace}", str(trace)) for a in args]
        assert _sweep_outcome(args, base / kind)[0] == 0
        code, printed, _ = _sweep_outcome(args, base / kind)
        assert code == 0
        made[kind] = (args, base / kind, printed)
    return made


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(sorted(FOLDER_SWEEPS)), pick=st.integers(0, 99), at=st.floats(0, 1),
       how=st.sampled_from(["cut", "replace", "insert", "delete", "empty", "remove"]),
       byte=st.sampled_from(list(b"0123456789.,-e\n\"{}[]: xJ\x00")))
def test_a_sweep_folder_with_one_file_damaged(sweep_folders, tmp_path_factory, kind, pick, at, how, byte):
    """Run again on a folder one of whose files was cut, edited, emptied or removed, a sweep prints the same
    table as on the intact folder (the damaged points computed again: its rows' digests in the manifest catch
    an edited number) or is refused in one line; never a traceback, never a number the sweep did not compute."""
    import shutil

    args, base, printed = sweep_folders[kind]
    folder = tmp_path_factory.mktemp("damaged") / kind
    shutil.copytree(base, folder)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != ".lock")
    path = files[pick % len(files)]
    data = bytearray(path.read_bytes())
    i = min(int(at * len(data)), max(len(data) - 1, 0))
    if how == "remove":
        path.unlink()
    else:
        if how == "cut":
            data = data[:i]
        elif how == "replace" and data:
            data[i] = byte
        elif how == "insert":
            data[i:i] = bytes([byte])
        elif how == "delete" and data:
            del data[i]
        elif how == "empty":
            data = bytearray()
        path.write_bytes(bytes(data))
    code, out, err = _sweep_outcome(args, folder)
    assert code in (0, 2), err
    if code == 0:
        assert out == printed
    else:
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_an_edited_number_of_a_trace_sweep_is_computed_again_and_said(sweep_folders, tmp_path):
    """The trace folder once served a number edited in its table (replays are never recomputed); its points are
    now point files with a digest, as every sweep's: an edited one is replayed, the table comes out as first
    printed, and one line says so."""
    import json
    import shutil

    args, base, printed = sweep_folders["trace"]
    folder = tmp_path / "trace"
    shutil.copytree(base, folder)
    point = sorted((folder / "points").glob("*.json"))[0]
    doc = json.loads(point.read_text())
    doc["row"]["mean_waiting"] = doc["row"]["mean_waiting"] + 1.5
    point.write_text(json.dumps(doc) + "\n")
    code, out, err = _sweep_outcome(args, folder)
    assert code == 0 and out == printed
    assert "1 point file(s) differ from what this sweep wrote there" in err


