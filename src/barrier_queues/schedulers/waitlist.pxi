# The waiting-list scheduler (scheduler room barrier_queues.schedulers.waitlist): included by _kernels.pyx.
# Disciplines fcfs, first-fit, backfill and server-filling over one waiting list in arrival order
# (book Appendix B.4); the plain reference is barrier_queues.schedulers.waitlist_reference.

# a discipline: its code (the enum), its name for Python (upper case, "-" as "_": the room reads the code by
# name), its entry in DISCIPLINE_CODES and in WaitlistState's check, one function and its branch in
# _wl_decide (book: extension guide)
cdef enum:
    C_FCFS = 0
    C_FIRST_FIT = 1
    C_BACKFILL = 2
    C_SERVER_FILLING = 3
    C_AGING = 4
    C_HOLD = 6                                # (5 is the extension guide's example)
    C_SJF = 7
    C_SJF_FIRST_FIT = 8

FCFS, FIRST_FIT, BACKFILL, SERVER_FILLING, AGING = C_FCFS, C_FIRST_FIT, C_BACKFILL, C_SERVER_FILLING, C_AGING
HOLD, SJF, SJF_FIRST_FIT = C_HOLD, C_SJF, C_SJF_FIRST_FIT
#: the codes _wl_decide has a branch for, for Python (WaitlistState refuses any other: the same codes)
DISCIPLINE_CODES = (C_FCFS, C_FIRST_FIT, C_BACKFILL, C_SERVER_FILLING, C_AGING, C_HOLD, C_SJF, C_SJF_FIRST_FIT)

# a job's status in the window
cdef enum:
    C_WAITING = 1
    C_STARTED = 2
    C_RETRY = 3
    C_AWAY = 5                                # (4 is Python's mark of a job handed on)

WAITING, STARTED, RETRY, AWAY = C_WAITING, C_STARTED, C_RETRY, C_AWAY


#: requeues per window job at most in one call (a starving gang bounced by its clock at every release makes
#: the events grow without bound; the run is refused instead)
cdef enum:
    C_MAX_REQUEUES_PER_JOB = 100

MAX_REQUEUES_PER_JOB = C_MAX_REQUEUES_PER_JOB

#: the stream number of a job's first exponential hold draw (barrier_queues.clocks.HOLD_DRAW: tested equal)
cdef enum:
    HOLD_DRAW = 1001

KERNEL_HOLD_DRAW = HOLD_DRAW


cdef struct Clocks:
    # gang clocks (barrier_queues.clocks; book Appendix B.8): a barrier job that waits its budget since it
    # (last) entered the list leaves it, lost or requeued after a backoff
    bint on                                   # clocks on (off: the kernel reads no other field)
    bint requeue                              # a fired budget requeues the job (else it is lost)
    double base                               # the backoff: the n-th requeue waits min(cap, base 2^(n-1))
    double cap
    int64_t limit                             # requeues before the job is lost (-1: no limit)
    bint evict                                # a returning job enters at the list's end (else at its place)
    double jitter                             # the backoff's jitter J: times 1 + J u before the cap
    uint64_t jseed                            # the run's jitter seed (u: _gc_jitter_u)
    # per job
    const double* budget                      # its wait budget (inf: none)
    double* due                               # its deadline while it waits (inf: none)
    int64_t* requeues                         # result: its requeues
    double* away                              # result: its time spent in backoffs
    unsigned char* lost                       # result: it left unserved
    const int64_t* seq                        # its place in the run (the jitter's stream; with jitter)
    double* entry                             # when it last entered the list (eviction order)
    const int64_t* order                      # the waiting jobs of earlier calls in list order (eviction order)
    int64_t n_order
    # the deadline heap (_heap.pxi; entries of jobs that started or left are stale: due differs) and the
    # return heap (requeued jobs, when they enter again)
    double* dl_time
    int64_t* dl_job                           # (-1: a job that has left the window)
    int64_t n_dl
    int64_t dl_cap                            # its room (full: the stale entries are dropped)
    double* rq_time
    int64_t* rq_job
    int64_t n_rq
    int64_t fired                             # requeues in this call
    int64_t max_fired                         # more stops the call: the gangs starve, bounced by their clocks
    # hold (discipline hold): the head gang's hold, its timeout, and each job's held worker time
    double timeout                            # the hold timeout T (from the hold's start), or its mean
    bint hold_exp                             # each job's T an exponential draw of mean timeout (per entry)
    int64_t holder                            # the job holding the free workers (-1: none)
    double mark                               # when its held worker time was last counted
    double* held                              # result: per job, worker time held idle for it


cdef struct Failures:
    # failures of running tasks (barrier_queues.failures; book Appendix B.5): each unit's attempts are
    # drawn with its job, ``times`` holds every attempt's holds; the kernel schedules the attempts and kills
    # what an abort leaves running. A unit is a barrier job, or one task of a non-barrier job (retried alone).
    bint on                                   # failures on (off: the kernel reads no other field)
    double delay                              # the resubmit delay D
    # per job
    const int64_t* attempts                   # its attempts (the most of one of its units)
    int64_t* current                          # its current attempt (barrier jobs)
    const unsigned char* aborts               # its last attempt fails: it aborts (barrier jobs)
    const int64_t* first_unit                 # its first unit (its units follow in task order)
    int64_t* retry_top                        # the first of its failed tasks due again (-1: none)
    int64_t* left                             # its tasks whose last attempt has not started
    unsigned char* doomed                     # a unit's last attempt failed: the job aborts at its abort time
    # per unit
    const int64_t* unit_job                   # its job
    const int64_t* unit_off                   # the offset of its attempts' holds in times
    const int64_t* unit_attempts              # its attempts
    const unsigned char* unit_aborts          # its last attempt fails
    int64_t* unit_current                     # its next attempt
    int64_t* unit_next                        # the next failed task due again in its job's list
    double* unit_end                          # its running attempt's end (without worker ids)
    # per worker (with worker ids)
    int64_t* worker_unit                      # the unit it runs (-1: none)
    # the retry heap (_heap.pxi): failed units due to wait again
    double* retry_time                        # when the unit waits again
    int64_t* retry_unit                       # the unit (-1: one of a job that has left the window)
    int64_t n_retry                           # entries
    # the abort heap: doomed jobs' aborts
    double* abort_time                        # when the job aborts (its failing last attempt ends)
    int64_t* abort_job                        # the job (-1: one that has left the window)
    int64_t n_abort                           # entries


cdef struct TimeWorker:                      # a pending release: its time and the worker it frees
    double t
    int64_t w


cdef int _compare_tw(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const TimeWorker*> a).t
    cdef double y = (<const TimeWorker*> b).t
    return (x > y) - (x < y)


cdef struct Wait:
    # the window's jobs (per job, in arrival order; read-only inputs, then results written in place)
    const double* arrival                     # arrival time
    const int64_t* k                          # tasks
    const unsigned char* barrier              # barrier job (all k tasks start together) or plain
    const int64_t* cls                        # class: (k, barrier) index, for first-fit's per-class lists
    const int64_t* toff                       # offset of the job's draws (holds with failures) in times
    const double* times                       # every job's draws, each job's from its toff
    int64_t* status                           # waiting, started, retry (failures) or done
    int64_t* handed                           # tasks handed out so far (a plain job starts task by task)
    double* start                             # result: start of the last task (the paper's waiting ends there)
    double* dep                               # result: departure
    double* work                              # result: worker-time of the job's tasks
    double* useful                            # result: work of its completed tasks
    int64_t* completed                        # result: tasks completed (l of k)
    # the waiting list: a doubly linked list in arrival order, and one per class
    int64_t* nxt                              # next waiting job (-1: none)
    int64_t* prv                              # previous waiting job
    int64_t* cnext                            # next waiting job of the same class
    int64_t* cprev                            # previous waiting job of the same class
    int64_t* chead                            # per class: its first waiting job (-1: none)
    int64_t* ctail                            # per class: its last waiting job
    const int64_t* creq                       # per class: free workers a start needs (k, or 1 for plain jobs)
    int64_t nclass                            # classes
    # the classes with a waiting job, a doubly linked list (the decisions scan these, not every class: a trace
    # has a class per k it holds, thousands, of which few have a job waiting at once)
    int64_t* ne_next                          # per class: the next class with a waiting job (-1: none)
    int64_t* ne_prev                          # per class: the previous one
    int64_t ne_head                           # the first class with a waiting job (-1: none)
    int64_t head                              # first waiting job (-1: none)
    int64_t tail                              # last waiting job
    # the workers: the pending releases (releases.pxi) and the free workers
    Releases rs                               # the pending releases of busy workers
    int64_t* free_ids                         # free workers' ids, a min-heap (lowest id first), with ids
    int64_t n_free                            # free workers
    bint ids                                  # worker ids are tracked (a trace, or failures' kills by worker)
    # nodes (barrier_queues.nodes): workers g G .. g G + G - 1 form node g; a job fits by the nodes' rule
    int64_t G                                 # workers per node (0: no nodes)
    int64_t nodes                             # s / G
    int64_t* node_free                        # per node: its free workers
    unsigned char* wfree                      # per worker: free
    int64_t* nshadow                          # backfill with nodes: per node, its free workers at the head's start
    int64_t* nuse                             # nodes: per node, the workers one job would take (_nd_plan)
    TimeWorker* ndrel                         # backfill with nodes: the pending releases, sorted by time
    double* run                               # scratch: one job's per-task hold times (its service)
    double* scratch                           # scratch: one job's release times, before they are added
    int64_t* taken                            # scratch: the workers one job takes
    bint srt                                  # backfill: the releases kept sorted, and the per-class trees
    # backfill: each waiting job's key (how long it would hold its last worker if started now) and, per class
    # with more than bt_min waiting jobs, a min segment tree of the keys over its jobs (arrival order)
    double* bkey                              # per job: its key
    int64_t* bcount                           # per class: its waiting jobs
    int64_t* bon                              # per class: its tree is on (more than bt_min jobs wait)
    int64_t bt_min                            # the most jobs a class's list is walked for (BACKFILL_LIST_MAX)
    double* btree                             # every class's tree, one after another
    const int64_t* bbase                      # per class: its tree's offset in btree
    const int64_t* bsize                      # per class: its tree's leaves (a power of two)
    const int64_t* bpos                       # per job: its leaf in its class's tree
    const int64_t* bjobs                      # per class (from bjbase): its window jobs in arrival order
    const int64_t* bjbase                     # per class: its first entry in bjobs
    const Service* sv                         # the service rule of every job (barrier_queues.rules)
    bint two_barrier                          # workers held until the job departs
    int64_t servers                           # s
    # Spark's offers (overhead "event"): released workers offered one by one; global offers at revive ticks
    bint event                                # Spark's offers on
    double revive                             # revive interval R
    double phase                              # the revive timer's phase
    double tick_n                             # the next tick's index (phase + tick_n R)
    # a trace of every task (worker, start, end), for figures
    bint do_trace                             # record the trace
    int64_t* trace_worker                     # per draw: its worker
    double* trace_start                       # per draw: its start
    double* trace_end                         # per draw: its end
    Failures f                                # failures (barrier_queues.failures): their own state
    Clocks g                                  # gang clocks (barrier_queues.clocks): their own state
    # rigid jobs (a trace's: a job's k tasks hold their workers for its one draw, times[toff[j]])
    bint rigid                                # the jobs are rigid: one release entry (end, job) per job
    const double* pred                        # rigid: each job's predicted runtime (backfill's; >= its draw)
    bint batch                                # one decision per instant: its releases and arrivals all first
    double aging                              # aging: the wait T after which the oldest job gets a reservation
    double* skey                              # sjf: per job, its runtime (or predicted runtime): the order



