"""Nodes that a gang must fit in (barrier_queues.nodes): the placement rule, the kernel against its plain
reference job by job (drawn systems, across chunk boundaries), G = 1 as the model without nodes, the rule seen in
the workers each job took, replay of a log on nodes, and the refusals."""

import numpy as np
import pytest

import barrier_queues as bq
from barrier_queues import nodes
from barrier_queues.inputs import chunk_jobs, draw_jobs
from barrier_queues.runs import run_replication
from barrier_queues.schedulers import waitlist
from barrier_queues.schedulers.waitlist_reference import simulate_waitlist_reference

S = bq.BarrierSystem
FIELDS = ("start", "departure", "work", "useful", "completed")
SYSTEMS = {
    "GPU gangs of 1 to 16 on 16": dict(servers=16, tasks_pmf={1: 0.4, 2: 0.2, 4: 0.2, 8: 0.1, 16: 0.1},
                                       arrival_rate=1.0),
    "widths not multiples of G": dict(servers=24, tasks_pmf={3: 0.5, 5: 0.3, 12: 0.2}, arrival_rate=0.6),
    "hybrid": dict(servers=12, tasks_pmf={1: 0.5, 3: 0.3, 6: 0.2}, barrier_fraction=0.7, arrival_rate=1.0),
}


#: what each discipline needs beside the system (aging's wait; server-filling's 2 barriers)
EXTRA = {"aging": dict(aging_after=2.0), "server-filling": dict(barriers=2)}


def _same(a, b, fields=FIELDS):
    for key in fields:
        assert np.array_equal(np.asarray(a[key]), np.asarray(b[key])), key


def test_the_placement_rule():
    # 2 nodes of 4: node 0 has workers 1, 2 free; node 1 is whole
    free = [1, 2, 4, 5, 6, 7]
    assert nodes.place(free, 4, 8, 2) == [1, 2]              # best fit: the fuller node that still fits
    assert nodes.place(free, 4, 8, 3) == [4, 5, 6]           # only node 1 has 3
    assert nodes.place(free, 4, 8, 4) == [4, 5, 6, 7]        # a whole node
    assert nodes.place(free, 4, 8, 5) == [4, 5, 6, 7, 1]     # a whole node, then 1 on the other
    assert nodes.place(free, 4, 8, 6) == [4, 5, 6, 7, 1, 2]
    assert nodes.place(free, 4, 8, 7) is None                # 6 free
    assert nodes.place([0, 1, 4, 5], 4, 8, 3) is None        # 4 free, but at most 2 on a node
    assert nodes.place(list(range(8)), 4, 8, 6) == [0, 1, 2, 3, 4, 5]   # a whole node and 2 on the other
    assert nodes.place([0, 3, 5], 1, 8, 2) == [0, 3]          # G = 1: the lowest free workers
    # ties of best fit go to the lowest node
    assert nodes.place([1, 5], 4, 8, 1) == [1]


@pytest.mark.parametrize("g", [1, 2, 3, 4, 6, 8])
@pytest.mark.parametrize("name", SYSTEMS)
@pytest.mark.parametrize("discipline", nodes.DISCIPLINES)
def test_the_kernel_equals_its_reference_job_by_job(discipline, name, g):
    try:
        system = S(**SYSTEMS[name], scheduling=discipline, node_size=g, **EXTRA.get(discipline, {}))
    except bq.ParameterError as e:
        assert any(word in str(e) for word in ("must divide servers", "barrier_fraction", "sjf", "server-filling",
                                               "power of two", "powers of two")), str(e)
        return
    inputs = draw_jobs(system, 3000, np.random.default_rng(3))
    _same(waitlist.run_inputs(system, inputs), waitlist.reference(system, inputs))


@pytest.mark.parametrize("discipline", ["fcfs", "first-fit"])
def test_one_worker_per_node_is_the_model_without_nodes_job_by_job(discipline):
    plain = S(**SYSTEMS["GPU gangs of 1 to 16 on 16"], scheduling=discipline)
    a = bq.simulate(plain, jobs=20_000, replications=1, seed=4, keep_jobs=True).replications[0].jobs
    b = bq.simulate(plain.replace(node_size=1), jobs=20_000, replications=1, seed=4,
                    keep_jobs=True).replications[0].jobs
    _same(a, b)


