"""Bad input gets one clear ParameterError naming the parameter and its valid range."""

import re

import pytest
from scipy import stats

import barrier_queues as bq
from barrier_queues import ParameterError

CASES = [
    # (callable, expected message fragment)
    (lambda: bq.BarrierSystem(0, 1), "servers must be an integer with 1 <= servers <= 1,000,000 (got 0)"),
    (lambda: bq.BarrierSystem(-3, 1), "servers must be an integer with 1 <= servers <= 1,000,000 (got -3)"),
    (lambda: bq.BarrierSystem(2.5, 1), "servers must be an integer with 1 <= servers <= 1,000,000 (got 2.5)"),
    (lambda: bq.BarrierSystem("8", 1), "servers must be an integer with 1 <= servers <= 1,000,000 (got '8')"),
    (lambda: bq.BarrierSystem(True, 1), "servers must be an integer with 1 <= servers <= 1,000,000 (got True)"),
    (lambda: bq.BarrierSystem(4, 8), "tasks must be an integer with 1 <= tasks <= servers = 4 (got 8)"),
    (lambda: bq.BarrierSystem(4, 0), "tasks must be an integer with 1 <= tasks <= servers = 4 (got 0)"),
    (lambda: bq.BarrierSystem(8, 4, 5), "needed must be an integer with 1 <= needed <= tasks = 4 (got 5)"),
    (lambda: bq.BarrierSystem(8, 4, 0), "needed must be an integer with 1 <= needed <= tasks = 4 (got 0)"),
    (lambda: bq.BarrierSystem(8, 4, barriers=3), "barriers must be one of 1, 2 (got 3)"),
    (lambda: bq.BarrierSystem(8, 4, barriers=0), "barriers must be one of 1, 2 (got 0)"),
    (lambda: bq.BarrierSystem(8, 4, task_rate=0), "task_rate must be a finite number > 0"),
    (lambda: bq.BarrierSystem(8, 4, task_rate=-1.0), "task_rate must be a finite number > 0"),
    (lambda: bq.BarrierSystem(8, 4, task_rate=float("nan")), "task_rate must be a finite number > 0"),
    (lambda: bq.BarrierSystem(8, 4, task_rate=float("inf")), "task_rate must be a finite number > 0"),
    (lambda: bq.BarrierSystem(8, 4, arrival_rate=-2), "arrival_rate must be a finite number > 0"),
    (lambda: bq.arrival_rate_for(bq.BarrierSystem(8, 4), 0), "utilization must be a finite number > 0"),
    (lambda: bq.count_feasible_states(10**6, 10**5, 5000), "too large to count its states"),
    (lambda: bq.bounds.erlang_c(4, 5.0), "offered must be below servers = 4 for Erlang C"),
    (lambda: bq.stability_limit(bq.BarrierSystem(8, 4, release="knee")), "barriers must be 2 for the knee release"),
    (lambda: bq.stability_limit(bq.BarrierSystem(8, 4), tasks=2), "give either a BarrierSystem or servers"),
    (lambda: bq.stability_limit(bq.BarrierSystem(8, 4, barrier_fraction=0.5)),
     "the stability limit is known for pure barrier jobs"),
    (lambda: bq.stability_limit(8, 4, method="magic"), "method must be one of"),
    (lambda: bq.stability_limit(8, 4, 3, barriers=2, method="ctmc"), "barriers must be 1 for method 'ctmc'"),
    (lambda: bq.stability_limit(8, 4, 3, method="closed-form"), "no 1-barrier formula for needed < tasks"),
    (lambda: bq.stability_limit(8, 4, task_dist="erlang:shape=2,rate=2"),
     "barriers must be 2 for method 'order-statistics'"),
    (lambda: bq.stability_limit(8, 4, barriers=2, task_dist="erlang:shape=2,rate=2", method="ctmc"),
     "needs exponential tasks"),
    (lambda: bq.ctmc_stability(64, 16, 16, max_states=1000), "more than max_states = 1,000"),
    (lambda: bq.ctmc_stability(8, 4, 2, max_states=0), "max_states must be an integer >= 1 (got 0)"),
    (lambda: bq.Exponential(0), "rate must be a finite number > 0"),
    (lambda: bq.Erlang(0, 1.0), "shape must be an integer >= 1 (got 0)"),
    (lambda: bq.Deterministic(-1), "value must be a finite number > 0"),
    (lambda: bq.HyperExponential.bimodal(1.5, 1, 2), "p must be a number with 0 <= p <= 1 (got 1.5)"),
    (lambda: bq.HyperExponential([0.5, 0.4], [1, 2]), "probs must sum to 1"),
    (lambda: bq.HyperExponential([0.5, 0.5], [1, -2]), "rates[1] must be a finite number > 0"),
    (lambda: bq.HyperExponential([1.0], [1, 2]), "probs and rates must be equal-length"),
    (lambda: bq.Empirical([]), "samples must contain at least one task time"),
    (lambda: bq.Empirical([1.0, -0.5]), "samples must be finite task times >= 0"),
    (lambda: bq.parse_task_distribution("pareto:alpha=2"), "task_dist must be one of"),
    (lambda: bq.parse_task_distribution("bimodal:p=0.5,rate1=1"), "task_dist 'bimodal' needs rate2=..."),
    (lambda: bq.parse_task_distribution("exponential:rate=fast"), "task_dist parameter rate must be a number"),
    (lambda: bq.parse_task_distribution("exponential:speed=2"), "got unknown parameters ['speed']"),
    (lambda: bq.parse_task_distribution("exponential:rate"), "must look like key=value"),
    (lambda: bq.parse_task_distribution("empirical:file=/nonexistent/x.csv"),
     "empirical file '/nonexistent/x.csv' does not exist"),
    (lambda: bq.parse_task_distribution("empirical:file=nowhere.csv"),
     "does not exist, looked up from the working dir"),
    (lambda: bq.parse_task_distribution("empirical:file=/tmp"), "'/tmp' is a directory"),
    (lambda: bq.as_task_distribution(stats.norm()), "task_dist must have support on [0, inf)"),
    (lambda: bq.as_task_distribution(42), "task_dist must be a TaskDistribution"),
    (lambda: bq.harmonic(-1), "n must be an integer >= 0 (got -1)"),
    (lambda: bq.exp_order_stat_mean(5, 4), "j must be an integer with 1 <= j <= n = 4 (got 5)"),
    (lambda: bq.exp_order_stat_mgf(0.1, 1, 0), "n must be an integer >= 1 (got 0)"),
    (lambda: bq.server_time_per_job(bq.Exponential(1), 4, 6), "needed must be an integer with 1 <= needed"),
    (lambda: bq.build_backlogged_chain(8, 4, 2).stationary("power"), "method must be 'auto', 'dense', 'levels'"),
    (lambda: bq.build_backlogged_chain(32, 16, 16).stationary("dense"),
     "method 'dense' takes chains of at most 2,000 states (this one has 9,562)"),
]


