"""The extension guide's compiled discipline, built for real: a copy of the package gets the guide's edits of
``waitlist.pxi`` (a discipline "largest-first"), its kernels are compiled, and in a fresh process the
discipline is offered with its plain reference (``waitlist.add_discipline``), equals that reference job by
job (with and without failures, across chunks, and replaying a small trace) and meets the disciplines'
oracle (one k: fcfs's jobs, bit for bit). The guide shows exactly these snippets (checked here)."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "book" / "reference" / "extending.md"

# the guide's edits of schedulers/waitlist.pxi: (the line it goes after, what is added)
CODE = "    C_LARGEST_FIRST = 5\n"
NAME = "LARGEST_FIRST = C_LARGEST_FIRST\n"
FUNCTION = '''\
cdef void _wl_largest_first(Wait* q, double now, const Service* sv) noexcept nogil:
    """Largest-first: start the waiting job of the largest k that fits (ties: the earliest), again while
    workers are free; a plain job starts every task it can."""
    cdef int64_t c, h, best
    while q.n_free > 0:
        best = -1
        for c in range(q.nclass):
            h = q.chead[c]
            if h >= 0 and q.creq[c] <= q.n_free and (best < 0 or q.k[h] > q.k[best]
                                                     or (q.k[h] == q.k[best] and h < best)):
                best = h
        if best < 0:
            return
        if q.barrier[best]:
            _wl_start_job(q, best, now, sv)
        else:
            while q.n_free > 0 and _wl_ready(q, best):
                _wl_start_task(q, best, now)


'''
BRANCH = '''\
    elif discipline == C_LARGEST_FIRST:
        _wl_largest_first(q, now, sv)
'''
EDITS = (
    ("    C_AGING = 4\n", CODE),
    ("FCFS, FIRST_FIT, BACKFILL, SERVER_FILLING, AGING = C_FCFS, C_FIRST_FIT, C_BACKFILL, C_SERVER_FILLING, C_AGING\n",
     NAME),
    ("        _wl_server_filling(q, now, sv)\n", BRANCH),
)
_CODES = ("DISCIPLINE_CODES = (C_FCFS, C_FIRST_FIT, C_BACKFILL, C_SERVER_FILLING, C_AGING, C_HOLD, C_SJF, "
          "C_SJF_FIRST_FIT")
CODES = (_CODES + ")", _CODES + ",\n                    C_LARGEST_FIRST)")
CHECKED = ("                or discipline == C_HOLD):",
           "                or discipline == C_HOLD or discipline == C_LARGEST_FIRST):")

REFERENCE = '''\
def largest_first(q, now):
    """One decision of largest-first in the reference scheduler."""
    while q.free:
        fits = [j for j in q.waiting if (q.tasks[j] if q.barrier[j] else 1) <= len(q.free)]
        if not fits:
            return
        j = max(fits, key=lambda j: (q.tasks[j], -j))
        if q.barrier[j]:
            q.start_job(j, now)
        else:
            while q.free and q.ready(j):
                q.start_task(j, now)
'''

CHECK = '''
import sys
import numpy as np
import barrier_queues as bq
from barrier_queues import failures
from barrier_queues.inputs import draw_jobs
from barrier_queues.schedulers import waitlist

assert bq.__file__.startswith(sys.argv[1]), bq.__file__          # the copy with the new kernel, not main's
waitlist.add_discipline("largest-first", largest_first)


def same(system, n, seed, fail=False):
    rng = np.random.default_rng(seed)
    inputs = draw_jobs(system, n, rng)
    if fail:
        inputs = failures.attempts(system, inputs, waitlist.failure_stream(rng))
    kernel, ref = waitlist.run_inputs(system, inputs), waitlist.reference(system, inputs)
    for key in ("start", "departure", "work", "useful", "completed"):
        assert np.array_equal(np.asarray(kernel[key]), np.asarray(ref[key])), key
    return kernel


mixed = bq.BarrierSystem(servers=16, tasks_pmf={2: 0.5, 8: 0.3, 16: 0.2}, arrival_rate=0.4,
                         scheduling="largest-first")
same(mixed, 3000, 1)
same(mixed.replace(barriers=2), 3000, 2)
same(mixed.replace(barrier_fraction=0.5, arrival_rate=0.5), 3000, 3)
same(mixed.replace(barrier_fraction=0.5, failure_rate=0.02, max_attempts=3, resubmit_delay=0.2), 2000, 4,
     fail=True)
# the oracle of every discipline (EXTENSIONS.md section 4): one k and only barrier jobs give fcfs's jobs
one = bq.BarrierSystem(servers=16, tasks=4, arrival_rate=3.0)
a = same(one.replace(scheduling="largest-first"), 3000, 5)
rng = np.random.default_rng(5)
b = waitlist.run_inputs(one.replace(scheduling="first-fit"), draw_jobs(one, 3000, rng))
assert np.array_equal(a["start"], b["start"])
# the public path: a simulation of many chunks, and the size class that starves under it
res = bq.simulate(mixed.replace(arrival_rate=0.3), jobs=30_000, replications=2, seed=6).summary()
print("waiting", res["mean_waiting"], "stable", res["stable"])
# a recorded log under the new discipline, written nowhere else: the room's one release per rigid job against
# the reference's k equal task times, and the public replay
import pandas as pd
from barrier_queues.replay import replay, trace_system
from barrier_queues.traces import Trace

rng = np.random.default_rng(7)
n = 400
log = pd.DataFrame({"job_id": np.arange(1, n + 1), "submit": np.sort(np.round(rng.exponential(0.6, n).cumsum(), 1)),
                    "tasks": rng.integers(1, 17, n), "runtime": np.round(rng.exponential(2.0, n), 1) + 0.1,
                    "barrier": True, "estimate": np.nan})
trace = Trace(log, "small", "test", 16)
system = trace_system(trace, scheduling="largest-first")
kernel = waitlist.run_inputs(system, system.trace.inputs())
assert np.array_equal(kernel["start"], waitlist.reference(system, system.trace.expanded_inputs())["start"])
replayed = replay(trace, scheduling="largest-first")
assert np.array_equal(replayed.jobs.start.to_numpy(), kernel["start"])
print("trace", replayed.metrics()["jobs"], replayed.metrics()["mean_waiting"])
try:
    bq.BarrierSystem(servers=16, tasks=4, scheduling="smallest-first")
except bq.ParameterError as exc:
    print("refused:", exc)
'''


def _apply_edits(pxi: Path) -> None:
    text = pxi.read_text()
    for anchor, added in EDITS:
        assert text.count(anchor) == 1, f"the guide's anchor is no longer in waitlist.pxi: {anchor!r}"
        text = text.replace(anchor, anchor + added)
    for before, after in (CODES, CHECKED):
        assert text.count(before) == 1, f"the guide's line is no longer in waitlist.pxi: {before!r}"
        text = text.replace(before, after)
    anchor = "cdef void _wl_decide("
    assert text.count(anchor) == 1
    pxi.write_text(text.replace(anchor, FUNCTION + anchor))


def test_the_guide_shows_these_snippets():
    guide = GUIDE.read_text()
    for snippet in (CODE, NAME, FUNCTION.rstrip() + "\n", BRANCH, CODES[1], CHECKED[1].strip(), REFERENCE):
        assert snippet in guide, snippet


def test_an_unbuilt_discipline_is_refused():
    import barrier_queues as bq
    from barrier_queues.schedulers import waitlist

    with pytest.raises(bq.ParameterError, match="no compiled code LARGEST_FIRST"):
        waitlist.add_discipline("largest-first", lambda q, now: None)
    assert "largest-first" not in waitlist.SCHEDULER.disciplines


def test_a_compiled_discipline_added_as_the_guide_says(tmp_path):
    pytest.importorskip("Cython")
    package = tmp_path / "barrier_queues"
    shutil.copytree(ROOT / "src" / "barrier_queues", package,
                    ignore=shutil.ignore_patterns("*.so", "__pycache__", "*.c"))
    _apply_edits(package / "schedulers" / "waitlist.pxi")
    build = textwrap.dedent('''
        from Cython.Build import cythonize
        from setuptools import Extension, setup
        ext = Extension("barrier_queues._kernels", ["barrier_queues/_kernels.pyx"],
                        extra_compile_args=["-O1", "-ffp-contract=off", "-fno-fast-math"])
        setup(script_args=["build_ext", "--inplace", "--quiet"],
              ext_modules=cythonize([ext], language_level=3, build_dir="build", quiet=True))
    ''')
    done = subprocess.run([sys.executable, "-c", build], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    run = subprocess.run([sys.executable, "-c", REFERENCE + CHECK, str(tmp_path)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=900, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert run.returncode == 0, run.stderr[-3000:]
    assert "waiting" in run.stdout and "trace 400 " in run.stdout
    assert "refused: scheduling must be one of" in run.stdout and "largest-first" in run.stdout
