"""Task service-time laws.

Each law exposes the scipy.stats interface the rest of the library uses
(``mean()``, ``cdf(t)``, ``sf(t)``, ``rvs(size, random_state)``), plus
``describe()`` (a JSON-able dict) and, where one exists, an exact
``order_stat_mean(j, n)``. Any frozen scipy.stats distribution with support on
``[0, inf)`` can be used wherever a task law is accepted
(:func:`as_task_distribution` wraps it).

The hyperexponential and deterministic laws are written here rather than taken
from scipy.stats because scipy has no hyperexponential, and its degenerate
"deterministic" stand-ins (e.g. ``uniform(d, 0)``) are rejected by scipy; the
classes are a few lines each and vectorised.
"""

from __future__ import annotations

import abc
import functools
import math
from pathlib import Path

import numpy as np

from ._validation import ParameterError, check_int, check_positive, check_probability
from .order_stats import HYPEREXP_EXACT_MAX_N, exp_order_stat_mean, hyperexp2_order_stat_mean


class TaskDistribution(abc.ABC):
    """Base class of task laws on ``[0, inf)``."""

    name = "task-law"
    #: points where the CDF jumps or bends sharply (help numerical integration)
    breakpoints: tuple = ()
    #: immutable and hashable: order-statistic integrals of the law may be cached (order_stats)
    cacheable = True

    @abc.abstractmethod
    def mean(self) -> float:
        """See the class docstring."""

    @abc.abstractmethod
    def cdf(self, t):
        """See the class docstring."""

    def sf(self, t):
        return 1.0 - self.cdf(t)

    @abc.abstractmethod
    def rvs(self, size=None, random_state=None):
        """See the class docstring."""

    @abc.abstractmethod
    def describe(self) -> dict:
        """See the class docstring."""

    def order_stat_mean(self, j: int, n: int) -> float | None:
        """Exact E[X_(j:n)] if known in closed form, else ``None``."""
        return None

    def _key(self) -> tuple:
        """What makes two laws equal (a hashable tuple): the law's name and parameters."""
        return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in self.describe().items()))

    def __eq__(self, other):
        return type(self) is type(other) and self._key() == other._key()

    def __hash__(self):
        return hash((type(self).__name__, self._key()))

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.describe().items() if k != "law")
        return f"{type(self).__name__}({args})"


def _rng(random_state) -> np.random.Generator:
    return np.random.default_rng(random_state)


#: categorical draws of at most this many categories compare with the CDF instead of searching it
COMPARE_MAX = 8


def categorical(rng: np.random.Generator, probs, size=None):
    """Indices drawn with probabilities ``probs``: ``rng.choice(len(probs), size, p=probs)``, bit for bit.

    The same uniforms in the same order and the same CDF as numpy's
    ``Generator.choice`` (``cdf = cumsum(p) / its last value``, index = how
    many CDF values are at most the uniform, ``searchsorted(side="right")``),
    tested against it. For a few categories the index is a sum of comparisons
    in ``uint8``, a few times faster than numpy's search for 2-phase laws
    (it was most of the bimodal law's draws); more take numpy's search.
    """
    cdf = np.cumsum(np.asarray(probs, dtype=np.float64))
    cdf /= cdf[-1]
    u = rng.random(size)
    if size is None or cdf.size > COMPARE_MAX:
        return cdf.searchsorted(u, side="right")
    index = np.zeros(u.shape, dtype=np.uint8)
    for c in cdf[:-1]:          # the last CDF value is 1.0, above every uniform in [0, 1)
        index += u >= c
    return index


class Exponential(TaskDistribution):
    """Exp(rate): mean 1/rate (time units)."""

    name = "exponential"

    def __init__(self, rate: float = 1.0):
        self.rate = check_positive("rate", rate, "(per unit time)")

    def mean(self):
        return 1.0 / self.rate

    def cdf(self, t):
        t = np.asarray(t, dtype=float)
        return np.where(t > 0, -np.expm1(-self.rate * np.maximum(t, 0.0)), 0.0)

    def sf(self, t):
        t = np.asarray(t, dtype=float)
        return np.where(t > 0, np.exp(-self.rate * np.maximum(t, 0.0)), 1.0)

    def rvs(self, size=None, random_state=None):
        # numpy's exponential(b) bit for bit (b e, tested), by its fill loop, scaled in place: faster per value
        x = _rng(random_state).standard_exponential(size)
        if size is None:
            return x * (1.0 / self.rate)
        x *= 1.0 / self.rate
        return x

    def describe(self):
        return {"law": self.name, "rate": self.rate}

    def order_stat_mean(self, j, n):
        return exp_order_stat_mean(j, n, self.rate)


