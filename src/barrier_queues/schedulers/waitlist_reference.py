"""The plain-Python reference of the waiting-list scheduler (Appendix B, section 4), event by event.

Shares no code with the compiled kernel (``waitlist.pxi``); fed the same
inputs it must give the same per-job results, bit for bit. Jobs wait in
arrival order. Decision points are each arrival (one at a time, in arrival
order) and each instant at which workers are released (all releases of the
instant first); at a release instant that equals an arrival time the
releases come first. With ``F`` free workers a decision runs the discipline:

* ``fcfs``: walk the waiting jobs in arrival order; a barrier job starts if
  ``k <= F``, else the walk stops; a non-barrier job starts ``min(F, pending)``
  tasks and the walk stops while tasks stay pending;
* ``first-fit`` (Spark's rule): the same walk, but a barrier job that does not
  fit is skipped, and the walk goes on while ``F > 0``;
* ``backfill`` (EASY with the true task times): ``fcfs`` up to the first
  barrier job ``H`` that does not fit; ``H`` is reserved the earliest time
  ``t_H`` at which ``k_H`` workers will be free if nothing else starts, and
  ``x = F + (releases at or before t_H) - k_H`` workers are spare then. Later
  jobs, in arrival order, start if they fit in ``F`` and either all their
  workers are released by ``t_H`` or they take at most ``x`` workers (``x``
  shrinks); a non-barrier job's tasks are judged one by one in task order;
* ``server-filling`` (2 barriers, every k a power of two dividing s): take the
  shortest prefix of the waiting jobs whose k sum to at least s (or all);
  start its jobs in decreasing k, ties in arrival order, while they fit.
  Its decision points are the instants: every release and every arrival of
  an instant come first, then one decision (its choice among jobs that
  arrive together needs them all).

``predictions`` (a trace's requested times, for backfill): each job's
predicted hold replaces its true one in backfill's test, and ``t_H`` and
``x`` count the running jobs' workers at their predicted ends (start plus
prediction); a job still holds its workers for its true time.

Free workers are taken lowest index first (a heap of free worker ids).

Failures (Appendix B, section 5): each unit's attempts are worked out here
from the raw draws (its task times, one failure clock per task and attempt,
fresh task times for ``different`` work), with plain loops; a unit is a
barrier job or one task of a non-barrier job. A failed attempt of a barrier
job frees its workers at the failure instant and the job waits again, ``D``
later, at its place in arrival order. A failed task of a non-barrier job is
due again ``D`` after it ends; its job then waits at its place, and its
failed tasks due again start before its other tasks, the latest due first
(Spark takes a task set's pending tasks from the end of a list to which a
failed task is appended). When a task's last attempt fails its job aborts:
its running tasks are killed then, its waiting ones dropped. At an instant:
aborts, then releases, then the failed jobs and tasks due then, then the
decision.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import math

from .. import nodes
from ..clocks import backoff, hold_draw, jitter_u
from ..reference import service, service_args


class _Waitlist:
    """The state of one reference run: free workers, pending releases, waiting jobs, per-job results."""

    def __init__(self, arrivals, tasks, barrier, times, servers, two_barrier, one_job, phases, reservations):
        n = len(arrivals)
        self.arrivals = [float(a) for a in arrivals]
        self.tasks = [int(k) for k in tasks]
        self.barrier = [bool(b) for b in barrier]
        self.offsets, total = [], 0
        for k in self.tasks:
            self.offsets.append(total)
            total += k * phases
        self.draws = [[float(x) for x in times[self.offsets[j]:self.offsets[j] + self.tasks[j] * phases]]
                      for j in range(n)]
        self.res = {"start": [0.0] * n, "departure": [-math.inf] * n, "work": [0.0] * n, "useful": [0.0] * n,
                    "completed": [0] * n}
        self.tr = {"worker": [0] * total, "start": [0.0] * total, "end": [0.0] * total}
        self.servers, self.two_barrier, self.one_job = servers, two_barrier, one_job
        self.free = list(range(servers))
        self.releases: list[tuple[float, int]] = []
        self.waiting: list[int] = []
        self.handed = [0] * n
        self.served: dict = {}
        self.reservations = reservations
        self.fail = None
        self.retries = []
        self.aborts = []
        self.running = {}
        self.predictions = None
        self.predicted = {}
        self.clock = None
        self.holder, self.mark = None, 0.0
        self.deadlines: list[tuple[float, int]] = []
        self.returns: list[tuple[float, int]] = []
        self.node_size = None

    def fits(self, k):
        """Whether a job of k tasks fits on the free workers (with nodes: :func:`barrier_queues.nodes.place`)."""
        if self.node_size is None:
            return k <= len(self.free)
        return nodes.fits(self.free, self.node_size, self.servers, k)

    def take(self, k):
        """The workers a job of k tasks takes, in task order: the lowest free ones, or by the nodes' rule."""
        if self.node_size is None:
            return [heapq.heappop(self.free) for _ in range(k)]
        taken = nodes.place(self.free, self.node_size, self.servers, k)
        gone = set(taken)
        self.free = [w for w in self.free if w not in gone]
        heapq.heapify(self.free)
        return taken

    def setup_clock(self, clock, budgets):
        """Gang clocks (Appendix B, section 8; :mod:`barrier_queues.clocks`): each job's budget, and the
        results ``lost``, ``requeues`` and ``backoff``."""
        n = len(self.arrivals)
        self.clock = clock
        self.budget = [float(b) for b in budgets]
        self.deadline_at = [math.inf] * n
        self.res.update(lost=[False] * n, requeues=[0] * n, backoff=[0.0] * n)
        if clock.get("hold"):
            self.res["held"] = [0.0] * n

    def enter(self, j, now):
        """Job j enters the waiting list at now: its deadline is now + its budget (none for an infinite one)."""
        if self.clock is not None and self.budget[j] < math.inf:
            self.deadline_at[j] = now + self.budget[j]
            heapq.heappush(self.deadlines, (self.deadline_at[j], j))

    def next_deadline(self):
        """The earliest deadline of a job still waiting (entries of jobs that started or left are dropped)."""
        while self.deadlines and self.deadline_at[self.deadlines[0][1]] != self.deadlines[0][0]:
            heapq.heappop(self.deadlines)
        return self.deadlines[0][0] if self.deadlines else math.inf

    def instant(self, now):
        """The events of a release instant before its decision: aborts, releases, failed jobs (tasks) due
        again, requeued gangs returning at their places; returns the workers released."""
        released = 0
        while self.aborts and self.aborts[0][0] <= now:
            j = heapq.heappop(self.aborts)[1]
            if not self.dead[j]:
                self.abort(j, now)
        while self.releases and self.releases[0][0] == now:
            heapq.heappush(self.free, heapq.heappop(self.releases)[1])
            released += 1
        while self.retries and self.retries[0][0] == now:
            self.due(heapq.heappop(self.retries)[1])
        while self.returns and self.returns[0][0] == now:
            j = heapq.heappop(self.returns)[1]
            if self.clock.get("evict"):                     # eviction order: at the end
                self.waiting.append(j)
            else:
                bisect.insort(self.waiting, j)
            self.enter(j, now)
        return released

    def count(self, now):
        """Hold: the holder's held worker time up to now (every free worker is held for it)."""
        if self.holder is not None:
            self.res["held"][self.holder] += len(self.free) * (now - self.mark)
            self.mark = now

    def hold(self, now):
        """fcfs, then the hold: a holder no longer at the head stops holding; a barrier head that cannot start
        while workers are free begins to hold them, its timeout due at now + T."""
        self.fcfs(now)
        head = self.waiting[0] if self.waiting else None
        if self.holder is not None and self.holder != head:
            self.count(now)
            self.deadline_at[self.holder] = math.inf
            self.holder = None
        if self.holder is None and head is not None and self.barrier[head] and self.free:
            self.holder, self.mark = head, now
            c = self.clock
            self.deadline_at[head] = (now + hold_draw(c.get("jitter_seed", 0), head, self.res["requeues"][head],
                                                      c["timeout"]) if c.get("hold_exp") else now + c["timeout"])
            heapq.heappush(self.deadlines, (self.deadline_at[head], head))

    def fire(self, now):
        """Every budget that fires at now (entries of jobs that started or left are dropped)."""
        while self.deadlines and self.deadlines[0][0] == now:
            _, j = heapq.heappop(self.deadlines)
            if self.deadline_at[j] == now:
                self.expire(j, now)

    def expire(self, j, now):
        """Job j's budget fires: it leaves the list, to return after its backoff, or lost."""
        self.waiting.remove(j)
        self.deadline_at[j] = math.inf
        if self.holder == j:
            self.holder = None
        c, r = self.clock, self.res
        if c["requeue"] and (c["limit"] < 0 or r["requeues"][j] < c["limit"]):
            n = r["requeues"][j] + 1
            r["requeues"][j] = n
            u = jitter_u(c.get("jitter_seed", 0), j, n) if c.get("jitter", 0.0) > 0 else 0.0
            b = backoff(n, c["base"], c["cap"], c.get("jitter", 0.0), u)
            r["backoff"][j] += b
            heapq.heappush(self.returns, (now + b, j))
            return
        runtime = max(self.draws[j][:self.tasks[j]])
        r["lost"][j] = True
        r["start"][j], r["departure"][j], r["completed"][j], r["useful"][j] = now, now, 0, 0.0
        r["work"][j] = self.tasks[j] * runtime

    def run_of(self, j):
        """One job's service (a function of its draws: computed once); with failures, its current attempt."""
        if self.fail is not None:
            holds = self.fail_attempts[j][self.attempt[j]][0]
            return max(holds), self.tasks[j], 0.0, holds
        if j not in self.served:
            self.served[j] = self.one_job(self.draws[j], self.tasks[j])
        return self.served[j]

    def setup_failures(self, fail, times):
        """Each unit's attempts from its raw draws: a list of (holds, failed) and whether it was aborted; a
        barrier job is one unit, a non-barrier job one per task (numbered in job order, then task order)."""
        self.fail = fail
        self.retries: list[tuple[float, int]] = []
        self.attempt = [0] * len(self.tasks)
        self.fail_attempts, self.fail_useful, self.fail_aborted = [], [], []
        self.unit_of, self.first_unit = [], []
        self.task_attempts, self.task_aborted, self.cur, self.stack = [], [], [], []
        self.left, self.dead, self.doomed, self.job_attempts = [], [], [], []
        at = 0
        for j, k in enumerate(self.tasks):
            self.first_unit.append(len(self.unit_of))
            parts = [(self.draws[j], k)] if self.barrier[j] else [([x], 1) for x in self.draws[j][:k]]
            made_all, useful_all, aborted_any, per = [], 0.0, False, []
            for i, (first, size) in enumerate(parts):
                u = len(self.unit_of)
                self.unit_of.append((j, i))
                made = int(fail["unit_attempts"][u])
                clocks = [float(c) for c in fail["clocks"][at:at + made * size]]
                fresh = [float(c) for c in fail["fresh"][at:at + made * size]]
                attempts, useful, aborted = job_attempts(first, clocks, fresh, size, fail)
                if len(attempts) != made:
                    raise AssertionError(f"unit {u}: {len(attempts)} attempts here, {made} in the inputs")
                per.append((attempts, aborted))
                made_all.append(made)
                useful_all += useful
                aborted_any = aborted_any or aborted
                at += made * size
            self.fail_attempts.append(per[0][0])
            self.fail_useful.append(0.0 if aborted_any else useful_all)
            if not self.barrier[j]:
                self.res["useful"][j] = self.fail_useful[j]
            self.fail_aborted.append(aborted_any)
            self.job_attempts.append(max(made_all))
            self.task_attempts.append([a for a, _ in per])
            self.task_aborted.append([b for _, b in per])
            self.cur.append([0] * len(per))
            self.stack.append([])
            self.left.append(0 if self.barrier[j] else k)
            self.dead.append(False)
            self.doomed.append(False)

    def ready(self, j):
        """Whether non-barrier job j has a task to start (one not yet started, or a failed one due again)."""
        return self.handed[j] < self.tasks[j] or (self.fail is not None and bool(self.stack[j]))

    def next_hold(self, j):
        if self.fail is None:
            return self.draws[j][self.handed[j]]
        i = self.stack[j][-1] if self.stack[j] else self.handed[j]
        return self.task_attempts[j][i][self.cur[j][i]][0][0]

    def start_unit(self, j, now):
        """The next task of non-barrier job j with failures (a failed one due again first, latest first)."""
        r = self.res
        if self.stack[j]:
            i = self.stack[j].pop()
        else:
            i = self.handed[j]
            self.handed[j] += 1
            if self.handed[j] == self.tasks[j]:
                r["start"][j] = now
        a = self.cur[j][i]
        self.cur[j][i] = a + 1
        made = self.task_attempts[j][i]
        end = now + made[a][0][0]
        w = heapq.heappop(self.free)
        heapq.heappush(self.releases, (end, w))
        self.running[w] = j
        r["work"][j] += end - now
        if a < len(made) - 1:
            heapq.heappush(self.retries, (end + self.fail["delay"], self.first_unit[j] + i))
        else:
            self.left[j] -= 1
            if self.task_aborted[j][i]:
                self.doomed[j] = True
                heapq.heappush(self.aborts, (end, j))
            else:
                r["departure"][j] = max(r["departure"][j], end)
        if not self.ready(j):
            self.waiting.remove(j)
            if self.left[j] == 0 and not self.doomed[j]:
                r["completed"][j] = self.tasks[j]

    def abort(self, j, now):
        """Non-barrier job j aborts: its running tasks are killed now (the work they would still have done taken
        off the job's in ascending order of their release times), its waiting tasks dropped."""
        r = self.res
        kept, cut = [], []
        for t, w in self.releases:
            if self.running.get(w) == j and t > now:
                cut.append(t)
                t = now
            kept.append((t, w))
        for t in sorted(cut):
            r["work"][j] -= t - now
        heapq.heapify(kept)
        self.releases = kept
        if j in self.waiting:
            self.waiting.remove(j)
        if self.handed[j] < self.tasks[j]:
            r["start"][j] = now
        self.dead[j] = True
        r["departure"][j], r["completed"][j] = now, 0

    def due(self, u):
        """Unit u is due again after a failure: its job waits again at its place."""
        j, i = self.unit_of[u]
        if self.barrier[j]:
            bisect.insort(self.waiting, j)
        elif not self.dead[j]:
            self.stack[j].append(i)
            if j not in self.waiting:
                bisect.insort(self.waiting, j)

    def start_attempt(self, j, now):
        holds = self.fail_attempts[j][self.attempt[j]][0]
        cut = max(holds)
        r = self.res
        if self.attempt[j] == 0:
            r["start"][j] = now
        total = 0.0
        for busy in holds:
            w = heapq.heappop(self.free)
            total += busy
            heapq.heappush(self.releases, (now + (cut if self.two_barrier else busy), w))
            self.running[w] = j
        r["work"][j] += total
        self.waiting.remove(j)
        if self.attempt[j] < len(self.fail_attempts[j]) - 1:
            heapq.heappush(self.retries, (now + cut + self.fail["delay"], self.first_unit[j]))
            self.attempt[j] += 1
            return
        r["departure"][j] = now + cut
        r["completed"][j] = 0 if self.fail_aborted[j] else self.tasks[j]
        r["useful"][j] = self.fail_useful[j]

    def start_job(self, j, now):
        if self.fail is not None:
            self.start_attempt(j, now)
            return
        cut, done, useful, occupied = self.run_of(j)
        work = 0.0
        workers = self.take(len(occupied))
        for i, busy in enumerate(occupied):
            w = workers[i]
            if self.predictions is not None:
                self.predicted[w] = now + self.predictions[j]
            work += busy
            heapq.heappush(self.releases, (now + (cut if self.two_barrier else busy), w))
            t = self.offsets[j] + i
            self.tr["worker"][t], self.tr["start"][t], self.tr["end"][t] = w, now, now + busy
        r = self.res
        r["start"][j], r["departure"][j], r["work"][j], r["useful"][j], r["completed"][j] = now, now + cut, work, \
            useful, done
        self.waiting.remove(j)
        if self.clock is not None:
            self.deadline_at[j] = math.inf

    def start_task(self, j, now):
        if self.fail is not None:
            self.start_unit(j, now)
            return
        i = self.handed[j]
        x = self.draws[j][i]
        w = self.take(1)[0]
        heapq.heappush(self.releases, (now + x, w))
        t = self.offsets[j] + i
        self.tr["worker"][t], self.tr["start"][t], self.tr["end"][t] = w, now, now + x
        r = self.res
        r["work"][j] += x
        r["useful"][j] += x
        r["departure"][j] = max(r["departure"][j], now + x)
        self.handed[j] = i + 1
        if self.handed[j] == self.tasks[j]:
            r["start"][j], r["completed"][j] = now, self.tasks[j]
            self.waiting.remove(j)

    def fcfs(self, now):
        """Start jobs in arrival order up to the first that cannot start in full; return it (or None)."""
        while self.waiting:
            j = self.waiting[0]
            if self.barrier[j]:
                if not self.fits(self.tasks[j]):
                    return j
                self.start_job(j, now)
            else:
                while self.free and self.ready(j):
                    self.start_task(j, now)
                if self.ready(j):
                    return j
        return None

    def first_fit(self, now):
        for j in list(self.waiting):
            if not self.free:
                return
            if self.barrier[j]:
                if self.fits(self.tasks[j]):
                    self.start_job(j, now)
            else:
                while self.free and self.ready(j):
                    self.start_task(j, now)

    def backfill(self, now):
        if self.node_size is not None:
            self.backfill_nodes(now)
            return
        head = self.fcfs(now)
        if head is None or not self.barrier[head] or not self.free:
            return
        ordered = sorted(t for t, _ in self.releases) if self.predictions is None else sorted(
            self.predicted[w] for _, w in self.releases)
        t_h = ordered[self.tasks[head] - len(self.free) - 1]
        spare = len(self.free) + sum(1 for t in ordered if t <= t_h) - self.tasks[head]
        if self.reservations is not None:
            self.reservations.append((head, t_h))
        for j in list(self.waiting[self.waiting.index(head) + 1:]):
            if not self.free:
                return
            if self.barrier[j]:
                k = self.tasks[j]
                if k > len(self.free):
                    continue
                cut, _, _, occupied = self.run_of(j)
                if self.predictions is not None:
                    cut = self.predictions[j]
                if now + (cut if self.two_barrier else max(occupied)) <= t_h:
                    self.start_job(j, now)
                elif k <= spare:
                    self.start_job(j, now)
                    spare -= k
            else:
                while self.free and self.ready(j):
                    if now + self.next_hold(j) <= t_h:
                        self.start_task(j, now)
                    elif spare >= 1:
                        self.start_task(j, now)
                        spare -= 1
                    else:
                        break

    def backfill_nodes(self, now):
        """EASY on nodes: the head's start t_H is the first release time at which, with every release up to it
        (those of one instant together), the head fits by the nodes' rule; then, in arrival order, a later job
        that fits now starts if it ends by t_H, or if the head still fits at t_H on the workers it leaves (which
        then leave the head's). Sets of worker ids, as the module's other rules (the kernel counts per node)."""
        head = self.fcfs(now)
        if head is None or not self.barrier[head] or not self.free:
            return
        g, s, kh = self.node_size, self.servers, self.tasks[head]
        shadow, t_h = set(self.free), math.inf
        ordered = sorted(self.releases)
        i = 0
        while i < len(ordered):
            t = ordered[i][0]
            while i < len(ordered) and ordered[i][0] == t:
                shadow.add(ordered[i][1])
                i += 1
            if nodes.fits(shadow, g, s, kh):
                t_h = t
                break
        if self.reservations is not None:
            self.reservations.append((head, t_h))

        def outlasts_ok(k):
            """Whether the head fits at t_H without the workers a job of k tasks takes now (then they are out)."""
            nonlocal shadow
            left = shadow - set(nodes.place(self.free, g, s, k))
            if not nodes.fits(left, g, s, kh):
                return False
            shadow = left
            return True

        for j in list(self.waiting[self.waiting.index(head) + 1:]):
            if not self.free:
                return
            if self.barrier[j]:
                k = self.tasks[j]
                if not self.fits(k):
                    continue
                cut, _, _, occupied = self.run_of(j)
                if now + (cut if self.two_barrier else max(occupied)) <= t_h or outlasts_ok(k):
                    self.start_job(j, now)
            else:
                while self.free and self.ready(j):
                    if not (now + self.next_hold(j) <= t_h or outlasts_ok(1)):
                        break
                    self.start_task(j, now)

    def aging(self, now):
        """First-fit until the oldest waiting job (the list's first) has waited ``aging_after``; from then on
        backfill, that job EASY's head."""
        if self.waiting and now - self.arrivals[self.waiting[0]] >= self.aging_after:
            self.backfill(now)
        else:
            self.first_fit(now)

    def sjf(self, now, skip=False):
        """Shortest job first: the waiting job of the least runtime (its service's length, or its predicted
        runtime; ties: the earliest) starts if it fits, again while workers are free; the first that does not
        fit blocks the rest, or (``skip``) the least runtime among the jobs that fit starts."""
        def runtime(j):
            return self.predictions[j] if self.predictions is not None else self.run_of(j)[0]

        while self.free and self.waiting:
            pool = [j for j in self.waiting if not skip or self.fits(self.tasks[j])]
            if not pool:
                return
            j = min(pool, key=lambda j: (runtime(j), j))
            if not self.fits(self.tasks[j]):
                return
            self.start_job(j, now)

    def server_filling(self, now):
        prefix, total_k = [], 0
        for j in self.waiting:
            prefix.append(j)
            total_k += self.tasks[j]
            if total_k >= self.servers:
                break
        for j in sorted(prefix, key=lambda j: (-self.tasks[j], j)):
            if not self.fits(self.tasks[j]):
                return
            self.start_job(j, now)

    def single(self, now, slots, discipline):
        """Released workers offered one by one: only one-slot jobs can take them."""
        while slots > 0 and self.free:
            if discipline == "fcfs":
                j = self.waiting[0] if self.waiting else None
                if j is None or (self.barrier[j] and self.tasks[j] > 1):
                    return
            else:
                j = next((j for j in self.waiting if not self.barrier[j] or self.tasks[j] == 1), None)
                if j is None:
                    return
            if self.barrier[j]:
                self.start_job(j, now)
            else:
                self.start_task(j, now)
            slots -= 1


