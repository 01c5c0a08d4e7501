# Moldable barrier jobs (the room barrier_queues.schedulers.moldable, Appendix B section 7): the compiled
# model, included by _kernels.pyx. The plain-Python reference is the room's moldable_run: both give the same
# starts, departures and workers per job, bit for bit (tests/test_moldable.py).
#
# State: the free workers (an id heap: a job claims the lowest free ids), each busy worker's composite task
# (its job, its next task, the tasks it has left and was dealt, its job's start), the busy workers in the order
# they became busy (the patience estimates sum over them in that order, as the reference's dict does), and one
# pending task end per busy worker in the event heap (time, worker): a worker's next end is pushed when its
# previous one is taken (the same sums of times as the reference, which pushes them all at the start; the
# events of one instant are all taken before any decision, so their order changes nothing).

from libc.math cimport exp

cdef enum:
    MOLD_TAKE_FRACTION = 0
    MOLD_TAKE_RANDOM = 1
    MOLD_TAKE_RANDOM_ALL = 2
    MOLD_PATIENCE = 3
    MOLD_FIXED = 4
    MOLD_WAIT_MIN = 0
    MOLD_WAIT_MEAN = 1
    MOLD_WAIT_HEIGHT = 2

MOLDABLE_POLICIES = {"take-fraction": MOLD_TAKE_FRACTION, "take-random": MOLD_TAKE_RANDOM,
                     "take-random-all": MOLD_TAKE_RANDOM_ALL, "patience": MOLD_PATIENCE, "fixed": MOLD_FIXED}
MOLDABLE_WAITS = {"min": MOLD_WAIT_MIN, "mean": MOLD_WAIT_MEAN, "height": MOLD_WAIT_HEIGHT}


cdef double _mold_height(int64_t h, double x) noexcept nogil:
    """Expected exponential stages left of a worker dealt h tasks, busy for x mean task times:
    sum_{j<h} (h - j) x^j / j! / sum_{j<h} x^j / j!, in logs (log j! as a running sum of log i)."""
    cdef int64_t j
    cdef double lx, lf, top, num, den, v, wgt
    if x <= 0.0:
        return <double> h
    lx = log(x)
    top = -INFINITY
    lf = 0.0
    for j in range(h):                        # the largest term's log first
        if j > 0:
            lf = lf + log(<double> j)
        v = j * lx - lf
        if v > top:
            top = v
    num = 0.0
    den = 0.0
    lf = 0.0
    for j in range(h):
        if j > 0:
            lf = lf + log(<double> j)
        wgt = exp(j * lx - lf - top)
        num = num + (h - j) * wgt
        den = den + wgt
    return num / den


