# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# cython: nonecheck=False, cpow=True
"""Compiled simulation kernels (Cython, compiled to C when the package is installed). Private: use
:mod:`barrier_queues.simulate`.

Why Cython and not a JIT: the kernels were numba functions until 2026-11-25;
importing numba and loading its cached machine code took about 0.7 s per
process (numba's first cached call imports its whole typing registry and
scipy.linalg), which was most of a 2-million-job ``simulate`` command. An
extension module compiled at install time loads in a millisecond. The code is
the numba code, line for line, with C types; floating-point operations are
plain IEEE-754 double (compiled with ``-ffp-contract=off``, no fast-math), so
results are bit for bit those of the plain-Python reference.

The kernels consume pre-drawn random inputs (arrival times, tasks per job,
barrier flags, task times and, for batch sampling, the probed workers) one
chunk at a time and keep the system's state in arrays between chunks. All
randomness is drawn by the caller with numpy Generators, so the plain-Python
reference (:mod:`barrier_queues.reference`), fed the same arrays, must give
identical results, bit for bit.

**One job's service** (:func:`job_service`, shared by both kernels; times
relative to the job's start ``S``). A job of ``k`` tasks and ``m`` phases
has ``k m`` draws stored phase-major (``times[o + p k + i]`` is task ``i``'s
phase ``p``). It returns the departure ``D``, the tasks completed ``L``,
the useful work and, per task, ``run[i]``: how long task ``i`` occupies its
worker.

* ``m = 1``, fixed release, ``l = k``: ``D = max x_i``, ``run = x``.
* ``m = 1``, fixed ``l < k``: ``D = x_(l)`` (stragglers killed at ``D``).
* ``m = 1``, timeout ``T``: ``D = min(x_(k), T)``; ``L`` tasks have ``x <= D``.
* ``m = 1``, knee (EXTENSIONS.md section 1): on the sorted times, after
  completion 1 ``arr = g_1, dev = g_1/2``; after completion ``i >= 2``
  ``dev <- 3/4 dev + 1/4 |arr - g_i|`` then ``arr <- (1-a) arr + a g_i``
  (``a`` = ``knee_gain``, 1/8); if ``g_{i+1} > tau_i = arr + 4 dev`` a knee
  is detected at ``t_(i) + tau_i`` and counts if ``i >= ceil(f k - 1e-12)``
  and ``t_(i) + tau_i >= w``; the first counted knee is ``D``, ``L = i``;
  else ``D = t_(k)``.
* In all four ``run[i] = min(x_i, D)`` and the useful work is the sum of the
  ``L`` smallest times, in increasing order.
* ``m > 1`` (EXTENSIONS.md section 3): phase 1 of every task ends at
  ``e_i = x_i0``; at each ``barrier()`` ``T = max e_i`` and task ``i`` resumes
  at ``T`` (ideal) or ``e_i + P (floor((T - e_i) / P) + 1)`` (Spark's
  polling, period ``P``), then ``e_i += x_ip``. ``D = max e_i``,
  ``run = e``, ``L = k``; the useful work is the sum of all draws in storage
  order.

**Central FIFO queue** (:func:`run_chunk`; MODEL.md section 2): a barrier job
starts at ``t = max(arrival, previous start, tau)`` with ``tau`` the time at
which k workers are free (the k-th smallest free time); its workers are free
at ``t + run[i]`` (1 barrier) or ``t + D`` (2 barriers). A non-barrier job's
tasks in turn take the earliest free worker. With the event-accurate Spark
overhead a barrier job of k > 1 tasks that had to wait for workers starts at
the first global offer at or after ``tau`` (revive tick ``phase + n R`` or
job arrival); a 1-task job starts at ``tau``.

**Batch sampling with late binding** (:func:`run_sampling`; EXTENSIONS.md
section 2): every worker has a FIFO queue of reservations; an arriving job
appends one to each of its probed workers. An idle worker takes the head of
its queue: a reservation of a started (or, non-barrier, fully handed-out)
job is discarded; otherwise the worker becomes ready for that job: a
non-barrier job hands it a task at once, a barrier job makes it hold until k
workers are ready, then all k tasks start (task ``i`` on the ``i``-th worker
to become ready). Events at one instant: worker frees (in worker order)
before arrivals; arriving jobs' idle probed workers look in worker order.
"""