#: disciplines added from outside (barrier_queues.schedulers.waitlist.add_discipline): name -> decide(q, now)
DECIDE: dict = {}


def job_attempts(first, clocks, fresh, k, fail):
    """One job's attempts: ``([(holds, failed), ...], useful work, aborted)``, attempt by attempt, task by task
    (Appendix B, section 5; ``fail`` as in :func:`simulate_waitlist_reference`)."""
    restart, cap = fail["restart"], fail["max_attempts"]
    work = list(first)
    progress = [0.0] * k
    out = []
    a = 0
    while True:
        if cap is not None and a >= cap:
            return out, 0.0, True
        if a > 0 and not fail["identical"]:
            work = fresh[a * k:(a + 1) * k]
        holds, failed = fail["attempt"](fail, work, progress, clocks[a * k:(a + 1) * k], restart if a > 0 else 0.0)
        out.append((holds, failed))
        if not failed:
            useful = 0.0
            for v in work:
                useful += v
            return out, useful, False
        a += 1


def _prepared(arrivals, tasks, barrier, times, servers, two_barrier, service_fn, reservations, failures,
              predictions, clock, aging_after, rule) -> _Waitlist:
    """The reference's state for one run, with its failures, predictions and clocks set up."""
    one_job = service_fn or (lambda draws, k: service(draws, k, **service_args(rule)))
    q = _Waitlist(arrivals, tasks, barrier, times, servers, two_barrier, one_job, rule.get("phases", 1),
                  reservations)
    if failures is not None:
        q.setup_failures(failures, times)
    if predictions is not None:
        q.predictions = [float(p) for p in predictions]
    if clock is not None:
        q.setup_clock(clock, clock["budgets"])
    q.aging_after = math.inf if aging_after is None else float(aging_after)
    return q