@pytest.mark.parametrize("discipline", ["backfill", "aging", "server-filling"])
def test_one_worker_per_node_is_the_model_without_nodes_under_every_reservation_rule(discipline):
    """G = 1: backfill's reservation by fit on nodes is EASY's by count (the head fits at t_H on what a job that
    outlasts it leaves exactly when that job's k is at most the spare workers), job by job."""
    extra = {**EXTRA.get(discipline, {})}
    pmf = {1: 0.5, 2: 0.2, 4: 0.2, 16: 0.1} if discipline != "server-filling" else {1: 0.4, 2: 0.3, 4: 0.2, 16: 0.1}
    plain = bq.at_utilization(S(servers=16, tasks_pmf=pmf, scheduling=discipline, **extra), 0.6)
    inputs = draw_jobs(plain, 5000, np.random.default_rng(8))
    _same(waitlist.run_inputs(plain, inputs), waitlist.run_inputs(plain.replace(node_size=1), inputs))


@pytest.mark.parametrize("g", [2, 4, 8])
def test_backfill_on_nodes_never_starts_a_head_after_its_reservation(g):
    """EASY's promise with exact runtimes, on nodes: every reservation made for a head (the first release time
    at which it fits on nodes) is kept, since a job started past it leaves the head room to fit then."""
    system = bq.at_utilization(S(servers=16, tasks_pmf={1: 0.4, 3: 0.2, 4: 0.2, 8: 0.1, 16: 0.1},
                                 scheduling="backfill", node_size=g), 0.7)
    inputs = draw_jobs(system, 4000, np.random.default_rng(g))
    reservations = []
    res = simulate_waitlist_reference(inputs["arrival"], inputs["tasks"], inputs["barrier"], inputs["times"], 16,
                                      "backfill", release="fixed", node_size=g, reservations=reservations)
    start = np.asarray(res["start"])
    assert len(reservations) > 100
    late = [(h, t) for h, t in reservations if start[h] > t]
    assert not late, late[:5]
    _same(waitlist.run_inputs(system, inputs), res)


