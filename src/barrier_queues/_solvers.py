"""Brent's root finder and minimiser on an interval, in plain Python.

The bounds answer one question in a fraction of a second, and importing
``scipy.optimize`` pulls in scipy.linalg, scipy.sparse and scipy.fft, which
took several times a whole ``barrier-queues bound`` answer (timings:
CHANGELOG). These two classic algorithms (R. P. Brent, *Algorithms for
Minimization without Derivatives*, 1973, chapters 4 and 5) are all the
bounds need; the tests check them against ``scipy.optimize.brentq`` and
``scipy.optimize.minimize_scalar(method="bounded")`` on the bounds' own
functions and on textbook cases.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ._validation import ParameterError

_EPS = 2.220446049250313e-16


def brent_root(f: Callable[[float], float], a: float, b: float, xtol: float = 1e-12, rtol: float = 4 * _EPS,
               maxiter: int = 200) -> float:
    """A root of ``f`` in ``[a, b]`` where ``f(a)`` and ``f(b)`` differ in sign (Brent's zeroin).

    Inverse quadratic interpolation or secant steps, falling back to
    bisection whenever they would not shrink the bracket fast enough; the
    result is within ``xtol + rtol |x|`` of a sign change of ``f``.
    """
    fa, fb = float(f(a)), float(f(b))
    if fa == 0.0:
        return a
    if fb == 0.0:
        return b
    if (fa > 0) == (fb > 0):
        raise ParameterError(f"the root bracket must have a sign change (f({a:.6g}) = {fa:.3g}, "
                             f"f({b:.6g}) = {fb:.3g})")
    c, fc = a, fa
    d = e = b - a
    for _ in range(maxiter):
        if (fb > 0) == (fc > 0):              # keep the root between b and c
            c, fc = a, fa
            d = e = b - a
        if abs(fc) < abs(fb):                 # b is the best estimate so far
            a, b, c = b, c, b
            fa, fb, fc = fb, fc, fb
        tol = 2 * rtol * abs(b) + 0.5 * xtol
        m = 0.5 * (c - b)
        if abs(m) <= tol or fb == 0.0:
            return b
        if abs(e) >= tol and abs(fa) > abs(fb):
            s = fb / fa
            if a == c:                        # secant
                p, q = 2 * m * s, 1 - s
            else:                             # inverse quadratic interpolation
                q, r = fa / fc, fb / fc
                p = s * (2 * m * q * (q - r) - (b - a) * (r - 1))
                q = (q - 1) * (r - 1) * (s - 1)
            if p > 0:
                q = -q
            p = abs(p)
            if 2 * p < min(3 * m * q - abs(tol * q), abs(e * q)):
                e, d = d, p / q               # accept the interpolation
            else:
                d = e = m                     # bisect
        else:
            d = e = m
        a, fa = b, fb
        b += d if abs(d) > tol else math.copysign(tol, m)
        fb = float(f(b))
    raise ParameterError(f"the root search did not converge in {maxiter} steps")


def brent_minimize(f: Callable[[float], float], a: float, b: float, xatol: float = 1e-5,
                   maxiter: int = 500) -> tuple[float, float]:
    """``(x, f(x))`` minimising ``f`` on ``[a, b]`` (Brent's localmin: golden section and parabolic steps).

    Finds a local minimum to within about ``xatol``; the caller brackets the
    basin. Returns the best point evaluated.
    """
    golden = 0.5 * (3.0 - math.sqrt(5.0))
    x = w = v = a + golden * (b - a)
    fx = fw = fv = float(f(x))
    d = e = 0.0
    for _ in range(maxiter):
        mid = 0.5 * (a + b)
        tol1 = math.sqrt(_EPS) * abs(x) + xatol / 3.0
        tol2 = 2.0 * tol1
        if abs(x - mid) <= tol2 - 0.5 * (b - a):
            return x, fx
        parabolic = False
        if abs(e) > tol1:                     # try a parabola through x, w, v
            r = (x - w) * (fx - fv)
            q = (x - v) * (fx - fw)
            p = (x - v) * q - (x - w) * r
            q = 2.0 * (q - r)
            if q > 0:
                p = -p
            q = abs(q)
            if abs(p) < abs(0.5 * q * e) and q * (a - x) < p < q * (b - x):
                e, d = d, p / q
                u = x + d
                if u - a < tol2 or b - u < tol2:
                    d = math.copysign(tol1, mid - x)
                parabolic = True
        if not parabolic:                     # golden-section step into the larger part
            e = (b - x) if x < mid else (a - x)
            d = golden * e
        u = x + (d if abs(d) >= tol1 else math.copysign(tol1, d))
        fu = float(f(u))
        if fu <= fx:
            if u < x:
                b = x
            else:
                a = x
            v, fv, w, fw, x, fx = w, fw, x, fx, u, fu
        else:
            if u < x:
                a = u
            else:
                b = u
            if fu <= fw or w == x:
                v, fv, w, fw = w, fw, u, fu
            elif fu <= fv or v in (x, w):
                v, fv = u, fu
    return x, fx