def simulate_waitlist_reference(arrivals, tasks, barrier, times, servers: int, discipline: str = "fcfs",
                                two_barrier: bool = False, trace: bool = False, service_fn=None,
                                reservations: list | None = None, event_overhead: bool = False,
                                revive: float = 1.0, phase: float = 0.0, failures: dict | None = None,
                                predictions=None, clock: dict | None = None, aging_after: float | None = None,
                                node_size: int | None = None, **rule):
    """Per-job lists ``start`` (of the job's last task), ``departure``, ``work``, ``useful``, ``completed``
    (and with ``trace`` per-draw ``worker``, ``start``, ``end`` for each job's first ``k`` draws).
    ``reservations``, if given, receives each backfill reservation ``(H, t_H)``.

    ``event_overhead`` (Spark's offers, fcfs and first-fit): workers released at an instant are offered one
    by one, only to jobs that need one slot (a non-barrier job's next task, a 1-task barrier job); global
    offers come at job arrivals and at revive ticks ``phase + n revive`` while jobs wait. At one instant:
    releases, then the tick, then the arrival.

    ``failures`` (Appendix B, section 5): the raw draws ``clocks``, ``fresh`` and ``unit_attempts`` (from
    :func:`barrier_queues.failures.attempts`), ``max_attempts``, ``delay``, ``restart``, ``identical`` (a retry
    redoes the first attempt's work), ``tau`` and ``delta`` (checkpoints) and ``attempt``: the failure model's
    plain function of one attempt (``FailureModel.attempt``); each unit's attempts are recomputed here from the
    draws and must be as many as the inputs say. ``predictions``: per job, the hold backfill predicts (module
    docstring). ``clock`` (gang clocks, :mod:`barrier_queues.clocks`): ``budgets`` (per job), ``requeue``,
    ``base``, ``cap``, ``limit`` (-1: none), ``timeout`` and ``hold`` (discipline hold), ``evict`` (eviction
    order), ``jitter`` and ``jitter_seed``; a job's deadline fires after the releases, returns and decision of
    its instant, then one decision; a requeued job returns with the releases of its instant, at its place (at
    the end with ``evict``). ``aging_after``: the wait T of discipline ``aging``
    (first-fit until the oldest waiting job has waited T, then backfill with it as the head). ``node_size``: the
    workers in nodes of that many (:mod:`barrier_queues.nodes`: where a job fits and which workers it takes)."""
    q = _prepared(arrivals, tasks, barrier, times, servers, two_barrier, service_fn, reservations, failures,
                  predictions, clock, aging_after, rule)
    q.node_size = node_size
    batch = discipline == "server-filling"
    builtin = {"fcfs": q.fcfs, "first-fit": q.first_fit, "backfill": q.backfill, "server-filling": q.server_filling,
               "aging": q.aging, "hold": q.hold, "sjf": q.sjf, "sjf-first-fit": functools.partial(q.sjf, skip=True)}
    decide = builtin[discipline] if discipline in builtin else functools.partial(DECIDE[discipline], q)
    n, i, now, tick_n = len(q.arrivals), 0, -math.inf, 0.0
    while i < n or q.releases or q.retries or q.returns or q.next_deadline() < math.inf or (
            event_overhead and q.waiting):
        rel = min(q.releases[0][0] if q.releases else math.inf, q.retries[0][0] if q.retries else math.inf,
                  q.returns[0][0] if q.returns else math.inf)
        arr = q.arrivals[i] if i < n else math.inf
        tick = math.inf
        if event_overhead and q.waiting:
            while phase + tick_n * revive < now:
                tick_n += 1.0
            tick = phase + tick_n * revive
        due = q.next_deadline()
        if due < rel and due < tick and due < arr:
            now = due                                   # the budgets that fire now, then one decision
            q.count(now)
            q.fire(now)
            decide(now)
        elif rel < math.inf and rel <= tick and rel <= arr:
            now = rel
            q.count(now)
            released = q.instant(now)
            if event_overhead:
                q.single(now, released, discipline)
            elif not (batch and i < n and q.arrivals[i] == now):
                decide(now)
        elif tick <= arr and tick < math.inf:
            now = tick
            tick_n += 1.0
            decide(now)
        else:
            now = arr
            q.count(now)
            q.waiting.append(i)
            q.enter(i, now)
            i += 1
            while batch and i < n and q.arrivals[i] == now:
                q.waiting.append(i)
                q.enter(i, now)
                i += 1
            decide(now)
    if failures is not None:
        q.res["attempts"] = list(q.job_attempts)
        q.res["aborted"] = list(q.fail_aborted)
    return (q.res, q.tr) if trace else q.res


__all__ = ["job_attempts", "simulate_waitlist_reference"]