from libc.math cimport INFINITY, ceil, fabs, floor
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc, qsort

cdef enum:
    C_FIXED = 0
    C_KNEE = 1
    C_TIMEOUT = 2
    C_INSERTION_MAX = 32
    C_IDLE = 0
    C_BUSY = 1
    C_HOLDING = 2

# the same values for Python callers
FIXED, KNEE, TIMEOUT = C_FIXED, C_KNEE, C_TIMEOUT
#: jobs of at most this many tasks are sorted by insertion (same order, hence the same sums, as a full sort)
INSERTION_MAX = C_INSERTION_MAX
IDLE, BUSY, HOLDING = C_IDLE, C_BUSY, C_HOLDING


# --------------------------------------------------------------------------------------------------
# the heap of worker free times (central queue)

cdef inline void _sift_down(double* key, int64_t* ids, int64_t n, int64_t pos) noexcept nogil:
    cdef double k0 = key[pos]
    cdef int64_t i0 = ids[pos]
    cdef int64_t child
    while True:
        child = 2 * pos + 1
        if child >= n:
            break
        if child + 1 < n and key[child + 1] < key[child]:
            child += 1
        if key[child] < k0:
            key[pos] = key[child]
            ids[pos] = ids[child]
            pos = child
        else:
            break
    key[pos] = k0
    ids[pos] = i0


cdef inline void _sift_up(double* key, int64_t* ids, int64_t pos) noexcept nogil:
    cdef double k0 = key[pos]
    cdef int64_t i0 = ids[pos]
    cdef int64_t parent
    while pos > 0:
        parent = (pos - 1) >> 1
        if k0 < key[parent]:
            key[pos] = key[parent]
            ids[pos] = ids[parent]
            pos = parent
        else:
            break
    key[pos] = k0
    ids[pos] = i0


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


# --------------------------------------------------------------------------------------------------
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
        qsort(scratch, k, sizeof(double), _compare)
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


# --------------------------------------------------------------------------------------------------
# the central FIFO queue

