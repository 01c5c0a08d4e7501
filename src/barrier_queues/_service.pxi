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
    the smaller side recursed and the larger looped over (depth O(log n)), 17 values or fewer by ranks. The
    sorted values are those of any correct sort; against libc's ``qsort``, which calls its comparison through
    a pointer, 1.9x as fast at 64 and 1.7x at 1,024 exponential values (2026-11-26, with the ranks: 1.34 against
    2.55 us, 35 against 60 us, through :func:`sort_doubles`; insertion below 17 values gave 1.54 and 37 us)."""
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


cdef inline void _sort_small(double* a, int64_t n) noexcept nogil:
    """Sort ``a[:n]`` (n <= 17) by ranks: each value goes to the number of values before it in the order (value,
    index), counted without a branch per comparison (an insertion sort mispredicts about one branch per value)."""
    cdef double tmp[17]
    cdef double x
    cdef int64_t i, j, r
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


