"""The backlogged 1-barrier CTMC: sizes, solvers, closed form, simulation."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import gth_stationary, simulate_backlogged_starts

import barrier_queues as bq


def closed_form_rho(s, k):
    return k / (s * (bq.harmonic(s) - bq.harmonic(s - k)))


@pytest.mark.parametrize("s, k, l_, states, value", [
    (10, 5, 5, 53, 0.774431468961),     # Appendix A, section 4 sanity values
    (20, 10, 10, 853, 0.747639623383),
])
def test_model_sanity_values(s, k, l_, states, value):
    res = bq.ctmc_stability(s, k, l_)
    assert res.states == states
    assert res.rho_max == pytest.approx(value, abs=1e-12)  # Appendix A gives 12 digits


def test_model_sanity_value_with_stragglers_killed():
    res = bq.ctmc_stability(12, 3, 2)
    assert res.states == 6
    assert round(res.lambda_max, 4) == 5.4784


@pytest.mark.parametrize("s", [1, 2, 3, 5, 8, 12, 16, 20, 24, 30])
def test_conventional_chain_equals_closed_form_for_all_k(s):
    for k in range(1, s + 1):
        res = bq.ctmc_stability(s, k)
        assert abs(res.rho_max - closed_form_rho(s, k)) < 1e-10, (s, k)


@pytest.mark.parametrize("s, k", [(32, 16), (40, 10), (36, 12)])
def test_conventional_chain_equals_closed_form_with_the_iterative_solver(s, k):
    res = bq.ctmc_stability(s, k, method="levels")
    assert res.states > 2000
    assert abs(res.rho_max - closed_form_rho(s, k)) < 1e-10


def test_task_rate_scales_throughput_not_utilization():
    a, b = bq.ctmc_stability(16, 8, 5), bq.ctmc_stability(16, 8, 5, task_rate=2.5)
    assert b.lambda_max == pytest.approx(2.5 * a.lambda_max, rel=1e-12)
    assert b.rho_max == pytest.approx(a.rho_max, rel=1e-12)


@pytest.mark.parametrize("s, k, l_", [(8, 4, 2), (10, 5, 3), (12, 3, 2), (9, 9, 4), (7, 3, 1)])
def test_direct_and_iterative_solvers_match_dense_gth(s, k, l_):
    chain = bq.build_backlogged_chain(s, k, l_)
    reference = gth_stationary(chain.generator.toarray())
    np.testing.assert_allclose(chain.stationary("direct"), reference, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(chain.stationary("levels"), reference, rtol=1e-9, atol=1e-13)


@pytest.mark.parametrize("s, k, l_", [(8, 4, 2), (10, 5, 3), (12, 3, 2), (12, 6, 4), (7, 3, 1), (20, 10, 7)])
def test_the_dense_solver_matches_sparse_lu_and_gth(s, k, l_):
    """Chains of at most 2,000 states are solved dense by default (numpy's LU of the same equations as the
    sparse one); against sparse LU and the GTH reference, with the dense generator equal to the sparse one."""
    chain = bq.build_backlogged_chain(s, k, l_)
    assert chain.size <= bq.ctmc.DENSE_MAX_STATES
    q = chain.dense_generator()
    assert np.array_equal(q, chain.generator.toarray())
    dense = chain.stationary()
    assert np.array_equal(dense, chain.stationary("dense"))
    np.testing.assert_allclose(dense, gth_stationary(q), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(dense, chain.stationary("direct"), rtol=1e-10, atol=1e-14)
    assert bq.ctmc_stability(s, k, l_).lambda_max == pytest.approx(
        bq.ctmc_stability(s, k, l_, method="direct").lambda_max, rel=1e-13)


@pytest.mark.parametrize("s, k, l_", [(12, 6, 4), (16, 8, 5), (20, 10, 7), (14, 3, 1)])
def test_small_chains_keep_the_states_breadth_first_search_reaches(monkeypatch, s, k, l_):
    """The reachable states of a small chain are found with numpy; the same chain (states, transitions) as
    scipy's breadth-first search gives."""
    small = bq.build_backlogged_chain(s, k, l_)
    monkeypatch.setattr(bq.ctmc, "DENSE_MAX_STATES", 0)
    large = bq.build_backlogged_chain(s, k, l_)
    for name in ("states", "src", "dst", "rate", "start", "start_rates"):
        assert np.array_equal(getattr(small, name), getattr(large, name)), name


