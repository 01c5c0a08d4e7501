"""The plain-Python Brent root finder and minimiser against scipy.optimize (the bounds use them to avoid
importing scipy.optimize, which alone takes longer than a whole bound answer)."""

import math

import numpy as np
import pytest
from scipy import optimize

from barrier_queues import BarrierSystem, ParameterError
from barrier_queues._solvers import brent_minimize, brent_root
from barrier_queues.bounds import BoundProblem

ROOTS = [
    (lambda x: x**3 - 2 * x - 5, 2.0, 3.0),
    (lambda x: math.cos(x) - x, 0.0, 1.0),
    (lambda x: math.exp(x) - 1e6, 0.0, 50.0),
    (lambda x: math.log(x), 0.01, 1e8),
    (lambda x: (x - 1e-9), 0.0, 1.0),
    (lambda x: math.tanh(50 * (x - 0.3)), -1.0, 1.0),
    (lambda x: (x - 0.5) ** 3, -1.0, 2.0),          # a flat, multiple root
]


@pytest.mark.parametrize("f, a, b", ROOTS)
def test_root_agrees_with_scipy_brentq(f, a, b):
    ours = brent_root(f, a, b, xtol=1e-14, rtol=1e-14)
    theirs = optimize.brentq(f, a, b, xtol=1e-14, rtol=1e-14)
    assert ours == pytest.approx(theirs, abs=1e-12, rel=1e-12)


def test_root_needs_a_sign_change():
    with pytest.raises(ParameterError, match="sign change"):
        brent_root(lambda x: x * x + 1, -1.0, 1.0)


MINIMA = [
    (lambda x: (x - 0.7) ** 2, 0.0, 2.0),
    (lambda x: math.cosh(x - 3.0) + 0.1 * x, 0.0, 10.0),
    (lambda x: 1 / x + x, 1e-6, 50.0),
    (lambda x: abs(x - 0.123), 0.0, 1.0),
    (lambda x: -math.sin(x), 0.0, 3.0),
]


@pytest.mark.parametrize("f, a, b", MINIMA)
def test_minimiser_agrees_with_scipy_bounded(f, a, b):
    x, fx = brent_minimize(f, a, b, xatol=1e-9)
    res = optimize.minimize_scalar(f, bounds=(a, b), method="bounded", options={"xatol": 1e-9})
    assert x == pytest.approx(res.x, abs=1e-7) and fx == pytest.approx(f(x)) and fx <= res.fun + 1e-12


@pytest.mark.parametrize("servers, tasks, load", [(16, 8, 0.3), (16, 1, 0.9), (64, 16, 0.7), (8, 8, 0.95)])
def test_theta_star_equals_scipy_on_the_bounds_own_function(servers, tasks, load):
    system = BarrierSystem(servers, tasks, arrival_rate=1.0)
    lam = load * bound_limit(system)
    problem = BoundProblem(system.replace(arrival_rate=lam))
    sup = problem.spacing.theta_sup
    f = lambda t: float(problem.log_m(t))     # noqa: E731
    lo, hi = sup * 1e-9, sup * (1 - 1e-12)
    if f(hi) <= 0:
        pytest.skip("the MGF stays finite to the edge: theta* is the edge")
    theirs = optimize.brentq(f, lo, hi, xtol=1e-14 * sup, rtol=1e-14, maxiter=500)
    assert problem.theta_star == pytest.approx(theirs, rel=1e-12)
    assert abs(f(problem.theta_star)) < 1e-10


def bound_limit(system):
    from barrier_queues import stability_limit

    return stability_limit(system.servers, system.tasks).lambda_max


def test_brent_minimize_finds_the_interior_minimum_of_a_sampled_quantile_curve():
    xs = np.linspace(0.01, 0.99, 99)
    curve = lambda t: float(np.interp(t, xs, (xs - 0.42) ** 2 + 1))   # noqa: E731
    x, _ = brent_minimize(curve, 0.01, 0.99, xatol=1e-8)
    assert abs(x - 0.42) < 0.011
