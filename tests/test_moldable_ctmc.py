"""The exact CTMC of small moldable systems (Appendix B, section 7): the section's oracles, the simulator
against it, and its refusals."""

import math

import pytest

from barrier_queues import ParameterError
from barrier_queues.bounds import erlang_c
from barrier_queues.moldable import simulate_moldable
from barrier_queues.moldable_ctmc import deal, moldable_ctmc

POLICIES = [("take-fraction", {"take_fraction": 0.5}), ("take-random", {}), ("take-random-all", {}),
            ("fixed", {"requirement": 2}), ("patience", {"patience_wait": "min"}),
            ("patience", {"patience_wait": "mean"})]


def test_dealing_k_tasks_onto_m_workers():
    assert deal(8, 3) == (3, 3, 2)
    assert deal(7, 7) == (1,) * 7
    assert deal(5, 1) == (5,)
    assert sum(deal(13, 4)) == 13


@pytest.mark.parametrize("policy, extra", POLICIES)
@pytest.mark.parametrize("barriers", [1, 2])
def test_one_worker_is_mg1_with_erlang_service(policy, extra, barriers):
    """s = 1: W = lambda k (k+1) / (2 mu^2 (1 - lambda k / mu)), execution k / mu."""
    lam, k, mu = 0.1, 3, 1.5
    extra = {**extra, "requirement": 1} if policy == "fixed" else extra
    r = moldable_ctmc(1, k, lam, policy, barriers=barriers, task_rate=mu, **extra)
    assert r.mean_waiting == pytest.approx(lam * k * (k + 1) / (2 * mu**2 * (1 - lam * k / mu)), rel=1e-7)
    assert r.mean_execution == pytest.approx(k / mu, rel=1e-9)
    assert r.mean_workers == pytest.approx(1.0, rel=1e-12)


@pytest.mark.parametrize("policy, extra", POLICIES)
def test_one_task_per_job_is_erlang_c(policy, extra):
    s, lam = 3, 2.1
    extra = {**extra, "requirement": 1} if policy == "fixed" else extra
    r = moldable_ctmc(s, 1, lam, policy, **extra)
    assert r.mean_waiting == pytest.approx(erlang_c(s, lam) / (s - lam), rel=1e-7)
    assert r.mean_execution == pytest.approx(1.0, rel=1e-9)


def test_take_everything_with_two_barriers_and_s_equal_k_is_split_merge():
    """take-fraction 1, 2 barriers, s = k; and a fixed requirement of k with 1 barrier (a job starts only when
    all k workers are free, that is when the previous one departs): M/G/1 with G the max of k Exp(mu)."""
    k, lam = 3, 0.3
    h1, h2 = sum(1 / i for i in range(1, k + 1)), sum(1 / i**2 for i in range(1, k + 1))
    w = lam * (h2 + h1**2) / (2 * (1 - lam * h1))
    for r in (moldable_ctmc(k, k, lam, "take-fraction", take_fraction=1.0, barriers=2),
              moldable_ctmc(k, k, lam, "fixed", requirement=k)):
        assert r.mean_waiting == pytest.approx(w, rel=1e-7)
        assert r.mean_execution == pytest.approx(h1, rel=1e-9)
        assert r.mean_workers == pytest.approx(k, rel=1e-12)


def test_a_fraction_at_most_one_over_s_takes_one_worker_and_the_barriers_coincide():
    one = moldable_ctmc(3, 4, 0.5, "take-fraction", take_fraction=0.3)
    two = moldable_ctmc(3, 4, 0.5, "take-fraction", take_fraction=0.3, barriers=2)
    assert one.mean_workers == pytest.approx(1.0, rel=1e-12)
    assert one.mean_execution == pytest.approx(4.0, rel=1e-9)
    assert two.mean_waiting == pytest.approx(one.mean_waiting, rel=1e-9)


@pytest.mark.parametrize("policy, extra", POLICIES)
def test_busy_workers_carry_the_offered_work(policy, extra):
    """With 1 barrier a worker is busy exactly while it runs tasks: E[busy] = lambda k / mu (Little)."""
    r = moldable_ctmc(3, 4, 0.3, policy, task_rate=2.0, **extra)
    assert r.mean_busy_workers == pytest.approx(0.3 * 4 / 2.0, rel=1e-7)
    assert r.top_level_probability < 1e-12 and r.truncation_change < 1e-7


@pytest.mark.parametrize("policy, extra", POLICIES)
@pytest.mark.parametrize("barriers", [1, 2])
def test_the_simulator_agrees_with_the_chain(policy, extra, barriers):
    """s = 3, k = 5 at lambda = 0.2: the simulator's 99 % intervals (8 replications of 30,000 jobs) cover the
    chain's mean waiting, execution and workers (workers exactly, where the policy fixes them)."""
    exact = moldable_ctmc(3, 5, 0.2, policy, barriers=barriers, **extra)
    sim = simulate_moldable(3, 5, 0.2, policy, barriers=barriers, jobs=30_000, replications=8, seed=7,
                            level=0.99, **extra)
    assert sim["stable"]
    for key in ("waiting", "execution", "workers"):
        lo, hi = sim["ci"][key]
        value = getattr(exact, f"mean_{key}")
        assert lo - 1e-9 * abs(value) <= value <= hi + 1e-9 * abs(value), (key, value, lo, hi)


