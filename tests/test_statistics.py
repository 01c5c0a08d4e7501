"""The statistics module: intervals, batch means, MSER-5, drift, streaming quantiles, coverage helpers."""

import math

import numpy as np
import pytest

from barrier_queues.statistics import (
    LogHistogram,
    RunAccumulator,
    batch_means_interval,
    binomial_tolerance,
    drift,
    lag1_test,
    mser_truncation,
    sectioning_interval,
    t_interval,
)


def test_t_interval_by_hand_and_undefined_below_two_values():
    lo, hi = t_interval([1.0, 2.0, 3.0], 0.95)
    assert (lo + hi) / 2 == pytest.approx(2.0) and (hi - lo) / 2 == pytest.approx(4.302652729911275 / np.sqrt(3))
    assert all(np.isnan(t_interval([1.0])))


def test_sectioning_interval_is_centred_on_the_estimate_with_the_sections_spread():
    lo, hi = sectioning_interval(10.0, [1.0, 2.0, 3.0], 0.95)
    assert (lo + hi) / 2 == pytest.approx(10.0) and (hi - lo) / 2 == pytest.approx(4.302652729911275 / np.sqrt(3))
    assert all(np.isnan(sectioning_interval(1.0, [1.0])))
    assert all(np.isnan(sectioning_interval(float("nan"), [1.0, 2.0])))


def test_mser_finds_a_planted_transient():
    rng = np.random.default_rng(1)
    y = np.r_[np.linspace(10, 0, 200), np.zeros(1800)] + rng.normal(0, 0.5, 2000)
    d, at_limit = mser_truncation(y)
    assert 150 <= d <= 260 and not at_limit
    d, at_limit = mser_truncation(np.linspace(0, 10, 1000))          # a trend never settles
    assert at_limit


def test_lag1_test_flags_correlated_batches():
    rng = np.random.default_rng(2)
    assert lag1_test(rng.normal(size=200))["independent"]
    ar = np.zeros(200)
    for i in range(1, 200):
        ar[i] = 0.8 * ar[i - 1] + rng.normal()
    assert not lag1_test(ar)["independent"]


def test_batch_means_interval_and_drift():
    rng = np.random.default_rng(3)
    bm = batch_means_interval(rng.normal(5, 1, 10_000), 20)
    assert bm["batches"] == 20 and bm["interval"][0] < 5 < bm["interval"][1]
    assert drift(np.linspace(0, 1, 1000))["drifting"] and not drift(rng.normal(size=1000))["drifting"]


def test_log_histogram_quantiles_within_their_relative_accuracy():
    rng = np.random.default_rng(4)
    x = np.r_[np.zeros(500), rng.lognormal(0, 2, 50_000)]
    h = LogHistogram(1e-6, 0.002)
    for part in np.array_split(x, 7):
        h.add(part)
    assert h.total == x.size
    for q in (0.001, 0.01, 0.5, 0.9, 0.99, 0.999):
        exact = np.quantile(x, q, method="inverted_cdf")
        assert abs(h.quantile(q) - exact) <= 0.002 * exact + 1e-6
    other = LogHistogram(1e-6, 0.002)
    other.add(x)
    merged = LogHistogram(1e-6, 0.002).merge(h).merge(other)
    assert merged.total == 2 * x.size and merged.quantile(0.5) == h.quantile(0.5)


def test_run_accumulator_equals_direct_computation_with_a_fixed_warmup():
    rng = np.random.default_rng(5)
    n = 30_007
    arrival = np.cumsum(rng.exponential(1.0, n))
    start = arrival + rng.exponential(0.5, n)
    departure = start + rng.exponential(2.0, n)
    work, useful, completed = rng.random(n), rng.random(n), rng.integers(1, 4, n)
    acc = RunAccumulator(n, floor=1e-6, warmup=1234)
    for a in range(0, n, 4096):
        sl = slice(a, a + 4096)
        acc.add(arrival[sl], start[sl], departure[sl], work[sl], useful[sl], completed[sl])
    st = acc.finish()
    assert st.jobs == n - 1234 and st.warmup == 1234 and st.warmup_rule == "fixed"
    assert st.mean("waiting") == pytest.approx((start - arrival)[1234:].mean(), rel=1e-12)
    assert st.sums["completed"] == completed[1234:].sum()
    assert st.span == pytest.approx(arrival[-1] - arrival[1234])


