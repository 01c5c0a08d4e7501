# The release set of the waiting-list scheduler (included by _kernels.pyx before waitlist.pxi): the pending releases of busy
# workers, (time, worker) pairs. One small interface, two representations chosen once per call of the kernel
# (``_rs_open``):
#
# * a heap of (time, worker) (_heap.pxi's event heap): when worker ids matter (a trace, or failures that kill a
#   job's running tasks by worker); with ``sorted`` also an ascending array of the times beside it (backfill
#   reads the k-th earliest release and counts the releases up to a time from it, in O(log s));
# * the ascending array alone (``heap`` false): the times without workers, when no result depends on which
#   worker a release frees (the free workers are then a count).
#
# Operations: add one (``_rs_add``) or a job's k (``_rs_add_job``); the earliest time (``_rs_next``); take the
# earliest (``_rs_pop``: its worker, 0 without ids); the i-th earliest and the count up to a time (``_rs_kth``,
# ``_rs_count_le``: sorted only); remove = release now (``_rs_cut_at`` + ``_rs_reorder`` on the heap by
# position, ``_rs_cut_time`` on the array by time). Both representations hold the same times, so every output
# is the same, bit for bit (tested against the plain reference with and without ids).
#
# Rigid jobs (a trace's: a job's k workers are held for one runtime) keep one heap entry per job, (its end, the
# job), instead of k; under backfill the ascending array then holds one entry per running job, its predicted
# end (an estimate's, which may differ from the true end) with its k in ``cnt`` (``_rs_add_group``,
# ``_rs_remove_group``), and ``_rs_kth`` / ``_rs_count_le`` count workers through ``cnt``.


cdef int _compare_double(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*> a)[0]
    cdef double y = (<const double*> b)[0]
    return (x > y) - (x < y)


cdef struct Releases:
    bint heap                                 # the (time, worker) heap holds the releases (worker ids tracked)
    bint sorted                               # the ascending array of times is kept (alone, or beside the heap)
    double* time                              # heap: each entry's release time
    int64_t* worker                           # heap: the worker each entry frees
    int64_t n                                 # heap: entries
    double* asc                               # ascending array: the pending release times in asc[lo:hi]
    int64_t lo                                # ascending array: its first pending entry
    int64_t hi                                # ascending array: its end
    int64_t cap                               # ascending array: its capacity (2 s + 1: at most s pending)
    int64_t* cnt                              # rigid jobs: each entry's workers (NULL: one worker per entry)


cdef void _rs_open(Releases* r, bint heap, bint sorted, double* time, int64_t* worker, int64_t n,
                   double* asc, int64_t servers) noexcept nogil:
    """The release set of one kernel call from the n releases carried over in ``time`` / ``worker`` (a heap, or
    ascending times when the last call kept no heap: an ascending array is a valid heap); ``asc`` has room for
    2 ``servers`` + 1 times."""
    cdef int64_t i
    r.heap, r.sorted, r.time, r.worker, r.asc = heap, sorted, time, worker, asc
    r.cnt = NULL
    r.n = n if heap else 0
    r.lo = 0
    r.hi = n if sorted else 0
    r.cap = 2 * servers + 1
    if sorted:
        for i in range(n):
            asc[i] = time[i]
        if n > 1:
            qsort(asc, n, sizeof(double), _compare_double)


cdef int64_t _rs_close(Releases* r) noexcept nogil:
    """Back into ``time`` / ``worker`` for the next call (without the heap: the ascending times, workers 0);
    returns how many are pending."""
    cdef int64_t i
    if r.heap:
        return r.n
    for i in range(r.hi - r.lo):
        r.time[i] = r.asc[r.lo + i]
        r.worker[i] = 0
    return r.hi - r.lo


cdef inline int64_t _rs_size(Releases* r) noexcept nogil:
    return r.n if r.heap else r.hi - r.lo


