# One job's service under the registered rules (barrier_queues.rules): included by _kernels.pyx.
# A new rule is one branch of _job_service and one code in the enum of _kernels.pyx.

# one job's service

cdef double _knee_release(const double* t, int64_t k, double min_fraction, double min_wait, double gain,
                          int64_t* completed) noexcept nogil:
    """Knee-detector release on sorted completion times ``t[:k]``: returns D, leaves L in ``completed[0]``."""
    if k == 1:
        completed[0] = 1
        return t[0]
    cdef double i_min = ceil(min_fraction * k - 1e-12)
    cdef double arr = t[0]
    cdef double dev = t[0] / 2.0
    cdef double g, tau, when
    cdef int64_t i
    for i in range(1, k):                 # i tasks have completed
        if i >= 2:
            g = t[i - 1] - t[i - 2]
            dev = 0.75 * dev + 0.25 * fabs(arr - g)
            arr = (1.0 - gain) * arr + gain * g
        tau = arr + 4.0 * dev
        if t[i] - t[i - 1] > tau:
            when = t[i - 1] + tau
            if i >= i_min and when >= min_wait:
                completed[0] = i
                return when
    completed[0] = k
    return t[k - 1]


def knee_release(const double[::1] t, int64_t k, double min_fraction, double min_wait, double gain):
    """Knee-detector release on sorted completion times ``t[:k]``: returns (D, L)."""
    cdef int64_t completed = 0
    cdef double d = _knee_release(&t[0], k, min_fraction, min_wait, gain, &completed)
    return d, completed


cdef int _compare(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*> a)[0]
    cdef double y = (<const double*> b)[0]
    return (x > y) - (x < y)


cdef void _sort_doubles(double* a, int64_t n) noexcept nogil:
    """Sort ``a[:n]`` ascending in place (no NaN): quicksort with the median of three and Hoare's partition,
    the smaller side recursed and the larger looped over (depth O(log n)), 17 values or fewer by
    :func:`_sort_small` (sorting networks up to 16). The sorted values are those of any correct sort; against
    libc's ``qsort``, which calls its comparison through a pointer, it is about twice as fast (measured:
    CHANGELOG)."""
    cdef int64_t lo = 0, hi = n - 1, i, j, mid
    cdef double p, x
    while hi - lo > 16:
        mid = lo + ((hi - lo) >> 1)
        if a[mid] < a[lo]:
            a[mid], a[lo] = a[lo], a[mid]
        if a[hi] < a[lo]:
            a[hi], a[lo] = a[lo], a[hi]
        if a[hi] < a[mid]:
            a[hi], a[mid] = a[mid], a[hi]
        p = a[mid]                                # a[lo] <= p <= a[hi]: both scans stop inside
        i = lo
        j = hi
        while i <= j:
            while a[i] < p:
                i += 1
            while a[j] > p:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if j - lo < hi - i:                       # a[lo..j] <= p <= a[i..hi]
            _sort_doubles(a + lo, j - lo + 1)
            lo = i
        else:
            _sort_doubles(a + i, hi - i + 1)
            hi = j
    _sort_small(a + lo, hi - lo + 1)


cdef extern from *:
    """
    /* the lesser and the greater of two doubles without a branch (no NaN): SSE2's minsd and maxsd, which
       compilers do not emit for a conditional without -ffinite-math-only; elsewhere the conditional */
    #if defined(__SSE2__) || defined(_M_X64)
    #include <emmintrin.h>
    static inline double bq_lo(double x, double y) { return _mm_cvtsd_f64(_mm_min_sd(_mm_set_sd(x), _mm_set_sd(y))); }
    static inline double bq_hi(double x, double y) { return _mm_cvtsd_f64(_mm_max_sd(_mm_set_sd(x), _mm_set_sd(y))); }
    #else
    static inline double bq_lo(double x, double y) { return x < y ? x : y; }
    static inline double bq_hi(double x, double y) { return x > y ? x : y; }
    #endif
    """
    double _lo "bq_lo" (double x, double y) noexcept nogil
    double _hi "bq_hi" (double x, double y) noexcept nogil