def test_binomial_tolerance_is_the_central_range():
    lo, hi = binomial_tolerance(200, 0.95, 0.999)
    assert lo < 190 < hi and 175 <= lo and hi <= 201


def test_kendall_trend_equals_scipy():
    from scipy import stats

    from barrier_queues.statistics import kendall_trend

    rng = np.random.default_rng(7)
    for y in (rng.normal(size=20), np.linspace(0, 1, 20) + rng.normal(0, 0.1, 20), np.round(rng.normal(size=20), 1)):
        tau, p = kendall_trend(y)
        ref = stats.kendalltau(np.arange(y.size), y)
        assert tau == pytest.approx(ref.statistic, abs=1e-12)
        assert p == pytest.approx(ref.pvalue, rel=0.3, abs=0.01)     # normal approximation vs exact


def test_t_quantile_closed_form_equals_scipy():
    from barrier_queues import ParameterError

    """The closed-form t quantile (A&S 26.7.3-4 inverted by Brent) against scipy's stdtrit, and its CDF at it."""
    from scipy import special

    from barrier_queues.statistics import T_CLOSED_FORM_MAX_DOF, t_central, t_quantile

    for dof in [*range(1, 60), 99, 150, 199, T_CLOSED_FORM_MAX_DOF, T_CLOSED_FORM_MAX_DOF + 1, 20_000]:
        for level in (0.5, 0.8, 0.9, 0.95, 0.99, 0.999, 0.9999):
            exact = float(special.stdtrit(dof, 0.5 + level / 2))
            assert t_quantile(level, dof) == pytest.approx(exact, rel=1e-12), (dof, level)
            if dof <= T_CLOSED_FORM_MAX_DOF:
                assert t_central(exact, dof) == pytest.approx(level, rel=1e-13), (dof, level)
    with pytest.raises(ParameterError, match="level must be in"):
        t_quantile(1.0, 3)
    with pytest.raises(ParameterError, match="dof must be an integer"):
        t_quantile(0.95, 0)