cdef inline double _rs_next(Releases* r) noexcept nogil:
    """The earliest pending release time (INFINITY: none)."""
    if r.heap:
        return r.time[0] if r.n > 0 else INFINITY
    return r.asc[r.lo] if r.hi > r.lo else INFINITY


cdef inline int64_t _rs_pop(Releases* r) noexcept nogil:
    """Take the earliest pending release; returns its worker (0 without the heap)."""
    cdef int64_t w = 0
    if r.heap:
        w = r.worker[0]
        r.n = _ev_pop(r.time, r.worker, r.n)
    if r.sorted:
        r.lo += 1                             # (the earliest release, also first in the ascending array)
    return w


cdef inline double _rs_kth(Releases* r, int64_t i) noexcept nogil:
    """The (i + 1)-th earliest pending release time (sorted only; i < size)."""
    cdef int64_t g = r.lo
    if r.cnt != NULL:                         # (rigid jobs: the entry whose workers reach i + 1)
        i -= r.cnt[g]
        while i >= 0:
            g += 1
            i -= r.cnt[g]
        return r.asc[g]
    return r.asc[r.lo + i]


cdef int64_t _rs_count_le(Releases* r, int64_t i, double t) noexcept nogil:
    """How many pending releases are at or before t, knowing the first i are (sorted only)."""
    cdef int64_t lo = r.lo + i
    cdef int64_t hi = r.hi
    cdef int64_t mid
    if r.cnt != NULL:                         # (rigid jobs: the workers of the entries up to t)
        i = 0
        lo = r.lo
        while lo < hi and r.asc[lo] <= t:
            i += r.cnt[lo]
            lo += 1
        return i
    while lo < hi:
        mid = (lo + hi) >> 1
        if r.asc[mid] <= t:
            lo = mid + 1
        else:
            hi = mid
    return lo - r.lo


cdef inline void _rs_room(Releases* r, int64_t k) noexcept nogil:
    """Room for k more entries after ``asc[lo:hi]``: the entries move to the front when they would pass its
    capacity."""
    if r.hi + k > r.cap:
        memmove(r.asc, r.asc + r.lo, (r.hi - r.lo) * sizeof(double))
        r.hi -= r.lo
        r.lo = 0


cdef void _rs_merge(Releases* r, double* b, int64_t k, bint sort) noexcept nogil:
    """Merge the times ``b[:k]`` (sorted here by ``_sort_doubles`` if ``sort``) into ``asc[lo:hi]``. New
    releases are mostly the latest, so the merge runs from the end: O(k log k) plus the entries it passes."""
    cdef double* a = r.asc
    cdef int64_t i, j, out, take
    cdef double x, y
    if sort:
        _sort_doubles(b, k)
    _rs_room(r, k)
    i = r.hi - 1
    j = k - 1
    out = r.hi + k - 1
    while j >= 0:                             # (no branch on the values: the larger of the two tails' last)
        x = a[i] if i >= r.lo else -INFINITY
        y = b[j]
        take = x > y
        a[out] = x if take else y
        i -= take
        j -= 1 - take
        out -= 1
    r.hi += k


cdef void _rs_insert(Releases* r, double t) noexcept nogil:
    """One time ``t`` into ``asc[lo:hi]`` (what ``_rs_merge`` does with k = 1, for the single tasks of
    non-barrier jobs). Up to 32 entries in one pass from the end without a branch per entry: the new entry i is
    the old i - 1 if that is above t, else the least of the old i and t (the old hi: infinity). Above, the place
    by bisection and the entries above it moved up by one."""
    cdef double* a = r.asc
    cdef int64_t i, lo, hi, mid
    cdef double x, y
    _rs_room(r, 1)
    if r.hi - r.lo <= 32:
        a[r.hi] = INFINITY
        for i in range(r.hi, r.lo, -1):
            x = a[i - 1]
            y = a[i] if a[i] < t else t
            a[i] = x if x > t else y
        if t < a[r.lo]:
            a[r.lo] = t
    else:
        lo = r.lo                             # the first entry above t
        hi = r.hi
        while lo < hi:
            mid = (lo + hi) >> 1
            if a[mid] > t:
                hi = mid
            else:
                lo = mid + 1
        memmove(a + lo + 1, a + lo, (r.hi - lo) * sizeof(double))
        a[lo] = t
    r.hi += 1


