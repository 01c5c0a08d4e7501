"""The packing ceiling (barrier_queues.packing): the column generation against the full configuration LP of every
configuration and against closed forms, a system's items, and the verdict that refuses a load above it on
nodes."""

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import linprog

import barrier_queues as bq
from barrier_queues.order_stats import exp_order_stat_mean
from barrier_queues.packing import held_items, packing_ceiling, system_packing_ceiling

S = bq.BarrierSystem


def _every_configuration(sizes, g):
    """All multisets of the sizes that fit in g (a plain enumeration, not the knapsack)."""
    ranges = [range(g // z + 1) for z in sizes]
    return [n for n in itertools.product(*ranges) if sum(z * c for z, c in zip(sizes, n, strict=True)) <= g]


def _full_lp(items, servers, g):
    """The configuration LP with every configuration written out, maximising lambda directly (variables
    lambda and y_n): an independent statement of the module docstring's LP."""
    demand = {}
    for share, k, held in items:
        whole, rest = divmod(k, g)
        for size, count in ((g, whole), (rest, 1)):
            if size and count:
                demand[size] = demand.get(size, 0.0) + share * held * count
    sizes = sorted(demand)
    configs = _every_configuration(sizes, g)
    n = len(configs)
    # maximise lambda: minimise -lambda; lambda D_z - sum_n y_n n_z <= 0; sum_n y_n <= N
    c = np.zeros(n + 1)
    c[0] = -1.0
    a = [[demand[z]] + [-conf[j] for conf in configs] for j, z in enumerate(sizes)]
    a.append([0.0] + [1.0] * n)
    b = [0.0] * len(sizes) + [servers // g]
    res = linprog(c, A_ub=np.array(a), b_ub=np.array(b), bounds=(0, None), method="highs")
    assert res.status == 0
    return -res.fun


def test_one_width_on_nodes_is_floor_g_over_k_gangs_per_node():
    for g in (4, 8):
        for k in range(1, g + 1):
            assert packing_ceiling([(1.0, k, 2.0)], 4 * g, g) == pytest.approx(4 * (g // k) / 2.0, rel=1e-12)
    assert packing_ceiling([(1.0, 3, 1.0)], 8) == pytest.approx(2.0, rel=1e-12)          # no nodes: 6 of 8
    assert packing_ceiling([(1.0, 16, 1.0)], 64, 8) == pytest.approx(4.0, rel=1e-12)     # whole nodes: no loss
    assert packing_ceiling([(1.0, 12, 1.0)], 64, 8) == pytest.approx(64 / 12, rel=1e-12)  # 8 + 4, two 4s a node
    assert packing_ceiling([(1.0, 5, 0.0)], 8) == math.inf


@pytest.mark.parametrize("seed", range(12))
def test_column_generation_equals_the_lp_of_every_configuration(seed):
    rng = np.random.default_rng(seed)
    g = int(rng.choice([5, 6, 8, 10]))
    nodes = int(rng.integers(1, 5))
    widths = rng.choice(np.arange(1, 2 * g + 1), size=int(rng.integers(1, 5)), replace=False)
    items = [(float(rng.uniform(0.05, 1)), int(k), float(rng.uniform(0.2, 3))) for k in widths
             if k <= g * nodes]
    if not items:
        items = [(1.0, 1, 1.0)]
    assert packing_ceiling(items, g * nodes, g) == pytest.approx(_full_lp(items, g * nodes, g), rel=1e-8)
    assert packing_ceiling(items, g * nodes) == pytest.approx(_full_lp(items, g * nodes, g * nodes), rel=1e-8)


def test_nodes_never_raise_the_ceiling_and_dividing_widths_lose_nothing():
    items = [(0.6, 1, 1.0), (0.2, 2, 1.5), (0.1, 4, 2.0), (0.1, 8, 3.0)]
    held = sum(p * k * h for p, k, h in items)
    assert packing_ceiling(items, 64, 8) == pytest.approx(64 / held, rel=1e-12)
    odd = [(0.5, 3, 1.0), (0.5, 6, 1.0)]
    assert packing_ceiling(odd, 48, 8) <= packing_ceiling(odd, 48) + 1e-12
    assert packing_ceiling(odd, 48, 8) == pytest.approx(_full_lp(odd, 48, 8), rel=1e-10)


def _flat(items):
    return [float(x) for item in items for x in item]


def test_a_systems_items_are_its_gangs_held_together():
    two = S(servers=16, tasks_pmf={2: 0.5, 8: 0.5}, barriers=2)
    expected = [(0.5, 2, exp_order_stat_mean(2, 2), 1), (0.5, 8, exp_order_stat_mean(8, 8), 1)]
    assert _flat(held_items(two)) == pytest.approx(_flat(expected), rel=1e-12)
    assert system_packing_ceiling(two) == pytest.approx(bq.stability.holding_ceiling(two), rel=1e-12)
    hybrid = S(servers=8, tasks=4, barriers=2, barrier_fraction=0.25)
    assert _flat(held_items(hybrid)) == pytest.approx(_flat([(0.25, 4, exp_order_stat_mean(4, 4), 1),
                                                             (0.75, 1, 1.0, 4)]), rel=1e-12)
    assert held_items(S(servers=8, tasks=4)) is None                           # 1 barrier: not held together
    shared = S(servers=8, workload=[{"share": 1, "tasks": 3, "shared": True}], barriers=1)
    assert held_items(shared) == [(1.0, 3, 1.0, 1)]


def test_the_verdict_on_nodes_refuses_a_load_above_the_packing_ceiling():
    system = S(servers=16, tasks=3, barriers=2, node_size=8, arrival_rate=1.0)
    ceiling = 2 * 2 / exp_order_stat_mean(3, 3)                                 # 2 nodes, 2 gangs each
    assert system_packing_ceiling(system) == pytest.approx(ceiling, rel=1e-12)
    below = bq.stability.stability_verdict(system.replace(arrival_rate=0.99 * ceiling))
    above = bq.stability.stability_verdict(system.replace(arrival_rate=1.01 * ceiling))
    assert below["verdict"] is None and above["verdict"] == "above"
    assert above["lambda_max"] == pytest.approx(ceiling) and "packing ceiling" in above["method"]
    assert bq.stability.holding_ceiling(system) > 1.01 * ceiling                 # the holding ceiling would pass it


def test_a_logs_width_mix_and_what_nodes_cost_it():
    import pandas as pd

    from barrier_queues.packing import fragmentation, width_mix

    jobs = pd.DataFrame({"tasks": [1, 1, 1, 2, 8, 32], "runtime": [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]})
    mix = width_mix(jobs, 16)                                          # the 32-wide job does not fit on 16
    assert [(c["tasks"], c["share"]) for c in mix] == [(1, 0.6), (2, 0.2), (8, 0.2)]
    assert mix[0]["task_dist"] == "exponential:rate=0.050000000000000003" and all(c["shared"] for c in mix)
    with pytest.raises(bq.ParameterError, match="no job of the log fits"):
        width_mix(jobs[jobs.tasks > 16], 16)
    system = S(servers=16, workload=mix)
    one = fragmentation(system, 1, jobs=3_000, replications=3, seed=5).set_index("limit")
    assert one.loc["fcfs (saturated)", "nodes"] == one.loc["fcfs (saturated)", "no nodes"]      # G = 1: no nodes
    assert one.loc["packing ceiling (any discipline)", "no nodes"] == pytest.approx(1.0, rel=1e-12)
    odd = fragmentation(S(servers=16, tasks=3, barriers=2), 8, jobs=3_000, replications=3, seed=5).set_index("limit")
    assert odd.loc["packing ceiling (any discipline)", "nodes"] == pytest.approx(12 / 16, rel=1e-12)
    assert odd.loc["packing ceiling (any discipline)", "no nodes"] == pytest.approx(15 / 16, rel=1e-12)
    for frame in (one, odd):
        fifo, ceiling = frame.loc["fcfs (saturated)"], frame.loc["packing ceiling (any discipline)"]
        assert fifo["nodes high"] <= ceiling["nodes"] + 1e-12 and fifo["no nodes high"] <= ceiling["no nodes"] + 1e-12