def test_each_gang_sits_on_its_nodes():
    """In the workers each job took (the reference's trace, equal to the kernel's jobs above): a gang of k <= G
    on one node, a wider one on whole nodes and at most one partial node."""
    g, s = 4, 16
    system = S(servers=s, tasks_pmf={1: 0.3, 3: 0.3, 4: 0.2, 6: 0.1, 8: 0.1}, arrival_rate=1.0,
               scheduling="first-fit", node_size=g)
    inputs = draw_jobs(system, 2000, np.random.default_rng(9))
    res, tr = simulate_waitlist_reference(inputs["arrival"], inputs["tasks"], inputs["barrier"], inputs["times"], s,
                                          "first-fit", trace=True, node_size=g, release="fixed")
    workers = np.asarray(tr["worker"])
    for j, (k, off) in enumerate(zip(inputs["tasks"], inputs["offsets"], strict=True)):
        used = np.bincount(workers[off:off + k] // g, minlength=s // g)
        if k <= g:
            assert (used > 0).sum() == 1, j
        else:
            assert (used == g).sum() == k // g and ((used > 0) & (used < g)).sum() == (1 if k % g else 0), j
    _same(waitlist.run_inputs(system, inputs), res)


@pytest.mark.parametrize("discipline", ["fcfs", "first-fit", "sjf"])
def test_across_chunk_boundaries_a_replication_equals_the_reference(discipline):
    """Gangs of 2,048 tasks make chunks of 2,048 jobs: the nodes' free counts and the releases carry over."""
    system = S(servers=2048, tasks_pmf={1: 0.6, 3: 0.3, 2048: 0.1}, arrival_rate=0.9, scheduling=discipline,
               node_size=8)
    assert chunk_jobs(system) == 2048
    jobs = 5000
    rep = run_replication(system, jobs, np.random.default_rng(5), keep_jobs=True, warmup=0)
    rng = np.random.default_rng(5)
    parts, done, start = [], 0, 0.0
    while done < jobs:
        part = draw_jobs(system, min(2048, jobs - done), rng, start_time=start)
        parts.append(part)
        done += part["arrival"].size
        start = part["arrival"][-1]
    cat = {key: np.concatenate([p[key] for p in parts]) for key in ("arrival", "tasks", "barrier", "times")}
    ref = simulate_waitlist_reference(cat["arrival"], cat["tasks"], cat["barrier"], cat["times"], 2048, discipline,
                                      release="fixed", node_size=8)
    _same(rep.jobs, ref)


def test_a_log_on_nodes_one_gpu_per_node_is_the_rigid_replay_and_eight_changes_it():
    from barrier_queues.replay import replay
    from barrier_queues.traces import Trace

    rng = np.random.default_rng(2)
    n = 600
    import pandas as pd

    jobs = pd.DataFrame({"job_id": np.arange(n), "submit": np.sort(rng.uniform(0, 4000, n)),
                         "tasks": rng.choice([1, 2, 4, 8, 12, 16], n, p=[0.4, 0.2, 0.15, 0.1, 0.05, 0.1]),
                         "runtime": rng.exponential(60.0, n) + 1.0})
    trace = Trace(jobs, "synthetic", "csv", servers=32)
    for d in ("fcfs", "first-fit"):
        rigid = replay(trace, scheduling=d)
        one = replay(trace, scheduling=d, node_size=1)
        assert np.array_equal(rigid.jobs.start.to_numpy(), one.jobs.start.to_numpy())
        eight = replay(trace, scheduling=d, node_size=8)
        assert not np.array_equal(rigid.jobs.start.to_numpy(), eight.jobs.start.to_numpy())
        assert eight.summary()["node_size"] == 8


@pytest.mark.parametrize("bad, message", [
    (dict(node_size=5), "node_size must divide servers"),
    (dict(node_size=4, scheduling="hold", hold_timeout=1), "node_size is simulated under"),
    (dict(node_size=4, failure_rate=0.1), "failure_rate must be None with node_size"),
    (dict(node_size=0), "node_size must be"),
    (dict(node_size=32), "node_size must be"),
])
def test_bad_node_settings_are_refused_in_one_line(bad, message):
    with pytest.raises(bq.ParameterError, match=message):
        S(servers=16, tasks=4, arrival_rate=1.0, **bad)


@pytest.mark.parametrize("g, k", [(4, 3), (8, 3), (4, 2)])
def test_fifos_ceiling_on_nodes_is_that_of_independent_nodes(g, k):
    """Saturated FIFO with k <= G: the head starts on any node with k free, so each node is an always-backlogged
    (G, k) system of its own and the limit is (s / G) lambda_max(G, k) (the paper's chain), below the limit of s
    workers without nodes (fragmentation). The exact value must lie in the run's 95 % interval (4 replications)."""
    s = 16
    exact = s // g * bq.stability_limit(g, k).lambda_max
    from barrier_queues.saturated import saturated_throughput

    out = saturated_throughput(S(servers=s, tasks=k, node_size=g), jobs=50_000, replications=4, seed=6)
    lo, hi = out["lambda_max_ci"]
    assert lo <= exact <= hi, (exact, lo, hi)
    assert exact < bq.stability_limit(s, k).lambda_max


def test_with_nodes_no_limit_of_the_system_without_them_is_claimed():
    from barrier_queues.stability import stability_verdict

    system = S(servers=16, tasks=3, arrival_rate=4.5, node_size=4)      # below 4.98 without nodes, above 3.69 with

    verdict = stability_verdict(system)
    assert verdict["lambda_max"] is None and "nodes of 4" in verdict["method"]
    out = bq.simulate(system, jobs=100_000, replications=2, seed=1, allow_unstable=True).summary()
    assert out["stable"] is False                         # the drift test finds what the nodes do


CLOCKS = {"leave": dict(wait_budget=2.0), "patience": dict(wait_budget="exp:3"),
          "requeue": dict(wait_budget="runtime:1.5", on_budget="requeue", requeue_backoff="0.5,4", requeue_limit=5),
          "eviction, jitter": dict(wait_budget="tasks:0.3", on_budget="requeue", requeue_backoff=1, requeue_limit=3,
                                   requeue_order="eviction", requeue_jitter=0.3)}


@pytest.mark.parametrize("clock", CLOCKS)
@pytest.mark.parametrize("discipline", nodes.DISCIPLINES)
def test_gang_clocks_on_nodes_kernel_equals_its_reference(discipline, clock):
    from barrier_queues import clocks

    if clock == "eviction, jitter" and discipline not in clocks.EVICTION_DISCIPLINES:
        return                                           # (eviction order is refused there: test_clocks)
    system = S(**SYSTEMS["GPU gangs of 1 to 16 on 16"], scheduling=discipline, node_size=4, **CLOCKS[clock],
               **EXTRA.get(discipline, {}))
    inputs = draw_jobs(system, 3000, np.random.default_rng(3))
    inputs["budget"] = clocks.budgets(system, inputs, np.random.default_rng(4))
    inputs["jitter_seed"] = 99
    kernel = waitlist.run_inputs(system, inputs)
    _same(kernel, waitlist.reference(system, inputs), FIELDS + ("lost", "requeues", "backoff"))
    assert kernel["lost"].any() or np.asarray(kernel["requeues"]).any()      # (the clock acted on some job)
