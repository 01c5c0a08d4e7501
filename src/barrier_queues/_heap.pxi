# The binary heaps of the kernels (included by _kernels.pyx before the scheduler rooms): one home for each.
#
# * The event heap: entries (time, id) in two parallel arrays, ordered by time, then id (as Python's heapq
#   orders the tuples of the plain references: the same pops at equal times). ``_ev_push`` / ``_ev_pop`` return
#   the new size; ``_ev_sift_down`` restores the order below one entry (a heap rebuilt after times changed).
#   Users: batch sampling's worker events, the waiting list's releases, retries and aborts, replay's running jobs.
# * The key heap of the central queue: worker free times with the worker's id carried along, ordered by time
#   alone (``_sift_down`` / ``_sift_up`` at a position; the central kernel replaces the root in place).
# * The id heap: a min-heap of worker ids (the lowest free worker first): ``_id_push`` / ``_id_pop``.


# the event heap

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


cdef void _ev_sift_down(double* ev_time, int64_t* ev_worker, int64_t n, int64_t pos) noexcept nogil:
    cdef double t0 = ev_time[pos]
    cdef int64_t w0 = ev_worker[pos]
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
    ev_time[pos] = t0
    ev_worker[pos] = w0


# the key heap (central queue)

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


# the id heap

cdef inline int64_t _id_push(int64_t* ids, int64_t n, int64_t w) noexcept nogil:
    """Worker id w into the min-heap ``ids[:n]``; returns n + 1."""
    cdef int64_t pos = n
    cdef int64_t parent
    while pos > 0:
        parent = (pos - 1) >> 1
        if w < ids[parent]:
            ids[pos] = ids[parent]
            pos = parent
        else:
            break
    ids[pos] = w
    return n + 1


cdef inline int64_t _id_pop(int64_t* ids, int64_t n) noexcept nogil:
    """Remove the least id of the min-heap ``ids[:n]`` (read it at ``ids[0]`` before); returns n - 1."""
    n -= 1
    cdef int64_t last = ids[n]
    cdef int64_t pos = 0
    cdef int64_t child
    while True:
        child = 2 * pos + 1
        if child >= n:
            break
        if child + 1 < n and ids[child + 1] < ids[child]:
            child += 1
        if ids[child] < last:
            ids[pos] = ids[child]
            pos = child
        else:
            break
    if n > 0:
        ids[pos] = last
    return n
