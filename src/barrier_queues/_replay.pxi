# Trace replay of rigid jobs (Appendix B, section 6): each job holds its k workers from its start for its
# runtime; fcfs, first-fit, EASY backfill (with a predicted runtime per job) and server-filling over one
# waiting list in submission order. The plain-Python reference is barrier_queues.replay_reference.replay_rigid:
# both must give the same start times, bit for bit.
#
# State: the free worker count F; the running jobs in a binary heap by true end (their releases) and, for
# backfill, in an array sorted by predicted end (the reservation's shadow time is read from it); the waiting
# jobs in an array in submission order (compacted in place by each walk). ``low`` is a lower bound of the
# smallest k waiting: a pass that cannot start anything (F < low) is skipped, so that a decision costs nothing
# when workers are released one or two at a time behind wide waiting jobs.

from libc.math cimport NAN
from libc.stdint cimport INT64_MAX

cdef enum:
    REPLAY_FCFS = 0
    REPLAY_FIRST_FIT = 1
    REPLAY_BACKFILL = 2
    REPLAY_SERVER_FILLING = 3


cdef struct Replay:
    const double* submit
    const int64_t* k
    const double* run
    const double* pred
    double* start
    int64_t servers
    int64_t free
    # running jobs: an event heap (_heap.pxi) by true end, then job
    double* h_time
    int64_t* h_job
    int64_t nrun
    # running jobs sorted by predicted end (backfill only)
    double* p_end
    int64_t* p_k
    int64_t* p_job
    int64_t npred
    bint track_pred
    # waiting jobs in submission order: queue[lo:hi]
    int64_t* queue
    int64_t lo
    int64_t hi
    int64_t low
    int64_t* scratch