cdef inline void _ifree_push(Wait* q, int64_t w) noexcept nogil:
    """The free workers: a min-heap of worker ids (a job takes the lowest free ids). Only a trace and the
    failures of non-barrier jobs (whose aborts kill a job's tasks by worker) need the ids; otherwise a count
    does (``q.ids`` false: no result depends on which free worker a task takes, since every release of an
    instant comes first)."""
    if q.G:
        q.wfree[w] = 1
        q.node_free[w // q.G] += 1
        q.n_free += 1
    elif q.ids:
        q.n_free = _id_push(q.free_ids, q.n_free, w)
    else:
        q.n_free += 1


cdef bint _nd_fits_on(const int64_t* counts, int64_t nodes, int64_t G, int64_t k) noexcept nogil:
    """Whether a job of k tasks fits on nodes of G workers with ``counts`` free each (barrier_queues.nodes: w = k
    // G whole free nodes, and for r = k mod G one other node with r free)."""
    cdef int64_t g, whole = k // G, rest = k - (k // G) * G, full = 0, total = 0
    cdef bint partial = False
    for g in range(nodes):
        total += counts[g]
        if counts[g] == G:
            full += 1
        elif counts[g] >= rest:
            partial = True
    if k > total:
        return False
    if rest == 0:
        return full >= whole
    return full > whole or (full == whole and partial)


cdef bint _nd_fits(Wait* q, int64_t k) noexcept nogil:
    """Whether a job of k tasks fits: k free workers, and with nodes the rule of barrier_queues.nodes."""
    if k > q.n_free:
        return False
    if not q.G:
        return True
    return _nd_fits_on(q.node_free, q.nodes, q.G, k)


cdef void _nd_plan(Wait* q, int64_t k, int64_t* use) noexcept nogil:
    """Per node, the workers a job of k tasks that fits would take now (``_nd_take``'s choice, nothing taken):
    the lowest whole free nodes, then the best-fit node for the remainder."""
    cdef int64_t g, whole = k // q.G, rest = k - (k // q.G) * q.G, best = -1
    for g in range(q.nodes):
        use[g] = 0
    for g in range(q.nodes):
        if whole == 0:
            break
        if q.node_free[g] == q.G:
            use[g] = q.G
            whole -= 1
    if rest:
        for g in range(q.nodes):
            if use[g] == 0 and q.node_free[g] >= rest and (best < 0 or q.node_free[g] < q.node_free[best]):
                best = g
        use[best] = rest


cdef void _nd_take(Wait* q, int64_t k, int64_t* out) noexcept nogil:
    """With nodes, take the workers of a job of k tasks that fits (barrier_queues.nodes.place), on the nodes
    ``_nd_plan`` chooses: the whole nodes' workers first, then the r lowest free workers of the remainder's node;
    written to out in task order."""
    cdef int64_t g, w, t = 0, n
    _nd_plan(q, k, q.nuse)
    for g in range(q.nodes):                      # the whole nodes, in order
        if q.nuse[g] == q.G:
            for w in range(g * q.G, g * q.G + q.G):
                q.wfree[w] = 0
                out[t] = w
                t += 1
            q.node_free[g] = 0
    for g in range(q.nodes):                      # the remainder's node (0 < r < G)
        n = q.nuse[g]
        if 0 < n < q.G:
            for w in range(g * q.G, g * q.G + q.G):
                if n == 0:
                    break
                if q.wfree[w]:
                    q.wfree[w] = 0
                    out[t] = w
                    t += 1
                    n -= 1
            q.node_free[g] -= q.nuse[g]
            break
    q.n_free -= k


cdef inline int64_t _ifree_pop(Wait* q) noexcept nogil:
    """The lowest free worker, taken (0 without ids; with nodes, the best-fit node's lowest)."""
    cdef int64_t top = 0
    if q.G:
        _nd_take(q, 1, &top)
        return top
    if q.ids:
        top = q.free_ids[0]
        q.n_free = _id_pop(q.free_ids, q.n_free)
    else:
        q.n_free -= 1
    return top


cdef inline void _bk_set(Wait* q, int64_t j, double v) noexcept nogil:
    """Waiting job j's backfill key is now v (and its leaf, if its class's tree is on)."""
    q.bkey[j] = v
    if q.bon[q.cls[j]]:
        _bt_set(q, j, v)


cdef void _bk_added(Wait* q, int64_t j) noexcept nogil:
    """Job j (its key set) joined its class's list: count it; past ``q.bt_min`` waiting jobs the class's tree
    is switched on with every waiting job's key (and off when none waits: its leaves are then all INFINITY)."""
    cdef int64_t c = q.cls[j]
    cdef int64_t p
    q.bcount[c] += 1
    if q.bon[c]:
        _bt_set(q, j, q.bkey[j])
    elif q.bcount[c] > q.bt_min:
        q.bon[c] = 1
        p = q.chead[c]
        while p >= 0:
            _bt_set(q, p, q.bkey[p])
            p = q.cnext[p]


cdef inline void _bk_removed(Wait* q, int64_t j) noexcept nogil:
    """Job j left its class's list: its leaf to INFINITY; with no job waiting the class's tree is off."""
    cdef int64_t c = q.cls[j]
    if q.bon[c]:
        _bt_set(q, j, INFINITY)
    q.bcount[c] -= 1
    if q.bcount[c] == 0:
        q.bon[c] = 0


cdef inline void _bt_set(Wait* q, int64_t j, double v) noexcept nogil:
    """Set job j's leaf in its class's tree (INFINITY: not waiting) and the minima above it."""
    cdef int64_t c = q.cls[j]
    cdef double* t = q.btree + q.bbase[c]
    cdef int64_t i = q.bsize[c] + q.bpos[j]
    cdef double m
    t[i] = v
    i >>= 1
    while i >= 1:
        m = t[2 * i] if t[2 * i] < t[2 * i + 1] else t[2 * i + 1]
        if m == t[i]:
            return                                # the minima above are unchanged
        t[i] = m
        i >>= 1


cdef int64_t _bt_first(Wait* q, int64_t c, int64_t lo, double limit) noexcept nogil:
    """The first position >= lo in class c's tree whose value is <= limit, or -1: O(log n)."""
    cdef double* t = q.btree + q.bbase[c]
    cdef int64_t size = q.bsize[c]
    cdef int64_t i
    if lo >= size:
        return -1
    i = size + lo
    if t[i] > limit:
        while True:
            while i & 1:
                i >>= 1
            if i == 0:
                return -1
            i += 1
            if t[i] <= limit:
                break
    while i < size:
        i <<= 1
        if t[i] > limit:
            i += 1
    return i - size


cdef double _bt_key(Wait* q, int64_t j) noexcept nogil:
    """How long after starting now job j would hold its last worker (a barrier job: its service, 2 barriers,
    or its longest task, 1 barrier; a non-barrier job: its next task)."""
    cdef int64_t completed, i
    cdef double useful, top
    if q.rigid:
        return q.pred[j]
    if not q.barrier[j]:
        return _wl_next_hold(q, j)
    top = _wl_service(q, j, q.sv, &completed, &useful)
    if q.two_barrier:
        return top
    top = q.run[0]
    for i in range(1, q.k[j]):
        if q.run[i] > top:
            top = q.run[i]
    return top


cdef inline void _ne_add(Wait* q, int64_t c) noexcept nogil:
    """Class c has a waiting job again: at the front of the list of such classes (the decisions' choices do
    not depend on the order they are scanned in: each picks the least job index, or a unique key)."""
    q.ne_prev[c] = -1
    q.ne_next[c] = q.ne_head
    if q.ne_head >= 0:
        q.ne_prev[q.ne_head] = c
    q.ne_head = c


cdef inline void _ne_remove(Wait* q, int64_t c) noexcept nogil:
    """Class c has no waiting job left."""
    if q.ne_prev[c] >= 0:
        q.ne_next[q.ne_prev[c]] = q.ne_next[c]
    else:
        q.ne_head = q.ne_next[c]
    if q.ne_next[c] >= 0:
        q.ne_prev[q.ne_next[c]] = q.ne_prev[c]


cdef inline void _wl_link(Wait* q, int64_t j) noexcept nogil:
    cdef int64_t c = q.cls[j]
    _wl_sjf_key(q, j)
    if q.srt:
        q.bkey[j] = _bt_key(q, j)
    q.nxt[j] = -1
    q.prv[j] = q.tail
    if q.tail >= 0:
        q.nxt[q.tail] = j
    else:
        q.head = j
    q.tail = j
    q.cnext[j] = -1
    q.cprev[j] = q.ctail[c]
    if q.ctail[c] >= 0:
        q.cnext[q.ctail[c]] = j
    else:
        q.chead[c] = j
        _ne_add(q, c)
    q.ctail[c] = j
    if q.srt:
        _bk_added(q, j)


cdef inline void _wl_unlink(Wait* q, int64_t j) noexcept nogil:
    cdef int64_t c = q.cls[j]
    if q.srt:
        _bk_removed(q, j)
    if q.prv[j] >= 0:
        q.nxt[q.prv[j]] = q.nxt[j]
    else:
        q.head = q.nxt[j]
    if q.nxt[j] >= 0:
        q.prv[q.nxt[j]] = q.prv[j]
    else:
        q.tail = q.prv[j]
    if q.cprev[j] >= 0:
        q.cnext[q.cprev[j]] = q.cnext[j]
    else:
        q.chead[c] = q.cnext[j]
    if q.cnext[j] >= 0:
        q.cprev[q.cnext[j]] = q.cprev[j]
    else:
        q.ctail[c] = q.cprev[j]
    if q.chead[c] < 0:
        _ne_remove(q, c)


cdef void _wl_insert(Wait* q, int64_t j) noexcept nogil:
    """Put job j back among the waiting jobs at its place in arrival order (a retry after a failure): before the
    first waiting job with a larger index, in the list of all jobs and in its class's list."""
    cdef int64_t c = q.cls[j]
    cdef int64_t p = q.head
    _wl_sjf_key(q, j)
    while p >= 0 and p < j:
        p = q.nxt[p]
    if p < 0:
        _wl_link(q, j)
        return
    if q.srt:
        q.bkey[j] = _bt_key(q, j)
    q.nxt[j] = p
    q.prv[j] = q.prv[p]
    if q.prv[p] >= 0:
        q.nxt[q.prv[p]] = j
    else:
        q.head = j
    q.prv[p] = j
    if q.chead[c] < 0:
        _ne_add(q, c)
    p = q.chead[c]
    while p >= 0 and p < j:
        p = q.cnext[p]
    q.cnext[j] = p
    if p < 0:
        q.cprev[j] = q.ctail[c]
        if q.ctail[c] >= 0:
            q.cnext[q.ctail[c]] = j
        else:
            q.chead[c] = j
        q.ctail[c] = j
    else:
        q.cprev[j] = q.cprev[p]
        if q.cprev[p] >= 0:
            q.cnext[q.cprev[p]] = j
        else:
            q.chead[c] = j
        q.cprev[p] = j
    if q.srt:
        _bk_added(q, j)


cdef void _gc_enter(Wait* q, int64_t j, double now) noexcept nogil:
    """Job j enters the waiting list at now: its deadline is now + its budget (none for an infinite one)."""
    cdef int64_t i, m
    if not q.g.on or not q.g.budget[j] < INFINITY:
        return
    if q.g.n_dl == q.g.dl_cap:               # full: keep the live entries only (at most one per window job)
        m = 0
        for i in range(q.g.n_dl):
            if q.g.dl_job[i] >= 0 and q.status[q.g.dl_job[i]] == C_WAITING and q.g.due[q.g.dl_job[i]] == q.g.dl_time[i]:
                q.g.dl_time[m] = q.g.dl_time[i]
                q.g.dl_job[m] = q.g.dl_job[i]
                m += 1
        q.g.n_dl = 0
        for i in range(m):                    # (pushed again: a heap)
            q.g.n_dl = _ev_push(q.g.dl_time, q.g.dl_job, q.g.n_dl, q.g.dl_time[i], q.g.dl_job[i])
    q.g.due[j] = now + q.g.budget[j]
    q.g.n_dl = _ev_push(q.g.dl_time, q.g.dl_job, q.g.n_dl, q.g.due[j], j)


cdef inline double _gc_next(Wait* q) noexcept nogil:
    """The earliest live deadline (stale entries at the top dropped), or inf."""
    cdef int64_t j
    if not q.g.on:
        return INFINITY
    while q.g.n_dl > 0:
        j = q.g.dl_job[0]
        if j >= 0 and q.status[j] == C_WAITING and q.g.due[j] == q.g.dl_time[0]:
            return q.g.dl_time[0]
        q.g.n_dl = _ev_pop(q.g.dl_time, q.g.dl_job, q.g.n_dl)
    return INFINITY


cdef inline void _gc_count(Wait* q, double now) noexcept nogil:
    """Hold: the holder's held worker time up to now (the free workers, all held for it, since the last count)."""
    if q.g.holder >= 0:
        q.g.held[q.g.holder] += q.n_free * (now - q.g.mark)
        q.g.mark = now


cdef void _gc_hold(Wait* q, double now) noexcept nogil:
    """Hold, after fcfs's decision at now: a holder that is no longer the waiting head (it started, or an older
    job returned before it) stops holding; a barrier head that cannot start while workers are free begins to
    hold them, its timeout due at now + T."""
    cdef int64_t h = q.head
    if q.g.holder >= 0 and q.g.holder != h:
        _gc_count(q, now)
        if q.status[q.g.holder] == C_WAITING:
            q.g.due[q.g.holder] = INFINITY        # (its timeout entry is stale)
        q.g.holder = -1
    if q.g.holder < 0 and h >= 0 and q.barrier[h] and q.n_free > 0:
        q.g.holder = h
        q.g.mark = now
        if q.g.hold_exp:                          # (barrier_queues.clocks.hold_draw)
            q.g.due[h] = now - q.g.timeout * log1p(-_gc_jitter_u(q.g.jseed, q.g.seq[h], HOLD_DRAW + q.g.requeues[h]))
        else:
            q.g.due[h] = now + q.g.timeout
        q.g.n_dl = _ev_push(q.g.dl_time, q.g.dl_job, q.g.n_dl, q.g.due[h], h)


cdef inline uint64_t _sm_mix(uint64_t z) noexcept nogil:
    """SplitMix64's output function (barrier_queues.clocks._mix)."""
    z = (z ^ (z >> 30)) * <uint64_t> 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * <uint64_t> 0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef inline double _gc_jitter_u(uint64_t seed, int64_t seq, int64_t n) noexcept nogil:
    """The jitter's uniform draw for the n-th requeue of job ``seq`` (barrier_queues.clocks.jitter_u)."""
    cdef uint64_t g = <uint64_t> 0x9E3779B97F4A7C15ULL
    cdef uint64_t s = _sm_mix(seed + (<uint64_t> (seq + 1)) * g)
    return <double> (_sm_mix(s + (<uint64_t> n) * g) >> 11) * (1.0 / 9007199254740992.0)


cdef void _gc_fire(Wait* q, int64_t j, double now) noexcept nogil:
    """Job j's budget fires at now: it leaves the list, to return after its backoff, or lost (its work k r, r
    its runtime: the largest of its draws)."""
    cdef int64_t n, i
    cdef double b, r
    _wl_unlink(q, j)
    q.g.due[j] = INFINITY
    if q.g.holder == j:                       # (its held time was counted at this event's start)
        q.g.holder = -1
    if q.g.requeue and (q.g.limit < 0 or q.g.requeues[j] < q.g.limit):
        n = q.g.requeues[j] + 1
        q.g.requeues[j] = n
        q.g.fired += 1
        b = q.g.base * pow(2.0, <double> (n - 1))
        if q.g.jitter > 0:
            b = b * (1.0 + q.g.jitter * _gc_jitter_u(q.g.jseed, q.g.seq[j], n))
        if q.g.cap < b:
            b = q.g.cap
        q.g.away[j] += b
        q.status[j] = C_AWAY
        q.g.n_rq = _ev_push(q.g.rq_time, q.g.rq_job, q.g.n_rq, now + b, j)
        return
    r = q.times[q.toff[j]]
    if not q.rigid:
        for i in range(1, q.k[j]):
            if q.times[q.toff[j] + i] > r:
                r = q.times[q.toff[j] + i]
    q.g.lost[j] = 1
    q.start[j] = now
    q.dep[j] = now
    q.work[j] = q.k[j] * r
    q.useful[j] = 0.0
    q.completed[j] = 0
    q.status[j] = C_STARTED


cdef inline int64_t _wl_off(Wait* q, int64_t j) noexcept nogil:
    """Index of the first draw of job j's current attempt."""
    if q.f.on:
        return q.toff[j] + q.f.current[j] * q.k[j]
    return q.toff[j]


cdef inline double _wl_service(Wait* q, int64_t j, const Service* sv, int64_t* completed, double* useful) noexcept nogil:
    """D of job j (relative to its start); fills q.run[:k]."""
    return _job_service(q.times, _wl_off(q, j), q.k[j], sv, q.run, q.scratch, completed, useful)


cdef void _wl_start_rigid(Wait* q, int64_t j, double now) noexcept nogil:
    """Rigid job j starts: its k workers are held for its runtime r (one release entry, its end and the job),
    under backfill its k predicted ends ``now + pred`` join the ascending array; its work is k r."""
    cdef double r = q.times[q.toff[j]]
    q.n_free -= q.k[j]
    q.rs.n = _ev_push(q.rs.time, q.rs.worker, q.rs.n, now + r, j)
    if q.rs.sorted:
        _rs_add_group(&q.rs, now + q.pred[j], q.k[j])
    q.start[j] = now
    q.dep[j] = now + r
    q.work[j] = q.k[j] * r
    q.useful[j] = q.work[j]
    q.completed[j] = q.k[j]
    q.status[j] = C_STARTED
    _wl_unlink(q, j)


cdef inline int64_t _wl_release_rigid(Wait* q) noexcept nogil:
    """The earliest-ending rigid job releases its workers (and its predicted ends leave the ascending array);
    returns how many."""
    cdef int64_t j = q.rs.worker[0]
    q.rs.n = _ev_pop(q.rs.time, q.rs.worker, q.rs.n)
    if q.rs.sorted:
        _rs_remove_group(&q.rs, q.start[j] + q.pred[j], q.k[j])
    return q.k[j]


cdef void _wl_start_job(Wait* q, int64_t j, double now, const Service* sv) noexcept nogil:
    cdef int64_t completed, i, w
    if q.rigid:
        _wl_start_rigid(q, j, now)
        return
    cdef int64_t off = _wl_off(q, j)
    cdef double useful, work = 0.0
    cdef double d = _wl_service(q, j, sv, &completed, &useful)
    if q.G:
        _nd_take(q, q.k[j], q.taken)
    for i in range(q.k[j]):
        w = q.taken[i] if q.G else _ifree_pop(q)
        q.taken[i] = w
        work += q.run[i]
        q.scratch[i] = now + (d if q.two_barrier else q.run[i])
        if q.f.on and q.ids:
            q.f.worker_unit[w] = q.f.first_unit[j]
        if q.do_trace:
            q.trace_worker[off + i] = w
            q.trace_start[off + i] = now
            q.trace_end[off + i] = now + q.run[i]
    _rs_add_job(&q.rs, q.scratch, q.taken, q.k[j], not q.two_barrier)
    if q.f.on:
        _wl_attempt_ends(q, j, now, d, work)
        return
    q.start[j] = now
    q.dep[j] = now + d
    q.work[j] = work
    q.useful[j] = useful
    q.completed[j] = completed
    q.status[j] = C_STARTED
    _wl_unlink(q, j)


cdef void _wl_attempt_ends(Wait* q, int64_t j, double now, double d, double work) noexcept nogil:
    """After an attempt of job j started at now, lasting d: the job departs (its last attempt: done, or aborted
    if that attempt fails), or it waits again at now + d + delay (a failed attempt)."""
    if q.f.current[j] == 0:
        q.start[j] = now
    q.work[j] += work
    _wl_unlink(q, j)
    if q.f.current[j] < q.f.attempts[j] - 1:
        q.f.n_retry = _ev_push(q.f.retry_time, q.f.retry_unit, q.f.n_retry, now + d + q.f.delay, q.f.first_unit[j])
        q.f.current[j] += 1
        q.status[j] = C_RETRY
        return
    q.dep[j] = now + d
    q.completed[j] = 0 if q.f.aborts[j] else q.k[j]
    q.status[j] = C_STARTED


cdef inline bint _wl_ready(Wait* q, int64_t j) noexcept nogil:
    """Whether non-barrier job j has a task to start: one not yet started, or a failed one due again."""
    return q.handed[j] < q.k[j] or (q.f.on and q.f.retry_top[j] >= 0)


cdef inline double _wl_next_hold(Wait* q, int64_t j) noexcept nogil:
    """How long the next task started for non-barrier job j would hold its worker."""
    cdef int64_t u
    if not q.f.on:
        return q.times[q.toff[j] + q.handed[j]]
    u = q.f.retry_top[j] if q.f.retry_top[j] >= 0 else q.f.first_unit[j] + q.handed[j]
    return q.times[q.f.unit_off[u] + q.f.unit_current[u]]


cdef void _wl_start_unit(Wait* q, int64_t j, double now) noexcept nogil:
    """Start the next task of non-barrier job j with failures: a failed task due again first (the latest
    first: Spark re-adds a failed task at the end of its pending list, which it takes from the end), else
    the next one not yet started. A failing attempt is due again D after it ends; a unit's failing last
    attempt dooms its job (it aborts when that attempt ends, killing its running tasks)."""
    cdef int64_t u
    if q.f.retry_top[j] >= 0:
        u = q.f.retry_top[j]
        q.f.retry_top[j] = q.f.unit_next[u]
    else:
        u = q.f.first_unit[j] + q.handed[j]
        q.handed[j] += 1
        if q.handed[j] == q.k[j]:
            q.start[j] = now
    cdef int64_t a = q.f.unit_current[u]
    cdef double end = now + q.times[q.f.unit_off[u] + a]
    q.f.unit_current[u] = a + 1
    cdef int64_t w = _ifree_pop(q)
    _rs_add(&q.rs, end, w)
    if q.ids:
        q.f.worker_unit[w] = u
    else:
        q.f.unit_end[u] = end
    q.work[j] += end - now
    if a < q.f.unit_attempts[u] - 1:
        q.f.n_retry = _ev_push(q.f.retry_time, q.f.retry_unit, q.f.n_retry, end + q.f.delay, u)
    else:
        q.f.left[j] -= 1
        if q.f.unit_aborts[u]:
            if not q.f.doomed[j]:
                q.f.doomed[j] = 1
            q.f.n_abort = _ev_push(q.f.abort_time, q.f.abort_job, q.f.n_abort, end, j)
        elif end > q.dep[j]:
            q.dep[j] = end
    if not _wl_ready(q, j):
        _wl_unlink(q, j)
        q.status[j] = C_RETRY
        if q.f.left[j] == 0 and not q.f.doomed[j]:
            q.completed[j] = q.k[j]
            q.status[j] = C_STARTED
    elif q.srt:
        _bk_set(q, j, _wl_next_hold(q, j))


cdef void _wl_abort(Wait* q, int64_t j, double now) noexcept nogil:
    """Non-barrier job j aborts at now (a task's last attempt failed): its running tasks are killed (their
    workers released now, the work they would still have done taken off the job's, in ascending order of
    their release times: the same sum whatever holds the releases), its waiting tasks dropped."""
    cdef int64_t i, u
    cdef int64_t cut = 0
    if not q.rs.heap:                         # (the releases in the ascending array: no workers to find)
        _wl_abort_sorted(q, j, now)
    for i in range(q.rs.n):
        u = q.f.worker_unit[q.rs.worker[i]]
        if u >= 0 and q.f.unit_job[u] == j and q.rs.time[i] > now:
            q.scratch[cut] = q.rs.time[i]     # (at most k of j's tasks run: scratch holds k)
            _rs_cut_at(&q.rs, i, now)
            cut += 1
    if cut:
        _sort_doubles(q.scratch, cut)
        for i in range(cut):
            q.work[j] -= q.scratch[i] - now
        _rs_reorder(&q.rs)
    if q.status[j] == C_WAITING:
        _wl_unlink(q, j)
    if q.handed[j] < q.k[j]:
        q.start[j] = now
    q.status[j] = C_STARTED
    q.dep[j] = now
    q.completed[j] = 0


cdef void _wl_abort_sorted(Wait* q, int64_t j, double now) noexcept nogil:
    """Without worker ids (the releases an ascending array of times): each running task of job j
    (a unit whose attempt ends after now, ``urun``) has its release moved to now, and the work it would still
    have done taken off the job's in ascending order of the release times (as :func:`_wl_abort` does with the
    heap). Releases of one time are alike, so the entry found by bisection is as good as the task's own: the
    values, and with them every result, are those of the heap with ids."""
    cdef int64_t u, i
    cdef int64_t cut = 0
    for u in range(q.f.first_unit[j], q.f.first_unit[j] + q.k[j]):
        if q.f.unit_current[u] > 0 and q.f.unit_end[u] > now:         # (urun is written when a unit starts)
            q.scratch[cut] = q.f.unit_end[u]
            q.f.unit_end[u] = now
            cut += 1
    _sort_doubles(q.scratch, cut)
    for i in range(cut):
        _rs_cut_time(&q.rs, q.scratch[i], now)
        q.work[j] -= q.scratch[i] - now


cdef void _wl_start_task(Wait* q, int64_t j, double now) noexcept nogil:
    if q.f.on:
        _wl_start_unit(q, j, now)
        return
    cdef int64_t i = q.handed[j]
    cdef double x = q.times[q.toff[j] + i]
    cdef int64_t w = _ifree_pop(q)
    cdef double end = now + x
    _rs_add(&q.rs, end, w)
    if q.do_trace:
        q.trace_worker[q.toff[j] + i] = w
        q.trace_start[q.toff[j] + i] = now
        q.trace_end[q.toff[j] + i] = now + x
    q.work[j] += x
    q.useful[j] += x
    if now + x > q.dep[j]:
        q.dep[j] = now + x
    q.handed[j] = i + 1
    if q.handed[j] == q.k[j]:
        q.start[j] = now
        q.completed[j] = q.k[j]
        q.status[j] = C_STARTED
        _wl_unlink(q, j)
    elif q.srt:
        _bk_set(q, j, _wl_next_hold(q, j))


cdef int64_t _wl_fcfs(Wait* q, double now, const Service* sv) noexcept nogil:
    """Start jobs in arrival order up to the first that cannot start in full; returns it, or -1."""
    cdef int64_t j
    while q.head >= 0:
        j = q.head
        if q.barrier[j]:
            if not _nd_fits(q, q.k[j]):
                return j
            _wl_start_job(q, j, now, sv)
        else:
            while q.n_free > 0 and _wl_ready(q, j):
                _wl_start_task(q, j, now)
            if q.status[j] == C_WAITING:
                return j
    return -1


cdef inline bint _wl_earlier(Wait* q, int64_t a, int64_t b) noexcept nogil:
    """Whether waiting job a comes before b in the list: a < b (arrival order), or with eviction order (gang
    clocks) the earlier entry, ties in arrival order."""
    if q.g.evict:
        return q.g.entry[a] < q.g.entry[b] or (q.g.entry[a] == q.g.entry[b] and a < b)
    return a < b


cdef void _wl_first_fit(Wait* q, double now, const Service* sv) noexcept nogil:
    """The walk in arrival order skipping barrier jobs that do not fit, as repeated choices of the earliest
    waiting job that fits (the same jobs, since F only shrinks): O(classes) per start."""
    cdef int64_t c, nc, h, best
    while q.n_free > 0:
        best = -1
        nc = q.ne_head                       # (the classes with a waiting job)
        while nc >= 0:
            c = nc
            nc = q.ne_next[c]
            h = q.chead[c]
            if h >= 0 and _nd_fits(q, q.creq[c]) and (best < 0 or _wl_earlier(q, h, best)):
                best = h
        if best < 0:
            return
        if q.barrier[best]:
            _wl_start_job(q, best, now, sv)
        else:
            while q.n_free > 0 and _wl_ready(q, best):
                _wl_start_task(q, best, now)


cdef void _wl_backfill(Wait* q, double now, const Service* sv) noexcept nogil:
    """EASY backfilling (book Appendix B.4) as repeated choices of the earliest waiting job that may start
    now: it fits in F and either finishes by t_H or takes at most x of the spare workers. F and x only shrink
    during a decision, so a job passed over never becomes eligible later in it, and the earliest eligible job is
    the one the walk in arrival order would start next. Per class it is the class's first job when its k <= x,
    else the first job in its tree that finishes by t_H: O(classes log n) per start, whatever the queue."""
    cdef int64_t head = _wl_fcfs(q, now, sv)
    cdef int64_t need, spare, c, nc, p, cand, best
    cdef double t_h, limit, key, best_key
    if head < 0 or not q.barrier[head] or q.n_free == 0:
        return
    need = q.k[head] - q.n_free                   # H starts when need more workers are free: at the need-th release
    t_h = _rs_kth(&q.rs, need - 1)
    # x: the workers free at t_H beyond H's k (releases at t_H count)
    spare = q.n_free - q.k[head] + _rs_count_le(&q.rs, need, t_h)
    limit = (t_h - now) + 1e-12 * (fabs(t_h) + fabs(now))     # a superset of now + key <= t_h, checked exactly
    while q.n_free > 0:
        best = -1
        best_key = 0.0
        nc = q.ne_head                       # (the classes with a waiting job)
        while nc >= 0:
            c = nc
            nc = q.ne_next[c]
            if q.chead[c] < 0 or q.creq[c] > q.n_free:
                continue
            if q.creq[c] <= spare:
                cand = q.chead[c]
                key = q.bkey[cand]
            elif q.bon[c]:
                cand = -1
                p = _bt_first(q, c, 0, limit)
                while p >= 0:
                    key = q.btree[q.bbase[c] + q.bsize[c] + p]
                    if now + key <= t_h:
                        cand = q.bjobs[q.bjbase[c] + p]
                        break
                    p = _bt_first(q, c, p + 1, limit)
            else:                                 # (few waiting: the class's list, the same first job)
                cand = -1
                p = q.chead[c]
                while p >= 0:
                    key = q.bkey[p]
                    if key <= limit and now + key <= t_h:
                        cand = p
                        break
                    p = q.cnext[p]
            if cand >= 0 and (best < 0 or cand < best):
                best = cand
                best_key = key
        if best < 0:
            return
        if q.barrier[best]:
            _wl_start_job(q, best, now, sv)
            if not now + best_key <= t_h:
                spare -= q.k[best]
        else:
            _wl_start_task(q, best, now)
            if not now + best_key <= t_h:
                spare -= 1


cdef bint _nd_left_fits(Wait* q, int64_t k, int64_t kh) noexcept nogil:
    """Backfill with nodes: whether the head (kh tasks) still fits at its start on the workers left when a job of
    k tasks that outlasts it takes its workers now; if so, those workers are counted out of the head's."""
    cdef int64_t g
    _nd_plan(q, k, q.nuse)
    for g in range(q.nodes):
        q.nuse[g] = q.nshadow[g] - q.nuse[g]
    if not _nd_fits_on(q.nuse, q.nodes, q.G, kh):
        return False
    for g in range(q.nodes):
        q.nshadow[g] = q.nuse[g]
    return True


cdef void _wl_backfill_nodes(Wait* q, double now, const Service* sv) noexcept nogil:
    """EASY backfilling on nodes (barrier_queues.nodes; book Appendix B.4): the head's start t_H is the first
    pending release time at which, with every release up to it, the head fits by the nodes' rule; then, in
    arrival order, each later job that fits now starts if it ends by t_H, or if the head still fits at t_H on
    the workers it leaves (those then leave the head's count). One walk of the waiting list per decision:
    O(waiting jobs x nodes), as the reference."""
    cdef int64_t head = _wl_fcfs(q, now, sv)
    cdef int64_t i, g, j, nj, kh, n
    cdef double t, t_h = INFINITY
    if head < 0 or not q.barrier[head] or q.n_free == 0 or q.nxt[head] < 0:
        return                                    # (no job behind the head: no reservation to compute)
    kh = q.k[head]
    n = q.rs.n
    for i in range(n):
        q.ndrel[i].t = q.rs.time[i]
        q.ndrel[i].w = q.rs.worker[i]
    if n > 1:
        qsort(q.ndrel, n, sizeof(TimeWorker), _compare_tw)
    for g in range(q.nodes):
        q.nshadow[g] = q.node_free[g]
    i = 0
    while i < n:
        t = q.ndrel[i].t
        while i < n and q.ndrel[i].t == t:        # (the releases of one instant together)
            q.nshadow[q.ndrel[i].w // q.G] += 1
            i += 1
        if _nd_fits_on(q.nshadow, q.nodes, q.G, kh):
            t_h = t
            break
    j = q.nxt[head]
    while j >= 0 and q.n_free > 0:
        nj = q.nxt[j]
        if q.barrier[j]:
            if _nd_fits(q, q.k[j]) and (now + q.bkey[j] <= t_h or _nd_left_fits(q, q.k[j], kh)):
                _wl_start_job(q, j, now, sv)
        else:
            while q.n_free > 0 and _wl_ready(q, j):
                if not (now + q.bkey[j] <= t_h or _nd_left_fits(q, 1, kh)):
                    break
                _wl_start_task(q, j, now)
        j = nj


cdef void _wl_server_filling(Wait* q, double now, const Service* sv) noexcept nogil:
    """The shortest prefix whose k sum to at least s, started in decreasing k (ties in arrival order) while
    they fit; every k a power of two, so the prefix's jobs of one k are that class's first ones."""
    cdef int64_t j = q.head
    cdef int64_t total = 0
    cdef int64_t last = -1
    cdef int64_t c, nc, best, h
    while j >= 0:
        total += q.k[j]
        last = j
        if total >= q.servers:
            break
        j = q.nxt[j]
    if last < 0:
        return
    while True:
        best = -1
        nc = q.ne_head                       # (the classes with a waiting job)
        while nc >= 0:
            c = nc
            nc = q.ne_next[c]
            h = q.chead[c]
            if h >= 0 and h <= last and (best < 0 or q.k[h] > q.k[best] or (q.k[h] == q.k[best] and h < best)):
                best = h
        if best < 0 or not _nd_fits(q, q.k[best]):
            return
        _wl_start_job(q, best, now, sv)


cdef void _wl_single(Wait* q, double now, int64_t slots, const Service* sv, int64_t discipline) noexcept nogil:
    """Single-executor offers (event overhead): the ``slots`` workers released at ``now`` are offered one by
    one; only jobs that need one slot (a non-barrier job's next task, a 1-task barrier job) can use them."""
    cdef int64_t j, c, nc, h
    while slots > 0 and q.n_free > 0:
        if discipline == C_FCFS:
            j = q.head
            if j < 0 or (q.barrier[j] and q.k[j] > 1):
                return
        else:
            j = -1
            nc = q.ne_head                       # (the classes with a waiting job)
            while nc >= 0:
                c = nc
                nc = q.ne_next[c]
                h = q.chead[c]
                if h >= 0 and q.creq[c] == 1 and (q.barrier[h] == 0 or q.k[h] == 1) and (j < 0 or h < j):
                    j = h
            if j < 0:
                return
        if q.barrier[j]:
            _wl_start_job(q, j, now, sv)
        else:
            _wl_start_task(q, j, now)
        slots -= 1


cdef void _wl_sjf(Wait* q, double now, const Service* sv, bint skip) noexcept nogil:
    """Shortest job first, non-preemptive: the waiting job of the least runtime (ties: the earliest) starts if it
    fits, again while workers are free; the first that does not fit blocks the rest, or (``skip``, first-fit's
    variant) the least runtime among the jobs that fit starts. A walk of the waiting list per start: O(waiting
    jobs), as the reference and Helios's simulator."""
    cdef int64_t j, best
    while q.n_free > 0 and q.head >= 0:
        best = -1
        j = q.head
        while j >= 0:
            if (not skip or _nd_fits(q, q.k[j])) and (best < 0 or q.skey[j] < q.skey[best]
                                                      or (q.skey[j] == q.skey[best] and j < best)):
                best = j
            j = q.nxt[j]
        if best < 0 or not _nd_fits(q, q.k[best]):
            return
        _wl_start_job(q, best, now, sv)


cdef inline void _wl_sjf_key(Wait* q, int64_t j) noexcept nogil:
    """sjf: job j's order, its runtime D (a rigid job's draw) or, with predictions, its predicted runtime."""
    cdef int64_t completed
    cdef double useful
    if q.skey == NULL:
        return
    if q.rigid:
        q.skey[j] = q.pred[j] if q.pred != NULL else q.times[q.toff[j]]
    else:
        q.skey[j] = _wl_service(q, j, q.sv, &completed, &useful)


cdef void _wl_decide(Wait* q, double now, const Service* sv, int64_t discipline) noexcept nogil:
    if discipline == C_FCFS:
        _wl_fcfs(q, now, sv)
    elif discipline == C_FIRST_FIT:
        _wl_first_fit(q, now, sv)
    elif discipline == C_BACKFILL:
        if q.G:
            _wl_backfill_nodes(q, now, sv)
        else:
            _wl_backfill(q, now, sv)
    elif discipline == C_SERVER_FILLING:
        _wl_server_filling(q, now, sv)
    elif discipline == C_SJF or discipline == C_SJF_FIRST_FIT:
        _wl_sjf(q, now, sv, discipline == C_SJF_FIRST_FIT)
    elif discipline == C_HOLD:                    # (gang clocks: coscheduling's permit wait, YuniKorn's placeholders)
        _wl_fcfs(q, now, sv)
        _gc_hold(q, now)
    elif discipline == C_AGING:                   # (gang clocks: Volcano's sla-waiting-time)
        if q.head >= 0 and now - q.arrival[q.head] >= q.aging:
            if q.G:                               # the oldest job has waited T: it is EASY's head
                _wl_backfill_nodes(q, now, sv)
            else:
                _wl_backfill(q, now, sv)
        else:
            _wl_first_fit(q, now, sv)             # (no job has: the oldest is the head of the list)
    # (no other code reaches here: run_waitlist refuses it before any event)


cdef inline int64_t _wl_need(Wait* q, int64_t discipline) noexcept nogil:
    """Under fcfs, first-fit or backfill, how many free workers a decision needs to start anything: the head
    job's (fcfs: k for a barrier job, else 1) or the least of the waiting classes' (first-fit and backfill, which
    start only a job that fits); ``servers + 1`` when no job waits."""
    cdef int64_t c, nc, need
    if discipline == C_FCFS or discipline == C_HOLD:
        if q.head < 0:
            return q.servers + 1
        return q.k[q.head] if q.barrier[q.head] else 1
    need = q.servers + 1
    nc = q.ne_head                       # (the classes with a waiting job)
    while nc >= 0:
        c = nc
        nc = q.ne_next[c]
        if q.chead[c] >= 0 and q.creq[c] < need:
            need = q.creq[c]
    return need


cdef inline double _wl_absorb(Wait* q, int64_t discipline, double now, double limit) noexcept nogil:
    """Take the releases before ``limit`` (the next arrival) and before any retry or abort that cannot start
    a job: under fcfs, first-fit and backfill a release whose decision would find fewer free workers than
    :func:`_wl_need` only adds a free worker (with the releases in the ascending array: no ids, no revive
    ticks), so it is counted without a decision. The release that brings the free workers to the need is left
    to the event loop, with the others of its instant. Under hold the same while the head holds (each release
    adds the held time up to it, as the event loop's count does; a release that may begin a hold is left to
    the event loop). Returns the time of the last release taken (or ``now``)."""
    cdef int64_t need = _wl_need(q, discipline)
    cdef double retry = q.f.retry_time[0] if q.f.n_retry > 0 else INFINITY      # (a release at a retry's or an abort's
    cdef double abort = q.f.abort_time[0] if q.f.n_abort > 0 else INFINITY      # instant is left to the event loop)
    cdef double clock = INFINITY                  # (and at a deadline's or a return's)
    cdef double t
    if discipline == C_HOLD and q.head >= 0 and q.g.holder != q.head:
        return now                                # (a release may begin a hold: a decision)
    if q.g.on:
        clock = q.g.dl_time[0] if q.g.n_dl > 0 else INFINITY
        if q.g.n_rq > 0 and q.g.rq_time[0] < clock:
            clock = q.g.rq_time[0]
    while q.n_free + 1 < need:
        t = _rs_next(&q.rs)
        if t > limit or t >= retry or t >= abort or t >= clock:     # (none pending: t is INFINITY)
            break
        now = t
        _rs_pop(&q.rs)
        _gc_count(q, now)                         # (hold: the holder's held time up to this release)
        q.n_free += 1
    return now


cdef void _run_waitlist(Wait* q, int64_t nw, int64_t pos, double next_first_arrival, const Service* sv,
                        int64_t discipline) noexcept nogil:
    cdef double now = -INFINITY
    cdef double tick, rel, arr, bound, due
    cdef int64_t j, u, released
    cdef bint absorb = not q.rs.heap and not q.event and discipline != C_SERVER_FILLING
    if q.g.on and q.g.evict:                  # jobs of earlier calls that still wait, in list order
        for j in range(q.g.n_order):
            _wl_link(q, q.g.order[j])
    else:                                     # (in arrival order)
        for j in range(pos):
            if q.status[j] == C_WAITING:
                _wl_link(q, j)
    while True:
        if absorb:
            now = _wl_absorb(q, discipline, now, q.arrival[pos] if pos < nw else next_first_arrival)
        rel = _rs_next(&q.rs)
        if q.f.n_retry > 0 and q.f.retry_time[0] < rel:
            rel = q.f.retry_time[0]                # a failed job waits again (failures): an event like a release
        if q.g.n_rq > 0 and q.g.rq_time[0] < rel:
            rel = q.g.rq_time[0]                   # a requeued gang returns (clocks): an event like a release
        arr = q.arrival[pos] if pos < nw else INFINITY
        bound = arr if pos < nw else next_first_arrival
        tick = INFINITY
        if q.event and q.head >= 0:           # revive ticks matter only while jobs wait
            while q.phase + q.tick_n * q.revive < now:
                q.tick_n += 1.0
            tick = q.phase + q.tick_n * q.revive
        due = _gc_next(q)
        if q.g.fired > q.g.max_fired:
            return                            # (run_waitlist refuses the run: requeue storm)
        if due < rel and due < tick and due < bound:
            now = due                         # the budgets that fire now (after the instant's other events)
            _gc_count(q, now)
            while q.g.n_dl > 0 and q.g.dl_time[0] == now:
                j = q.g.dl_job[0]
                q.g.n_dl = _ev_pop(q.g.dl_time, q.g.dl_job, q.g.n_dl)
                if j >= 0 and q.status[j] == C_WAITING and q.g.due[j] == now:
                    _gc_fire(q, j, now)
            _wl_decide(q, now, sv, discipline)  # (one decision: a leaving head may unblock others)
            continue
        if rel < INFINITY and rel <= tick and rel <= arr and (pos < nw or rel <= next_first_arrival):
            now = rel                         # releases first: each freed worker offers itself
            _gc_count(q, now)
            while q.f.n_abort > 0 and q.f.abort_time[0] <= now:     # (a job aborted now first releases its killed tasks)
                j = q.f.abort_job[0]
                q.f.n_abort = _ev_pop(q.f.abort_time, q.f.abort_job, q.f.n_abort)
                if j >= 0 and q.status[j] != C_STARTED:
                    _wl_abort(q, j, now)
            released = 0
            if q.rigid:                       # (a rigid job's k workers at once)
                while _rs_next(&q.rs) == now:
                    q.n_free += _wl_release_rigid(q)
            while _rs_next(&q.rs) == now:     # (with ids the free workers are a heap, else a count)
                _ifree_push(q, _rs_pop(&q.rs))
                released += 1
            while q.f.n_retry > 0 and q.f.retry_time[0] == now:     # then the failed jobs (tasks) due now, at their places
                u = q.f.retry_unit[0]
                q.f.n_retry = _ev_pop(q.f.retry_time, q.f.retry_unit, q.f.n_retry)
                if u < 0:
                    continue                  # a task of an aborted job that has left the window
                j = q.f.unit_job[u]
                if q.barrier[j]:
                    q.status[j] = C_WAITING
                    _wl_insert(q, j)
                elif q.status[j] != C_STARTED:            # (an aborted job's task is dropped)
                    q.f.unit_next[u] = q.f.retry_top[j]
                    q.f.retry_top[j] = u
                    if q.status[j] != C_WAITING:
                        q.status[j] = C_WAITING
                        _wl_insert(q, j)
                    elif q.srt:
                        _bk_set(q, j, _wl_next_hold(q, j))
            while q.g.n_rq > 0 and q.g.rq_time[0] == now:     # then the requeued gangs due now, at their places
                j = q.g.rq_job[0]
                q.g.n_rq = _ev_pop(q.g.rq_time, q.g.rq_job, q.g.n_rq)
                q.status[j] = C_WAITING
                if q.g.evict:                 # (eviction order: at the end)
                    q.g.entry[j] = now
                    _wl_link(q, j)
                else:
                    _wl_insert(q, j)
                _gc_enter(q, j, now)
            if q.event:
                _wl_single(q, now, released, sv, discipline)
            elif q.batch and pos < nw and q.arrival[pos] == now:
                continue                      # (one decision at this instant, after its arrivals)
            elif not q.rigid or discipline == C_HOLD or q.n_free >= _wl_need(q, discipline):
                _wl_decide(q, now, sv, discipline)
        elif tick <= arr and tick <= bound and tick < INFINITY:
            now = tick                        # a revive tick: a global offer
            q.tick_n += 1.0
            _wl_decide(q, now, sv, discipline)
        elif pos < nw:
            now = arr                         # an arrival: a global offer
            _gc_count(q, now)
            q.status[pos] = C_WAITING
            _wl_link(q, pos)
            _gc_enter(q, pos, now)
            pos += 1
            while q.batch and pos < nw and q.arrival[pos] == now:
                q.status[pos] = C_WAITING
                _wl_link(q, pos)
                _gc_enter(q, pos, now)
                pos += 1
            _wl_decide(q, now, sv, discipline)
        else:
            return


cdef class WaitlistState:
    """What one replication of the waiting-list scheduler carries from chunk to chunk, and its settings: made
    once per replication (:class:`barrier_queues.schedulers.waitlist._Window` holds it), read and written by
    :func:`run_waitlist` at every chunk. Arrays are numpy arrays (the window renumbers and grows the failure
    heaps between chunks; the kernel reads them through these attributes only)."""

    # settings, fixed for the replication
    cdef public int64_t discipline            # fcfs, first-fit, backfill or server-filling (checked here)
    cdef public int64_t phases                # phases per job (barrier() sync points + 1)
    cdef public int64_t policy                # the release rule's code (barrier_queues.rules)
    cdef public int64_t stragglers            # tasks killed at the release (k - l)
    cdef public object params                 # the rule's float parameters (PARAM_SLOTS order)
    cdef public bint two_barrier              # workers held until the job departs
    cdef public bint event_overhead           # Spark's offers (overhead "event")
    cdef public double revive                 # Spark's revive interval R
    cdef public double phase                  # the revive timer's phase
    cdef public bint sorted_releases          # the releases may be one ascending array (no worker ids needed)
    cdef public int64_t backfill_list_max     # backfill walks a class's list up to this many waiting jobs
    cdef public bint fail                     # failures on
    cdef public bint failure_ids              # failures kill running tasks by worker id (non-barrier jobs)
    cdef public double delay                  # failures: the resubmit delay D
    cdef public bint rigid                    # rigid jobs (a trace's): one draw per job, one release per job
    cdef public object pred                   # rigid: each window job's predicted runtime (backfill reads it)
    # state carried from chunk to chunk
    cdef public object rel_time               # pending releases: times (a heap with rel_worker, or ascending)
    cdef public object rel_worker             # pending releases: the worker each frees
    cdef public object free_ids               # free workers' ids (a heap)
    cdef public object heap_state             # [pending releases, free workers, retry entries, abort entries]
    cdef public object tick_state             # [the next revive tick's index]
    cdef public object rt_time                # failures: the retry heap's times
    cdef public object rt_job                 # failures: the retry heap's units
    cdef public object ab_time                # failures: the abort heap's times
    cdef public object ab_job                 # failures: the abort heap's jobs
    cdef public object wunit                  # failures: each worker's unit (-1: none)
    cdef public bint clock                    # gang clocks on (barrier_queues.clocks)
    cdef public bint requeue                  # clocks: a fired budget requeues (else the job is lost)
    cdef public double base                   # clocks: the backoff's base and cap
    cdef public double cap
    cdef public int64_t limit                 # clocks: requeues before a job is lost (-1: none)
    cdef public bint evict                    # clocks: eviction order (a returning job enters at the end)
    cdef public double jitter                 # clocks: the backoff's jitter J
    cdef public uint64_t jseed                # clocks: the run's jitter seed
    cdef public object dl_time                # clocks: the deadline heap's times (room >= 2 window jobs + 2)
    cdef public object dl_job                 # clocks: the deadline heap's jobs
    cdef public object rq_time                # clocks: the return heap's times (room >= window jobs)
    cdef public object rq_job                 # clocks: the return heap's jobs
    cdef public object clock_state            # clocks: [deadline entries, return entries]
    cdef public double aging                  # aging: the wait T after which the oldest job is EASY's head
    cdef public double timeout                # hold: the hold timeout T (or its mean)
    cdef public bint hold_exp                 # hold: T drawn per job entry, exponential of mean timeout
    cdef public object hold_state             # hold: [the holder's window index (-1: none)]
    cdef public double hold_mark              # hold: when the holder's held time was last counted
    cdef public bint stormed                  # clocks: the last call stopped, too many requeues per job
    cdef public int64_t node_size             # nodes: workers per node (0: none)
    cdef public object node_free              # nodes: per node, its free workers
    cdef public object wfree                  # nodes: per worker, free (uint8)

    def __init__(self, int64_t servers, int64_t discipline, int64_t phases, int64_t policy, int64_t stragglers,
                 params, bint two_barrier, bint event_overhead=False, double revive=1.0, bint fail=False,
                 bint failure_ids=True, double delay=0.0, bint sorted_releases=False,
                 int64_t backfill_list_max=32, bint rigid=False, clock=None, int64_t node_size=0):
        if not (discipline == C_FCFS or discipline == C_FIRST_FIT or discipline == C_BACKFILL
                or discipline == C_SERVER_FILLING or discipline == C_AGING
                or discipline == C_SJF or discipline == C_SJF_FIRST_FIT
                or discipline == C_HOLD):
            raise ValueError(f"WaitlistState: unknown discipline code {discipline} (a discipline without a "
                             "branch in the kernel must not run as another)")
        self.discipline, self.phases, self.policy, self.stragglers = discipline, phases, policy, stragglers
        self.params = np.asarray(params, dtype=np.float64)
        self.two_barrier, self.event_overhead, self.revive, self.phase = two_barrier, event_overhead, revive, 0.0
        self.sorted_releases, self.backfill_list_max = sorted_releases, backfill_list_max
        self.fail, self.failure_ids, self.delay = fail, failure_ids, delay
        if rigid and (fail or event_overhead or not two_barrier):
            raise ValueError("WaitlistState: rigid jobs hold their workers for one runtime (2 barriers), without "
                             "failures or Spark's offers")
        self.rigid, self.pred = rigid, None
        self.rel_time, self.rel_worker = np.zeros(servers), np.zeros(servers, dtype=np.int64)
        self.free_ids = np.arange(servers, dtype=np.int64)
        self.heap_state = np.array([0, servers, 0, 0], dtype=np.int64)
        self.tick_state = np.zeros(1)
        self.rt_time, self.rt_job = np.zeros(0), np.zeros(0, dtype=np.int64)
        self.ab_time, self.ab_job = np.zeros(0), np.zeros(0, dtype=np.int64)
        self.wunit = np.full(servers, -1, dtype=np.int64)
        self.clock = clock is not None
        if clock is not None and (fail or event_overhead):
            raise ValueError("WaitlistState: gang clocks run without failures or Spark's offers")
        self.requeue = bool(clock["requeue"]) if clock is not None else False
        self.base = float(clock["base"]) if clock is not None else 0.0
        self.cap = float(clock["cap"]) if clock is not None else 0.0
        self.limit = int(clock["limit"]) if clock is not None else -1
        self.evict = bool(clock["evict"]) if clock is not None else False
        self.jitter = float(clock["jitter"]) if clock is not None else 0.0
        self.jseed = 0
        if self.evict and discipline != C_FCFS and discipline != C_FIRST_FIT and discipline != C_HOLD:
            raise ValueError("WaitlistState: eviction order runs under fcfs, first-fit and hold")
        self.dl_time, self.dl_job = np.zeros(0), np.zeros(0, dtype=np.int64)
        self.rq_time, self.rq_job = np.zeros(0), np.zeros(0, dtype=np.int64)
        self.clock_state = np.zeros(2, dtype=np.int64)
        self.aging = INFINITY
        self.timeout = INFINITY
        self.hold_exp = False
        self.hold_state = np.full(1, -1, dtype=np.int64)
        self.hold_mark = 0.0
        self.stormed = False
        self.node_size = node_size
        if node_size and (rigid or fail or event_overhead or servers % node_size or discipline == C_HOLD):
            raise ValueError("WaitlistState: nodes run under every discipline but hold, with worker ids (the "
                             "release heap), without rigid jobs, failures or Spark's offers, on whole nodes")
        self.node_free = np.full(servers // node_size if node_size else 0, node_size, dtype=np.int64)
        self.wfree = np.ones(servers if node_size else 0, dtype=np.uint8)


cdef void _gc_open(Wait* q, WaitlistState st, dict jobs, int64_t nw) except *:
    """The clocks' part of the kernel's state (off without them): the window's per-job ``budget``, ``due``,
    ``requeues``, ``away`` and ``lost`` (uint8), and the heaps of ``st`` (their room checked)."""
    cdef const double[::1] budget
    cdef double[::1] due, away, dl_time, rq_time, held
    cdef int64_t[::1] requeues, dl_job, rq_job
    cdef const int64_t[::1] seq, order
    cdef double[::1] entry
    cdef int64_t j
    cdef unsigned char[::1] lost
    q.g.on = st.clock
    q.g.evict = False
    q.g.jitter = 0.0
    q.g.n_dl = 0
    q.g.n_rq = 0
    q.g.holder = -1
    q.g.fired = 0
    q.g.max_fired = C_MAX_REQUEUES_PER_JOB * (nw + 1)
    if not q.g.on:
        return
    budget, due, away = jobs["budget"], jobs["due"], jobs["away"]
    requeues, lost = jobs["requeues"], jobs["lost"]
    dl_time, dl_job, rq_time, rq_job = st.dl_time, st.dl_job, st.rq_time, st.rq_job
    if budget.shape[0] != nw or due.shape[0] != nw or away.shape[0] != nw or requeues.shape[0] != nw \
            or lost.shape[0] != nw:
        raise ValueError("run_waitlist: the clocks need budget, due, away, requeues and lost per window job")
    if dl_time.shape[0] < 2 * nw + 2 or dl_job.shape[0] != dl_time.shape[0] or rq_time.shape[0] < nw + 1 \
            or rq_job.shape[0] != rq_time.shape[0]:
        raise ValueError("run_waitlist: the clocks' heaps need room for 2 deadlines and a return per window job")
    q.g.requeue, q.g.base, q.g.cap, q.g.limit = st.requeue, st.base, st.cap, st.limit
    q.g.evict, q.g.jitter, q.g.jseed = st.evict, st.jitter, st.jseed
    q.g.seq, q.g.entry, q.g.order, q.g.n_order = NULL, NULL, NULL, 0
    q.g.hold_exp = st.hold_exp
    if q.g.jitter > 0 or q.g.hold_exp:
        seq = jobs["seq"]
        if seq.shape[0] != nw:
            raise ValueError("run_waitlist: the jitter and exponential hold timeouts need seq per window job")
        q.g.seq = &seq[0] if nw else NULL
    if q.g.evict:
        entry, order = jobs["entry"], jobs["order"]
        if entry.shape[0] != nw or order.shape[0] > nw:
            raise ValueError("run_waitlist: eviction order needs entry per window job and the waiting jobs' order")
        for j in range(order.shape[0]):
            if order[j] < 0 or order[j] >= nw:
                raise ValueError("run_waitlist: the waiting jobs' order names a job outside the window")
        q.g.entry = &entry[0] if nw else NULL
        q.g.order = &order[0] if order.shape[0] else NULL
        q.g.n_order = order.shape[0]
    q.g.budget = &budget[0] if nw else NULL
    q.g.due = &due[0] if nw else NULL
    q.g.away = &away[0] if nw else NULL
    q.g.requeues = &requeues[0] if nw else NULL
    q.g.lost = &lost[0] if nw else NULL
    q.g.dl_time, q.g.dl_job, q.g.dl_cap = &dl_time[0], &dl_job[0], dl_time.shape[0]
    q.g.rq_time, q.g.rq_job = &rq_time[0], &rq_job[0]
    q.g.n_dl = st.clock_state[0]
    q.g.n_rq = st.clock_state[1]
    q.g.timeout = st.timeout
    q.g.holder = st.hold_state[0]
    q.g.mark = st.hold_mark
    q.g.held = NULL
    if st.discipline == C_HOLD:
        held = jobs["held"]
        if held.shape[0] != nw:
            raise ValueError("run_waitlist: hold needs held per window job")
        q.g.held = &held[0] if nw else NULL


def run_waitlist(WaitlistState st, dict jobs, dict units, int64_t pos, double next_first_arrival, tuple trace):
    """Process a window of jobs (those of earlier calls that have not all started, then a new chunk from
    ``pos``) until every event before ``next_first_arrival`` (inf: drain) is done; see the module docstring of
    :mod:`barrier_queues.schedulers.waitlist`. ``st``: the replication's :class:`WaitlistState` (settings, and
    the workers and heaps carried from call to call: a heap of (time, worker) releases in ``rel_time`` /
    ``rel_worker`` and the free ``free_ids``). ``jobs``: the window's per-job arrays (``arrival``, ``k``,
    ``barrier`` as uint8, ``cls``, ``toff``, ``status``, ``handed``, ``start``, ``dep``, ``work``, ``useful``,
    ``completed``, and with failures ``natt``, ``attempt``, ``aborted`` as uint8, ``ufirst``, ``rtop``,
    ``left``, ``doomed``), its draws ``times`` and the classes' ``creq``. ``units`` (failures): per unit
    ``ujob``, ``utoff``, ``unatt``, ``uab``, ``ucur``, ``unext``, ``urun``. ``trace``: (worker, start, end) per
    draw, empty arrays for none.

    With ``event_overhead`` (Spark's offers): a release offers only the freed workers, one by one, to jobs
    that need one slot; revive ticks (``phase`` + n ``revive``; n carried in ``tick_state[0]``) and arrivals
    make global offers. With failures: ``times`` holds every attempt's holds (``k`` per attempt from ``toff``),
    ``attempt`` each job's current attempt, ``aborted`` whether its last attempt fails; failed units wait in
    the retry heap until they wait again; a non-barrier job's tasks fail and are retried alone (``rtop``: its
    failed tasks due again, ``left``: tasks whose last attempt has not started, ``doomed``; aborts in the abort
    heap; ``wunit``: each worker's unit, with worker ids; ``urun``: each unit's running attempt's end, without).
    With ``sorted_releases`` and no trace, the pending releases are kept in an ascending array instead of the
    heap, and the free workers are a count (the same outputs: no result depends on the order of releases at
    one instant, or on which free worker a task takes). Backfill looks for a class's next job in its list of
    waiting jobs while at most ``backfill_list_max`` wait, in its segment tree above (the same job)."""
    cdef const double[::1] arrival = jobs["arrival"]
    cdef const int64_t[::1] k = jobs["k"]
    cdef const unsigned char[::1] barrier = jobs["barrier"]
    cdef const int64_t[::1] cls = jobs["cls"]
    cdef const int64_t[::1] toff = jobs["toff"]
    cdef const double[::1] times = jobs["times"]
    cdef int64_t[::1] status = jobs["status"]
    cdef int64_t[::1] handed = jobs["handed"]
    cdef double[::1] start = jobs["start"]
    cdef double[::1] dep = jobs["dep"]
    cdef double[::1] work = jobs["work"]
    cdef double[::1] useful = jobs["useful"]
    cdef int64_t[::1] completed = jobs["completed"]
    cdef const int64_t[::1] creq = jobs["creq"]
    cdef int64_t discipline = st.discipline
    cdef int64_t phases = st.phases
    cdef int64_t policy = st.policy
    cdef int64_t stragglers = st.stragglers
    cdef const double[::1] params = st.params
    cdef bint two_barrier = st.two_barrier
    cdef double[::1] rel_time = st.rel_time
    cdef int64_t[::1] rel_worker = st.rel_worker
    cdef int64_t[::1] heap_state = st.heap_state
    cdef int64_t[::1] free_ids = st.free_ids
    cdef int64_t[::1] trace_worker = trace[0]
    cdef double[::1] trace_start = trace[1]
    cdef double[::1] trace_end = trace[2]
    cdef bint event_overhead = st.event_overhead
    cdef double revive = st.revive
    cdef double phase = st.phase
    cdef double[::1] tick_state = st.tick_state
    cdef bint sorted_releases = st.sorted_releases
    cdef int64_t backfill_list_max = st.backfill_list_max
    cdef bint failure_ids = st.failure_ids
    cdef double delay = st.delay
    cdef const int64_t[::1] natt = None
    cdef int64_t[::1] attempt = None
    cdef const unsigned char[::1] aborted = None
    cdef double[::1] rt_time = None
    cdef int64_t[::1] rt_job = None
    cdef const int64_t[::1] ufirst = None
    cdef const int64_t[::1] ujob = None
    cdef const int64_t[::1] utoff = None
    cdef const int64_t[::1] unatt = None
    cdef const unsigned char[::1] uab = None
    cdef int64_t[::1] ucur = None
    cdef int64_t[::1] unext = None
    cdef int64_t[::1] rtop = None
    cdef int64_t[::1] left = None
    cdef unsigned char[::1] doomed = None
    cdef double[::1] ab_time = None
    cdef int64_t[::1] ab_job = None
    cdef int64_t[::1] wunit = None
    cdef double[::1] urun = None
    if st.fail:
        natt, attempt, aborted = jobs["natt"], jobs["attempt"], jobs["aborted"]
        ufirst, rtop, left, doomed = jobs["ufirst"], jobs["rtop"], jobs["left"], jobs["doomed"]
        rt_time, rt_job, ab_time, ab_job, wunit = st.rt_time, st.rt_job, st.ab_time, st.ab_job, st.wunit
        ujob, utoff, unatt, uab = units["ujob"], units["utoff"], units["unatt"], units["uab"]
        ucur, unext, urun = units["ucur"], units["unext"], units["urun"]
    cdef Service sv = _service(phases, policy, stragglers, params)
    cdef const double[::1] pred = None
    cdef int64_t nw = arrival.shape[0]
    cdef int64_t nclass = creq.shape[0]
    cdef int64_t s = free_ids.shape[0]
    cdef int64_t kmax = 1
    cdef int64_t j
    cdef Wait q
    for j in range(nw):
        if k[j] > kmax:
            kmax = k[j]
    _gc_open(&q, st, jobs, nw)                    # (checked before anything is allocated)
    cdef int64_t* links = <int64_t*> malloc((4 * nw + 4 * nclass + kmax + 1) * sizeof(int64_t))
    cdef double* buffers = <double*> malloc((2 * kmax + 2 * s + 1) * sizeof(double))
    if links == NULL or buffers == NULL:
        free(links)
        free(buffers)
        raise MemoryError("the waiting-list kernel could not allocate its buffers")
    q.arrival = &arrival[0] if nw else NULL
    q.k = &k[0] if nw else NULL
    q.barrier = &barrier[0] if nw else NULL
    q.cls = &cls[0] if nw else NULL
    q.toff = &toff[0] if nw else NULL
    q.times = &times[0] if times.shape[0] else NULL
    q.status = &status[0] if nw else NULL
    q.handed = &handed[0] if nw else NULL
    q.start = &start[0] if nw else NULL
    q.dep = &dep[0] if nw else NULL
    q.work = &work[0] if nw else NULL
    q.useful = &useful[0] if nw else NULL
    q.completed = &completed[0] if nw else NULL
    q.nxt = links
    q.prv = links + nw
    q.cnext = links + 2 * nw
    q.cprev = links + 3 * nw
    q.chead = links + 4 * nw
    q.ctail = links + 4 * nw + nclass
    q.ne_next = links + 4 * nw + 2 * nclass + kmax + 1
    q.ne_prev = q.ne_next + nclass
    q.ne_head = -1
    for j in range(nclass):
        q.chead[j] = -1
        q.ctail[j] = -1
    q.creq = &creq[0]
    q.nclass = nclass
    q.head = -1
    q.tail = -1
    q.free_ids = &free_ids[0]
    q.n_free = heap_state[1]
    q.run = buffers
    q.scratch = buffers + kmax
    q.taken = links + 4 * nw + 2 * nclass
    q.srt = discipline == C_BACKFILL or discipline == C_AGING     # backfill's trees and sorted release times
    q.aging = st.aging
    q.two_barrier = two_barrier
    q.servers = s
    q.event = event_overhead
    q.revive = revive
    q.phase = phase
    q.tick_n = tick_state[0] if tick_state is not None else 0.0
    q.do_trace = trace_worker.shape[0] > 0
    q.trace_worker = &trace_worker[0] if q.do_trace else NULL
    q.trace_start = &trace_start[0] if q.do_trace else NULL
    q.trace_end = &trace_end[0] if q.do_trace else NULL
    q.f.on = st.fail
    q.f.attempts = &natt[0] if q.f.on and nw else NULL
    q.f.current = &attempt[0] if q.f.on and nw else NULL
    q.f.aborts = &aborted[0] if q.f.on and nw else NULL
    q.f.delay = delay
    q.f.retry_time = &rt_time[0] if q.f.on and rt_time.shape[0] else NULL
    q.f.retry_unit = &rt_job[0] if q.f.on and rt_job.shape[0] else NULL
    q.f.n_retry = heap_state[2] if q.f.on else 0
    if q.f.on:
        q.f.first_unit = &ufirst[0] if nw else NULL
        q.f.unit_job = &ujob[0] if ujob.shape[0] else NULL
        q.f.unit_off = &utoff[0] if utoff.shape[0] else NULL
        q.f.unit_attempts = &unatt[0] if unatt.shape[0] else NULL
        q.f.unit_aborts = &uab[0] if uab.shape[0] else NULL
        q.f.unit_current = &ucur[0] if ucur.shape[0] else NULL
        q.f.unit_next = &unext[0] if unext.shape[0] else NULL
        q.f.retry_top = &rtop[0] if nw else NULL
        q.f.left = &left[0] if nw else NULL
        q.f.doomed = &doomed[0] if nw else NULL
        q.f.abort_time = &ab_time[0] if ab_time.shape[0] else NULL
        q.f.abort_job = &ab_job[0] if ab_job.shape[0] else NULL
        q.f.worker_unit = &wunit[0]
        q.f.unit_end = &urun[0] if urun is not None and urun.shape[0] else NULL
    q.f.n_abort = heap_state[3] if q.f.on else 0
    q.ids = q.do_trace or (q.f.on and failure_ids and not sorted_releases) or st.node_size > 0
    cdef int64_t[::1] node_free = st.node_free
    cdef unsigned char[::1] wfree = st.wfree
    q.G = st.node_size
    q.nodes = node_free.shape[0]
    q.node_free = &node_free[0] if q.G else NULL
    q.wfree = &wfree[0] if q.G else NULL
    q.nshadow = q.nuse = NULL
    q.ndrel = NULL
    q.rigid = st.rigid
    q.batch = discipline == C_SERVER_FILLING      # (its choice among jobs arrived at one instant needs them all)
    q.pred = NULL
    if q.rigid:
        if q.do_trace or heap_state[0] or times.shape[0] < nw:
            raise ValueError("run_waitlist: rigid jobs run in one drained call, one draw per job, without a trace")
        if q.srt or discipline == C_SJF or discipline == C_SJF_FIRST_FIT:
            pred = st.pred
            if pred.shape[0] != nw:
                raise ValueError("run_waitlist: rigid jobs under backfill or sjf need one predicted runtime per job")
            q.pred = &pred[0] if nw else NULL
    # the release set: a heap with worker ids (or without sorted_releases), an ascending array of times alone
    # without them; backfill keeps the ascending array beside the heap
    _rs_open(&q.rs, q.rigid or not (sorted_releases and not q.ids),
             q.srt or (sorted_releases and not q.ids and not q.rigid), &rel_time[0],
             &rel_worker[0], heap_state[0], buffers + 2 * kmax, s)
    cdef int64_t* groups = NULL
    if q.rigid and q.srt:                         # (the predicted ends' workers: one entry per running job)
        groups = <int64_t*> malloc((s + 1) * sizeof(int64_t))
        if groups == NULL:
            free(links)
            free(buffers)
            raise MemoryError("the waiting-list kernel could not allocate its buffers")
        q.rs.cnt = groups
    q.sv = &sv
    q.skey = NULL
    if discipline == C_SJF or discipline == C_SJF_FIRST_FIT:
        q.skey = <double*> malloc((nw + 1) * sizeof(double))
        if q.skey == NULL:
            free(links)
            free(buffers)
            free(groups)
            raise MemoryError("the waiting-list kernel could not allocate its buffers")
    cdef int64_t* bint_buf = NULL
    cdef double* btree = NULL
    cdef int64_t nb, total_tree, c
    if q.srt:                                     # backfill's trees: per class, its window jobs in arrival order
        bint_buf = <int64_t*> malloc((5 * nclass + 2 * nw + 1) * sizeof(int64_t))
        if bint_buf == NULL:
            free(links)
            free(buffers)
            free(groups)
            free(q.skey)
            raise MemoryError("the waiting-list kernel could not allocate its buffers")
        q.bbase = bint_buf
        q.bsize = bint_buf + nclass
        q.bjbase = bint_buf + 2 * nclass
        q.bpos = bint_buf + 3 * nclass
        q.bjobs = bint_buf + 3 * nclass + nw
        q.bcount = bint_buf + 3 * nclass + 2 * nw
        q.bon = q.bcount + nclass
        for c in range(nclass):
            (<int64_t*> q.bsize)[c] = 0
            q.bcount[c] = 0
            q.bon[c] = 0
        for j in range(nw):                       # bsize counts the class's jobs for now
            (<int64_t*> q.bpos)[j] = q.bsize[cls[j]]
            (<int64_t*> q.bsize)[cls[j]] += 1
        total_tree = 0
        nb = 0
        for c in range(nclass):
            (<int64_t*> q.bjbase)[c] = nb
            nb += q.bsize[c]
            j = 1
            while j < q.bsize[c]:
                j <<= 1
            (<int64_t*> q.bsize)[c] = j
            (<int64_t*> q.bbase)[c] = total_tree
            total_tree += 2 * j
        for j in range(nw):
            (<int64_t*> q.bjobs)[q.bjbase[cls[j]] + q.bpos[j]] = j
        btree = <double*> malloc((total_tree + nw) * sizeof(double) + 1)
        if btree == NULL:
            free(links)
            free(buffers)
            free(bint_buf)
            free(groups)
            free(q.skey)
            raise MemoryError("the waiting-list kernel could not allocate its buffers")
        for j in range(total_tree):
            btree[j] = INFINITY
        q.btree = btree
        q.bkey = btree + total_tree               # (set when a job joins the waiting jobs)
        q.bt_min = backfill_list_max
    cdef int64_t* node_buf = NULL
    if q.G:                                       # nodes: one job's nodes; backfill: the head's, sorted releases
        node_buf = <int64_t*> malloc((2 * q.nodes + 1) * sizeof(int64_t))
        if q.srt:
            q.ndrel = <TimeWorker*> malloc((s + 1) * sizeof(TimeWorker))
        if node_buf == NULL or (q.srt and q.ndrel == NULL):
            free(links)
            free(buffers)
            free(bint_buf)
            free(btree)
            free(groups)
            free(q.skey)
            free(node_buf)
            free(q.ndrel)
            raise MemoryError("the waiting-list kernel could not allocate its buffers")
        q.nshadow = node_buf
        q.nuse = node_buf + q.nodes
    with nogil:
        _run_waitlist(&q, nw, pos, next_first_arrival, &sv, discipline)
    st.stormed = q.g.fired > q.g.max_fired        # (the caller refuses the run)
    if q.g.on:
        st.clock_state[0] = q.g.n_dl
        st.clock_state[1] = q.g.n_rq
        st.hold_state[0] = q.g.holder
        st.hold_mark = q.g.mark
    heap_state[0] = _rs_close(&q.rs)               # (without the heap: ascending times, a valid heap)
    heap_state[1] = q.n_free
    if q.f.on:
        heap_state[2] = q.f.n_retry
        heap_state[3] = q.f.n_abort
    if tick_state is not None:
        tick_state[0] = q.tick_n
    free(links)
    free(buffers)
    free(bint_buf)
    free(btree)
    free(groups)
    free(q.skey)
    free(node_buf)
    free(q.ndrel)


def compact_runs(double[::1] values, const int64_t[::1] starts, const int64_t[::1] sizes):
    """Move the runs ``values[starts[i]:starts[i] + sizes[i]]`` (ascending, not overlapping) to the front of
    ``values``, one after another, in place (each run moves toward the front, so a forward copy is safe);
    returns their total size. The window's draws of the jobs it keeps, without numpy's index arrays."""
    cdef int64_t n = starts.shape[0], i, at = 0
    if sizes.shape[0] != n:
        raise ValueError("starts and sizes must have one entry per run")
    for i in range(n):
        if sizes[i] < 0 or starts[i] < at or starts[i] + sizes[i] > values.shape[0]:
            raise ValueError("runs must be ascending, not overlapping and inside values")
        at = starts[i] + sizes[i]
    at = 0
    with nogil:
        for i in range(n):
            if sizes[i]:
                memmove(&values[at], &values[starts[i]], sizes[i] * sizeof(double))
            at += sizes[i]
    return at
