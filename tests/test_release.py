"""Partial barriers released online (Appendix B, section 1): the release law against simulation."""

import numpy as np
import pytest

import barrier_queues as bq
from barrier_queues.reference import knee
from barrier_queues.release import fixed_law, knee_law, knee_release_sorted, release_law, timeout_law, two_barrier_limit
from barrier_queues.saturated import saturated_throughput

S = bq.BarrierSystem


def test_vectorised_knee_equals_the_reference_row_by_row():
    rng = np.random.default_rng(1)
    for law, f, w, gain in ((bq.Exponential(1), 0.5, 0.0, 0.125),
                            (bq.HyperExponential.bimodal(0.9, 2.0, 0.1), 0.25, 0.3, 0.3),
                            (bq.Erlang(4, 4), 0.75, 0.0, 0.125)):
        x = np.asarray(law.rvs(size=(2000, 9), random_state=rng))
        t = np.sort(x, axis=1)
        d, done = knee_release_sorted(t, f, w, gain)
        for row, dd, ll in zip(t, d, done, strict=True):
            assert (dd, ll) == knee(list(row), f, w, gain)


def test_timeout_law_is_exact_against_a_large_sample():
    law = bq.Erlang(2, 2.0)
    k, timeout = 6, 1.2
    exact = timeout_law(law, k, timeout)
    x = law.rvs(size=(400_000, k), random_state=np.random.default_rng(2))
    d = np.minimum(x.max(axis=1), timeout)
    work = np.minimum(x, timeout).sum(axis=1)
    useful = np.where(x <= timeout, x, 0).sum(axis=1)
    for name, sample in (("mean_departure", d), ("mean_work", work), ("mean_useful", useful),
                         ("mean_completed", (x <= timeout).sum(axis=1))):
        se = sample.std() / np.sqrt(sample.size)
        assert abs(getattr(exact, name) - sample.mean()) < 4 * se, name


def test_fixed_law_is_the_papers_closed_form():
    r = fixed_law(bq.Exponential(1.0), 10, 8)
    assert r.mean_departure == pytest.approx(bq.harmonic(10) - bq.harmonic(2))
    assert r.mean_work == pytest.approx(8.0)                                    # eq. 13: l / mu
    assert r.mean_useful == pytest.approx(8 - 2 * (bq.harmonic(10) - bq.harmonic(2)))   # eq. 15
    assert release_law(S(10, 10, 8)).mean_departure == r.mean_departure


def test_knee_with_full_fraction_never_releases_early():
    r = knee_law(bq.Exponential(1.0), 8, min_fraction=1.0, samples=20_000)
    assert r.mean_completed == 8.0
    assert r.mean_departure == pytest.approx(bq.harmonic(8), rel=0.02)


@pytest.mark.slow
@pytest.mark.parametrize("kwargs", [
    dict(release="knee", task_dist="bimodal:p=0.9,rate1=2,rate2=0.2"),
    dict(release="knee", min_fraction=0.25, min_wait=0.2),
    dict(release="timeout", timeout=1.5, task_dist="erlang:shape=3,rate=3"),
], ids=["knee bimodal", "knee exponential f=0.25 w=0.2", "timeout erlang"])
def test_two_barrier_stability_limit_from_the_release_law_matches_saturated_simulation(kwargs):
    system = S(servers=16, tasks=8, barriers=2, **kwargs)
    exact = two_barrier_limit(system)
    est = saturated_throughput(system, jobs=100_000, replications=10, seed=31, level=0.999)
    lo, hi = est["lambda_max_ci"]
    if "lambda_max_ci" in exact:          # Monte Carlo law: its own interval must overlap
        assert exact["lambda_max_ci"][0] <= hi and lo <= exact["lambda_max_ci"][1]
    else:
        assert lo <= exact["lambda_max"] <= hi
    assert hi - lo < 0.02 * exact["lambda_max"]
    r = release_law(system)
    assert est["mean_completed_tasks"] == pytest.approx(r.mean_completed, rel=0.01)
    assert est["rho_useful"] == pytest.approx(exact["rho_useful"], rel=0.02)


def test_knee_law_of_a_deterministic_task_law_completes_every_task():
    r = knee_law(bq.Deterministic(1.0), 6, samples=1000)
    assert r.mean_completed == 6 and r.mean_departure == 1.0
