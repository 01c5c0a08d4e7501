# --------------------------------------------------------------------------------------------------
# streaming statistics of one chunk of jobs (barrier_queues.statistics.RunAccumulator.add)
#
# The same arithmetic as the accumulator's numpy code, operation for operation, so that both give the same
# bits (tested on random chunks): the metrics are differences of the kernel's times; block sums are
# numpy's ``add.reduceat`` (the block's first value plus numpy's pairwise sum of the rest, below); the
# histogram bins are LogHistogram.index's divisions, C logarithm and ceiling.


cdef double _pairwise_sum(const double* a, int64_t n) noexcept nogil:
    """numpy's pairwise summation (``loops_utils.h.src``, ``@TYPE@_pairwise_sum``) of ``n`` values: below 8
    a plain loop from -0.0, up to 128 eight partial sums combined as a tree plus the rest in order, beyond
    that the two halves (the first a multiple of 8) summed apart."""
    cdef double res, r0, r1, r2, r3, r4, r5, r6, r7
    cdef int64_t i, n2
    if n < 8:
        res = -0.0
        for i in range(n):
            res += a[i]
        return res
    if n <= 128:
        r0, r1, r2, r3, r4, r5, r6, r7 = a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
        i = 8
        while i < n - (n % 8):
            r0 += a[i]
            r1 += a[i + 1]
            r2 += a[i + 2]
            r3 += a[i + 3]
            r4 += a[i + 4]
            r5 += a[i + 5]
            r6 += a[i + 6]
            r7 += a[i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[i]
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise_sum(a, n2) + _pairwise_sum(a + n2, n - n2)


def accumulate_chunk(const double[::1] arrival, const double[::1] start, const double[::1] departure,
                     const double[::1] work, const double[::1] useful, const int64_t[::1] completed,
                     const double[::1] held, double first_spacing, int64_t drop, int64_t lo, int64_t block,
                     double[:, ::1] blocks, double[:, ::1] metrics):
    """One chunk's block sums and metrics, without the GIL.

    Jobs ``drop ..`` of the chunk are measured; the first of them is measured job ``lo``. Adds each block's
    sum of every column (waiting, sojourn, execution, work, useful, completed, held (0 when ``held`` is
    empty), spacing between starts (the chunk's first: ``first_spacing``), and the count) to
    ``blocks[:, lo // block ..]``, and fills ``metrics`` with the first three columns of the measured jobs.
    Each block's values are summed as ``add.reduceat`` does, where they lie: the metrics in ``metrics``,
    work, useful and held in the inputs; completed and the spacings go through a scratch row (a block at
    a time: it stays in the cache). A row of ones sums to its length exactly, a row of zeros to 0.
    """
    cdef int64_t n = arrival.shape[0], m = n - drop, j, i, a, b, blk, width, nb
    cdef const double* hp = &held[0] if held.shape[0] > 0 else NULL
    cdef const double* ap = &arrival[0]
    cdef const double* sp = &start[0]
    cdef const double* dp = &departure[0]
    cdef const double* wp = &work[0]
    cdef const double* up = &useful[0]
    cdef const int64_t* cp = &completed[0]
    cdef double* w_row
    cdef double* s_row
    cdef double* e_row
    cdef double* row
    if m <= 0:
        return
    width = min(block, m)
    row = <double*>malloc(width * sizeof(double))
    if row == NULL:
        raise MemoryError()
    with nogil:
        a = 0
        while a < m:
            blk = (lo + a) // block
            b = min(m, (blk + 1) * block - lo)
            nb = b - a
            w_row = &metrics[0, a]
            s_row = &metrics[1, a]
            e_row = &metrics[2, a]
            for j in range(nb):
                i = a + drop + j
                w_row[j] = sp[i] - ap[i]
                s_row[j] = dp[i] - ap[i]
                e_row[j] = dp[i] - sp[i]
            i = a + drop
            blocks[0, blk] += w_row[0] + _pairwise_sum(w_row + 1, nb - 1)
            blocks[1, blk] += s_row[0] + _pairwise_sum(s_row + 1, nb - 1)
            blocks[2, blk] += e_row[0] + _pairwise_sum(e_row + 1, nb - 1)
            blocks[3, blk] += wp[i] + _pairwise_sum(wp + i + 1, nb - 1)
            blocks[4, blk] += up[i] + _pairwise_sum(up + i + 1, nb - 1)
            for j in range(nb):
                row[j] = <double>cp[i + j]
            blocks[5, blk] += row[0] + _pairwise_sum(row + 1, nb - 1)
            if hp != NULL:
                blocks[6, blk] += hp[i] + _pairwise_sum(hp + i + 1, nb - 1)
            else:
                blocks[6, blk] += 0.0
            for j in range(nb):
                row[j] = (sp[i + j] - sp[i + j - 1]) if i + j > 0 else first_spacing
            blocks[7, blk] += row[0] + _pairwise_sum(row + 1, nb - 1)
            blocks[8, blk] += <double>nb
            a = b
    free(row)


def log_bins(const double[:, ::1] values, double floor_value, double log_gamma, int64_t[:, ::1] out):
    """Each value's histogram bin, without the GIL: ``ceil(log(x / floor) / log_gamma)`` above ``floor``,
    else 0 (NaN too); what ``LogHistogram.index`` computes with numpy, operation for operation (numpy's
    float64 logarithm is the C library's ``log`` on x86-64 without AVX-512, tested bit for bit against it
    there; with AVX-512 numpy's own ``log`` differs from it in the last bit for 20 of 200,000 values (measured:
    CHANGELOG), which moves a bin only for a quotient within an ulp of an integer: the test's 1.2 million bins
    agree there too). A value at or below ``floor`` skips the logarithm: its bin is 0 either way (``log`` of at most
    1 is at most 0); so does a value equal to the row above's at the same job (a job that did not wait has
    its sojourn equal to its execution time): the same value has the same bin."""
    cdef int64_t r, j, rows = values.shape[0], n = values.shape[1]
    cdef double x
    if out.shape[0] != rows or out.shape[1] != n:
        raise ValueError(f"out must have the shape of values ({rows}, {n})")
    with nogil:
        for j in range(n):
            for r in range(rows):
                x = values[r, j]
                if r > 0 and x == values[r - 1, j]:
                    out[r, j] = out[r - 1, j]
                elif x > floor_value:
                    out[r, j] = <int64_t> ceil(log(x / floor_value) / log_gamma)
                else:
                    out[r, j] = 0


cdef object _bin_counts(const int64_t* x, int64_t n):
    """``(lo, counts)`` of the ``n >= 1`` bins ``x``: the smallest bin and the count of every bin from it to
    the largest, what ``np.bincount(x - x.min())`` gives."""
    cdef int64_t j, lo = x[0], hi = x[0]
    with nogil:
        for j in range(n):
            if x[j] < lo:
                lo = x[j]
            elif x[j] > hi:
                hi = x[j]
    out = np.zeros(hi - lo + 1, dtype=np.int64)
    cdef int64_t[::1] o = out
    with nogil:
        for j in range(n):
            o[x[j] - lo] += 1
    return lo, out


def bin_counts(const int64_t[::1] bins, int64_t a, int64_t b):
    """``(lo, counts)`` of ``bins[a:b]`` (not empty), what ``np.bincount(x - x.min())`` gives."""
    return _bin_counts(&bins[a], b - a)


def class_piece(const double[:, ::1] values, const int64_t[:, ::1] bins, const int64_t[::1] cls, int64_t a,
                int64_t b, double[:, ::1] out):
    """One piece ``a:b`` of a chunk by job class ``c`` (``0 <= cls < out.shape[0]``).

    Sums: ``out[c, i]`` = numpy's ``values[i, a:b][cls[a:b] == c].sum()`` (the class's values in job
    order, pairwise-summed as numpy sums a contiguous array), ``out[c, -1]`` = their count. Bins: returns
    ``[(c, i, lo, counts)]``, :func:`bin_counts` of ``bins[i, a:b]`` over the class's jobs, for every class
    with jobs. The jobs are first grouped by class, in order (a counting sort), so that no loop branches
    on the class.
    """
    cdef int64_t rows = values.shape[0], classes = out.shape[0], n = b - a, c, i, j
    cdef int64_t* order
    cdef int64_t* start
    cdef int64_t* fill
    cdef double* row
    cdef int64_t* brow
    cdef bint bad = False
    result = []
    if n <= 0:
        return result
    if a < 0 or b > cls.shape[0] or b > values.shape[1] or b > bins.shape[1] or bins.shape[0] != rows \
            or out.shape[1] != rows + 1:
        raise ValueError("class_piece: a:b must lie in cls, values and bins; out needs rows + 1 columns")
    # one buffer: order (n), start (classes + 1), fill (classes), row (n doubles), brow (n)
    cdef void* buffer = malloc((3 * n + 2 * classes + 1) * 8)
    if buffer == NULL:
        raise MemoryError()
    order = <int64_t*>buffer
    start = order + n
    fill = start + classes + 1
    row = <double*>(fill + classes)
    brow = <int64_t*>(row + n)
    try:
        with nogil:
            for c in range(classes + 1):
                start[c] = 0
            for j in range(a, b):
                if cls[j] < 0 or cls[j] >= classes:
                    bad = True
                    break
                start[cls[j] + 1] += 1
        if bad:
            raise ValueError(f"job classes must be in 0 .. {classes - 1} (out has a row per class)")
        with nogil:
            for c in range(classes):
                start[c + 1] += start[c]
                fill[c] = start[c]
            for j in range(a, b):
                order[fill[cls[j]]] = j
                fill[cls[j]] += 1
            for i in range(rows):
                for j in range(n):
                    row[j] = values[i, order[j]]
                for c in range(classes):
                    out[c, i] = _pairwise_sum(row + start[c], start[c + 1] - start[c]) \
                        if start[c + 1] > start[c] else 0.0
            for c in range(classes):
                out[c, rows] = <double>(start[c + 1] - start[c])
        for i in range(rows):
            with nogil:
                for j in range(n):
                    brow[j] = bins[i, order[j]]
            for c in range(classes):
                if start[c + 1] > start[c]:
                    result.append((c, i, *_bin_counts(brow + start[c], start[c + 1] - start[c])))
    finally:
        free(buffer)
    return result
