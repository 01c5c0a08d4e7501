# The central FIFO queue (scheduler room barrier_queues.schedulers.central): included by _kernels.pyx.

cdef double _next_offer(double tau, double revive, double phase, const double* arrivals, int64_t n1,
                        const double* extra, int64_t n2, int64_t* ptr) noexcept nogil:
    """First global offer at or after ``tau``: a revive tick or a job arrival.

    ``arrivals`` then ``extra`` (the next chunk's arrivals) are searched from
    index ``ptr[0]`` on; returns the offer time and leaves the new index in ``ptr[0]``.
    """
    cdef double tick = phase + ceil((tau - phase) / revive) * revive
    if tick < tau:
        tick += revive
    cdef int64_t total = n1 + n2
    cdef int64_t p = ptr[0]
    cdef double a
    while p < total:
        a = arrivals[p] if p < n1 else extra[p - n1]
        if a >= tau:
            break
        p += 1
    cdef double nxt = INFINITY
    if p < total:
        nxt = arrivals[p] if p < n1 else extra[p - n1]
    ptr[0] = p
    return nxt if nxt < tick else tick


def next_offer(double tau, double revive, double phase, const double[::1] arrivals, const double[::1] extra,
               int64_t ptr):
    """First global offer at or after ``tau``: a revive tick or a job arrival; returns (offer time, new ptr).

    ``arrivals`` then ``extra`` (the next chunk's arrivals) are searched from index ``ptr`` on.
    """
    cdef int64_t p = ptr
    cdef double t = _next_offer(tau, revive, phase, &arrivals[0] if arrivals.shape[0] else NULL,
                                arrivals.shape[0], &extra[0] if extra.shape[0] else NULL, extra.shape[0], &p)
    return t, p



# the free times as an ascending array (s <= SORTED_FREE_MAX, no trace): the k-th earliest is read, not
# popped, and a new free time moves the smaller ones down by one slot. No worker ids are kept (a trace
# takes the heap). The outputs are those of the heap: both hold the same free times.

cdef inline void _sort_ascending(double* key, int64_t n) noexcept nogil:
    cdef int64_t i, j
    cdef double x
    for i in range(1, n):
        x = key[i]
        j = i
        while j > 0 and key[j - 1] > x:
            key[j] = key[j - 1]
            j -= 1
        key[j] = x


cdef inline void _insert_sorted(double* key, int64_t n, int64_t slot, double value) noexcept nogil:
    """``key[slot]`` is free and ``key[slot + 1:n]`` ascending: put ``value`` in, moving the smaller ones
    down one slot, so that ``key[slot:n]`` is ascending."""
    cdef int64_t i = slot
    while i + 1 < n and key[i + 1] < value:
        key[i] = key[i + 1]
        i += 1
    key[i] = value


# the central FIFO queue

cdef inline double _barrier_start(double ready, double tau, int64_t k, int64_t j, bint event_overhead,
                                  double revive, double phase, const double* arrivals, int64_t n_jobs,
                                  const double* next_arrivals, int64_t n_next, int64_t* ptr) noexcept nogil:
    """When barrier job ``j`` of ``k`` tasks starts: ``max(ready, tau)``; with the event-accurate overhead,
    a job that had to wait for workers (k > 1) starts at the first offer at or after ``tau`` (one freed
    executor's own offer carries a 1-task job)."""
    if tau <= ready:
        return ready
    if event_overhead and k > 1:
        if ptr[0] < j + 1:
            ptr[0] = j + 1
        return _next_offer(tau, revive, phase, arrivals, n_jobs, next_arrivals, n_next, ptr)
    return tau