class HyperExponential(TaskDistribution):
    """Mixture of exponentials: with probability ``probs[i]`` the rate is ``rates[i]``.

    The paper's "bimodal exponential" task law (Fig. 3 right) is the two-phase
    case, see :meth:`bimodal`.
    """

    name = "hyperexponential"

    def __init__(self, probs, rates):
        probs = np.atleast_1d(np.asarray(probs, dtype=float))
        rates = np.atleast_1d(np.asarray(rates, dtype=float))
        if probs.shape != rates.shape or probs.ndim != 1 or probs.size == 0:
            raise ParameterError("probs and rates must be equal-length non-empty lists "
                                 f"(got {probs.size} probs and {rates.size} rates)")
        for i, p in enumerate(probs):
            check_probability(f"probs[{i}]", float(p))
        for i, r in enumerate(rates):
            check_positive(f"rates[{i}]", float(r), "(per unit time)")
        if not math.isclose(probs.sum(), 1.0, rel_tol=0, abs_tol=1e-12):
            raise ParameterError(f"probs must sum to 1 (got sum {probs.sum()!r})")
        self.probs = probs / probs.sum()
        self.rates = rates

    @classmethod
    def bimodal(cls, p: float, rate1: float, rate2: float) -> HyperExponential:
        """Rate ``rate1`` with probability ``p``, else ``rate2``."""
        p = check_probability("p", p)
        return cls([p, 1.0 - p], [rate1, rate2])

    def mean(self):
        return float(np.sum(self.probs / self.rates))

    def sf(self, t):
        t = np.asarray(t, dtype=float)
        tt = np.maximum(t, 0.0)[..., None]
        return np.where(t > 0, np.sum(self.probs * np.exp(-self.rates * tt), axis=-1), 1.0)

    def cdf(self, t):
        return 1.0 - self.sf(t)

    def rvs(self, size=None, random_state=None):
        rng = _rng(random_state)
        phase = categorical(rng, self.probs, size)
        x = rng.standard_exponential(size)      # = exponential(1.0), by numpy's fill loop
        if size is None:
            return x / self.rates[phase]
        x /= self.rates.take(phase)
        return x

    def describe(self):
        return {"law": self.name, "probs": self.probs.tolist(), "rates": self.rates.tolist()}

    def order_stat_mean(self, j, n):
        """Exact for one or two phases (:func:`~barrier_queues.order_stats.hyperexp2_order_stat_mean`, n up to
        1,024); ``None`` otherwise, and :func:`~barrier_queues.order_stats.order_stat_mean` integrates."""
        if self.rates.size > 2 or n > HYPEREXP_EXACT_MAX_N:
            return None
        if self.rates.size == 1:
            return exp_order_stat_mean(j, n, float(self.rates[0]))
        return hyperexp2_order_stat_mean(j, n, float(self.probs[0]), float(self.rates[0]), float(self.rates[1]))


class Erlang(TaskDistribution):
    """Erlang(shape, rate): sum of ``shape`` iid Exp(rate); mean shape/rate."""

    name = "erlang"

    def __init__(self, shape: int, rate: float):
        self.shape = check_int("shape", shape, low=1)
        self.rate = check_positive("rate", rate, "(per unit time)")

    @functools.cached_property
    def _frozen(self):
        from scipy import stats  # imported where used: quick answers need no scipy

        return stats.gamma(a=self.shape, scale=1.0 / self.rate)

    def mean(self):
        return self.shape / self.rate

    def cdf(self, t):
        return self._frozen.cdf(t)

    def sf(self, t):
        return self._frozen.sf(t)

    def rvs(self, size=None, random_state=None):
        return _rng(random_state).gamma(self.shape, 1.0 / self.rate, size)

    def describe(self):
        return {"law": self.name, "shape": self.shape, "rate": self.rate}


class Deterministic(TaskDistribution):
    """Every task takes exactly ``value`` time units."""

    name = "deterministic"

    def __init__(self, value: float):
        self.value = check_positive("value", value, "(time units)")
        self.breakpoints = (self.value,)

    def mean(self):
        return self.value

    def cdf(self, t):
        return np.where(np.asarray(t, dtype=float) >= self.value, 1.0, 0.0)

    def rvs(self, size=None, random_state=None):
        return np.full(size if size is not None else (), self.value, dtype=float)

    def describe(self):
        return {"law": self.name, "value": self.value}

    def order_stat_mean(self, j, n):
        return self.value


