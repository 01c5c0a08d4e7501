# Failures' attempts (barrier_queues.failures, Appendix B section 5): a round's arithmetic and the layout of the
# rounds, compiled; included by _kernels.pyx. The random draws stay numpy's (in failures.py, in the same order),
# and failures.py's numpy code of the same steps is the plain reference (equal bit for bit, tested).


def attempt_round(const int64_t[::1] active, const int64_t[::1] tasks, const int64_t[::1] offsets,
                  const double[::1] work, double[::1] progress, const double[::1] clocks, double base,
                  bint checkpoints, double tau, double delta, double[::1] holds, int64_t[::1] natt,
                  double[::1] useful, unsigned char[::1] failed):
    """One round of attempts of the ``active`` units (unit ids, in order), what ``failures._rounds`` computes with
    numpy, operation for operation. Task ``i`` of unit ``u`` is draw ``offsets[u] + i``; ``clocks`` and ``holds``
    run over the round's tasks unit by unit. Per task the work left ``w = work - progress`` and the time needed
    ``need = base + w`` (with checkpoints ``+ delta floor(w / tau)``); the unit's attempt fails at ``t_f``, the
    earliest clock below its task's need (else it succeeds); each task holds ``min(need, t_f)``. Writes ``holds``
    and ``failed`` (per active unit), adds 1 to ``natt``, the successful units' work to ``useful`` (in task
    order) and, with checkpoints, the checkpointed work of a failed attempt to ``progress`` (read only with
    checkpoints: it may be empty without)."""
    cdef int64_t n = active.shape[0], i, t, u, k, p, pos = 0
    cdef double w, need, tf, c, done, fw, acc
    if failed.shape[0] != n:
        raise ValueError(f"failed must have one entry per active unit ({n})")
    with nogil:
        for i in range(n):
            u = active[i]
            k = tasks[u]
            p = offsets[u]
            tf = INFINITY
            for t in range(k):                    # each task's need (in holds for now) and the failure time
                w = work[p + t] - progress[p + t] if checkpoints else work[p + t]   # (progress: 0 without)
                need = base + w
                if checkpoints:
                    need = need + delta * floor(w / tau)
                holds[pos + t] = need
                c = clocks[pos + t]
                if c < need and c < tf:
                    tf = c
            if tf < INFINITY:                     # a failed attempt: every task holds min(need, t_f)
                for t in range(k):
                    if tf < holds[pos + t]:
                        holds[pos + t] = tf
            failed[i] = tf < INFINITY
            if checkpoints and tf < INFINITY and tf - base > 0:
                done = floor((tf - base) / (tau + delta))
                for t in range(k):
                    w = work[p + t] - progress[p + t]
                    fw = floor(w / tau)
                    progress[p + t] = progress[p + t] + tau * (done if done < fw else fw)
            natt[u] += 1
            if tf == INFINITY:
                acc = useful[u]
                for t in range(k):
                    acc = acc + work[p + t]
                useful[u] = acc
            pos += k


def attempt_layout(const int64_t[::1] active, const int64_t[::1] tasks, const int64_t[::1] toff, int64_t a,
                   const double[::1] h, const double[::1] c, const double[::1] f, double[::1] holds,
                   double[::1] clocks, double[::1] fresh):
    """Round ``a``'s per-task values (unit by unit) at ``toff[u] + a k_u + i`` of ``holds`` and ``clocks`` (and
    ``fresh`` when ``f`` is not empty; ``clocks`` not when it is empty), what ``failures._layout`` does with
    numpy's fancy indexing."""
    cdef int64_t n = active.shape[0], i, t, u, k, at, pos = 0
    cdef bint with_fresh = f.shape[0] > 0
    cdef bint with_clocks = clocks.shape[0] > 0
    with nogil:
        for i in range(n):
            u = active[i]
            k = tasks[u]
            at = toff[u] + a * k
            for t in range(k):
                holds[at + t] = h[pos]
                if with_clocks:
                    clocks[at + t] = c[pos]
                if with_fresh:
                    fresh[at + t] = f[pos]
                pos += 1


def attempt_units(const int64_t[::1] tasks, const unsigned char[::1] barrier, const int64_t[::1] offsets,
                  const int64_t[::1] first, int64_t[::1] job, int64_t[::1] utasks, int64_t[::1] uoffsets):
    """The units of ``failures.units``: job ``j``'s from ``first[j]``, one (its ``k`` tasks) for a barrier job,
    one per task for a non-barrier job; per unit its ``job``, ``utasks`` (``k`` or 1) and ``uoffsets`` (its
    first task's draw: the job's offset plus the task's index)."""
    cdef int64_t n = tasks.shape[0], j, i, at
    with nogil:
        for j in range(n):
            at = first[j]
            if barrier[j]:
                job[at] = j
                utasks[at] = tasks[j]
                uoffsets[at] = offsets[j]
            else:
                for i in range(tasks[j]):
                    job[at + i] = j
                    utasks[at + i] = 1
                    uoffsets[at + i] = offsets[j] + i


def attempt_jobs(const int64_t[::1] first, const int64_t[::1] natt, const unsigned char[::1] aborted,
                 const double[::1] useful, int64_t[::1] job_natt, unsigned char[::1] job_aborted,
                 double[::1] job_useful):
    """Per job, from its units ``first[j]`` up to the next job's: the most attempts of a unit, whether a unit
    aborted, and the units' useful work summed in task order (0 if the job aborted), what ``failures._layout``
    computes with numpy's reductions."""
    cdef int64_t n = first.shape[0], nu = natt.shape[0], j, u, end, most
    cdef unsigned char ab
    cdef double acc
    with nogil:
        for j in range(n):
            end = first[j + 1] if j + 1 < n else nu
            most = natt[first[j]]
            ab = aborted[first[j]]
            acc = 0.0
            for u in range(first[j], end):
                if natt[u] > most:
                    most = natt[u]
                if aborted[u]:
                    ab = 1
                acc = acc + useful[u]
            job_natt[j] = most
            job_aborted[j] = ab
            job_useful[j] = 0.0 if ab else acc