cdef inline void _sort_net4(double* a, int64_t n) noexcept nogil:
    """Sort ``a[:n]`` (n <= 4) by Batcher's odd-even merge network on 4 inputs (5 comparators, one per
    line), the values padded with infinities and held in locals: each comparator is a minimum and a maximum,
    without a branch."""
    cdef double tmp[4]
    cdef double v0, v1, v2, v3
    cdef int64_t i
    for i in range(4):
        tmp[i] = a[i] if i < n else INFINITY
    v0, v1, v2, v3 = tmp[0], tmp[1], tmp[2], tmp[3]
    v0, v1 = _lo(v0, v1), _hi(v0, v1)
    v2, v3 = _lo(v2, v3), _hi(v2, v3)
    v0, v2 = _lo(v0, v2), _hi(v0, v2)
    v1, v3 = _lo(v1, v3), _hi(v1, v3)
    v1, v2 = _lo(v1, v2), _hi(v1, v2)
    tmp[0], tmp[1], tmp[2], tmp[3] = v0, v1, v2, v3
    for i in range(n):
        a[i] = tmp[i]


cdef inline void _sort_net8(double* a, int64_t n) noexcept nogil:
    """Sort ``a[:n]`` (n <= 8) by Batcher's odd-even merge network on 8 inputs (19 comparators, one per
    line), the values padded with infinities and held in locals: each comparator is a minimum and a maximum,
    without a branch."""
    cdef double tmp[8]
    cdef double v0, v1, v2, v3, v4, v5, v6, v7
    cdef int64_t i
    for i in range(8):
        tmp[i] = a[i] if i < n else INFINITY
    v0, v1, v2, v3, v4, v5, v6, v7 = tmp[0], tmp[1], tmp[2], tmp[3], tmp[4], tmp[5], tmp[6], tmp[7]
    v0, v1 = _lo(v0, v1), _hi(v0, v1)
    v2, v3 = _lo(v2, v3), _hi(v2, v3)
    v0, v2 = _lo(v0, v2), _hi(v0, v2)
    v1, v3 = _lo(v1, v3), _hi(v1, v3)
    v1, v2 = _lo(v1, v2), _hi(v1, v2)
    v4, v5 = _lo(v4, v5), _hi(v4, v5)
    v6, v7 = _lo(v6, v7), _hi(v6, v7)
    v4, v6 = _lo(v4, v6), _hi(v4, v6)
    v5, v7 = _lo(v5, v7), _hi(v5, v7)
    v5, v6 = _lo(v5, v6), _hi(v5, v6)
    v0, v4 = _lo(v0, v4), _hi(v0, v4)
    v2, v6 = _lo(v2, v6), _hi(v2, v6)
    v2, v4 = _lo(v2, v4), _hi(v2, v4)
    v1, v5 = _lo(v1, v5), _hi(v1, v5)
    v3, v7 = _lo(v3, v7), _hi(v3, v7)
    v3, v5 = _lo(v3, v5), _hi(v3, v5)
    v1, v2 = _lo(v1, v2), _hi(v1, v2)
    v3, v4 = _lo(v3, v4), _hi(v3, v4)
    v5, v6 = _lo(v5, v6), _hi(v5, v6)
    tmp[0], tmp[1], tmp[2], tmp[3], tmp[4], tmp[5], tmp[6], tmp[7] = v0, v1, v2, v3, v4, v5, v6, v7
    for i in range(n):
        a[i] = tmp[i]