cdef int64_t _rp_pred_find(Replay* r, double t) noexcept nogil:
    """The first position of the predicted-end array with an end >= t."""
    cdef int64_t lo = 0
    cdef int64_t hi = r.npred
    cdef int64_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if r.p_end[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef void _rp_pred_add(Replay* r, double t, int64_t k, int64_t j) noexcept nogil:
    cdef int64_t pos = _rp_pred_find(r, t)
    cdef int64_t m = r.npred - pos
    if m > 0:
        memmove(r.p_end + pos + 1, r.p_end + pos, m * sizeof(double))
        memmove(r.p_k + pos + 1, r.p_k + pos, m * sizeof(int64_t))
        memmove(r.p_job + pos + 1, r.p_job + pos, m * sizeof(int64_t))
    r.p_end[pos] = t
    r.p_k[pos] = k
    r.p_job[pos] = j
    r.npred += 1


cdef void _rp_pred_remove(Replay* r, int64_t j) noexcept nogil:
    cdef int64_t pos = _rp_pred_find(r, r.start[j] + r.pred[j])
    cdef int64_t m
    while r.p_job[pos] != j:
        pos += 1
    m = r.npred - pos - 1
    if m > 0:
        memmove(r.p_end + pos, r.p_end + pos + 1, m * sizeof(double))
        memmove(r.p_k + pos, r.p_k + pos + 1, m * sizeof(int64_t))
        memmove(r.p_job + pos, r.p_job + pos + 1, m * sizeof(int64_t))
    r.npred -= 1


cdef inline void _rp_start(Replay* r, int64_t j, double now) noexcept nogil:
    r.start[j] = now
    r.free -= r.k[j]
    r.nrun = _ev_push(r.h_time, r.h_job, r.nrun, now + r.run[j], j)
    if r.track_pred:
        _rp_pred_add(r, now + r.pred[j], r.k[j], j)


cdef void _rp_fcfs(Replay* r, double now) noexcept nogil:
    cdef int64_t j
    while r.lo < r.hi:
        j = r.queue[r.lo]
        if r.k[j] > r.free:
            return
        _rp_start(r, j, now)
        r.lo += 1


cdef void _rp_first_fit(Replay* r, double now) noexcept nogil:
    """Walk the waiting jobs in order, start each that fits, keep the others (compacted in place)."""
    cdef int64_t i = r.lo
    cdef int64_t w = r.lo
    cdef int64_t j
    cdef int64_t low = INT64_MAX
    while i < r.hi and r.free > 0:
        j = r.queue[i]
        if r.k[j] <= r.free:
            _rp_start(r, j, now)
        else:
            r.queue[w] = j
            w += 1
            if r.k[j] < low:
                low = r.k[j]
        i += 1
    if i < r.hi:                        # no worker left: the rest stays, and the old bound still holds
        memmove(r.queue + w, r.queue + i, (r.hi - i) * sizeof(int64_t))
        w += r.hi - i
        low = r.low if r.low < low else low
    r.hi = w
    r.low = low


cdef void _rp_backfill(Replay* r, double now) noexcept nogil:
    """EASY: fcfs from the head; the head H reserves the shadow time S (the earliest predicted end at which
    the free workers and those of the running jobs predicted to end by then reach k_H; jobs predicted to end
    together free together) with ``extra`` workers to spare; a later job starts iff k <= F and (now + p <= S
    or k <= extra); extra shrinks only for jobs that end after S."""
    cdef int64_t head, i, w, j, kh, g
    cdef int64_t avail, extra
    cdef int64_t low = INT64_MAX
    cdef double shadow, e
    _rp_fcfs(r, now)
    if r.lo >= r.hi or r.free < r.low or r.free == 0:
        return
    head = r.queue[r.lo]
    kh = r.k[head]
    avail = r.free
    shadow = INFINITY
    extra = 0
    g = 0
    while g < r.npred:
        e = r.p_end[g]
        while g < r.npred and r.p_end[g] == e:
            avail += r.p_k[g]
            g += 1
        if avail >= kh:
            shadow = e
            extra = avail - kh
            break
    if kh < low:
        low = kh
    i = r.lo + 1
    w = r.lo + 1
    while i < r.hi and r.free > 0:
        j = r.queue[i]
        if r.k[j] <= r.free and (now + r.pred[j] <= shadow or r.k[j] <= extra):
            if now + r.pred[j] > shadow:
                extra -= r.k[j]
            _rp_start(r, j, now)
        else:
            r.queue[w] = j
            w += 1
            if r.k[j] < low:
                low = r.k[j]
        i += 1
    if i < r.hi:
        memmove(r.queue + w, r.queue + i, (r.hi - i) * sizeof(int64_t))
        w += r.hi - i
        low = r.low if r.low < low else low
    r.hi = w
    r.low = low


cdef int _rp_cmp(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0]
    cdef int64_t y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


cdef void _rp_server_filling(Replay* r, double now, int64_t n) noexcept nogil:
    """The shortest prefix of the waiting jobs whose k sum to at least s (or all of them), started in
    decreasing k (ties in submission order) while they fit."""
    cdef int64_t total = 0
    cdef int64_t m = 0
    cdef int64_t i, j, w
    cdef bint any_started = False
    i = r.lo
    while i < r.hi and total < r.servers:
        j = r.queue[i]
        r.scratch[m] = (r.servers - r.k[j]) * n + j        # sorts by decreasing k, then submission order
        total += r.k[j]
        m += 1
        i += 1
    qsort(r.scratch, m, sizeof(int64_t), _rp_cmp)
    for i in range(m):
        j = r.scratch[i] % n
        if r.k[j] > r.free:
            break
        _rp_start(r, j, now)
        any_started = True
    if not any_started:
        return
    w = r.lo
    for i in range(r.lo, r.hi):
        j = r.queue[i]
        if r.start[j] != r.start[j]:                       # NaN: not started
            r.queue[w] = j
            w += 1
    r.hi = w


def replay_rigid(const double[::1] submit, const int64_t[::1] k, const double[::1] run, const double[::1] pred,
                 int64_t servers, int64_t discipline, double[::1] start):
    """Each job's start time into ``start`` (jobs in submission order, submit non-decreasing; every k in
    1..servers; runtimes > 0; ``pred`` the runtimes the discipline predicts, >= run for backfill)."""
    if discipline < REPLAY_FCFS or discipline > REPLAY_SERVER_FILLING:
        raise ValueError(f"replay_rigid: unknown discipline code {discipline}")
    cdef int64_t n = submit.shape[0]
    cdef Replay r
    cdef int64_t i = 0
    cdef int64_t j
    cdef double t
    r.submit = &submit[0]
    r.k = &k[0]
    r.run = &run[0]
    r.pred = &pred[0]
    r.start = &start[0]
    r.servers = servers
    r.free = servers
    r.nrun = 0
    r.npred = 0
    r.track_pred = discipline == REPLAY_BACKFILL
    r.lo = 0
    r.hi = 0
    r.low = INT64_MAX
    r.h_time = <double*>malloc(servers * sizeof(double))
    r.h_job = <int64_t*>malloc(servers * sizeof(int64_t))
    r.p_end = <double*>malloc(servers * sizeof(double))
    r.p_k = <int64_t*>malloc(servers * sizeof(int64_t))
    r.p_job = <int64_t*>malloc(servers * sizeof(int64_t))
    r.queue = <int64_t*>malloc(n * sizeof(int64_t))
    r.scratch = <int64_t*>malloc((servers + 1) * sizeof(int64_t))
    if (r.h_time == NULL or r.h_job == NULL or r.p_end == NULL or r.p_k == NULL or r.p_job == NULL
            or r.queue == NULL or r.scratch == NULL):
        free(r.h_time); free(r.h_job); free(r.p_end); free(r.p_k); free(r.p_job); free(r.queue)
        free(r.scratch)
        raise MemoryError("replay: no memory for the replay's state")
    for j in range(n):
        start[j] = NAN
    with nogil:
        while i < n or r.nrun > 0:
            t = INFINITY
            if i < n:
                t = submit[i]
            if r.nrun > 0 and r.h_time[0] < t:
                t = r.h_time[0]
            while r.nrun > 0 and r.h_time[0] == t:          # every release of the instant first
                j = r.h_job[0]
                r.nrun = _ev_pop(r.h_time, r.h_job, r.nrun)
                r.free += k[j]
                if r.track_pred:
                    _rp_pred_remove(&r, j)
            while i < n and submit[i] == t:                  # then every submission of the instant
                if r.lo == r.hi:
                    r.lo = 0
                    r.hi = 0
                r.queue[r.hi] = i
                r.hi += 1
                if k[i] < r.low:
                    r.low = k[i]
                i += 1
            if r.lo == r.hi or r.free < r.low:                # then one pass, when anything could start
                continue
            if discipline == REPLAY_FCFS:
                _rp_fcfs(&r, t)
            elif discipline == REPLAY_FIRST_FIT:
                _rp_first_fit(&r, t)
            elif discipline == REPLAY_BACKFILL:
                _rp_backfill(&r, t)
            elif discipline == REPLAY_SERVER_FILLING:
                _rp_server_filling(&r, t, n)
    free(r.h_time); free(r.h_job); free(r.p_end); free(r.p_k); free(r.p_job); free(r.queue); free(r.scratch)