def test_wilson_interval_is_the_score_test_inversion_and_covers_rare_events():
    """Wilson's interval is the set of p whose score test accepts x of n: its ends solve
    (x/n - p)^2 = z^2 p (1 - p) / n (found here by a root finder); at a rare-event share (5.5 expected
    events in 40,000 trials, the failures chapter's case) it covers p in about 95 % of 4,000 binomial draws."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    from barrier_queues.statistics import wilson_interval

    z = norm.ppf(0.975)
    for x, n in ((1, 40_000), (37, 100), (0, 50), (50, 50)):
        lo, hi = wilson_interval(x, n)
        score = lambda p, x=x, n=n: (x / n - p) ** 2 - z * z * p * (1 - p) / n  # noqa: E731
        if x > 0:
            assert lo == pytest.approx(brentq(score, 1e-15, x / n * (1 - 1e-9)), rel=1e-9)
        else:
            assert lo == 0.0
        if x < n:
            assert hi == pytest.approx(brentq(score, x / n + 1e-12, 1 - 1e-15), rel=1e-9)
        else:
            assert hi == 1.0
    p, n = 1.366e-4, 40_000
    draws = np.random.default_rng(11).binomial(n, p, size=4000)
    covered = np.mean([lo <= p <= hi for lo, hi in (wilson_interval(int(x), n) for x in draws)])
    assert 0.93 <= covered <= 0.99


def test_within_cuts_an_interval_to_the_possible_values_and_keeps_nan():
    from barrier_queues.statistics import within

    assert within([-0.5, 2.0]) == [0.0, 2.0]
    assert within([0.9, 1.2], 0.0, 1.0) == [0.9, 1.0]
    assert within([1.01, 1.2], 0.0, 1.0) == [1.0, 1.0]
    lo, hi = within([float("nan"), float("nan")])
    assert lo != lo and hi != hi


def test_batch_means_of_fewer_values_than_batches_give_one_batch_per_value_and_no_warning():
    import warnings

    from barrier_queues.statistics import batch_means

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list(batch_means([1.0, 3.0], 20)) == [1.0, 3.0]
        assert batch_means([], 20).size == 0


@pytest.mark.parametrize("spread", [1.0, 1e6])      # 1e6: bins too wide for one bincount, group by group
def test_grouped_bin_counts_equal_each_groups_own_histogram(spread):
    """One bincount over (group, bin) gives every group the counts binning its own values gives, occupied range
    and all (the simulator's statistics count segments and classes this way)."""
    from barrier_queues.statistics import LogHistogram, grouped_bin_counts

    rng = np.random.default_rng(5)
    values = np.r_[rng.exponential(1.0, 5000) * rng.choice([1.0, spread], 5000), np.zeros(50)]
    groups = rng.integers(0, 7, values.size)
    groups[groups == 3] = 4                            # an empty group
    ngroups = 7 * (200 if spread > 1 else 1)
    h = LogHistogram(1e-6)
    bins = h.index(values)
    got = {g: (lo, counts) for g, lo, counts in grouped_bin_counts(groups, ngroups, bins)}
    assert set(got) == set(np.unique(groups).tolist())
    for g, (lo, counts) in got.items():
        own = LogHistogram(1e-6)
        own.add(values[groups == g])
        assert lo == own.offset and np.array_equal(counts, own.counts)


def test_stored_replication_statistics_read_back_bit_for_bit(tmp_path):
    """save_stats / load_stats (a sweep's stored replications): every field, histogram, per-class and failure
    count comes back equal and of the same type, through a file that holds no pickle."""
    import dataclasses

    import barrier_queues as bq
    from barrier_queues.statistics import LogHistogram, load_stats, save_stats

    def same(a, b):
        if isinstance(a, np.ndarray):
            return a.dtype == b.dtype and np.array_equal(a, b)
        if isinstance(a, LogHistogram):
            return same(vars(a), vars(b))
        if dataclasses.is_dataclass(a):
            return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, list | tuple):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
        if isinstance(a, float) and math.isnan(a):
            return isinstance(b, float) and math.isnan(b)
        return type(a) is type(b) and a == b

    for system in (bq.BarrierSystem(servers=8, tasks_pmf={2: 0.5, 4: 0.5}, arrival_rate=0.5),
                   bq.BarrierSystem(servers=8, tasks=4, failure_rate=0.05, arrival_rate=0.3)):
        stats = bq.simulate(system, jobs=5000, replications=2, seed=1, workers=1).stats
        save_stats(tmp_path / "s.npz", stats, {"first_round": 2})
        back, meta = load_stats(tmp_path / "s.npz")
        assert meta == {"first_round": 2} and same(stats, back)
        assert stats[0].extra and same(stats[0].extra, back[0].extra)
    with np.load(tmp_path / "s.npz", allow_pickle=False) as data:
        assert all(data[k].dtype != object for k in data.files)


@pytest.mark.parametrize("jobs, warmup, held, classes", [(10_000, None, False, 0), (250_000, None, True, 0),
                                                         (3_000_001, 777, False, 0), (180_000, 4_321, True, 3)])