cdef int _run_chunk(const double* arrivals, int64_t n_jobs, const int64_t* tasks, const unsigned char* barrier,
                    const double* times, const int64_t* offsets, const Service* sv, bint two_barrier,
                    bint event_overhead, double revive, double phase, const double* next_arrivals, int64_t n_next,
                    double* heap_key, int64_t* heap_id, int64_t s, double* state,
                    double* out_start, double* out_departure, double* out_work, double* out_useful,
                    int64_t* out_completed, bint do_trace, int64_t* trace_worker, double* trace_start,
                    double* trace_end) noexcept nogil:
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
    for j in range(n_jobs):
        a = arrivals[j]
        k = tasks[j]
        o = offsets[j]
        ready = a if a > last else last
        work = 0.0
        if barrier[j]:
            n = s
            for i in range(k - 1):        # the k - 1 earliest-free workers leave the heap ...
                tmp_id[i] = heap_id[0]
                n -= 1
                heap_key[0] = heap_key[n]
                heap_id[0] = heap_id[n]
                _sift_down(heap_key, heap_id, n, 0)
            tau = heap_key[0]             # ... the k-th stays at the root: its new free time replaces it below
            tmp_id[k - 1] = heap_id[0]
            t = ready
            if tau > ready:
                t = tau
                if event_overhead and k > 1:   # one freed executor's own offer carries a 1-task job
                    if ptr < j + 1:
                        ptr = j + 1
                    t = _next_offer(tau, revive, phase, arrivals, n_jobs, next_arrivals, n_next, &ptr)
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
                heap_key[0] = end         # replace the root, then restore the heap
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
              double[::1] trace_start, double[::1] trace_end):
    """Simulate one chunk of jobs under the central FIFO queue (module docstring), without the GIL.

    ``params`` = (min_fraction, min_wait, knee_gain, timeout, spark_sync, poll);
    ``state[0]`` is the start of the previous job's last task. The trace
    arrays have length ``times.size`` (per draw; the first ``k`` of a job's
    draws hold its tasks) or 0.
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
                            te)
    if status != 0:
        raise MemoryError("the simulation kernel could not allocate its per-job buffers")


# ---------------------------------------------------------------------------------------------
# batch sampling with late binding

cdef enum:
    # istate slots
    C_I_NEXT_JOB = 0
    C_I_FIRST_PENDING = 1
    C_I_TASK_TAIL = 2
    C_I_HEAP_N = 3
    C_I_CHUNK_POS = 4
    C_I_STATUS = 5
    # what a call of run_sampling ended with
    C_STATUS_DONE = 0
    C_STATUS_NEED_INPUT = 1
    C_STATUS_QUEUE_FULL = 2

# the same values for Python callers
I_NEXT_JOB, I_FIRST_PENDING, I_TASK_TAIL = C_I_NEXT_JOB, C_I_FIRST_PENDING, C_I_TASK_TAIL
I_HEAP_N, I_CHUNK_POS, I_STATUS = C_I_HEAP_N, C_I_CHUNK_POS, C_I_STATUS
STATUS_DONE, STATUS_NEED_INPUT, STATUS_QUEUE_FULL = C_STATUS_DONE, C_STATUS_NEED_INPUT, C_STATUS_QUEUE_FULL


cdef inline bint _ev_less(double t1, int64_t w1, double t2, int64_t w2) noexcept nogil:
    return t1 < t2 or (t1 == t2 and w1 < w2)


cdef int64_t _ev_push(double* ev_time, int64_t* ev_worker, int64_t n, double t, int64_t w) noexcept nogil:
    cdef int64_t pos = n
    cdef int64_t parent
    while pos > 0:
        parent = (pos - 1) >> 1
        if _ev_less(t, w, ev_time[parent], ev_worker[parent]):
            ev_time[pos] = ev_time[parent]
            ev_worker[pos] = ev_worker[parent]
            pos = parent
        else:
            break
    ev_time[pos] = t
    ev_worker[pos] = w
    return n + 1


cdef int64_t _ev_pop(double* ev_time, int64_t* ev_worker, int64_t n) noexcept nogil:
    n -= 1
    cdef double t0 = ev_time[n]
    cdef int64_t w0 = ev_worker[n]
    cdef int64_t pos = 0
    cdef int64_t child
    while True:
        child = 2 * pos + 1
        if child >= n:
            break
        if child + 1 < n and _ev_less(ev_time[child + 1], ev_worker[child + 1], ev_time[child], ev_worker[child]):
            child += 1
        if _ev_less(ev_time[child], ev_worker[child], t0, w0):
            ev_time[pos] = ev_time[child]
            ev_worker[pos] = ev_worker[child]
            pos = child
        else:
            break
    if n > 0:
        ev_time[pos] = t0
        ev_worker[pos] = w0
    return n


cdef struct Sampling:
    # the job ring (capacity jmask + 1) and the task ring (tmask + 1)
    int64_t* jr_id
    double* jr_arrival
    int64_t* jr_k
    unsigned char* jr_barrier
    int64_t* jr_toff
    int64_t* jr_count
    unsigned char* jr_done
    double* jr_start
    double* jr_dep
    double* jr_work
    double* jr_useful
    int64_t* jr_completed
    double* jr_held
    int64_t* jr_head
    int64_t* jr_tail
    double* task_ring
    int64_t jmask
    int64_t tmask
    # workers and their reservation queues (q_buf is s x qcap, row-major)
    int64_t* w_state
    int64_t* w_next
    double* w_ready
    int64_t* q_buf
    int64_t qcap
    int64_t qmask
    int64_t* q_head
    int64_t* q_tail
    # worker-free events
    double* ev_time
    int64_t* ev_worker
    # per-job scratch and the trace
    double* run
    double* scratch
    double* draws
    bint two_barrier
    bint do_trace
    int64_t* trace_worker
    double* trace_start
    double* trace_end
    int64_t base
    const int64_t* offsets


cdef int64_t _look(int64_t w, double now, Sampling* q, const Service* sv, int64_t n_ev) noexcept nogil:
    """Idle worker ``w`` takes reservations from its queue's head (late binding); returns the heap size."""
    cdef int64_t g, slot, k, toff, i, v, t, completed
    cdef double d, useful, held, work, x
    while q.q_head[w] < q.q_tail[w]:
        g = q.q_buf[w * q.qcap + (q.q_head[w] & q.qmask)]
        q.q_head[w] += 1
        slot = g & q.jmask
        if q.jr_id[slot] != g or q.jr_done[slot]:
            continue                       # the job started (or handed out every task): cancelled
        k = q.jr_k[slot]
        toff = q.jr_toff[slot]
        if q.jr_barrier[slot]:
            q.w_state[w] = C_HOLDING
            q.w_ready[w] = now
            q.w_next[w] = -1
            if q.jr_tail[slot] < 0:
                q.jr_head[slot] = w
            else:
                q.w_next[q.jr_tail[slot]] = w
            q.jr_tail[slot] = w
            q.jr_count[slot] += 1
            if q.jr_count[slot] == k:      # k ready workers: all tasks start now
                for i in range(k * sv.phases):
                    q.draws[i] = q.task_ring[(toff + i) & q.tmask]
                d = _job_service(q.draws, 0, k, sv, q.run, q.scratch, &completed, &useful)
                held = 0.0
                work = 0.0
                v = q.jr_head[slot]
                for i in range(k):
                    held += now - q.w_ready[v]
                    work += q.run[i]
                    q.w_state[v] = C_BUSY
                    n_ev = _ev_push(q.ev_time, q.ev_worker, n_ev, now + (d if q.two_barrier else q.run[i]), v)
                    if q.do_trace:
                        t = q.offsets[g - q.base] + i
                        q.trace_worker[t] = v
                        q.trace_start[t] = now
                        q.trace_end[t] = now + q.run[i]
                    v = q.w_next[v]
                q.jr_start[slot] = now
                q.jr_dep[slot] = now + d
                q.jr_work[slot] = work
                q.jr_useful[slot] = useful
                q.jr_completed[slot] = completed
                q.jr_held[slot] = held
                q.jr_done[slot] = True
            return n_ev
        # non-barrier job: one task for this worker, at once
        i = q.jr_count[slot]
        x = q.task_ring[(toff + i) & q.tmask]
        q.w_state[w] = C_BUSY
        n_ev = _ev_push(q.ev_time, q.ev_worker, n_ev, now + x, w)
        if q.do_trace:
            t = q.offsets[g - q.base] + i
            q.trace_worker[t] = w
            q.trace_start[t] = now
            q.trace_end[t] = now + x
        q.jr_work[slot] += x
        q.jr_useful[slot] += x
        if now + x > q.jr_dep[slot]:
            q.jr_dep[slot] = now + x
        q.jr_count[slot] = i + 1
        if i + 1 == k:
            q.jr_start[slot] = now
            q.jr_completed[slot] = k
            q.jr_done[slot] = True
        return n_ev
    return n_ev