cdef inline void _sort_net16(double* a, int64_t n) noexcept nogil:
    """Sort ``a[:n]`` (n <= 16) by Batcher's odd-even merge network on 16 inputs (63 comparators, one per
    line), the values padded with infinities and held in locals: each comparator is a minimum and a maximum,
    without a branch."""
    cdef double tmp[16]
    cdef double v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15
    cdef int64_t i
    for i in range(16):
        tmp[i] = a[i] if i < n else INFINITY
    v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15 = tmp[0], tmp[1], tmp[2], tmp[3], tmp[4], tmp[5], tmp[6], tmp[7], tmp[8], tmp[9], tmp[10], tmp[11], tmp[12], tmp[13], tmp[14], tmp[15]
    v0, v1 = _lo(v0, v1), _hi(v0, v1)
    v2, v3 = _lo(v2, v3), _hi(v2, v3)
    v0, v2 = _lo(v0, v2), _hi(v0, v2)
    v1, v3 = _lo(v1, v3), _hi(v1, v3)
    v1, v2 = _lo(v1, v2), _hi(v1, v2)
    v4, v5 = _lo(v4, v5), _hi(v4, v5)
    v6, v7 = _lo(v6, v7), _hi(v6, v7)
    v4, v6 = _lo(v4, v6), _hi(v4, v6)
    v5, v7 = _lo(v5, v7), _hi(v5, v7)
    v5, v6 = _lo(v5, v6), _hi(v5, v6)
    v0, v4 = _lo(v0, v4), _hi(v0, v4)
    v2, v6 = _lo(v2, v6), _hi(v2, v6)
    v2, v4 = _lo(v2, v4), _hi(v2, v4)
    v1, v5 = _lo(v1, v5), _hi(v1, v5)
    v3, v7 = _lo(v3, v7), _hi(v3, v7)
    v3, v5 = _lo(v3, v5), _hi(v3, v5)
    v1, v2 = _lo(v1, v2), _hi(v1, v2)
    v3, v4 = _lo(v3, v4), _hi(v3, v4)
    v5, v6 = _lo(v5, v6), _hi(v5, v6)
    v8, v9 = _lo(v8, v9), _hi(v8, v9)
    v10, v11 = _lo(v10, v11), _hi(v10, v11)
    v8, v10 = _lo(v8, v10), _hi(v8, v10)
    v9, v11 = _lo(v9, v11), _hi(v9, v11)
    v9, v10 = _lo(v9, v10), _hi(v9, v10)
    v12, v13 = _lo(v12, v13), _hi(v12, v13)
    v14, v15 = _lo(v14, v15), _hi(v14, v15)
    v12, v14 = _lo(v12, v14), _hi(v12, v14)
    v13, v15 = _lo(v13, v15), _hi(v13, v15)
    v13, v14 = _lo(v13, v14), _hi(v13, v14)
    v8, v12 = _lo(v8, v12), _hi(v8, v12)
    v10, v14 = _lo(v10, v14), _hi(v10, v14)
    v10, v12 = _lo(v10, v12), _hi(v10, v12)
    v9, v13 = _lo(v9, v13), _hi(v9, v13)
    v11, v15 = _lo(v11, v15), _hi(v11, v15)
    v11, v13 = _lo(v11, v13), _hi(v11, v13)
    v9, v10 = _lo(v9, v10), _hi(v9, v10)
    v11, v12 = _lo(v11, v12), _hi(v11, v12)
    v13, v14 = _lo(v13, v14), _hi(v13, v14)
    v0, v8 = _lo(v0, v8), _hi(v0, v8)
    v4, v12 = _lo(v4, v12), _hi(v4, v12)
    v4, v8 = _lo(v4, v8), _hi(v4, v8)
    v2, v10 = _lo(v2, v10), _hi(v2, v10)
    v6, v14 = _lo(v6, v14), _hi(v6, v14)
    v6, v10 = _lo(v6, v10), _hi(v6, v10)
    v2, v4 = _lo(v2, v4), _hi(v2, v4)
    v6, v8 = _lo(v6, v8), _hi(v6, v8)
    v10, v12 = _lo(v10, v12), _hi(v10, v12)
    v1, v9 = _lo(v1, v9), _hi(v1, v9)
    v5, v13 = _lo(v5, v13), _hi(v5, v13)
    v5, v9 = _lo(v5, v9), _hi(v5, v9)
    v3, v11 = _lo(v3, v11), _hi(v3, v11)
    v7, v15 = _lo(v7, v15), _hi(v7, v15)
    v7, v11 = _lo(v7, v11), _hi(v7, v11)
    v3, v5 = _lo(v3, v5), _hi(v3, v5)
    v7, v9 = _lo(v7, v9), _hi(v7, v9)
    v11, v13 = _lo(v11, v13), _hi(v11, v13)
    v1, v2 = _lo(v1, v2), _hi(v1, v2)
    v3, v4 = _lo(v3, v4), _hi(v3, v4)
    v5, v6 = _lo(v5, v6), _hi(v5, v6)
    v7, v8 = _lo(v7, v8), _hi(v7, v8)
    v9, v10 = _lo(v9, v10), _hi(v9, v10)
    v11, v12 = _lo(v11, v12), _hi(v11, v12)
    v13, v14 = _lo(v13, v14), _hi(v13, v14)
    tmp[0], tmp[1], tmp[2], tmp[3], tmp[4], tmp[5], tmp[6], tmp[7], tmp[8], tmp[9], tmp[10], tmp[11], tmp[12], tmp[13], tmp[14], tmp[15] = v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13, v14, v15
    for i in range(n):
        a[i] = tmp[i]