def test_the_compiled_accumulator_equals_its_numpy_reference_bit_for_bit(jobs, warmup, held, classes):
    """RunAccumulator.add with the compiled block sums and bin counts, against its numpy reference
    (compiled=False), fed the same chunks of random times (chunks of uneven sizes, across block and segment
    boundaries, blocks of 5 to 151 jobs, waits of exactly 0, a fixed warm-up ending inside a chunk, held
    times, job classes): every block sum, histogram, segment time and class sum is identical."""
    from barrier_queues.statistics import RunAccumulator

    rng = np.random.default_rng(jobs)
    accs = [RunAccumulator(jobs, 1e-6, warmup, classes=classes, compiled=c) for c in (True, False)]
    done, t = 0, 0.0
    while done < jobs:
        n = int(min(jobs - done, rng.integers(1, 70_000)))
        arrival = t + np.cumsum(rng.exponential(0.5, n))
        start = np.maximum.accumulate(arrival + np.where(rng.random(n) < 0.4, 0.0, rng.exponential(2.0, n)))
        departure = start + rng.exponential(1.0, n) * rng.choice([1e-9, 1.0, 1e3], n, p=[0.01, 0.98, 0.01])
        work, useful = departure - start, (departure - start) * 0.5
        completed = rng.integers(1, 9, n)
        extra = {"held": rng.exponential(0.1, n) if held else None,
                 "classes": rng.integers(0, classes, n) if classes else None}
        for acc in accs:
            acc.add(arrival, start, departure, work, useful, completed, **extra)
        done, t = done + n, arrival[-1]
    fast, ref = (acc.partial() for acc in accs)
    assert fast.block >= 5 and np.array_equal(fast.blocks, ref.blocks)
    assert fast.blocks.tobytes() == ref.blocks.tobytes()
    for mine, theirs in zip(fast.segment_hists + [fast.tail_hist], ref.segment_hists + [ref.tail_hist], strict=True):
        for m in mine:
            assert mine[m].offset == theirs[m].offset and np.array_equal(mine[m].counts, theirs[m].counts)
    assert np.array_equal(fast.arrival_at, ref.arrival_at, equal_nan=True)
    assert np.array_equal(fast.start_at, ref.start_at, equal_nan=True)
    assert (fast.last_arrival, fast.last_start, fast.last_departure, fast.seen) == \
        (ref.last_arrival, ref.last_start, ref.last_departure, ref.seen)
    if classes:
        assert fast.classes[0].tobytes() == ref.classes[0].tobytes()


def test_the_compiled_histogram_bins_equal_numpy_bit_for_bit():
    """``log_bins`` (compiled) against ``LogHistogram.index`` (numpy) on the edge values and on values
    spread over 600 decades, bin boundaries ``floor g^i`` and their neighbours included, half of a row's
    values repeating the row above's (``log_bins`` reuses their bins)."""
    from barrier_queues.kernels import kernels_module

    h = LogHistogram(1e-6, 0.005)
    rng = np.random.default_rng(4)
    g = (1 + h.alpha) / (1 - h.alpha)
    edges = h.floor * g ** np.arange(-5, 400)
    values = np.concatenate([
        [0.0, -0.0, -1.0, np.nan, h.floor, np.nextafter(h.floor, 0), np.nextafter(h.floor, 1), 5e-324, 1e300],
        edges, np.nextafter(edges, 0), np.nextafter(edges, np.inf),
        10 ** rng.uniform(-300, 300, 200_000), rng.exponential(1.0, 200_000)])
    same = rng.random(values.size) < 0.5          # the row below repeats the value (its bin is reused)
    values = np.vstack([values, np.where(same, values, values[::-1]), rng.permutation(values)])
    out = np.empty(values.shape, dtype=np.int64)
    kernels_module().log_bins(values, h.floor, h.log_gamma, out)
    for row, got in zip(values, out, strict=True):
        np.testing.assert_array_equal(got, h.index(row))
    assert out.min() == 0 and out.max() > 1000


@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 16, 129, 1000, 9000, 30_000])
def test_the_compiled_class_sums_and_counts_equal_numpys_masked_ones_bit_for_bit(n):
    """``class_piece`` (compiled) against numpy's masked sums and bincounts, on pieces from one value to
    several of numpy's pairwise blocks, with a rare class (a few jobs) and a class without jobs."""
    from barrier_queues.kernels import kernels_module

    rng = np.random.default_rng(n)
    values = np.ascontiguousarray(rng.exponential(1.0, (3, n + 10)) * 10 ** rng.uniform(-4, 4, (3, n + 10)))
    cls = rng.choice(3, size=n + 10, p=[0.6, 0.399, 0.001]).astype(np.int64)
    bins = np.ascontiguousarray(rng.integers(0, 400, (3, n + 10)))
    a, b = 5, n + 5
    out = np.full((4, 4), np.nan)
    counted = {(c, i): (lo, counts) for c, i, lo, counts in
               kernels_module().class_piece(values, bins, cls, a, b, out)}
    for c in range(4):
        mask = cls[a:b] == c
        assert out[c, 3] == mask.sum()
        for i in range(3):
            assert out[c, i] == (values[i, a:b][mask].sum() if mask.any() else 0.0), (c, i)
            if not mask.any():
                assert (c, i) not in counted
                continue
            sel = bins[i, a:b][mask]
            lo, counts = counted[(c, i)]
            assert lo == sel.min()
            np.testing.assert_array_equal(counts, np.bincount(sel - sel.min()))