cdef int _run_sampling(const double* arrivals, int64_t n, const int64_t* tasks, const unsigned char* barrier,
                       const double* times, const int64_t* offsets, const int64_t* probes,
                       const int64_t* probe_offsets, double next_first_arrival, Sampling* q, const Service* sv,
                       int64_t* istate) noexcept nogil:
    cdef int64_t j, g, kk, slot, k, po, pe, qi, w, tail, i
    cdef int64_t phases = sv.phases
    cdef int64_t kmax = 1
    for j in range(n):
        if tasks[j] * phases > kmax:
            kmax = tasks[j] * phases
    for g in range(istate[C_I_FIRST_PENDING], istate[C_I_NEXT_JOB]):
        kk = q.jr_k[g & q.jmask] * phases
        if kk > kmax:
            kmax = kk
    q.run = <double*> malloc(kmax * sizeof(double))
    q.scratch = <double*> malloc(kmax * sizeof(double))
    q.draws = <double*> malloc(kmax * sizeof(double))
    if q.run == NULL or q.scratch == NULL or q.draws == NULL:
        free(q.run)
        free(q.scratch)
        free(q.draws)
        return -1
    cdef int64_t n_ev = istate[C_I_HEAP_N]
    cdef int64_t pos = istate[C_I_CHUNK_POS]
    cdef double next_arrival, now
    cdef bint full
    while True:
        next_arrival = arrivals[pos] if pos < n else next_first_arrival
        if n_ev > 0 and q.ev_time[0] <= next_arrival:
            # a worker frees (completions before arrivals at one instant; ties by worker index)
            now = q.ev_time[0]
            w = q.ev_worker[0]
            n_ev = _ev_pop(q.ev_time, q.ev_worker, n_ev)
            q.w_state[w] = C_IDLE
            n_ev = _look(w, now, q, sv, n_ev)
        elif pos < n:
            now = arrivals[pos]
            k = tasks[pos]
            po = probe_offsets[pos]
            pe = probe_offsets[pos + 1]
            full = False
            for qi in range(po, pe):
                if q.q_tail[probes[qi]] - q.q_head[probes[qi]] >= q.qcap:
                    full = True
            if full:
                istate[C_I_STATUS] = C_STATUS_QUEUE_FULL
                break
            g = q.base + pos
            slot = g & q.jmask
            q.jr_id[slot] = g
            q.jr_arrival[slot] = now
            q.jr_k[slot] = k
            q.jr_barrier[slot] = barrier[pos]
            tail = istate[C_I_TASK_TAIL]
            q.jr_toff[slot] = tail
            for i in range(k * phases):
                q.task_ring[(tail + i) & q.tmask] = times[offsets[pos] + i]
            istate[C_I_TASK_TAIL] = tail + k * phases
            q.jr_count[slot] = 0
            q.jr_done[slot] = False
            q.jr_head[slot] = -1
            q.jr_tail[slot] = -1
            q.jr_held[slot] = 0.0
            q.jr_work[slot] = 0.0
            q.jr_useful[slot] = 0.0
            q.jr_dep[slot] = -INFINITY
            for qi in range(po, pe):
                w = probes[qi]
                q.q_buf[w * q.qcap + (q.q_tail[w] & q.qmask)] = g
                q.q_tail[w] += 1
            istate[C_I_NEXT_JOB] = g + 1
            pos += 1
            for qi in range(po, pe):           # idle probed workers look, in increasing worker index
                w = probes[qi]
                if q.w_state[w] == C_IDLE:
                    n_ev = _look(w, now, q, sv, n_ev)
        else:
            istate[C_I_STATUS] = C_STATUS_DONE if next_first_arrival == INFINITY else C_STATUS_NEED_INPUT
            break
        g = istate[C_I_FIRST_PENDING]
        while g < istate[C_I_NEXT_JOB] and q.jr_id[g & q.jmask] == g and q.jr_done[g & q.jmask]:
            g += 1
        istate[C_I_FIRST_PENDING] = g
    istate[C_I_HEAP_N] = n_ev
    istate[C_I_CHUNK_POS] = pos
    free(q.run)
    free(q.scratch)
    free(q.draws)
    return 0