@pytest.mark.parametrize("call, fragment", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_bad_input_gets_one_clear_error(call, fragment):
    with pytest.raises(ParameterError) as info:
        call()
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


def test_there_are_at_least_twenty_kinds_of_bad_input():
    assert len(CASES) >= 20


def test_integral_floats_are_accepted_as_integers():
    system = bq.BarrierSystem(8.0, 4.0, 3.0)
    assert (system.servers, system.tasks, system.needed) == (8, 4, 3)
    assert all(isinstance(v, int) for v in (system.servers, system.tasks, system.needed))


def test_empirical_file_with_text_is_rejected(tmp_path):
    f = tmp_path / "times.csv"
    f.write_text("1.0\nabc\n")
    with pytest.raises(ParameterError, match=re.escape("must hold numbers only")):
        bq.parse_task_distribution(f"empirical:file={f}")


@pytest.mark.parametrize("overhead", ["paper", "event"])
def test_a_load_with_spark_overhead_sets_the_arrival_rate(overhead):
    """Spark's overhead models need an arrival rate to be described; a load alone is enough to build one,
    and the rate found offers that load (paper's model: lambda (k/mu + k E[min(U(0,R), Exp(lambda))]) / s)."""
    from scipy import optimize

    from barrier_queues.overhead import OverheadModel

    system = bq.system_at_utilization({"servers": 16, "tasks": 4, "overhead": overhead}, 0.5)
    assert system.overhead == overhead and bq.offered_utilization(system) == pytest.approx(0.5, rel=1e-12)
    if overhead == "paper":      # an independent root of the same equation
        lam = optimize.brentq(lambda x: x * 4 * (1 + OverheadModel(1.0, x).mean()) / 16 - 0.5, 1e-3, 1e3,
                              xtol=1e-15, rtol=1e-14)
        assert system.arrival_rate == pytest.approx(lam, rel=1e-11)
    else:                        # the event model adds no work: lambda = rho s / (k / mu)
        assert system.arrival_rate == pytest.approx(2.0, rel=1e-14)
    with pytest.raises(ParameterError, match="at most one of arrival_rate and utilization"):
        bq.system_at_utilization({"servers": 16, "tasks": 4, "arrival_rate": 1.0}, 0.5)