cdef int _run_chunk(const double* arrivals, int64_t n_jobs, const int64_t* tasks, const unsigned char* barrier,
                    const double* times, const int64_t* offsets, const Service* sv, bint two_barrier,
                    bint event_overhead, double revive, double phase, const double* next_arrivals, int64_t n_next,
                    double* heap_key, int64_t* heap_id, int64_t s, double* state,
                    double* out_start, double* out_departure, double* out_work, double* out_useful,
                    int64_t* out_completed, bint do_trace, int64_t* trace_worker, double* trace_start,
                    double* trace_end, bint sorted_free) noexcept nogil:
    cdef int64_t kmax = 1
    cdef int64_t j, i, k, o, n, ptr = 0, completed, worker
    for j in range(n_jobs):
        if tasks[j] > kmax:
            kmax = tasks[j]
    cdef int64_t* tmp_id = <int64_t*> malloc(kmax * sizeof(int64_t))
    cdef double* run = <double*> malloc(kmax * sizeof(double))
    cdef double* scratch = <double*> malloc(kmax * sizeof(double))
    if tmp_id == NULL or run == NULL or scratch == NULL:
        free(tmp_id)
        free(run)
        free(scratch)
        return -1
    cdef double last = state[0]
    cdef double a, ready, work, tau, t, d, useful, free_at, start, departure, x, end
    if sorted_free:                       # any heap order in, ascending free times out
        _sort_ascending(heap_key, s)
    for j in range(n_jobs):
        a = arrivals[j]
        k = tasks[j]
        o = offsets[j]
        ready = a if a > last else last
        work = 0.0
        if barrier[j] and sorted_free:
            tau = heap_key[k - 1]         # the k earliest-free workers are the first k
            t = _barrier_start(ready, tau, k, j, event_overhead, revive, phase, arrivals, n_jobs, next_arrivals,
                               n_next, &ptr)
            d = _job_service(times, o, k, sv, run, scratch, &completed, &useful)
            for i in range(k):            # their new free times (all >= tau) fill the k freed slots
                work += run[i]
                _insert_sorted(heap_key, s, k - 1 - i, t + (d if two_barrier else run[i]))
            start = t
            departure = t + d
        elif barrier[j]:
            n = s
            for i in range(k - 1):        # the k - 1 earliest-free workers leave the heap ...
                tmp_id[i] = heap_id[0]
                n -= 1
                heap_key[0] = heap_key[n]
                heap_id[0] = heap_id[n]
                _sift_down(heap_key, heap_id, n, 0)
            tau = heap_key[0]             # ... the k-th stays at the root: its new free time replaces it below
            tmp_id[k - 1] = heap_id[0]
            t = _barrier_start(ready, tau, k, j, event_overhead, revive, phase, arrivals, n_jobs, next_arrivals,
                               n_next, &ptr)
            d = _job_service(times, o, k, sv, run, scratch, &completed, &useful)
            for i in range(k):
                work += run[i]
                free_at = t + (d if two_barrier else run[i])
                if i == 0:                # new free times are >= tau: replace the root and sift it down
                    heap_key[0] = free_at
                    heap_id[0] = tmp_id[k - 1]
                    _sift_down(heap_key, heap_id, n, 0)
                else:
                    heap_key[n] = free_at
                    heap_id[n] = tmp_id[i - 1]
                    _sift_up(heap_key, heap_id, n)
                    n += 1
                worker = tmp_id[k - 1] if i == 0 else tmp_id[i - 1]
                if do_trace:
                    trace_worker[o + i] = worker
                    trace_start[o + i] = t
                    trace_end[o + i] = t + run[i]
            start = t
            departure = t + d
        else:
            start = ready
            departure = -INFINITY
            for i in range(k):            # tasks start one by one, FIFO
                if heap_key[0] > start:
                    start = heap_key[0]
                x = times[o + i]
                end = start + x
                worker = heap_id[0]
                if sorted_free:           # the earliest-free worker's slot takes its new free time
                    _insert_sorted(heap_key, s, 0, end)
                else:                     # replace the root, then restore the heap
                    heap_key[0] = end
                    _sift_down(heap_key, heap_id, s, 0)
                work += x
                if end > departure:
                    departure = end
                if do_trace:
                    trace_worker[o + i] = worker
                    trace_start[o + i] = start
                    trace_end[o + i] = end
            useful = work
            completed = k
        last = start
        out_start[j] = start
        out_departure[j] = departure
        out_work[j] = work
        out_useful[j] = useful
        out_completed[j] = completed
    state[0] = last
    free(tmp_id)
    free(run)
    free(scratch)
    return 0


def run_chunk(const double[::1] arrivals, const int64_t[::1] tasks, const unsigned char[::1] barrier,
              const double[::1] times, const int64_t[::1] offsets, int64_t phases, int64_t policy,
              int64_t stragglers, const double[::1] params, bint two_barrier, bint event_overhead, double revive,
              double phase, const double[::1] next_arrivals, double[::1] heap_key, int64_t[::1] heap_id,
              double[::1] state, double[::1] out_start, double[::1] out_departure, double[::1] out_work,
              double[::1] out_useful, int64_t[::1] out_completed, int64_t[::1] trace_worker,
              double[::1] trace_start, double[::1] trace_end, bint sorted_free=False):
    """Simulate one chunk of jobs under the central FIFO queue (module docstring), without the GIL.

    ``params`` = (min_fraction, min_wait, knee_gain, timeout, spark_sync, poll);
    ``state[0]`` is the start of the previous job's last task. The trace
    arrays have length ``times.size`` (per draw; the first ``k`` of a job's
    draws hold its tasks) or 0. ``sorted_free`` keeps the free times as an
    ascending array instead of a heap (faster for few workers; the same
    outputs; ignored with a trace, which needs the heap's worker ids); the
    state passed in may be either, the heap keys come out ascending then.
    """
    cdef Service sv = _service(phases, policy, stragglers, params)
    cdef int64_t n_jobs = arrivals.shape[0]
    if n_jobs == 0:
        return
    cdef bint do_trace = trace_worker.shape[0] > 0
    cdef const double* nxt = &next_arrivals[0] if next_arrivals.shape[0] else NULL
    cdef int64_t* tw = &trace_worker[0] if do_trace else NULL
    cdef double* ts = &trace_start[0] if do_trace else NULL
    cdef double* te = &trace_end[0] if do_trace else NULL
    cdef int status
    with nogil:
        status = _run_chunk(&arrivals[0], n_jobs, &tasks[0], &barrier[0], &times[0], &offsets[0], &sv,
                            two_barrier, event_overhead, revive, phase, nxt, next_arrivals.shape[0],
                            &heap_key[0], &heap_id[0], heap_key.shape[0], &state[0], &out_start[0],
                            &out_departure[0], &out_work[0], &out_useful[0], &out_completed[0], do_trace, tw, ts,
                            te, sorted_free and not do_trace)
    if status != 0:
        raise MemoryError("the simulation kernel could not allocate its per-job buffers")


