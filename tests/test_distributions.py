"""Task laws: moments against integration, sampling against CIs, spec parsing."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

import barrier_queues as bq

LAWS = [
    bq.Exponential(2.0),
    bq.HyperExponential.bimodal(0.9, 10.0, 0.1),
    bq.Erlang(4, 4.0),
    bq.Deterministic(1.5),
    bq.Empirical([0.5, 1.0, 1.0, 4.0]),
]


@pytest.mark.parametrize("law", LAWS, ids=lambda d: d.name)
def test_mean_is_the_integral_of_the_survival_function(law):
    points = [p for p in law.breakpoints] or None
    upper = 200 * law.mean()
    value = integrate.quad(lambda t: float(law.sf(t)), 0, upper, points=points, limit=400)[0]
    assert value == pytest.approx(law.mean(), rel=1e-7)


@pytest.mark.parametrize("law", LAWS, ids=lambda d: d.name)
def test_sampling_is_seeded_and_has_the_right_mean(law):
    a = law.rvs(100_000, random_state=7)
    b = law.rvs(100_000, random_state=7)
    np.testing.assert_array_equal(a, b)
    assert (a >= 0).all()
    sd = a.std(ddof=1)
    if sd == 0:
        assert a.mean() == law.mean()
    else:
        assert abs(a.mean() - law.mean()) < stats.norm.ppf(0.9995) * sd / math.sqrt(a.size)


def test_sampled_distribution_matches_cdf_by_ks_test():
    for law in LAWS[:3]:
        x = law.rvs(20_000, random_state=11)
        assert stats.kstest(x, law.cdf).pvalue > 0.001


@pytest.mark.parametrize("spec, cls, attrs", [
    ("exponential:rate=2", bq.Exponential, {"rate": 2.0}),
    ("exp", bq.Exponential, {"rate": 1.0}),
    ("erlang:shape=3,rate=1.5", bq.Erlang, {"shape": 3, "rate": 1.5}),
    ("deterministic:value=0.25", bq.Deterministic, {"value": 0.25}),
    (" Bimodal : p=0.9 , rate1=10 , rate2=0.1 ", bq.HyperExponential, {}),
])
def test_spec_parsing(spec, cls, attrs):
    law = bq.parse_task_distribution(spec)
    assert isinstance(law, cls)
    for key, value in attrs.items():
        assert getattr(law, key) == value


def test_empirical_spec_reads_a_file(tmp_path):
    f = tmp_path / "times.txt"
    f.write_text("0.5\n1.5\n2.5\n")
    law = bq.parse_task_distribution(f"empirical:file={f}")
    assert law.mean() == pytest.approx(1.5)
    assert law.describe() == {"law": "empirical", "n": 3, "mean": 1.5}


@pytest.mark.parametrize("probs", [[0.9, 0.1], [0.2, 0.0, 0.8], [1.0], [1 / 3] * 3, [0.125] * 8, [0.1] * 10,
                                   [0.5, 0.5, 0.0], [1e-9, 1 - 1e-9]])
@pytest.mark.parametrize("size", [None, 0, 1, 5_000, (3, 7)])
def test_categorical_draws_are_numpys_choice_bit_for_bit(probs, size):
    """``categorical`` equals ``Generator.choice(len(p), size, p=p)``: the same indices, and the stream left
    where choice leaves it (the next draw is the same)."""
    from barrier_queues.distributions import categorical

    ours, numpys = np.random.default_rng(8), np.random.default_rng(8)
    got = categorical(ours, probs, size)
    want = numpys.choice(len(probs), size=size, p=probs)
    np.testing.assert_array_equal(got, want)
    assert ours.random() == numpys.random()


@pytest.mark.parametrize("size", [None, 0, 1, 10_000, (3, 7)])
def test_the_exponential_draws_are_numpys_exponential_bit_for_bit(size):
    """``Exponential(rate).rvs`` (numpy's fill loop, then scaled) equals ``Generator.exponential(1 / rate)``,
    and leaves the stream where it does."""
    ours, numpys = np.random.default_rng(4), np.random.default_rng(4)
    got = bq.Exponential(0.37).rvs(size=size, random_state=ours)
    want = numpys.exponential(1 / 0.37, size)
    np.testing.assert_array_equal(got, want)
    assert np.shape(got) == np.shape(want) and type(got) is type(want)
    assert ours.random() == numpys.random()


def test_the_hyperexponential_draws_are_the_choice_then_exponential_ones_bit_for_bit():
    """The law's draws: phases as ``choice`` draws them, then unit exponentials divided by the phase's rate."""
    law = bq.HyperExponential([0.6, 0.3, 0.1], [3.0, 1.0, 0.1])
    rng = np.random.default_rng(2)
    phase = rng.choice(3, size=10_000, p=law.probs)
    want = rng.exponential(1.0, 10_000) / law.rates[phase]
    np.testing.assert_array_equal(law.rvs(size=10_000, random_state=np.random.default_rng(2)), want)
    rng = np.random.default_rng(2)
    phase = rng.choice(3, p=law.probs)
    assert law.rvs(random_state=np.random.default_rng(2)) == rng.exponential(1.0) / law.rates[phase]