def test_the_compiled_class_piece_refuses_a_class_out_of_range():
    """A job class outside the rows of ``out`` is refused, not written past the buffers."""
    from barrier_queues.kernels import kernels_module

    values, bins = np.ones((3, 10)), np.zeros((3, 10), dtype=np.int64)
    for bad in (2, -1):
        cls = np.zeros(10, dtype=np.int64)
        cls[7] = bad
        with pytest.raises(ValueError, match="job classes"):
            kernels_module().class_piece(values, bins, cls, 0, 10, np.empty((2, 4)))


def test_the_compiled_statistics_refuse_mismatched_shapes():
    """Shapes that do not match are refused before any write (the module is compiled without bounds checks)."""
    from barrier_queues.kernels import kernels_module

    kernels = kernels_module()
    with pytest.raises(ValueError, match="shape of values"):
        kernels.log_bins(np.ones((3, 10)), 1e-6, 0.01, np.empty((3, 9), dtype=np.int64))
    with pytest.raises(ValueError, match="a:b must lie"):
        kernels.class_piece(np.ones((3, 10)), np.zeros((3, 10), dtype=np.int64), np.zeros(10, dtype=np.int64),
                            0, 11, np.empty((2, 4)))


@pytest.mark.parametrize("jobs, warmup, classes", [(1_000_000, None, 0), (300_000, None, 3), (300_000, 20_000, 3),
                                                    (180_001, 777, 0)])
def test_jobs_added_in_pieces_at_the_sinks_cuts_give_the_statistics_of_one_piece(jobs, warmup, classes):
    """``Sink.cuts``: a long run of jobs added in pieces cut where it says gives every block sum, histogram,
    segment time and class sum of the run added at once, bit for bit, from any first job (inside the warm-up
    or not); cuts elsewhere can change the class sums (shown without warm-up: what the cuts are for)."""
    import barrier_queues as bq
    from barrier_queues.runs import Sink

    system = bq.BarrierSystem(servers=16, tasks=4, arrival_rate=2.0)
    rng = np.random.default_rng(jobs)
    n = 400_000 if jobs > 400_000 else jobs - 1_000
    arrival = np.cumsum(rng.exponential(0.5, jobs))
    start = np.maximum.accumulate(arrival + rng.exponential(2.0, jobs))
    departure = start + rng.exponential(1.0, jobs)
    cls = rng.integers(0, max(classes, 1), jobs)
    cols = (arrival, start, departure, departure - start, (departure - start) * 0.5, rng.integers(1, 5, jobs))

    def run(bounds):
        sink = Sink(system, jobs, warmup, False, None, 0)
        acc = sink.acc = RunAccumulator(jobs, sink.acc.floor, warmup, classes=classes)    # (classes of its own)
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=False):
            acc.add(*(c[lo:hi] for c in cols), classes=cls[lo:hi] if classes else None)
        return sink, acc.partial()

    first = jobs - n                                      # the long run: jobs first .. jobs - 1
    sink, whole = run([0, first, jobs])
    cuts = sink.cuts(first, n, 65_536)
    assert len(cuts) >= 2 and all(0 < c < n for c in cuts)
    assert all((first + c - sink.acc.skip) % sink.acc.segment == 0 and first + c > sink.acc.skip for c in cuts)
    _, pieces = run([0, first, *(first + c for c in cuts), jobs])
    offs = [run([0, first + d, jobs])[1] for d in (7, 3001, 30_001)] if classes and warmup is None else []
    assert pieces.blocks.tobytes() == whole.blocks.tobytes()
    for mine, theirs in zip(pieces.segment_hists + [pieces.tail_hist], whole.segment_hists + [whole.tail_hist],
                            strict=True):
        assert all(np.array_equal(mine[m].counts, theirs[m].counts) for m in mine)
    assert np.array_equal(pieces.arrival_at, whole.arrival_at, equal_nan=True)
    if classes:
        assert pieces.classes[0].tobytes() == whole.classes[0].tobytes()
        assert not offs or any(off.classes[0].tobytes() != whole.classes[0].tobytes() for off in offs)
