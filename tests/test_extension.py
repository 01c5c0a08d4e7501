"""The extension guide's path (book/reference/extending.md), run for real: a toy rule, a toy scheduler, a toy
failure model and a toy moldable policy are added through the registries, and each is checked against its own
plain reference and an exact result or an oracle."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import barrier_queues as bq
from barrier_queues import failures, rules, schedulers
from barrier_queues.inputs import chunk_jobs, draw_jobs
from barrier_queues.order_stats import harmonic
from barrier_queues.schedulers.base import job_outputs
from barrier_queues.system import option_fields

# --------------------------------------------------------------------------------------------------
# a toy rule: "half" departs when half of the tasks (rounded up) are done; the kernel's FIXED branch
# runs it with k - ceil(k/2) stragglers, its reference is written here from the rule's statement

def half_reference(system, draws, k):
    need = math.ceil(k / 2)
    ordered = sorted(draws)
    cut = ordered[need - 1]
    useful = 0.0
    for x in ordered[:need]:
        useful += x
    return cut, need, useful, [min(x, cut) for x in draws]


HALF = rules.Rule("half", "release", "depart when ceil(k/2) tasks are done (a toy)", kernel_code="FIXED",
                  kernel=lambda s: {"stragglers": s.tasks - math.ceil(s.tasks / 2)}, service=half_reference,
                  check=rules.RULES[("release", "knee")].check, limits={1: None, 2: None})


# --------------------------------------------------------------------------------------------------
# a toy scheduler: "gang-one" runs one job at a time on the whole cluster (a job starts when the previous
# one has left every worker); its driver and its reference are two independent implementations

def _gang_one_run_inputs(system, inputs, phase=0.0):
    from barrier_queues.kernels import kernels_module
    from barrier_queues.rules import kernel_params

    n = inputs["arrival"].size
    out = job_outputs(n)
    code, stragglers, params = kernel_params(system)
    free = 0.0
    for j in range(n):          # each job alone on the cluster: the central kernel on a one-job chunk
        one = {key: np.ascontiguousarray(inputs[key][j:j + 1]) for key in ("arrival", "tasks", "barrier")}
        o, k = int(inputs["offsets"][j]), int(inputs["tasks"][j])
        one["times"] = np.ascontiguousarray(inputs["times"][o:o + k * system.phases])
        one["offsets"] = np.zeros(1, dtype=np.int64)
        single = job_outputs(1)
        t = max(float(inputs["arrival"][j]), free)
        one["arrival"] = np.array([t])
        kernels_module().run_chunk(one["arrival"], one["tasks"], one["barrier"], one["times"], one["offsets"],
                                   system.phases, code, stragglers, np.asarray(params), system.barriers == 2, False,
                                   1.0, 0.0, np.empty(0), np.zeros(system.servers),
                                   np.arange(system.servers, dtype=np.int64), np.zeros(1), single["start"],
                                   single["departure"], single["work"], single["useful"], single["completed"],
                                   np.empty(0, dtype=np.int64), np.empty(0), np.empty(0))
        for key in out:
            out[key][j] = single[key][0]
        free = float(single["departure"][0])      # every task of the job has left its worker by then
    return out


def _gang_one_run(system, jobs, rng, saturated, trace, sink):
    size, done, start_time = chunk_jobs(system), 0, 0.0
    while done < jobs:
        chunk = draw_jobs(system, min(size, jobs - done), rng, start_time=start_time, saturated=saturated)
        out = _gang_one_run_inputs(system, chunk)
        sink.add({"arrival": chunk["arrival"], "tasks": chunk["tasks"], "barrier": chunk["barrier"], **out})
        done += chunk["arrival"].size
        start_time = chunk["arrival"][-1]
    return 0.0, None


def _gang_one_reference(system, inputs, phase=0.0, trace=False):
    """Events: the cluster is free at `free`; each job waits for it, then its tasks run under the rule."""
    from barrier_queues.reference import service, service_args
    from barrier_queues.rules import reference_rule, reference_service

    one_job = reference_service(system) or (lambda d, k: service(d, k, **service_args(reference_rule(system))))
    res = {"start": [], "departure": [], "work": [], "useful": [], "completed": []}
    free, offset = 0.0, 0
    for j, a in enumerate(inputs["arrival"]):
        k = int(inputs["tasks"][j])
        draws = [float(x) for x in inputs["times"][offset:offset + k * system.phases]]
        offset += k * system.phases
        start = max(float(a), free)
        cut, done, useful, occupied = one_job(draws, k)
        ends = [start + busy for busy in occupied]
        work = 0.0
        for busy in occupied:
            work += busy
        free = max(max(ends), start + cut)
        for key, v in zip(res, (start, start + cut, work, useful, done), strict=True):
            res[key].append(v)
    return res


GANG_ONE = schedulers.Scheduler("gang-one", "one job at a time on the whole cluster (a toy)", run=_gang_one_run,
                                run_inputs=_gang_one_run_inputs, reference=_gang_one_reference,
                                validate=lambda system, set_: None)


# --------------------------------------------------------------------------------------------------
# a toy failure model: "resume" restarts a failed attempt's tasks where each stopped (checkpoints taken
# continuously, at no cost); no compiled round: its reference round serves both paths

def resume_round(system, work, progress, pos, starts, k, clocks, base):
    left = work[pos] - progress[pos]
    need = base + left
    t_f = np.minimum.reduceat(np.where(clocks < need, clocks, np.inf), starts)
    failed = np.isfinite(t_f)
    until = np.repeat(t_f, k)
    progress[pos] += np.where(np.repeat(failed, k), np.clip(until - base, 0.0, left), 0.0)
    return np.minimum(need, until), failed


def resume_attempt(fail, work, progress, clocks, base):
    need = [base + w - p for w, p in zip(work, progress, strict=True)]
    t_f = min((c for c, n in zip(clocks, need, strict=True) if c < n), default=math.inf)
    if t_f == math.inf:
        return need, False
    for i, n in enumerate(need):
        progress[i] += min(max(t_f - base, 0.0), n - base)
    return [min(n, t_f) for n in need], True


RESUME = failures.FailureModel("resume", "a retry resumes each task where it stopped (a toy)", fresh=False,
                               round=resume_round, attempt=resume_attempt,
                               law=lambda s: harmonic(s.tasks) / s.task_dist.rate)


@pytest.fixture
def toy_failure_model():
    failures.register(RESUME)
    yield RESUME
    failures.unregister("resume")


@pytest.fixture
def toy_rule():
    rules.register(HALF)
    yield HALF
    rules.unregister("release", "half")


@pytest.fixture
def toy_scheduler():
    schedulers.register(GANG_ONE)
    yield GANG_ONE
    schedulers.unregister("gang-one")


def _agree(system, seed, n=3000):
    rng = np.random.default_rng(seed)
    inputs = draw_jobs(system, n, rng)
    inputs.update(schedulers.get(system.placement).draw_extra(system, inputs["tasks"], rng))
    kernel = bq.runs.run_inputs(system, inputs, probes=inputs.get("probes"))
    ref = schedulers.get(system.placement).reference(system, inputs)
    for key in ("start", "departure", "work", "useful", "completed"):
        assert np.array_equal(np.asarray(kernel[key]), np.asarray(ref[key])), key


def test_a_toy_rule_added_through_the_registry_runs_and_equals_its_reference(toy_rule):
    system = bq.BarrierSystem(servers=16, tasks=8, release="half", arrival_rate=1.5)
    assert "--release" in {o["flag"] for o in option_fields()}
    assert "half" in next(o for o in option_fields() if o["name"] == "release")["choices"]
    for placement in ("central", "sample"):
        _agree(system.replace(placement=placement), seed=3)
        _agree(system.replace(placement=placement, barriers=2, arrival_rate=0.8), seed=4)
    # its law: the rule is the fixed rule with l = ceil(k/2); the simulated mean execution time of a
    # 2-barrier system agrees with E[X_(4:8)] within its interval
    res = bq.simulate(system.replace(barriers=2, arrival_rate=0.8), jobs=40_000, replications=4, seed=5)
    exact = sum(1 / i for i in range(5, 9))             # E[X_(4:8)] = H_8 - H_4 for mu = 1
    lo, hi = res.summary()["ci"]["execution"]
    assert lo <= exact <= hi
    with pytest.raises(bq.ParameterError, match="release must be one of"):
        bq.BarrierSystem(servers=16, tasks=8, release="quarter")


def test_a_toy_scheduler_added_through_the_registry_equals_its_reference_and_m_g_1(toy_scheduler):
    system = bq.BarrierSystem(servers=8, tasks=4, arrival_rate=0.3, placement="gang-one")
    assert "gang-one" in next(o for o in option_fields() if o["name"] == "placement")["choices"]
    _agree(system, seed=7)
    _agree(system.replace(tasks=6, needed=4), seed=8)
    # one job at a time with exponential tasks is M/G/1 with service D = max of k: Pollaczek-Khinchine
    res = bq.simulate(system, jobs=20_000, replications=8, seed=9, workers=1)
    mean = harmonic(4)
    second = sum(1 / i**2 for i in range(1, 5)) + mean**2
    lam = system.arrival_rate
    pk = lam * second / (2 * (1 - lam * mean))
    lo, hi = res.summary()["ci"]["waiting"]
    assert lo <= pk <= hi, (lo, pk, hi)


def test_a_toy_failure_model_added_through_the_registry_equals_its_reference_and_its_law(toy_failure_model):
    from barrier_queues.schedulers import waitlist

    system = bq.BarrierSystem(servers=4, tasks=4, barriers=2, arrival_rate=0.01, failure_rate=0.5,
                              retry_work="resume")
    assert "resume" in next(o for o in option_fields() if o["name"] == "retry_work")["choices"]
    for discipline in ("fcfs", "first-fit", "backfill"):      # the kernel schedules its attempts as the reference
        crowded = system.replace(servers=8, arrival_rate=0.4, scheduling=discipline, barrier_fraction=0.5)
        rng = np.random.default_rng(11)
        inputs = failures.attempts(crowded, draw_jobs(crowded, 2000, rng), waitlist.failure_stream(rng))
        assert inputs["attempts"].max() > 1
        kernel, ref = waitlist.run_inputs(crowded, inputs), waitlist.reference(crowded, inputs)
        for key in ("start", "departure", "work", "useful", "completed", "attempts", "aborted"):
            assert np.array_equal(np.asarray(kernel[key]), np.asarray(ref[key])), key
    # nothing is lost: a job alone runs max X_i in all (its law, H_4 / mu), with 1 + gamma k / mu attempts
    # (the failures of gamma times the total work k / mu)
    res = bq.simulate(system, jobs=20_000, replications=4, seed=12).summary()
    lo, hi = res["ci"]["execution"]
    assert lo <= RESUME.law(system) <= hi, (lo, RESUME.law(system), hi)
    lo, hi = res["failure_ci"]["mean_attempts"]
    assert lo <= 1 + 0.5 * 4 <= hi, (lo, hi)
    with pytest.raises(bq.ParameterError, match="retry_work must be 'identical' with checkpoint_interval"):
        system.replace(checkpoint_interval=1.0)


def test_the_toy_failure_model_replays_a_trace(toy_failure_model):
    """A model that redoes the recorded work replays a trace by the same path: the kernel schedules its attempts
    as the reference job by job under fcfs, first-fit and backfill; a retry resumes, so a job's execution is
    never below its recorded runtime; and a model that draws fresh work is refused with a trace."""
    from barrier_queues.replay import failure_inputs, replay, trace_system
    from barrier_queues.schedulers import waitlist
    from barrier_queues.traces import Trace

    rng = np.random.default_rng(4)
    n = 400
    submit = np.cumsum(rng.exponential(2.0, n))
    k, run = rng.integers(1, 9, n), rng.exponential(5.0, n)
    trace = Trace(pd.DataFrame({"job_id": np.arange(1, n + 1), "submit": submit, "tasks": k.astype(np.int64),
                                "runtime": run, "barrier": True, "estimate": run}), "toy", "a toy log", 8)
    for discipline in ("fcfs", "first-fit", "backfill"):
        system = trace_system(trace, 8, discipline, failure_rate=0.05, retry_work="resume")
        inputs = failure_inputs(system, seed=9, raw=True)
        kernel, ref = waitlist.run_inputs(system, inputs), waitlist.reference(system, inputs)
        for key in ("start", "departure", "work", "attempts", "aborted"):
            assert np.array_equal(np.asarray(kernel[key]), np.asarray(ref[key])), key
        assert np.asarray(kernel["attempts"]).max() > 1
    out = replay(trace, failure_rate=0.05, retry_work="resume", seed=9)
    assert out.failures["retry_work"] == "resume"
    assert (out.jobs.runtime.to_numpy() >= run - 1e-9).all()
    with pytest.raises(bq.ParameterError, match="retry_work must be a model that redoes the recorded work"):
        trace_system(trace, 8, failure_rate=0.05, retry_work="different")


@pytest.mark.parametrize("name, system", [
    ("different", dict(task_dist="exponential:rate=1.0")),
    ("identical", dict(task_dist="deterministic:value=6.0", checkpoint_interval=1.5, checkpoint_cost=0.2,
                       restart_cost=0.3, failure_rate=0.05))])
def test_each_built_in_failure_model_meets_its_law(name, system):
    """Every registered model with a law: one job alone (s = k = 4, 2 barriers, D = 0, no cap)."""
    system = bq.BarrierSystem(servers=4, tasks=4, barriers=2, arrival_rate=0.01, retry_work=name,
                              **{"failure_rate": 0.25, **system})
    exact = failures.get(name).law(system)
    lo, hi = bq.simulate(system, jobs=20_000, replications=8, seed=13).summary()["ci"]["execution"]
    assert lo <= exact <= hi, (lo, exact, hi)


# --------------------------------------------------------------------------------------------------
# a toy moldable policy: "all-free" takes every free worker, registered by the guide's own snippet

GUIDE = Path(__file__).resolve().parents[1] / "book" / "reference" / "extending.md"


def _guide_snippet(section: str) -> str:
    text = GUIDE.read_text()
    part = text[text.index(f"## {section}"):]
    return part[part.index("```python\n") + len("```python\n"):part.index("```\n", part.index("```python"))]


@pytest.fixture
def all_free():
    from barrier_queues import moldable_policies

    exec(_guide_snippet("A new moldable policy"), {"moldable_policies": moldable_policies})   # noqa: S102
    try:
        yield moldable_policies.POLICIES["all-free"]
    finally:
        moldable_policies.POLICIES.pop("all-free", None)


def test_a_toy_moldable_policy_added_by_the_guide_runs_in_the_room_and_equals_its_oracle(all_free):
    from barrier_queues.stability import stability_verdict

    assert "all-free" in next(o for o in option_fields() if o["name"] == "moldable")["choices"]
    mine = bq.BarrierSystem(servers=8, tasks=12, arrival_rate=0.5, moldable="all-free")
    oracle = bq.BarrierSystem(servers=8, tasks=12, arrival_rate=0.5, moldable="take-fraction", take_fraction=1.0)
    room = schedulers.of(mine)
    assert room.name == "moldable" and schedulers.of(oracle) is room
    rng = np.random.default_rng(3)
    inputs = draw_jobs(mine, 4000, rng)
    inputs["uniforms"] = rng.random(4000)
    plain, compiled = room.reference(mine, inputs), room.run_inputs(oracle, inputs)
    for key in ("start", "departure", "workers"):
        assert np.array_equal(plain[key], compiled[key]), key
    assert 1 < plain["workers"].mean() < 8
    assert stability_verdict(mine)["lambda_max"] == pytest.approx(8 / 12, rel=1e-15)
    with pytest.raises(bq.ParameterError, match="no compiled code in the kernel's MOLDABLE_POLICIES"):
        bq.simulate(mine, jobs=1000, seed=1, progress=False)


def test_unregistered_toys_leave_no_trace():
    from barrier_queues import moldable_policies

    assert ("release", "half") not in rules.RULES and "gang-one" not in schedulers.SCHEDULERS
    assert "resume" not in failures.MODELS and "all-free" not in moldable_policies.POLICIES
    with pytest.raises(bq.ParameterError, match="placement must be one of 'central', 'sample'"):
        bq.BarrierSystem(servers=8, tasks=4, placement="gang-one")