#: the largest task time a law may hold: sums of a job's tasks and of a run's work stay finite (k up to 1e6
#: tasks and many jobs; 1e300 x 1e6 x 1e2 < 1.8e308, the largest double)
MAX_TIME = 1e300


class Empirical(TaskDistribution):
    """The empirical law of a sample of task times (resampled with replacement)."""

    name = "empirical"

    def __init__(self, samples):
        x = np.sort(np.asarray(samples, dtype=float).ravel())
        if x.size == 0:
            raise ParameterError("samples must contain at least one task time (got none)")
        if not np.all(np.isfinite(x)) or x[0] < 0 or x[-1] <= 0:
            raise ParameterError("samples must be finite task times >= 0 with a positive "
                                 f"maximum (got min {float(x[0])!r}, max {float(x[-1])!r})")
        if x[-1] > MAX_TIME:
            raise ParameterError(f"samples must be task times at most {MAX_TIME:g} (got max {float(x[-1])!r}): sums "
                                 "and means of such times overflow in floating point; scale the times down")
        self.samples = x
        self.breakpoints = tuple(np.unique(x).tolist())

    def mean(self):
        return float(self.samples.mean())

    def cdf(self, t):
        t = np.asarray(t, dtype=float)
        return np.searchsorted(self.samples, t, side="right") / self.samples.size

    def rvs(self, size=None, random_state=None):
        return _rng(random_state).choice(self.samples, size=size, replace=True)

    def describe(self):
        return {"law": self.name, "n": int(self.samples.size), "mean": self.mean()}

    def _key(self):
        return (self.samples.tobytes(),)

    def order_stat_mean(self, j, n):
        # The CDF is a step function: integrate P[X_(j:n) > t] exactly, piece by piece.
        values = np.unique(self.samples)
        cdf_at = self.cdf(values)  # F on [values[i], values[i+1])
        lengths = np.diff(values)
        from scipy import stats

        tail = stats.binom.cdf(j - 1, n, cdf_at[:-1])
        return float(values[0] + np.sum(lengths * tail))


class _ScipyLaw(TaskDistribution):
    """Adapter for a frozen scipy.stats distribution."""

    name = "scipy"

    def __init__(self, frozen):
        low, _ = frozen.support()
        if low < 0:
            raise ParameterError("task_dist must have support on [0, inf) "
                                 f"(got a scipy law with lower support {low!r})")
        self.frozen = frozen

    def mean(self):
        return float(self.frozen.mean())

    def cdf(self, t):
        return self.frozen.cdf(t)

    def sf(self, t):
        return self.frozen.sf(t)

    def rvs(self, size=None, random_state=None):
        return self.frozen.rvs(size=size, random_state=_rng(random_state))

    def describe(self):
        return {"law": f"scipy.{self.frozen.dist.name}", "args": list(self.frozen.args),
                "kwds": dict(self.frozen.kwds)}

    def _key(self):
        return (self.frozen.dist.name, tuple(float(a) for a in self.frozen.args),
                tuple(sorted((k, float(v)) for k, v in self.frozen.kwds.items())))


def as_task_distribution(obj, task_rate: float = 1.0) -> TaskDistribution:
    """Turn ``obj`` into a :class:`TaskDistribution`.

    ``None`` means Exp(task_rate); a frozen scipy.stats law is wrapped; a
    string is parsed by :func:`parse_task_distribution`.
    """
    if obj is None:
        return Exponential(task_rate)
    if isinstance(obj, TaskDistribution):
        return obj
    if isinstance(obj, str):
        return parse_task_distribution(obj)
    if hasattr(obj, "dist") and hasattr(obj, "cdf") and hasattr(obj, "support"):
        return _ScipyLaw(obj)
    raise ParameterError("task_dist must be a TaskDistribution, a frozen scipy.stats "
                         f"distribution or a spec string such as 'exponential:rate=1' "
                         f"(got {type(obj).__name__})")


_SPEC_HELP = ("'exponential:rate=R', 'bimodal:p=P,rate1=R1,rate2=R2', "
              "'erlang:shape=N,rate=R', 'deterministic:value=D' or 'empirical:file=PATH'")