def test_a_simulation_of_a_small_chain_imports_no_scipy():
    """The stability check of an (s,k,l) simulation solves its CTMC without scipy (whose import took 0.3-0.4 s
    of the command here)."""
    import subprocess
    import sys

    code = ("import sys, barrier_queues as bq; bq.simulate(bq.BarrierSystem(servers=12, tasks=6, needed=4, "
            "arrival_rate=1.5), jobs=2000, seed=1); print(sorted(m for m in sys.modules if m.startswith('scipy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("s, k, l_", [(24, 8, 5), (30, 10, 9), (20, 10, 7)])
def test_iterative_solver_matches_sparse_lu_on_larger_chains(s, k, l_):
    chain = bq.build_backlogged_chain(s, k, l_)
    direct, levels = chain.stationary("direct"), chain.stationary("levels")
    assert direct @ chain.start_rates == pytest.approx(levels @ chain.start_rates, rel=1e-11)
    np.testing.assert_allclose(levels, direct, rtol=1e-8, atol=1e-15)


@pytest.mark.parametrize("s, k, l_", [(4, 2, 1), (16, 8, 6), (12, 3, 2), (20, 10, 7), (30, 10, 9)])
def test_feasible_count_matches_enumeration(s, k, l_):
    states = bq.ctmc.enumerate_feasible_states(s, k, l_)
    assert states.shape == (bq.count_feasible_states(s, k, l_), l_)
    jmin = k - l_ + 1
    busy = states.astype(int) @ np.arange(jmin, k + 1)
    assert ((busy > s - k) & (busy <= s)).all()
    assert len({tuple(r) for r in states}) == states.shape[0]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 14).flatmap(lambda s: st.tuples(
    st.just(s), st.integers(1, s)).flatmap(lambda sk: st.tuples(
        st.just(sk[0]), st.just(sk[1]), st.integers(1, sk[1])))))
def test_chain_invariants(skl):
    s, k, l_ = skl
    chain = bq.build_backlogged_chain(s, k, l_)
    busy = chain.busy_workers
    # only backlogged states; levels sorted descending; generator rows sum to zero
    assert ((s - busy < k) & (busy <= s)).all()
    assert (np.diff(busy) <= 0).all()
    q = chain.generator
    np.testing.assert_allclose(np.asarray(q.sum(axis=1)).ravel(), 0.0, atol=1e-12)
    # every state's total exit rate (self-loops included) is b(n) mu
    out = np.bincount(chain.src, weights=chain.rate, minlength=chain.size)
    self_loops = chain.start_rates - np.bincount(chain.src, weights=chain.rate * chain.start,
                                                 minlength=chain.size)
    np.testing.assert_allclose(out + self_loops, busy, rtol=1e-12)
    pi = chain.stationary("direct")
    assert pi.min() > 0
    res = bq.ctmc_stability(s, k, l_)
    # releasing workers early can only help: the 1-barrier system sustains at
    # least the 2-barrier rate; and utilization cannot exceed 1
    assert res.lambda_max >= bq.two_barrier_lambda_max(s, k, l_) * (1 - 1e-12)
    assert res.rho_max <= 1 + 1e-12
    if l_ == k:
        assert abs(res.rho_max - closed_form_rho(s, k)) < 1e-10


@pytest.mark.slow
@pytest.mark.parametrize("s, k, l_", [(12, 3, 2), (16, 8, 6), (10, 5, 3), (16, 4, 4)])
def test_chain_matches_plain_python_simulation(s, k, l_):
    lam, half = simulate_backlogged_starts(s, k, l_, horizon=30_000.0, seed=20251214 + s + k + l_)
    exact = bq.ctmc_stability(s, k, l_).lambda_max
    assert abs(lam - exact) < half, (lam, half, exact)
    assert half < 0.01 * exact  # the test has power: the CI is tight


def test_state_space_guard_names_the_limit():
    with pytest.raises(bq.ParameterError, match="7,298,397 feasible states"):
        bq.ctmc_stability(64, 16, 16, max_states=1_000_000)