cdef inline void _rs_add(Releases* r, double t, int64_t w) noexcept nogil:
    """Worker w is released at t."""
    if r.heap:
        r.n = _ev_push(r.time, r.worker, r.n, t, w)
    if r.sorted:
        _rs_insert(r, t)


cdef inline void _rs_add_job(Releases* r, double* t, const int64_t* w, int64_t k, bint sort) noexcept nogil:
    """A job's k releases: worker ``w[i]`` at ``t[i]`` (``t`` is reordered when ``sort``: times not known to be
    ascending)."""
    cdef int64_t i
    if r.heap:
        for i in range(k):
            r.n = _ev_push(r.time, r.worker, r.n, t[i], w[i])
    if r.sorted:
        _rs_merge(r, t, k, sort)


cdef inline void _rs_cut_at(Releases* r, int64_t i, double now) noexcept nogil:
    """Heap entry i is released at now instead (an earlier time); ``_rs_reorder`` after the last cut."""
    r.time[i] = now


cdef void _rs_reorder(Releases* r) noexcept nogil:
    """The heap and the ascending array again, after ``_rs_cut_at`` (the heap's order is by (time, worker): no
    ties, so the rebuilt heap pops in the one order)."""
    cdef int64_t i
    for i in range(r.n // 2 - 1, -1, -1):
        _ev_sift_down(r.time, r.worker, r.n, i)
    if r.sorted:
        r.lo = 0
        r.hi = r.n
        for i in range(r.n):
            r.asc[i] = r.time[i]
        qsort(r.asc, r.hi, sizeof(double), _compare_double)


cdef void _rs_cut_time(Releases* r, double t, double now) noexcept nogil:
    """Without the heap: the pending release at t (there is one) is at now instead (now precedes every pending
    release). Releases of one time are alike, so the entry found by bisection is as good as any."""
    cdef int64_t lo = r.lo                    # the first entry >= t
    cdef int64_t hi = r.hi
    cdef int64_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if r.asc[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    memmove(r.asc + r.lo + 1, r.asc + r.lo, (lo - r.lo) * sizeof(double))
    r.asc[r.lo] = now


cdef int64_t _rs_first_ge(Releases* r, double t) noexcept nogil:
    """The first entry of the ascending array at or after t."""
    cdef int64_t lo = r.lo
    cdef int64_t hi = r.hi
    cdef int64_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if r.asc[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef void _rs_add_group(Releases* r, double t, int64_t k) noexcept nogil:
    """A rigid job's k workers predicted to be released at t: one entry (``lo`` stays 0; at most s entries)."""
    cdef int64_t at = _rs_first_ge(r, t)
    memmove(r.asc + at + 1, r.asc + at, (r.hi - at) * sizeof(double))
    memmove(r.cnt + at + 1, r.cnt + at, (r.hi - at) * sizeof(int64_t))
    r.asc[at] = t
    r.cnt[at] = k
    r.hi += 1


cdef void _rs_remove_group(Releases* r, double t, int64_t k) noexcept nogil:
    """Take out an entry of time t and k workers (there is one: a rigid job's predicted end; entries of one
    time and k are alike, so the first found is as good as the job's own)."""
    cdef int64_t at = _rs_first_ge(r, t)
    while r.cnt[at] != k:
        at += 1
    memmove(r.asc + at, r.asc + at + 1, (r.hi - at - 1) * sizeof(double))
    memmove(r.cnt + at, r.cnt + at + 1, (r.hi - at - 1) * sizeof(int64_t))
    r.hi -= 1
