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


