# Batch sampling with late binding (scheduler room barrier_queues.schedulers.sampling): included by
# _kernels.pyx.

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