cdef inline void _sort_small(double* a, int64_t n) noexcept nogil:
    """Sort ``a[:n]`` (n <= 17). Two to 16 values by a sorting network (``_sort_net4``, ``_sort_net8``,
    ``_sort_net16``: Batcher's odd-even merge sort, Knuth TAOCP vol. 3, 5.3.4; each comparator a branch-free
    minimum and maximum on locals), 17 by ranks: each value goes to the number of values before it in the order
    (value, index), counted without a branch per comparison (an insertion sort mispredicts about one branch per
    value). Measured: see CHANGELOG."""
    cdef double tmp[17]
    cdef double x
    cdef int64_t i, j, r
    if n <= 1:
        return
    if n <= 4:
        _sort_net4(a, n)
        return
    if n <= 8:
        _sort_net8(a, n)
        return
    if n <= 16:
        _sort_net16(a, n)
        return
    for i in range(n):
        tmp[i] = a[i]
    for i in range(n):
        x = tmp[i]
        r = 0
        for j in range(i):
            r += tmp[j] <= x
        for j in range(i + 1, n):
            r += tmp[j] < x
        a[r] = x


def sort_doubles(double[::1] values, bint with_qsort=False):
    """:func:`_sort_doubles` on ``values`` in place (``with_qsort``: libc's ``qsort`` instead), for tests and
    the benchmark."""
    cdef int64_t n = values.shape[0]
    if n == 0:
        return
    with nogil:
        if with_qsort:
            qsort(&values[0], n, sizeof(double), _compare)
        else:
            _sort_doubles(&values[0], n)


cdef struct Service:
    # the release rule and phases of every job of a system
    int64_t phases
    int64_t policy
    int64_t stragglers
    double min_fraction
    double min_wait
    double gain
    double timeout
    bint spark_sync
    double poll


cdef double _job_service(const double* times, int64_t o, int64_t k, const Service* sv, double* run, double* scratch,
                         int64_t* completed_out, double* useful_out) noexcept nogil:
    """One job's departure ``D`` (returned), tasks completed ``L`` and useful work; fills ``run[:k]``.

    See the module docstring for the rules; ``scratch`` has room for k values.
    """
    cdef int64_t i, j, p, completed
    cdef int64_t m = sv.phases
    cdef double d, useful, x, barrier, a, resume
    if m > 1:
        for i in range(k):
            run[i] = times[o + i]
        for p in range(1, m):
            barrier = run[0]
            for i in range(1, k):
                if run[i] > barrier:
                    barrier = run[i]
            for i in range(k):
                if sv.spark_sync:
                    a = run[i]
                    resume = a + sv.poll * (floor((barrier - a) / sv.poll) + 1)
                else:
                    resume = barrier
                run[i] = resume + times[o + p * k + i]
        d = run[0]
        for i in range(1, k):
            if run[i] > d:
                d = run[i]
        useful = 0.0
        for j in range(k * m):
            useful += times[o + j]
        completed_out[0] = k
        useful_out[0] = useful
        return d
    if sv.policy == C_FIXED and sv.stragglers == 0:
        d = times[o]
        useful = times[o]
        run[0] = times[o]
        for i in range(1, k):
            x = times[o + i]
            run[i] = x
            useful += x
            if x > d:
                d = x
        completed_out[0] = k
        useful_out[0] = useful
        return d
    if k <= C_INSERTION_MAX:              # small k: insertion sort beats a general sort by about 2x
        for i in range(k):
            x = times[o + i]
            j = i
            while j > 0 and scratch[j - 1] > x:
                scratch[j] = scratch[j - 1]
                j -= 1
            scratch[j] = x
    else:                                 # any correct sort gives the same sorted values
        for i in range(k):
            scratch[i] = times[o + i]
        _sort_doubles(scratch, k)
    if sv.policy == C_FIXED:
        completed = k - sv.stragglers
        d = scratch[completed - 1]
    elif sv.policy == C_TIMEOUT:
        if scratch[k - 1] <= sv.timeout:
            d = scratch[k - 1]
            completed = k
        else:
            d = sv.timeout
            completed = 0
            while completed < k and scratch[completed] <= sv.timeout:
                completed += 1
    else:
        d = _knee_release(scratch, k, sv.min_fraction, sv.min_wait, sv.gain, &completed)
    useful = 0.0
    for i in range(completed):
        useful += scratch[i]
    for i in range(k):
        x = times[o + i]
        run[i] = x if x < d else d
    completed_out[0] = completed
    useful_out[0] = useful
    return d


cdef Service _service(int64_t phases, int64_t policy, int64_t stragglers, const double[::1] params):
    cdef Service sv
    sv.phases = phases
    sv.policy = policy
    sv.stragglers = stragglers
    sv.min_fraction = params[0]
    sv.min_wait = params[1]
    sv.gain = params[2]
    sv.timeout = params[3]
    sv.spark_sync = params[4] > 0.5
    sv.poll = params[5]
    return sv