def test_refusals():
    with pytest.raises(ParameterError, match="patience_wait 'height' has no exact chain"):
        moldable_ctmc(3, 4, 0.2, "patience", patience_wait="height")
    with pytest.raises(ParameterError, match="work-conserving limit s mu / k = 0.5"):
        moldable_ctmc(2, 4, 0.5, "take-fraction", take_fraction=0.5)
    # a job holds 2 of the 3 workers until its max of Erlang(3) and Erlang(2) ends (mean 3.6): one at a time
    with pytest.raises(ParameterError, match="is the system stable"):
        moldable_ctmc(3, 5, 0.3, "fixed", requirement=2, barriers=2, max_states=2_000)
    with pytest.raises(ParameterError, match="requirement must be at most servers"):
        moldable_ctmc(2, 4, 0.1, "fixed", requirement=3)
    with pytest.raises(ParameterError, match="take_fraction must be given"):
        moldable_ctmc(2, 4, 0.1, "take-fraction")
    assert math.isfinite(moldable_ctmc(2, 4, 0.4, "take-fraction", take_fraction=0.5).mean_waiting)


def test_the_record_beside_forkulators_approximation_is_current():
    """data/peers/forkulator_ctmc.json (benchmarks/moldable_ctmc_peer.py): every exact value there is what the
    chain gives today (s = 4 rows recomputed), and lies inside the simulator's 95 % intervals stored beside it."""
    import json
    from pathlib import Path

    record = json.loads((Path(__file__).resolve().parents[1] / "data" / "peers" / "forkulator_ctmc.json")
                        .read_text())
    assert len(record["rows"]) == 16
    for row in record["rows"]:
        for key in ("waiting", "execution"):
            lo, hi = row["simulated_ci"][key]
            assert lo <= row["exact"][f"mean_{key}"] <= hi, (row["servers"], row["load"], key)
        if row["servers"] == 4:
            exact = moldable_ctmc(4, 4, row["arrival_rate"], "take-fraction", take_fraction=row["take_fraction"])
            assert exact.mean_waiting == pytest.approx(row["exact"]["mean_waiting"], rel=1e-6)
            assert exact.mean_execution == pytest.approx(row["exact"]["mean_execution"], rel=1e-6)


def test_the_benchmark_table_and_sentence_follow_from_the_record():
    import json
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    record = json.loads((root / "data" / "peers" / "forkulator_ctmc.json").read_text())
    readme = (root / "book" / "reference" / "benchmarks-rules.md").read_text()
    section = readme[readme.index("## The exact chain of a small moldable system"):]
    section = section[:section.index("\n## ")]
    rows = [line.split("|")[1:-1] for line in section.splitlines() if re.match(r"\| \d", line)]
    mine = [r for r in record["rows"] if r["take_fraction"] == 0.5]
    assert len(rows) == len(mine) == 8
    for cells, r in zip(rows, mine, strict=True):
        assert float(cells[3]) == round(r["exact"]["mean_waiting"], 4)
        assert cells[4].strip().startswith(f"{r['approximation']['mean_waiting']:.4f} "
                                           f"({100 * r['approximation_error']['waiting']:+.0f} %)")
        assert float(cells[6]) == round(r["exact"]["mean_execution"], 4)
    waiting = [-100 * r["approximation_error"]["waiting"] for r in record["rows"]]
    execution = [100 * r["approximation_error"]["execution"] for r in record["rows"]]
    assert f"by {min(waiting):.0f} % to {max(waiting):.0f} % on all {len(waiting)} systems" in " ".join(
        section.split())
    assert f"by {abs(min(execution)):.0f} % to +{max(execution):.0f} %" in " ".join(section.split())


def test_the_exact_stability_limits():
    """The backlogged chain's start rate: s mu / k for the work-conserving policies (1 barrier); mu / H_k where
    one job at a time holds all k = s workers (a fixed requirement of k; patience with 2 barriers, which takes
    every worker once all are free)."""
    from barrier_queues.moldable_ctmc import moldable_saturated_ctmc

    for policy, extra in (("take-fraction", {"take_fraction": 0.5}), ("take-random", {})):
        r = moldable_saturated_ctmc(4, 7, policy, task_rate=2.0, **extra)
        assert r["lambda_max"] == pytest.approx(4 * 2.0 / 7, rel=1e-10)
        assert r["rho_max"] == pytest.approx(1.0, rel=1e-10)
    h4 = 1 + 1 / 2 + 1 / 3 + 1 / 4
    assert moldable_saturated_ctmc(4, 4, "fixed", requirement=4)["lambda_max"] == pytest.approx(1 / h4, rel=1e-12)
    assert moldable_saturated_ctmc(4, 4, "patience", barriers=2)["lambda_max"] == pytest.approx(1 / h4, rel=1e-12)
    with pytest.raises(ParameterError, match="height"):
        moldable_saturated_ctmc(4, 4, "patience", patience_wait="height")