def parse_task_distribution(spec: str) -> TaskDistribution:
    """Parse a task-law spec such as ``'bimodal:p=0.9,rate1=10,rate2=0.1'``.

    Accepted forms: ``exponential:rate=R`` (alias ``exp``), ``bimodal:p=P,rate1=R1,rate2=R2``
    (alias ``hyperexponential``), ``erlang:shape=N,rate=R``, ``deterministic:value=D``
    and ``empirical:file=PATH`` (one task time per line, or a CSV's first column).
    """
    name, _, rest = spec.strip().partition(":")
    name = name.strip().lower()
    kwargs: dict[str, str] = {}
    if rest.strip():
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            if not eq:
                raise ParameterError(f"task_dist spec item {item!r} must look like key=value; "
                                     f"valid specs: {_SPEC_HELP}")
            kwargs[key.strip()] = value.strip()

    def num(key, default=None, cast=float):
        if key not in kwargs:
            if default is None:
                raise ParameterError(f"task_dist {name!r} needs {key}=...; valid specs: {_SPEC_HELP}")
            return default
        text = kwargs.pop(key)
        try:
            return cast(text)
        except ValueError:
            kind = "an integer" if cast is int else "a number"
            raise ParameterError(f"task_dist parameter {key} must be {kind} (got {text!r})") from None

    if name in ("exponential", "exp"):
        law = Exponential(num("rate", 1.0))
    elif name in ("bimodal", "hyperexponential"):
        law = HyperExponential.bimodal(num("p"), num("rate1"), num("rate2"))
    elif name == "erlang":
        law = Erlang(num("shape", cast=int), num("rate"))
    elif name == "deterministic":
        law = Deterministic(num("value", 1.0))
    elif name == "empirical":
        if "file" not in kwargs:
            raise ParameterError(f"task_dist 'empirical' needs file=PATH; valid specs: {_SPEC_HELP}")
        path = Path(kwargs.pop("file"))
        if not path.is_file():
            where = "" if path.is_absolute() else f", looked up from the working directory {str(Path.cwd())!r}"
            what = ("is a directory" if path.is_dir() else "is not a regular file (a FIFO or device)"
                    if path.exists() else "does not exist")
            raise ParameterError(f"task_dist empirical file {str(path)!r} {what}{where}; it must be a regular "
                                 "text file of task times")
        try:
            text = path.read_text().replace(",", "\n").split()
        except UnicodeDecodeError:
            raise ParameterError(f"task_dist empirical file {str(path)!r} must be a text file of numbers (it holds "
                                 "binary data)") from None
        try:
            values = [float(v) for v in text]
        except ValueError:
            raise ParameterError(f"task_dist empirical file {str(path)!r} must hold numbers "
                                 "only, one per line") from None
        try:
            law = Empirical(values)
        except ParameterError as exc:
            raise ParameterError(f"task_dist empirical file {str(path)!r}: {exc}") from None
    else:
        raise ParameterError(f"task_dist must be one of {_SPEC_HELP} (got {spec!r})")
    if kwargs:
        raise ParameterError(f"task_dist {name!r} got unknown parameters {sorted(kwargs)}; "
                             f"valid specs: {_SPEC_HELP}")
    return law


class _ScaledLaw(TaskDistribution):
    """The law of ``factor * X`` for a base law of ``X``."""

    name = "scaled"

    def __init__(self, base: TaskDistribution, factor: float):
        self.base = base
        self.factor = check_positive("factor", factor)
        self.breakpoints = tuple(b * self.factor for b in base.breakpoints)

    def mean(self):
        return self.factor * self.base.mean()

    def cdf(self, t):
        return self.base.cdf(np.asarray(t, dtype=float) / self.factor)

    def sf(self, t):
        return self.base.sf(np.asarray(t, dtype=float) / self.factor)

    def rvs(self, size=None, random_state=None):
        return self.factor * np.asarray(self.base.rvs(size=size, random_state=random_state))

    def order_stat_mean(self, j, n):
        base = self.base.order_stat_mean(j, n)
        return None if base is None else self.factor * base

    def describe(self):
        return {"law": self.name, "factor": self.factor, "base": self.base.describe()}

    def _key(self):
        return (self.factor, self.base)


def scaled(law, factor: float) -> TaskDistribution:
    """The law of ``factor * X`` (closed forms kept where the family is closed under scaling)."""
    law = as_task_distribution(law)
    factor = check_positive("factor", factor)
    if factor == 1.0:
        return law
    if isinstance(law, Exponential):
        return Exponential(law.rate / factor)
    if isinstance(law, Erlang):
        return Erlang(law.shape, law.rate / factor)
    if isinstance(law, HyperExponential):
        return HyperExponential(law.probs, law.rates / factor)
    if isinstance(law, Deterministic):
        return Deterministic(law.value * factor)
    return _ScaledLaw(law, factor)