def moldable_kernel(const double[::1] arrivals, int64_t k, const double[::1] times, int64_t servers,
                    int64_t policy, double option, const double[::1] uniforms, int64_t wait,
                    bint two_barrier, double mu, double[::1] start, double[::1] departure, int64_t[::1] workers):
    """One sample path of moldable jobs (see barrier_queues.moldable): per job its start, departure and
    workers, written into the output arrays (n jobs, k tasks each, ``times`` job-major). ``option``: the value
    of the policy's option (take-fraction's share f, fixed's requirement n; unread by the others)."""
    cdef int64_t n = arrivals.shape[0]
    if times.shape[0] != n * k or uniforms.shape[0] != n or start.shape[0] != n or departure.shape[0] != n \
            or workers.shape[0] != n:
        raise ValueError("moldable_kernel: times must hold k per job, and every per-job array n entries")
    if policy < MOLD_TAKE_FRACTION or policy > MOLD_FIXED or wait < MOLD_WAIT_MIN or wait > MOLD_WAIT_HEIGHT:
        raise ValueError(f"moldable_kernel: unknown policy {policy} or wait {wait}")
    cdef int64_t s = servers
    cdef int64_t* ints = <int64_t*> malloc((9 * s + 2 * n + 1) * sizeof(int64_t))
    cdef double* dbls = <double*> malloc((3 * s + 1) * sizeof(double))
    if ints == NULL or dbls == NULL:
        free(ints)
        free(dbls)
        raise MemoryError("moldable_kernel: no memory for its state")
    cdef int64_t* free_ids = ints                 # the free workers (an id heap)
    cdef int64_t* wjob = ints + s                 # per worker: its job
    cdef int64_t* wnext = ints + 2 * s            # per worker: its next task (index in its job)
    cdef int64_t* wleft = ints + 3 * s            # per worker: tasks it has left (the running one included)
    cdef int64_t* wdealt = ints + 4 * s           # per worker: tasks dealt to it at its job's start
    cdef int64_t* wstep = ints + 5 * s            # per worker: its job's m (its tasks are i, i + m, ...)
    cdef int64_t* bprev = ints + 6 * s            # busy workers in the order they became busy: previous
    cdef int64_t* bnext = ints + 7 * s            # ... and next (-1: none)
    cdef int64_t* hnext = ints + 8 * s            # 2 barriers: the next worker its job holds (-1: none)
    cdef int64_t* jleft = ints + 9 * s            # per job: tasks not yet ended
    cdef int64_t* jhold = ints + 9 * s + n        # per job: the first worker it holds (2 barriers)
    cdef double* wstart = dbls                    # per worker: its job's start
    cdef double* ev_time = dbls + s               # the event heap: one pending task end per busy worker ...
    cdef double* wend = dbls + 2 * s              # per worker: the end of its current task
    cdef int64_t* ev_worker = <int64_t*> malloc((s + 1) * sizeof(int64_t))     # ... and its worker
    if ev_worker == NULL:
        free(ints)
        free(dbls)
        raise MemoryError("moldable_kernel: no memory for its state")
    cdef int64_t n_free = 0, n_ev = 0, nbusy = 0, btail = -1, bhead = -1
    cdef int64_t head = 0, i = 0, w, j, want, m, slot, c, need, free_count, fewest_left, total_left
    cdef double now, t_event, t_arrival, share, speedup, expect, acc
    with nogil:
        for w in range(s):
            n_free = _id_push(free_ids, n_free, w)
        for j in range(n):
            start[j] = NAN
            departure[j] = NAN
            workers[j] = 0
            jleft[j] = 0
            jhold[j] = -1
        while i < n or n_ev > 0:
            t_event = ev_time[0] if n_ev > 0 else INFINITY
            t_arrival = arrivals[i] if i < n else INFINITY
            now = t_event if t_event < t_arrival else t_arrival
            while n_ev > 0 and ev_time[0] == now:         # every task end of the instant first
                w = ev_worker[0]
                n_ev = _ev_pop(ev_time, ev_worker, n_ev)
                j = wjob[w]
                wleft[w] -= 1
                jleft[j] -= 1
                if wleft[w] == 0:                          # its composite task is done
                    if bprev[w] >= 0:
                        bnext[bprev[w]] = bnext[w]
                    else:
                        bhead = bnext[w]
                    if bnext[w] >= 0:
                        bprev[bnext[w]] = bprev[w]
                    else:
                        btail = bprev[w]
                    nbusy -= 1
                    if not two_barrier:
                        n_free = _id_push(free_ids, n_free, w)
                else:                                      # its next task
                    wnext[w] += wstep[w]
                    wend[w] = wend[w] + times[j * k + wnext[w]]
                    n_ev = _ev_push(ev_time, ev_worker, n_ev, wend[w], w)
                if jleft[j] == 0:
                    departure[j] = now
                    if two_barrier:
                        w = jhold[j]
                        while w >= 0:
                            n_free = _id_push(free_ids, n_free, w)
                            w = hnext[w]
            if t_arrival == now:
                i += 1                                     # one arrival per decision (in arrival order)
            while head < i and n_free > 0:
                free_count = n_free
                if policy == MOLD_TAKE_FRACTION or policy == MOLD_TAKE_RANDOM:
                    share = option if policy == MOLD_TAKE_FRACTION else uniforms[head]
                    if free_count == 1:
                        want = 1
                    else:
                        want = <int64_t> ceil(free_count * share)
                        if want < 1:
                            want = 1
                elif policy == MOLD_TAKE_RANDOM_ALL:
                    need = <int64_t> ceil(s * uniforms[head])
                    if need < 1:
                        need = 1
                    if need > k:
                        need = k
                    want = need if free_count >= need else 0
                elif policy == MOLD_FIXED:
                    need = <int64_t> option
                    if need > k:
                        need = k
                    want = need if free_count >= need else 0
                else:
                    speedup = 0.0 if free_count >= s else (<double> k) / free_count - (<double> k) / (free_count + 1)
                    expect = 0.0
                    if nbusy > 0:
                        if wait == MOLD_WAIT_MIN:
                            fewest_left = -1
                            w = bhead
                            while w >= 0:
                                if fewest_left < 0 or wleft[w] < fewest_left:
                                    fewest_left = wleft[w]
                                w = bnext[w]
                            expect = <double> fewest_left
                        elif wait == MOLD_WAIT_MEAN:
                            total_left = 0
                            w = bhead
                            while w >= 0:
                                total_left += wleft[w]
                                w = bnext[w]
                            expect = (<double> total_left) / nbusy
                        else:
                            acc = 0.0
                            w = bhead
                            while w >= 0:
                                acc = acc + _mold_height(wdealt[w], mu * (now - wstart[w]))
                                w = bnext[w]
                            expect = acc / nbusy
                    want = 0 if speedup > expect else free_count
                if want == 0:
                    break
                m = want if want < k else k
                start[head] = now
                workers[head] = m
                jleft[head] = k
                jhold[head] = -1
                for slot in range(m):
                    w = free_ids[0]
                    n_free = _id_pop(free_ids, n_free)
                    if two_barrier:                        # (held in claim order, as the reference's list)
                        hnext[w] = jhold[head]
                        jhold[head] = w
                    c = (k - slot + m - 1) // m            # tasks slot, slot + m, ... below k
                    wjob[w] = head
                    wnext[w] = slot
                    wstep[w] = m
                    wleft[w] = c
                    wdealt[w] = c
                    wstart[w] = now
                    bprev[w] = btail                       # busy from now: at the end of the order
                    bnext[w] = -1
                    if btail >= 0:
                        bnext[btail] = w
                    else:
                        bhead = w
                    btail = w
                    nbusy += 1
                    wend[w] = now + times[head * k + slot]
                    n_ev = _ev_push(ev_time, ev_worker, n_ev, wend[w], w)
                head += 1
    free(ints)
    free(dbls)
    free(ev_worker)