@pytest.mark.parametrize("policy, extra", [p for p in POLICIES if p[0] != "take-fraction"])
@pytest.mark.parametrize("barriers", [1, 2])
def test_the_saturated_simulation_meets_the_exact_limit(policy, extra, barriers):
    """s = 3, k = 5: the simulated limit's 99 % interval (8 replications of 20,000 jobs, all waiting at time 0)
    covers the backlogged chain's lambda_max."""
    from barrier_queues.moldable import saturated_moldable
    from barrier_queues.moldable_ctmc import moldable_saturated_ctmc

    exact = moldable_saturated_ctmc(3, 5, policy, barriers=barriers, **extra)["lambda_max"]
    sim = saturated_moldable(3, 5, policy, barriers=barriers, jobs=20_000, replications=8, seed=11, level=0.99,
                             **extra)
    lo, hi = sim["lambda_max_ci"]
    assert lo <= exact <= hi, (exact, lo, hi)


def test_a_saturated_moldable_run_on_the_command_line():
    import json
    import subprocess
    import sys

    cli = [sys.executable, "-m", "barrier_queues.cli", "simulate", "-s", "4", "-k", "4", "--moldable",
           "take-random-all", "--saturated", "--jobs", "5000", "--replications", "4", "--seed", "1"]
    out = json.loads(subprocess.run(cli + ["--json"], capture_output=True, text=True, check=True).stdout)
    assert out["mode"] == "saturated" and out["lambda_max_ci"][0] < out["lambda_max"] < out["lambda_max_ci"][1]
    assert out["config"]["moldable"] == "take-random-all"
    r = subprocess.run(cli + ["--arrival-rate", "0.5"], capture_output=True, text=True)
    assert r.returncode == 2 and "--arrival-rate must not be given with --saturated" in r.stderr


def test_the_manuals_limits_are_the_chapters():
    """The manual's 'gives up about 9 %' and 'about 70 %' are the moldable chapter's saturated limits
    (results/moldable_limits.csv) at s = k = 16, rounded."""
    from pathlib import Path

    import pandas as pd

    root = Path(__file__).resolve().parents[1]
    limits = pd.read_csv(root / "results" / "moldable_limits.csv")
    col = "rho_max simulated, s = k = 16"
    patience = limits[(limits.policy == "patience (min)") & (limits.barriers == 1)][col].iloc[0]
    greedy = limits[(limits.policy == "take-fraction 1") & (limits.barriers == 2)][col].iloc[0]
    text = " ".join((root / "book" / "reference" / "manual.md").read_text().split())
    assert f"gives up about {round(100 * (1 - patience))} % at `s = k = 16`" in text
    assert f"2 barriers about {round(100 * (1 - greedy))} %" in text


@pytest.mark.parametrize("policy, extra", POLICIES)
@pytest.mark.parametrize("barriers", [1, 2])
def test_the_state_count_from_the_first_level_is_the_built_chains(policy, extra, barriers):
    """The count that refuses a chain too large before building it, n_0 + q_max n_1 from the chain at limit 1,
    equals the states of the chains built at limits 1, 3 and 16; past a bound it says so (the bound + 1)."""
    from barrier_queues import moldable_ctmc as mc

    chain = mc._checked_chain(5, 4, 0.3, policy, extra.get("take_fraction"), extra.get("patience_wait"),
                              barriers, 1.0, extra.get("requirement"))
    for q_max in (1, 3, 16):
        built = mc._explore([(0, 0, ())], lambda x, q=q_max: ((rate, (a, b, c), 0.0) for rate, a, b, c, _ in
                                                              chain.events(*x, q)), 10**6, "")[0]
        assert mc._states_at(chain, q_max, 10**6) == len(built)
        assert mc._states_at(chain, q_max, len(built) - 1) == len(built)     # the bound + 1


def test_a_chain_too_large_is_refused_before_it_is_built(monkeypatch):
    """16 workers and 16 tasks: refused from the first level's states, before the first truncation is built
    (which took 12 s before it passed the bound)."""
    from barrier_queues import moldable_ctmc as mc

    def never(*args, **kwargs):
        raise AssertionError("the chain was built")

    monkeypatch.setattr(mc, "_solve", never)
    with pytest.raises(ParameterError, match="too large at any load"):
        moldable_ctmc(16, 16, 0.05, "take-fraction", take_fraction=0.5, max_states=20_000)