def run_sampling(const double[::1] arrivals, const int64_t[::1] tasks, const unsigned char[::1] barrier,
                 const double[::1] times, const int64_t[::1] offsets, const int64_t[::1] probes,
                 const int64_t[::1] probe_offsets, double next_first_arrival, int64_t base,
                 int64_t phases, int64_t policy, int64_t stragglers, const double[::1] params, bint two_barrier,
                 int64_t[::1] jr_id, double[::1] jr_arrival, int64_t[::1] jr_k, unsigned char[::1] jr_barrier,
                 int64_t[::1] jr_toff, int64_t[::1] jr_count, unsigned char[::1] jr_done, double[::1] jr_start,
                 double[::1] jr_dep, double[::1] jr_work, double[::1] jr_useful, int64_t[::1] jr_completed,
                 double[::1] jr_held, int64_t[::1] jr_head, int64_t[::1] jr_tail, double[::1] task_ring,
                 int64_t[::1] w_state, int64_t[::1] w_next, double[::1] w_ready, int64_t[:, ::1] q_buf,
                 int64_t[::1] q_head, int64_t[::1] q_tail, double[::1] ev_time, int64_t[::1] ev_worker,
                 int64_t[::1] istate, int64_t[::1] trace_worker, double[::1] trace_start, double[::1] trace_end):
    """Advance a batch-sampling system through one chunk of arrivals (module docstring), without the GIL.

    Jobs have global ids ``base + j``; the job ring (``jr_*``, capacity a
    power of two) holds every job that arrived and whose results were not
    yet collected, the task ring their draws. Each call processes arrivals
    from ``istate[I_CHUNK_POS]`` on and every worker-free event up to
    ``next_first_arrival`` (the next chunk's first arrival; ``inf`` drains
    the system), then returns with ``istate[I_STATUS]``:
    ``STATUS_NEED_INPUT`` (chunk done), ``STATUS_DONE`` (drained) or
    ``STATUS_QUEUE_FULL`` (a reservation queue is full: grow ``q_buf`` and
    call again; nothing was lost). ``istate[I_FIRST_PENDING]`` is the first
    job not yet started: every job before it has final results in the ring.
    """
    cdef Service sv = _service(phases, policy, stragglers, params)
    cdef Sampling q
    q.jr_id = &jr_id[0]
    q.jr_arrival = &jr_arrival[0]
    q.jr_k = &jr_k[0]
    q.jr_barrier = &jr_barrier[0]
    q.jr_toff = &jr_toff[0]
    q.jr_count = &jr_count[0]
    q.jr_done = &jr_done[0]
    q.jr_start = &jr_start[0]
    q.jr_dep = &jr_dep[0]
    q.jr_work = &jr_work[0]
    q.jr_useful = &jr_useful[0]
    q.jr_completed = &jr_completed[0]
    q.jr_held = &jr_held[0]
    q.jr_head = &jr_head[0]
    q.jr_tail = &jr_tail[0]
    q.task_ring = &task_ring[0]
    q.jmask = jr_id.shape[0] - 1
    q.tmask = task_ring.shape[0] - 1
    q.w_state = &w_state[0]
    q.w_next = &w_next[0]
    q.w_ready = &w_ready[0]
    q.q_buf = &q_buf[0, 0]
    q.qcap = q_buf.shape[1]
    q.qmask = q.qcap - 1
    q.q_head = &q_head[0]
    q.q_tail = &q_tail[0]
    q.ev_time = &ev_time[0]
    q.ev_worker = &ev_worker[0]
    q.two_barrier = two_barrier
    q.do_trace = trace_worker.shape[0] > 0
    q.trace_worker = &trace_worker[0] if q.do_trace else NULL
    q.trace_start = &trace_start[0] if q.do_trace else NULL
    q.trace_end = &trace_end[0] if q.do_trace else NULL
    q.base = base
    q.offsets = &offsets[0] if offsets.shape[0] else NULL
    cdef int64_t n = arrivals.shape[0]
    cdef const double* a = &arrivals[0] if n else NULL
    cdef const int64_t* tk = &tasks[0] if n else NULL
    cdef const unsigned char* b = &barrier[0] if n else NULL
    cdef const double* x = &times[0] if times.shape[0] else NULL
    cdef const int64_t* pr = &probes[0] if probes.shape[0] else NULL
    cdef int status
    with nogil:
        status = _run_sampling(a, n, tk, b, x, q.offsets, pr, &probe_offsets[0], next_first_arrival, &q, &sv,
                               &istate[0])
    if status != 0:
        raise MemoryError("the batch-sampling kernel could not allocate its per-job buffers")
