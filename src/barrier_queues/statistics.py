"""Statistics of simulation and measurement output, in one place.

* :func:`t_interval`: Student-t interval of a mean from independent values
  (replications, or batch means).
* :func:`sectioning_interval`: Student-t interval around an estimate from all
  the data, with its spread from the same estimator on independent sections
  (Asmussen & Glynn 2007, Sect. III.5a): used for quantiles, which are not
  means of the replications' quantiles.
* :func:`batch_means_interval`: the same over the means of consecutive
  batches of one correlated series, with the lag-1 autocorrelation of the
  batch means and a test of their independence (:func:`lag1_test`).
* :func:`mser_truncation`: the warm-up to drop, by MSER-5 (White 1997; White,
  Cobb & Spratt 2000): the truncation point ``d`` minimising the marginal
  standard error ``sum_{i>d} (y_i - mean_d)^2 / (n - d)^2`` of the batch means
  ``y`` (batches of 5 observations), searched over the first half of the run.
* :func:`drift`: Kendall's tau of batch means against time, a test for a queue
  that does not drain.
* :func:`quantile_interval`: distribution-free interval of a quantile from
  order statistics (iid values).
* :class:`LogHistogram`: a streaming quantile sketch with relative accuracy
  ``alpha`` (logarithmic bins as in DDSketch, Masson et al. 2019): every
  quantile it reports lies within a factor ``1 +- alpha`` of a value between
  the neighbouring order statistics; values below ``floor`` count as 0.
* :class:`RunAccumulator`: the streaming statistics of one simulated
  replication: block sums (at most 20,000 blocks) and per-segment histograms
  (100 segments), so that memory does not grow with the number of jobs;
  :func:`finish_replications` chooses the warm-up at the end, once for all
  replications of a system, by MSER-5 on the replication-averaged waiting
  times, rounded up to a segment boundary (1 % of the run). Its block sums,
  histogram bins, per-segment bin counts and per-class statistics are
  compiled (``_statistics.pxi``: numpy's pairwise summation and
  ``LogHistogram.index``'s arithmetic, operation for operation, without the
  GIL), with its numpy code kept as the reference they equal bit for bit
  (tested);
  :func:`save_stats` / :func:`load_stats` keep replications' statistics on
  disk (a sweep adds replications to them later).
* :func:`binomial_tolerance`: the range of hits a correct ``p``-coverage
  method gives in ``n`` independent trials (for coverage tests).

Written here rather than taken from a library because the streaming pieces
(blocks, segment histograms, truncation decided at the end) are specific to
this simulator; the distributions and tests come from scipy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields

import numpy as np

from ._validation import ParameterError

#: quantiles reported by the simulator
QUANTILES = (0.5, 0.9, 0.99, 0.999)
#: relative accuracy of the streaming quantiles
ALPHA = 0.002
#: at most this many blocks are kept per replication (MSER batch size grows with the run)
MAX_BLOCKS = 20_000
#: a quantile's interval is given only where every replication has at least this many measured jobs
#: beyond it (fewer undercover: on M/M/4 at rho 0.6, 95 % sectioning intervals of the 0.999 waiting
#: quantile covered 78 % at 5 jobs beyond, 91.5 % at 20 and 94.5 % at 50, 200 trials each)
MIN_TAIL_JOBS = 50
#: a measured utilization (or held share) is given only over at least this many measured jobs; below it,
#: NaN with its reason (2 jobs gave 0.86, and with the old arrival-span denominator up to 267)
MIN_UTILIZATION_JOBS = 100
#: a saturated run needs at least this many jobs per replication for an estimate of the stability limit
#: (3 jobs gave rho_max 2.78, 10 gave 1.01: a start rate over a handful of starts is no estimate)
MIN_SATURATED_JOBS = 100
#: histogram segments per replication (the warm-up is rounded up to a segment boundary)
SEGMENTS = 100


#: above this many degrees of freedom the t quantile comes from scipy (the closed form sums dof / 2 terms)
T_CLOSED_FORM_MAX_DOF = 200


def t_central(t: float, dof: int) -> float:
    """``P(|T| <= t)`` for Student's t with an integer number ``dof`` of degrees of freedom (closed form).

    With ``theta = atan(t / sqrt(dof))`` and ``c = cos(theta)`` (Abramowitz &
    Stegun 26.7.3-4): for odd ``dof`` ``(2 / pi) (theta + sin(theta) (c + 2/3
    c^3 + ... + (2 4 ... (dof-3)) / (1 3 ... (dof-2)) c^(dof-2)))`` (``2 theta /
    pi`` for ``dof = 1``), for even ``dof`` ``sin(theta) (1 + 1/2 c^2 + ... +
    (1 3 ... (dof-3)) / (2 4 ... (dof-2)) c^(dof-2))``.
    """
    return _t_central_theta(math.atan(t / math.sqrt(dof)), dof)


def _t_central_theta(theta: float, dof: int) -> float:
    c = math.cos(theta)
    c2 = c * c
    if dof % 2:
        if dof == 1:
            return 2.0 * theta / math.pi
        term = total = c
        for j in range(1, (dof - 3) // 2 + 1):
            term *= c2 * (2 * j) / (2 * j + 1)
            total += term
        return 2.0 / math.pi * (theta + math.sin(theta) * total)
    term = total = 1.0
    for j in range(1, (dof - 2) // 2 + 1):
        term *= c2 * (2 * j - 1) / (2 * j)
        total += term
    return math.sin(theta) * total


def t_quantile(level: float, dof: int) -> float:
    """The ``t`` with ``P(|T| <= t) = level`` (two-sided ``level`` interval) for ``dof`` degrees of freedom.

    Written here rather than taken from scipy because importing
    ``scipy.special`` cost a third of a whole 2-million-job ``simulate``
    command (CHANGELOG), whose intervals need nothing else from scipy:
    :func:`t_central`'s closed form, inverted in ``theta`` by Brent's method
    (:mod:`barrier_queues._solvers`); the tests check it against
    ``scipy.special.stdtrit`` to 1e-12. Above
    :data:`T_CLOSED_FORM_MAX_DOF` degrees of freedom it is scipy's.
    """
    if not 0.0 < level < 1.0:
        raise ParameterError(f"level must be in (0, 1) (got {level})")
    if dof < 1 or dof != int(dof):
        raise ParameterError(f"dof must be an integer >= 1 (got {dof})")
    dof = int(dof)
    if dof == 1:
        return math.tan(math.pi * level / 2.0)
    if dof == 2:
        return level * math.sqrt(2.0 / (1.0 - level * level))
    if dof > T_CLOSED_FORM_MAX_DOF:
        from scipy import special

        return float(special.stdtrit(dof, 0.5 + level / 2))
    from ._solvers import brent_root

    theta = brent_root(lambda th: _t_central_theta(th, dof) - level, 0.0, math.pi / 2, xtol=1e-300)
    return math.sqrt(dof) * math.tan(theta)


def _t_ppf(level: float, dof: int) -> float:
    return t_quantile(level, dof)


def wilson_interval(successes: int, trials: int, level: float = 0.95) -> list[float]:
    """``[low, high]`` Wilson score interval of a binomial proportion (Brown, Cai & DasGupta 2001 recommend it
    over the Wald interval, whose coverage collapses for rare events): for shares of independent jobs, such as
    the share of jobs aborted after failures, pooled over replications. NaN without trials."""
    from statistics import NormalDist

    if trials <= 0:
        return [float("nan"), float("nan")]
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def t_interval(values, level: float = 0.95) -> list[float]:
    """``[low, high]`` Student-t interval of the mean of independent ``values`` (NaN below 2 values)."""
    x = np.asarray(values, dtype=float)
    if x.size < 2 or not np.all(np.isfinite(x)):
        return [float("nan"), float("nan")]
    half = _t_ppf(level, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return [float(x.mean() - half), float(x.mean() + half)]


def within(interval, low: float = 0.0, high: float = math.inf) -> list[float]:
    """``interval`` cut to the values the estimated quantity can take, ``[low, high]`` (a waiting time is not
    negative, a utilization not above 1). The true value lies there, so the cut keeps the coverage; an
    interval wholly outside shrinks to the nearest end (the estimate is cut there too); NaN stays NaN."""
    lo, hi = (float(x) for x in interval)
    return [min(max(lo, low), high) if lo == lo else lo, max(min(hi, high), low) if hi == hi else hi]


def sectioning_interval(estimate: float, sections, level: float = 0.95) -> list[float]:
    """``[low, high]`` sectioning interval: ``estimate`` (from all the data) +- t * sd(sections) / sqrt(n).

    ``sections`` are the same estimator on n >= 2 independent parts of the
    data (replications). For a nonlinear estimator such as a quantile, the
    mean of the section estimates carries the bias of the small sample and
    can sit far from the estimate of all the data (e.g. in a queue near its
    limit); centring on ``estimate`` keeps the interval around the number
    reported (Asmussen & Glynn, *Stochastic Simulation*, 2007, Sect. III.5a).
    NaN below 2 sections or with a non-finite value.
    """
    x = np.asarray(sections, dtype=float)
    if x.size < 2 or not np.all(np.isfinite(x)) or not math.isfinite(estimate):
        return [float("nan"), float("nan")]
    half = _t_ppf(level, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return [float(estimate - half), float(estimate + half)]


def batch_means(x, batches: int) -> np.ndarray:
    """Means of ``batches`` consecutive, (almost) equal batches of ``x``."""
    x = np.asarray(x, dtype=float)
    return np.array([b.mean() for b in np.array_split(x, min(batches, x.size))]) if x.size else np.empty(0)


def lag1_test(means) -> dict:
    """Lag-1 autocorrelation of batch means and a two-sided test of independence.

    Under independence ``r1`` is approximately normal with mean ``-1/b`` and
    variance ``1/b`` (b batches); ``independent`` is False when ``p < 0.05``.
    """
    y = np.asarray(means, dtype=float)
    b = y.size
    if b < 4 or np.ptp(y) == 0:
        return {"lag1": float("nan"), "pvalue": float("nan"), "independent": None}
    d = y - y.mean()
    r1 = float(np.sum(d[1:] * d[:-1]) / np.sum(d * d))
    z = (r1 + 1 / b) * math.sqrt(b)
    p = math.erfc(abs(z) / math.sqrt(2))
    return {"lag1": r1, "pvalue": p, "independent": bool(p >= 0.05)}


def batch_means_interval(x, batches: int = 20, level: float = 0.95) -> dict:
    """t interval over the means of ``batches`` consecutive batches, with the lag-1 check.

    Fewer batches are used when there are fewer than two values per batch.
    Returns ``interval``, ``batches`` and the :func:`lag1_test` fields.
    """
    x = np.asarray(x, dtype=float)
    b = min(batches, x.size // 2)
    if b < 2:
        return {"interval": [float("nan"), float("nan")], "batches": int(max(b, 0)),
                **lag1_test([])}
    means = batch_means(x, b)
    return {"interval": t_interval(means, level), "batches": int(b), **lag1_test(means)}


def mser_truncation(block_means, max_fraction: float = 0.5) -> tuple[int, bool]:
    """MSER truncation point (in blocks) of a series of block means, and whether it hit the limit.

    ``d`` minimises ``sum_{i>=d} (y_i - mean(y_d:))^2 / (n - d)^2`` over
    ``0 <= d <= max_fraction n``. A minimum at the limit means the series had
    not settled in the first half: the run is too short or not stationary.
    """
    y = np.asarray(block_means, dtype=float)
    n = y.size
    if n < 4:
        return 0, False
    limit = int(max_fraction * n)
    tail_sum = np.cumsum(y[::-1])[::-1]
    tail_sq = np.cumsum((y * y)[::-1])[::-1]
    count = n - np.arange(n)
    sse = tail_sq - tail_sum * tail_sum / count
    stat = np.maximum(sse, 0.0) / count**2
    d = int(np.argmin(stat[:limit + 1]))
    return d, d >= limit


def segment_cut(d_blocks: int, segment_blocks: int, nsegments: int) -> int:
    """An MSER truncation of ``d_blocks`` blocks rounded up to a segment boundary (segments of
    ``segment_blocks`` blocks, ``nsegments`` of them, the last always kept): the segment where measuring
    starts. The one rounding of :func:`finish_replications` and :func:`replicated_warmup`."""
    return min(math.ceil(d_blocks / segment_blocks), nsegments - 1)


def replicated_warmup(series: list) -> tuple[int, bool]:
    """The warm-up (in jobs) of replications of one system given as whole per-job series of equal length:
    MSER-5 on the block means **averaged over the replications**, rounded up to 1/100 of the run and applied
    to every replication, as :func:`finish_replications` does for streamed runs (the blocks and segments
    sized as :class:`RunAccumulator` sizes them). Returns the cut and whether MSER hit its limit."""
    n = min(len(x) for x in series)
    block = max(5, math.ceil(n / MAX_BLOCKS))
    nblocks = n // block
    if nblocks < 1:
        return 0, False
    segment_blocks = max(1, math.ceil(nblocks / SEGMENTS))
    nsegments = math.ceil(nblocks / segment_blocks)
    means = np.mean([np.asarray(x[:nblocks * block], dtype=float).reshape(nblocks, block).mean(axis=1)
                     for x in series], axis=0)
    d_blocks, at_limit = mser_truncation(means)
    return segment_cut(d_blocks, segment_blocks, nsegments) * segment_blocks * block, at_limit


def kendall_trend(y) -> tuple[float, float]:
    """Kendall's tau of ``y`` against its index, and the two-sided p-value of no trend.

    tau-b with ties in ``y`` accounted for; the p-value from the normal
    approximation with variance ``2 (2n + 5) / (9 n (n - 1))`` (Kendall 1948),
    accurate for the 20 batch means it is used on. Written with numpy so that
    a simulation's summary does not import scipy.stats.
    """
    y = np.asarray(y, dtype=float)
    n = y.size
    sign = np.sign(y[None, :] - y[:, None])[np.triu_indices(n, 1)]
    pairs = n * (n - 1) / 2
    untied = np.count_nonzero(sign)
    if untied == 0:
        return 0.0, 1.0
    tau = float(sign.sum() / np.sqrt(pairs * untied))
    z = tau / math.sqrt(2 * (2 * n + 5) / (9 * n * (n - 1)))
    return tau, math.erfc(abs(z) / math.sqrt(2))


def drift(series, batches: int = 20) -> dict:
    """Kendall's tau of batch means of ``series`` against time.

    A stationary queue gives tau near 0; a queue that does not drain gives a
    steady increase (tau near 1). Flagged as ``drifting`` when tau > 0.6 with
    p < 0.001.
    """
    y = np.asarray(series, dtype=float)
    if y.size < batches:
        return {"kendall_tau": float("nan"), "pvalue": float("nan"), "drifting": False}
    tau, p = kendall_trend(batch_means(y, batches))
    return {"kendall_tau": tau, "pvalue": p, "drifting": bool(tau > 0.6 and p < 1e-3)}


#: a class is flagged as starving when more than this share of its jobs (and at least ``LATE_MIN_JOBS`` of
#: them) were still waiting at the last arrival: they started only once the arrivals ended
LATE_SHARE = 0.5
LATE_MIN_JOBS = 10
#: a run whose measured part is shorter than this many times the longest class's mean execution time is
#: flagged as possibly transient (the Borg-fitted workload's 100,000-job runs spanned 0.5-0.7 times its slowest
#: class's mean time of 386 and reported the empty start's waiting)
MIN_SPAN_EXECUTIONS = 20


def _trend(series) -> tuple[float, float, bool]:
    """Kendall's tau and p of a series' batch means (20, or the series itself when shorter; fewer than 8
    values: no test), and whether it grows (tau > 0.6, p < 0.001: the rule of :func:`drift`)."""
    y = np.asarray(series, dtype=float)
    y = y[np.isfinite(y)]
    if y.size < 8:
        return float("nan"), float("nan"), False
    tau, p = kendall_trend(batch_means(y, 20))
    return tau, p, bool(tau > 0.6 and p < 1e-3)


def _slope(t, y) -> float:
    """Least-squares slope of ``y`` against ``t`` (NaN with fewer than 3 finite points)."""
    t, y = np.asarray(t, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(t) & np.isfinite(y)
    if ok.sum() < 3 or np.ptp(t[ok]) <= 0:
        return float("nan")
    return float(np.polyfit(t[ok], y[ok], 1)[0])


def run_stability(stats: list, labels: list | None = None) -> dict:
    """Whether every class of a system reached a steady state in these replications, from their queues.

    For each class (``labels``: ``(k, barrier)`` by class index; None: all jobs as one class), over the
    measured segments (1 % of the run each, after the warm-up), averaged over the replications:

    * ``queue``: the jobs of the class that arrived earlier and are still waiting, at each segment's first
      arrival. Flagged (``queue_grows``) when Kendall's tau of its 20 batch means against time is above 0.6
      with p < 0.001 (the rule of :func:`drift`); ``queue_growth`` is its least-squares slope in jobs per
      unit time (about the class's arrival rate minus its start rate);
    * ``waiting``: the class's mean waiting per segment, flagged (``waiting_grows``) by the same rule, with
      ``waiting_growth`` in time units per unit time;
    * ``unstarted``: the class's jobs still waiting at the last arrival (summed over replications), and
      ``late_share`` = unstarted / arrived: more than :data:`LATE_SHARE` (and at least
      :data:`LATE_MIN_JOBS` jobs) means the class starts only once the arrivals end (``starts_late``).

    A class is ``stable`` when none of the three flags is raised. The pooled waiting of all jobs can pass
    every test while a minority class starves: its queue is what shows it. Every job that arrived is run to
    its end (after the last arrival the system drains), so no job is censored; ``unstarted`` counts those
    whose waiting the drain completed.
    """
    queues = [s.extra.get("queue") for s in stats]
    if not queues or any(q is None for q in queues):
        # replications without the queue's record (statistics stored by an earlier version): no queue test, and
        # every field the verdict reads, so that the other tests still decide
        return {"classes": [], "stable": True, "queue_tau": math.nan, "queue_pvalue": math.nan,
                "queue_grows": False, "queue_growth": math.nan, "unstarted": 0, "censored": 0, "span": math.nan}
    groups = queues[0]["at"].shape[0]
    n = min(q["at"].shape[1] for q in queues)
    times = np.mean([q["times"][:n] for q in queues], axis=0)
    out = []
    for c in range(groups):
        queue = np.mean([q["at"][c, :n] for q in queues], axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            waits = np.array([q["waiting_sums"][c, :n] / q["jobs"][c, :n] for q in queues])
        counted = np.isfinite(waits).sum(axis=0)
        wait = np.where(counted > 0, np.nansum(np.where(np.isfinite(waits), waits, 0), axis=0)
                        / np.maximum(counted, 1), np.nan)
        qt, qp, q_up = _trend(queue)
        wt, wp, w_up = _trend(wait)
        q_slope = _slope(times, queue)
        q_up = q_up and q_slope > 0
        unstarted = int(sum(int(q["unstarted"][c]) for q in queues))
        arrived = int(sum(int(q["arrived"][c]) for q in queues))
        late = unstarted / arrived if arrived else 0.0
        starts_late = bool(unstarted >= LATE_MIN_JOBS and late > LATE_SHARE)
        row = {"queue_tau": qt, "queue_pvalue": qp, "queue_grows": bool(q_up), "queue_growth": q_slope,
               "mean_queue": float(np.mean(queue)) if queue.size else float("nan"),
               "waiting_tau": wt, "waiting_pvalue": wp, "waiting_grows": bool(w_up),
               "waiting_growth": _slope(times, wait), "arrived": arrived, "unstarted": unstarted,
               "late_share": late, "starts_late": starts_late,
               "stable": not (q_up or w_up or starts_late)}
        if labels:
            if arrived == 0:                    # a class the system never draws (e.g. plain jobs of a pmf)
                continue
            row = {"tasks": labels[c][0], "barrier": labels[c][1], **row}
        out.append(row)
    total = np.mean([q["at"][:, :n].sum(axis=0) for q in queues], axis=0)
    tt, tp, t_up = _trend(total)
    t_slope = _slope(times, total)
    return {"classes": out, "queue_tau": tt, "queue_pvalue": tp, "queue_grows": bool(t_up and t_slope > 0),
            "queue_growth": t_slope, "unstarted": int(sum(r["unstarted"] for r in out)),
            "censored": 0, "span": float(np.mean([q["span"] for q in queues])),
            "stable": bool(all(r["stable"] for r in out) and not (t_up and t_slope > 0))}


def quantile_interval(x, q: float, level: float = 0.95) -> list[float]:
    """Distribution-free interval for the ``q`` quantile from order statistics (iid values).

    An end is NaN where too few values exist to bound it at ``level``
    (e.g. the 0.99 quantile of 100 values has no upper bound at 95 %).
    """
    from scipy import stats

    x = np.asarray(x, dtype=float)
    res = stats.quantile_test(x, q=float(np.quantile(x, q)), p=q)
    ci = res.confidence_interval(level)
    return [float(ci.low), float(ci.high)]


def binomial_tolerance(n: int, p: float, confidence: float = 0.999) -> tuple[int, int]:
    """Hits ``[low, high]`` that ``n`` independent trials of a method with true coverage ``p``
    fall within with probability at least ``confidence`` (central binomial range)."""
    from scipy import stats

    tail = (1 - confidence) / 2
    return int(stats.binom.ppf(tail, n, p)), int(stats.binom.isf(tail, n, p)) + 1


class LogHistogram:
    """Streaming quantiles with relative accuracy ``alpha`` (DDSketch-style logarithmic bins).

    Bin ``i >= 1`` holds values in ``(floor g^(i-1), floor g^i]`` with
    ``g = (1 + alpha) / (1 - alpha)`` and reports ``2 floor g^i / (g + 1)``,
    within a factor ``1 +- alpha`` of every value in it; bin 0 holds values
    ``<= floor`` and reports 0. Counts are stored for the occupied range only.
    """

    def __init__(self, floor: float, alpha: float = ALPHA):
        self.floor = float(floor)
        self.alpha = float(alpha)
        self.log_gamma = math.log((1 + alpha) / (1 - alpha))
        self.offset = 0
        self.counts = np.zeros(0, dtype=np.int64)

    def index(self, x: np.ndarray) -> np.ndarray:
        """Each value's bin: ``ceil(log(x / floor) / log g)`` above ``floor``, else 0 (NaN counts as 0).

        In place in one buffer (the simulator's statistics spend most of their
        time here): ``fmax(ceil(.), 0)`` equals the bin above ``floor`` and 0 at
        or below it, where ``log(x / floor) <= 0``, and turns NaN into 0.
        """
        x = np.asarray(x, dtype=float)
        b = np.divide(x, self.floor)
        with np.errstate(divide="ignore", invalid="ignore"):
            np.log(b, out=b)
        b /= self.log_gamma
        np.ceil(b, out=b)
        np.fmax(b, 0.0, out=b)
        return b.astype(np.int64)

    def add(self, x) -> None:
        self.add_bins(self.index(x))

    def add_bins(self, idx: np.ndarray) -> None:
        """Add values by their bins (:meth:`index` of the values, computed once for a chunk and sliced)."""
        if idx.size == 0:
            return
        lo = int(idx.min())
        self._add_counts(lo, np.bincount(idx - lo))

    def _add_counts(self, lo: int, counts: np.ndarray) -> None:
        if self.counts.size == 0:
            self.offset, self.counts = lo, counts.astype(np.int64)
            return
        new_lo = min(lo, self.offset)
        new_hi = max(lo + counts.size, self.offset + self.counts.size)
        if new_lo != self.offset or new_hi != self.offset + self.counts.size:
            grown = np.zeros(new_hi - new_lo, dtype=np.int64)
            grown[self.offset - new_lo:self.offset - new_lo + self.counts.size] = self.counts
            self.offset, self.counts = new_lo, grown
        self.counts[lo - self.offset:lo - self.offset + counts.size] += counts

    def merge(self, other: LogHistogram) -> LogHistogram:
        """Add another histogram's counts (same floor and alpha); returns self."""
        if other.counts.size:
            self._add_counts(other.offset, other.counts)
        return self

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def value(self, index: int) -> float:
        if index <= 0:
            return 0.0
        return 2 * self.floor * math.exp(index * self.log_gamma) / ((1 + self.alpha) / (1 - self.alpha) + 1)

    def quantile(self, q: float) -> float:
        """The ``q`` quantile (the bin holding the ``ceil(q n)``-th smallest value); NaN when empty."""
        n = self.total
        if n == 0:
            return float("nan")
        rank = max(1, math.ceil(q * n - 1e-9))
        i = int(np.searchsorted(np.cumsum(self.counts), rank))
        return self.value(self.offset + i)

    def copy(self) -> LogHistogram:
        h = LogHistogram(self.floor, self.alpha)
        h.offset, h.counts = self.offset, self.counts.copy()
        return h


#: per-job quantities accumulated by :class:`RunAccumulator` (besides the count)
COLUMNS = ("waiting", "sojourn", "execution", "work", "useful", "completed", "held", "spacing")
METRICS = ("waiting", "sojourn", "execution")


@dataclass
class ReplicationStats:
    """The statistics of one replication after its warm-up (what the process pool returns).

    ``jobs`` measured jobs after ``warmup`` dropped; ``sums`` of each column
    over them; ``span`` the time from the first measured arrival (or start,
    for saturated runs) to the last; ``busy_span`` from the first measured
    arrival to the last departure (every measured job's server time lies
    inside it); ``histograms`` of the three metrics;
    ``block_means`` of the waiting time (and of the spacing between starts)
    after the warm-up, for batch means and the drift test;
    ``warmup_at_limit``: MSER chose the largest truncation allowed.
    """

    jobs: int
    warmup: int
    warmup_rule: str
    warmup_at_limit: bool
    sums: dict
    span: float
    start_span: float
    histograms: dict
    block_means: dict
    block_jobs: int
    seconds: float = 0.0
    kernel_seconds: float = 0.0
    total_jobs: int = 0
    extra: dict = field(default_factory=dict)
    busy_span: float = float("nan")

    def mean(self, column: str) -> float:
        return self.sums[column] / self.jobs if self.jobs else float("nan")

    def quantile(self, metric: str, q: float) -> float:
        return self.histograms[metric].quantile(q)


@dataclass
class RunPartial:
    """One replication's streamed data before the warm-up is chosen (what a worker returns).

    Block sums of every column (at most 20,000 blocks), the histograms of the
    first half of the segments one by one (the warm-up is never longer than
    half the run) and of the rest merged, and the arrival and start times at
    segment starts. :func:`finish_replications` turns a system's partials
    into :class:`ReplicationStats`.
    """

    blocks: np.ndarray
    segment_hists: list
    tail_hist: dict
    arrival_at: np.ndarray
    start_at: np.ndarray
    last_arrival: float
    last_start: float
    block: int
    segment_blocks: int
    nsegments: int
    seen: int
    skip: int
    mser: bool
    seconds: float = 0.0
    kernel_seconds: float = 0.0
    classes: tuple | None = None            # per class: segment sums, segment histograms, tail histograms
    failures: dict | None = None            # with failures: counts over every job (jobs, aborted, attempts, work)
    clocks: dict | None = None              # with gang clocks: their tally (barrier_queues.clocks.Tally.state)
    last_departure: float = float("nan")    # the latest departure of an accumulated job
    #: the queue by class (see ``RunAccumulator._track_queue``): ``at`` (class x segment: jobs waiting at the
    #: segment's first arrival), ``arrived`` (jobs of each class, warm-up included), ``unstarted`` (jobs of
    #: each class still waiting at the last arrival)
    queue: dict | None = None
    #: moldable jobs: the workers each job took, every job of the replication in order (one int each)
    workers: np.ndarray | None = None


def grouped_bin_counts(groups: np.ndarray, ngroups: int, idx: np.ndarray):
    """Histogram bins ``idx`` counted per group (``0 <= groups < ngroups``): ``(group, lo, counts)`` for every
    group with values, ``counts`` over its occupied bins from ``lo``, exactly what
    :meth:`LogHistogram.add_bins` of the group's values adds (one bincount for all groups)."""
    lo = int(idx.min())
    width = int(idx.max()) - lo + 1
    if ngroups * width > 1 << 22:                          # a wide range over many groups: group by group
        for g in np.unique(groups):
            sel = idx[groups == g]
            first = int(sel.min())
            yield int(g), first, np.bincount(sel - first)
        return
    counts = np.bincount(groups * width + (idx - lo), minlength=ngroups * width).reshape(ngroups, width)
    occupied = counts > 0
    first = occupied.argmax(axis=1).tolist()
    last = (width - occupied[:, ::-1].argmax(axis=1)).tolist()
    for g in np.flatnonzero(occupied.any(axis=1)).tolist():
        yield g, lo + first[g], counts[g, first[g]:last[g]]


class RunAccumulator:
    """Streaming statistics of one replication of ``jobs`` jobs (see the module docstring).

    Feed it the per-job arrays chunk by chunk, in job order, with
    :meth:`add`, then :meth:`partial`. ``warmup=None`` leaves the warm-up to
    :func:`finish_replications` (MSER-5); an integer drops that many jobs at
    the start (they are never accumulated). Blocks hold ``b = max(5,
    ceil(n / 20,000))`` of the ``n`` accumulated jobs; segments hold
    ``ceil(blocks / 100)`` blocks. Memory: at most 20,000 blocks of the
    columns and about 50 histograms per metric, whatever the number of jobs.
    """

    def __init__(self, jobs: int, floor: float, warmup=None, alpha: float = ALPHA, classes: int = 0,
                 compiled: bool = True):
        self.classes = int(classes)         # > 1: also per job class (sums and histograms per segment)
        self.compiled = compiled            # False: numpy, the compiled code's reference
        self.skip = 0 if warmup is None else int(warmup)
        self.mser = warmup is None
        n = int(jobs) - self.skip
        self.block = max(5, math.ceil(n / MAX_BLOCKS))
        self.nblocks = max(1, math.ceil(n / self.block))
        self.segment_blocks = max(1, math.ceil(self.nblocks / SEGMENTS))
        self.segment = self.segment_blocks * self.block
        self.nsegments = math.ceil(self.nblocks / self.segment_blocks)
        self.kept = min(self.nsegments, math.ceil(self.nsegments / 2) + 1)   # segments with their own histogram
        self.floor, self.alpha = floor, alpha
        self.jobs = int(jobs)
        self.blocks = np.zeros((len(COLUMNS) + 1, self.nblocks))           # last row: counts
        self.hist = [{m: LogHistogram(floor, alpha) for m in METRICS} for _ in range(self.kept)]
        self.tail = {m: LogHistogram(floor, alpha) for m in METRICS}
        self.arrival_at = np.full(self.nsegments, np.nan)                  # arrival at each segment's start
        self.start_at = np.full(self.nsegments, np.nan)
        self.last_arrival = self.last_start = np.nan
        self.last_departure = -np.inf
        self.seen = 0                                                      # jobs offered, warm-up included
        self.previous_start = np.nan
        # per class: sums of the metrics and counts by segment, histograms as for all jobs
        self.class_sums = np.zeros((self.classes, self.nsegments, len(METRICS) + 1)) if self.classes > 1 else None
        # made when a class first has a job in a segment (10,000 classes x 51 segments x 3 metrics made up front
        # took minutes): (class, segment) -> histograms, and class -> the tail's
        self.class_hist = {} if self.classes > 1 else None
        self.class_tail = {} if self.classes > 1 else None
        # the queue of every class (one group: all jobs, when classes are not kept apart): how many jobs that
        # arrived earlier are still waiting to start at the arrival of each segment's first job, and at the
        # last arrival; ``pending`` holds the start times (and classes) of the jobs that may still count
        self.groups = max(self.classes, 1)
        self.queue_at = np.full((self.groups, self.nsegments), np.nan)
        self.arrived = np.zeros(self.groups, dtype=np.int64)
        self.pending_start = np.empty(0)
        self.pending_class = np.empty(0, dtype=np.int64)
        self.latest_arrival = -np.inf

    def _histograms(self, sg: int, c: int | None = None) -> dict:
        """The histograms of segment ``sg`` (of class ``c``): its own while it is kept, else the tail's."""
        if c is None:
            return self.hist[sg] if sg < self.kept else self.tail
        table, key = (self.class_hist, (c, sg)) if sg < self.kept else (self.class_tail, c)
        found = table.get(key)
        if found is None:
            found = table[key] = {m: LogHistogram(self.floor, self.alpha) for m in METRICS}
        return found

    def _add_classes(self, seg, pieces: list, cls: np.ndarray, values: dict, bins: dict, cols: np.ndarray,
                     bin_rows: np.ndarray | None) -> None:
        """One chunk's jobs by class: sums per segment and class (the same masked sums as job by job, bit for
        bit), and histogram counts per (class, segment) from one bincount per metric (compiled: the
        ``class_piece`` of each segment's jobs, equal to these bit for bit)."""
        if self.compiled:
            from .kernels import kernels_module

            kernels = kernels_module()
            cls = np.ascontiguousarray(cls, dtype=np.int64)
            out = np.empty((self.classes, len(METRICS) + 1))
            for a, b, sg in pieces:
                counted = kernels.class_piece(cols, bin_rows, cls, a, b, out)
                for c in np.flatnonzero(out[:, -1]).tolist():
                    self.class_sums[c, sg] += out[c]
                for c, i, first, counts in counted:
                    self._histograms(sg, c)[METRICS[i]]._add_counts(first, counts)
            return
        for a, b, sg in pieces:
            piece = cls[a:b]
            for c in np.unique(piece):
                mask = piece == c
                row = self.class_sums[c, sg]
                for i, m in enumerate(METRICS):
                    row[i] += values[m][a:b][mask].sum()
                row[-1] += mask.sum()
        s0 = int(seg[0])
        nseg = int(seg[-1]) - s0 + 1
        groups = cls * nseg + (seg - s0)
        for m in METRICS:
            for g, lo, counts in grouped_bin_counts(groups, self.classes * nseg, bins[m]):
                c, sg = divmod(g, nseg)
                self._histograms(s0 + sg, c)[m]._add_counts(lo, counts)

    def add(self, arrival, start, departure, work, useful, completed, held=None, classes=None) -> None:
        """Add one chunk of jobs (arrays of equal length, in job order; ``classes``: each job's class index
        when the accumulator keeps per-class statistics).

        The block sums and the metrics come from the compiled
        ``accumulate_chunk`` (without the GIL, so that it overlaps the kernel
        and the draws), the histogram bins from the compiled ``log_bins`` and
        the counts per segment from the compiled ``bin_counts``;
        ``compiled=False`` computes all three with numpy instead, the
        reference they equal bit for bit (tested)."""
        n = arrival.size
        if n == 0:
            return
        if self.seen + n > self.jobs:       # (the compiled block sums would write past their blocks)
            raise RuntimeError(f"{self.seen + n} jobs added to statistics sized for {self.jobs} (a scheduler bug)")
        first_spacing = start[0] - self.previous_start if self.seen > 0 else 0.0
        drop = min(max(self.skip - self.seen, 0), n)
        self._track_queue(arrival, start, classes)
        self.seen += n
        self.previous_start = start[-1]
        if drop == n:
            return
        lo = self.seen - n + drop - self.skip                            # index of the first job among measured
        m = n - drop
        if self.compiled:
            from .kernels import kernels_module

            kernels = kernels_module()
            cols = np.empty((len(METRICS), m))
            arrival, start, departure, work, useful, held = (
                np.ascontiguousarray(x, dtype=np.float64) for x in
                (arrival, start, departure, work, useful, np.empty(0) if held is None else held))
            kernels.accumulate_chunk(
                arrival, start, departure, work, useful, np.ascontiguousarray(completed, dtype=np.int64), held,
                float(first_spacing), drop, lo, self.block, self.blocks, cols)
            bin_rows = np.empty(cols.shape, dtype=np.int64)
            kernels.log_bins(cols, self.floor, self.tail["waiting"].log_gamma, bin_rows)
            bins = dict(zip(METRICS, bin_rows, strict=True))
        else:
            cols = self._columns(arrival, start, departure, work, useful, completed, held, first_spacing, drop, lo)
            index = self.tail["waiting"].index
            bins, bin_rows = {name: index(v) for name, v in zip(METRICS, cols, strict=False)}, None
        values = dict(zip(METRICS, cols, strict=False))             # the reference's cols hold every column
        arrival, start = arrival[drop:], start[drop:]
        # the chunk's pieces: measured jobs lo .. lo + m - 1 cut where a segment starts (at multiples of it)
        first = lo // self.segment
        cuts = np.r_[0, np.arange((first + 1) * self.segment - lo, m, self.segment), m]
        pieces = [(a, b, first + i) for i, (a, b) in enumerate(zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True))]
        for a, _, sg in pieces:
            if lo + a == sg * self.segment:
                self.arrival_at[sg] = arrival[a]
                self.start_at[sg] = start[a]
        seg = None if self.compiled else (lo + np.arange(m)) // self.segment     # the references' per job
        self._add_bins(seg, pieces, bins)
        if self.class_sums is not None:
            self._add_classes(seg, pieces, np.asarray(classes)[drop:], values, bins, cols, bin_rows)
        self.last_arrival, self.last_start = arrival[-1], start[-1]
        self.last_departure = max(self.last_departure, float(departure[drop:].max()))

    def _track_queue(self, arrival, start, classes) -> None:
        """The queue of each class at each segment's first arrival (warm-up jobs included: they wait too).

        A job counts at checkpoint time ``t`` (the arrival of a segment's first job) when it arrived before
        that job and starts after ``t``. Jobs come in job order, so every checkpoint still to come lies at or
        after the latest arrival seen: a job that started by then never counts again and leaves ``pending``,
        which holds about the queue (every job of a class that starves). Plain numpy: counts, no sums, so
        there is no compiled twin to agree with."""
        n = arrival.size
        cls = (np.zeros(n, dtype=np.int64) if self.classes <= 1 or classes is None
               else np.asarray(classes, dtype=np.int64))
        self.arrived += np.bincount(cls, minlength=self.groups)
        base = self.seen                                    # the index of this chunk's first job among all seen
        # checkpoints: the first job of each measured segment, at index skip + sg * segment of all jobs seen
        sg0 = max(0, -(-(base - self.skip) // self.segment))
        last = 0
        for sg in range(sg0, self.nsegments):
            p = self.skip + sg * self.segment - base
            if p >= n:
                break
            self._pend(start[last:p], cls[last:p], arrival[p])
            self.queue_at[:, sg] = np.bincount(self.pending_class, minlength=self.groups)
            last = p
        self._pend(start[last:], cls[last:], arrival[-1])
        self.latest_arrival = max(self.latest_arrival, float(arrival[-1]))

    def _pend(self, start, cls, t) -> None:
        """Add jobs to ``pending`` and keep those that start after time ``t``."""
        s = np.concatenate([self.pending_start, start])
        c = np.concatenate([self.pending_class, cls])
        keep = s > t
        self.pending_start, self.pending_class = s[keep], c[keep]

    def _columns(self, arrival, start, departure, work, useful, completed, held, first_spacing, drop, lo):
        """The reference of the compiled ``accumulate_chunk``, in numpy: adds the block sums of the measured
        jobs' columns (:data:`COLUMNS` and a row of ones) and returns the columns (the metrics first)."""
        n = arrival.size
        spacing = np.empty(n)
        spacing[0] = first_spacing
        spacing[1:] = np.diff(start)
        sl = slice(drop, n)
        arrival, start = arrival[sl], start[sl]
        m = arrival.size
        cols = np.vstack([start - arrival, departure[sl] - arrival, departure[sl] - start, work[sl], useful[sl],
                          completed[sl].astype(float), np.zeros(m) if held is None else held[sl], spacing[sl],
                          np.ones(m)])
        ids = np.arange(lo, lo + m) // self.block
        starts = np.r_[0, np.flatnonzero(np.diff(ids)) + 1]
        self.blocks[:, ids[0]:ids[-1] + 1] += np.add.reduceat(cols, starts, axis=1)
        return cols

    def _add_bins(self, seg, pieces: list, bins: dict) -> None:
        """Count each segment's bins into its histograms (compiled: segment by segment; reference: one
        bincount for the chunk, :func:`grouped_bin_counts`; the same counts)."""
        if self.compiled:
            from .kernels import kernels_module

            count = kernels_module().bin_counts
            for a, b, sg in pieces:
                hists = self._histograms(sg)
                for name in METRICS:
                    hists[name]._add_counts(*count(bins[name], a, b))
            return
        s0 = int(seg[0])
        for name in METRICS:
            for g, first, counts in grouped_bin_counts(seg - s0, int(seg[-1]) - s0 + 1, bins[name]):
                self._histograms(s0 + g)[name]._add_counts(first, counts)

    def partial(self) -> RunPartial:
        p = RunPartial(self.blocks, self.hist, self.tail, self.arrival_at, self.start_at,
                       float(self.last_arrival), float(self.last_start), self.block, self.segment_blocks,
                       self.nsegments, self.seen, self.skip, self.mser)
        if self.class_sums is not None:
            p.classes = (self.class_sums, self.class_hist, self.class_tail)
        p.last_departure = float(self.last_departure)
        late = self.pending_start > self.latest_arrival
        p.queue = {"at": self.queue_at, "arrived": self.arrived,
                   "unstarted": np.bincount(self.pending_class[late], minlength=self.groups)}
        return p

    def finish(self, saturated: bool = False) -> ReplicationStats:
        """This replication alone (MSER-5 on its own series when the warm-up is not fixed)."""
        return finish_replications([self.partial()], saturated)[0]


def finish_replications(partials: list, saturated: bool = False) -> list[ReplicationStats]:
    """Choose the warm-up once for the replications of one system and reduce each to its statistics.

    Fixed warm-up: nothing to choose. Otherwise MSER-5 (White 1997) on the
    block means of the waiting time (of the spacing between starts, for
    saturated runs) **averaged over the replications**, as Hoad, Robinson and
    Davies (2010) recommend: averaging removes the replications' own random
    excursions, which MSER applied to one replication mistakes for a
    transient and cuts off (a bias the coverage test of this library found:
    the means came out about 4 % low). The truncation is rounded up to a
    segment boundary (1 % of the run) and applied to every replication.
    """
    first = partials[0]
    if not first.mser:
        g, at_limit, rule = 0, False, "fixed"
    else:
        series = "spacing" if saturated else "waiting"
        i = COLUMNS.index(series)
        counts = first.blocks[-1]
        filled = counts > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.mean([p.blocks[i][filled] / p.blocks[-1][filled] for p in partials], axis=0)
        d_blocks, at_limit = mser_truncation(means)
        g = min(segment_cut(d_blocks, first.segment_blocks, first.nsegments), len(first.segment_hists) - 1)
        rule = (f"MSER-5 on {'start spacings' if saturated else 'waiting times'}"
                + (f" averaged over {len(partials)} replications" if len(partials) > 1 else "")
                + (f" (batches of {first.block} jobs)" if first.block != 5 else "")
                + f", rounded up to 1/{first.nsegments} of the run")
    out = []
    for p in partials:
        post = p.blocks[:, g * p.segment_blocks:]
        jobs = int(post[-1].sum())
        sums = {c: float(post[i].sum()) for i, c in enumerate(COLUMNS)}
        hist = {m: LogHistogram(p.tail_hist[m].floor, p.tail_hist[m].alpha) for m in METRICS}
        for h in p.segment_hists[g:]:
            for m in METRICS:
                hist[m].merge(h[m])
        for m in METRICS:
            hist[m].merge(p.tail_hist[m])
        keep = post[-1] > 0
        block_means = {c: post[COLUMNS.index(c)][keep] / post[-1][keep]
                       for c in ("waiting", "sojourn", "execution", "spacing")}
        warmup = p.skip + g * p.segment_blocks * p.block
        out.append(ReplicationStats(
            jobs=jobs, warmup=int(min(warmup, p.seen)), warmup_rule=rule, warmup_at_limit=bool(at_limit), sums=sums,
            span=float(p.last_arrival - p.arrival_at[g]), start_span=float(p.last_start - p.start_at[g]),
            histograms=hist, block_means=block_means, block_jobs=p.block, total_jobs=p.seen, seconds=p.seconds,
            kernel_seconds=p.kernel_seconds, extra={**({"classes": _class_stats(p, g)} if p.classes else {}),
                                                    **({"failures": p.failures} if p.failures else {}),
                                                    **({"clocks": p.clocks} if p.clocks is not None else {}),
                                                    **({"queue": _queue_stats(p, g)} if p.queue else {}),
                                                    **({"workers": _workers_stats(p, warmup)}
                                                       if p.workers is not None else {})},
            busy_span=float(p.last_departure - p.arrival_at[g])))
    return out


def _workers_stats(p: RunPartial, warmup: int) -> dict:
    """Moldable jobs: the measured jobs' workers (those after the warm-up), as a sum and as block means of the
    accumulator's blocks (for batch means of one replication)."""
    measured = p.workers[min(warmup, p.seen):].astype(np.float64)
    blocks = measured.size // p.block
    means = measured[:blocks * p.block].reshape(blocks, p.block).mean(axis=1) if blocks else np.empty(0)
    return {"sum": float(measured.sum()), "jobs": int(measured.size), "block_means": means}


def _queue_stats(p: RunPartial, g: int) -> dict:
    """Per group (class, or all jobs), from segment ``g`` on: the queue at each segment's first arrival, the
    segments' waiting sums and job counts, the segments' first arrival times; and over the whole run the jobs
    that arrived and those still waiting at the last arrival (see :func:`run_stability`)."""
    i = COLUMNS.index("waiting")
    if p.classes:
        wait = p.classes[0][:, g:, METRICS.index("waiting")]
        count = p.classes[0][:, g:, -1]
    else:
        nseg, per = p.nsegments, p.segment_blocks
        pad = nseg * per - p.blocks.shape[1]
        rows = np.pad(p.blocks[[i, -1]], ((0, 0), (0, pad))).reshape(2, nseg, per).sum(axis=2)
        wait, count = rows[0][None, g:], rows[1][None, g:]
    return {"at": p.queue["at"][:, g:], "times": p.arrival_at[g:], "waiting_sums": wait, "jobs": count,
            "arrived": p.queue["arrived"], "unstarted": p.queue["unstarted"],
            "span": float(p.last_arrival - p.arrival_at[g])}


def _class_stats(p: RunPartial, g: int) -> list[dict]:
    """Per class, after the warm-up of all jobs (segment ``g`` on): jobs, metric sums and histograms."""
    sums, hists, tails = p.classes                      # histograms only where a class had a job
    template = p.segment_hists[0] if p.segment_hists else p.tail_hist
    by_class: dict[int, list] = {}
    for (c, sg), h in hists.items():
        if sg >= g:
            by_class.setdefault(c, []).append(h)
    for c, h in tails.items():
        by_class.setdefault(c, []).append(h)
    out = []
    for c in range(sums.shape[0]):
        post = sums[c, g:].sum(axis=0)
        hist = {m: LogHistogram(template[m].floor, template[m].alpha) for m in METRICS}
        for h in by_class.get(c, []):
            for m in METRICS:
                hist[m].merge(h[m])
        out.append({"jobs": int(post[-1]), "sums": {m: float(post[i]) for i, m in enumerate(METRICS)},
                    "histograms": hist})
    return out


# --------------------------------------------------------------------------------------------------
# replications' statistics on disk (a sweep keeps them to add replications later)

def _encode(value, arrays: list):
    """A JSON-ready form of ``value``, its arrays moved to ``arrays`` (by index): dicts, lists, numbers,
    strings, numpy arrays and scalars, :class:`LogHistogram` and :class:`ReplicationStats`."""
    if isinstance(value, ReplicationStats):
        return {"__stats__": {f.name: _encode(getattr(value, f.name), arrays) for f in fields(value)}}
    if isinstance(value, LogHistogram):
        return {"__hist__": [value.floor, value.alpha, value.offset, _encode(value.counts, arrays)]}
    if isinstance(value, np.ndarray):
        arrays.append(value)
        return {"__array__": len(arrays) - 1}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {"__dict__": [[_encode(k, arrays), _encode(v, arrays)] for k, v in value.items()]}
    if isinstance(value, list | tuple):
        return [_encode(v, arrays) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"cannot store a {type(value).__name__}")


def _decode(value, arrays):
    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    if not isinstance(value, dict):
        return value
    if "__array__" in value:
        return arrays[f"a{value['__array__']}"]
    if "__hist__" in value:
        floor, alpha, offset, counts = value["__hist__"]
        h = LogHistogram(floor, alpha)
        h.offset, h.counts = int(offset), _decode(counts, arrays)
        return h
    if "__stats__" in value:
        return ReplicationStats(**{k: _decode(v, arrays) for k, v in value["__stats__"].items()})
    return {_decode(k, arrays): _decode(v, arrays) for k, v in value["__dict__"]}


def save_stats(path, stats: list, meta: dict | None = None) -> None:
    """Write replications' statistics (and a JSON-ready ``meta``) to ``path``, an ``.npz`` file that
    :func:`load_stats` reads back bit for bit (numbers as shortest round-trip JSON, arrays as ``.npy``; no
    pickle, so reading a file runs no code). Written atomically: a temporary file beside it, then renamed."""
    import json
    import os
    from pathlib import Path

    arrays: list = []
    text = json.dumps({"meta": meta or {}, "stats": _encode(list(stats), arrays)})
    path = Path(path)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npz")
    np.savez_compressed(tmp, meta=np.array(text), **{f"a{i}": a for i, a in enumerate(arrays)})
    os.replace(tmp, path)


def load_stats(path) -> tuple[list, dict]:
    """``(stats, meta)`` as :func:`save_stats` wrote them."""
    import json

    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files if k != "meta"}
        content = json.loads(str(data["meta"]))
    return _decode(content["stats"], arrays), content["meta"]


def merge_histograms(histograms) -> LogHistogram:
    """One histogram holding the counts of all (same floor and alpha)."""
    histograms = list(histograms)
    out = histograms[0].copy()
    for h in histograms[1:]:
        out.merge(h)
    return out


__all__ = ["ALPHA", "QUANTILES", "LogHistogram", "ReplicationStats", "RunAccumulator", "RunPartial", "batch_means",
           "deviation_from_linear", "finish_replications",
           "batch_means_interval", "binomial_tolerance", "drift", "lag1_test", "merge_histograms", "run_stability",
           "load_stats", "mser_truncation", "quantile_interval", "replicated_warmup", "save_stats", "segment_cut",
           "t_interval", "wilson_interval", "within",
           "MIN_SATURATED_JOBS", "MIN_TAIL_JOBS", "MIN_UTILIZATION_JOBS"]


def deviation_from_linear(x, y) -> float:
    """Largest distance of ``y(x)`` from the straight line through its end points, as a share of the rise.

    0 for a straight line; 0.1 means the curve strays from the chord by a
    tenth of ``|y(x_last) - y(x_first)|`` somewhere.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    chord = y[0] + (y[-1] - y[0]) * (x - x[0]) / (x[-1] - x[0])
    rise = abs(y[-1] - y[0])
    return float(np.max(np.abs(y - chord)) / rise) if rise > 0 else 0.0
