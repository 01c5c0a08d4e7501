"""Gang clocks (Appendix B, section 8): a clock on every gang that has not started, and what it does when it fires.

Gang schedulers in use put a clock on a gang that waits: Kueue's ``waitForPodsReady`` evicts and requeues it
after a backoff, the coscheduling plugin and YuniKorn give up after a timeout, Starburst's waiting policies
let a job wait a budget that grows with its size. The model here, an option of the waiting-list scheduler
(:mod:`barrier_queues.schedulers.waitlist`) for drawn workloads and recorded traces alike:

* A **barrier job** that enters the waiting list at time ``e`` (its arrival, or its return after a backoff)
  gets the deadline ``e + B``, ``B`` its **wait budget** (one per job, drawn or computed once, counted anew
  from each entry). Plain (non-barrier) jobs start task by task and carry no clock.
* If it has not started by its deadline it leaves the list. A job that starts at the instant of its deadline
  has started: at one instant the releases, the returns and the decision come first, then the deadlines of
  that instant fire, then one decision (a leaving head may unblock the jobs behind it).
* ``on_budget = "leave"``: the job is **lost** (reneging; Erlang-A's abandonment). ``"requeue"``: its n-th
  requeue (n = 1, 2, ...) waits ``min(cap, base 2^(n-1) (1 + J u))`` (Kueue's ``requeuingStrategy`` backoff
  with ``backoffBaseSeconds``, ``backoffMaxSeconds`` and jitter ``J`` = ``requeue_jitter``, default 0; ``u``
  uniform on [0, 1), below) and the job enters again at its place in arrival order (``requeue_order``
  ``"creation"``, Kueue's ``timestamp: Creation``) or at the end of the list (``"eviction"``, Kueue's
  default ``timestamp: Eviction``); when its budget fires after ``requeue_limit`` requeues it is lost
  (Kueue's "deactivated", ``backoffLimitCount``).

Kueue (``apis/config/v1beta1`` ``RequeuingStrategy`` and the workload controller, v0.7 and later) documents
``Eviction`` as its default order, base 60 s, cap 3,600 s, no limit, and computes each wait as
``min(cap, Step())`` of a ``wait.Backoff`` with factor 2 and jitter 0.0001: the jitter multiplies before the
cap, as here (Appendix B, section 8, writes the jitter after the cap and calls ``creation`` Kueue's default; the
code above says otherwise). Its rule changed across versions (its CHANGELOG): v0.6.0 added the requeuing
timestamp and a backoff of ``1.41284738^(n-1)`` s plus jitter, without a cap; v0.7.0 made the factor 2, the base
configurable with default 60 s, and added the cap (``backoffMaxSeconds``, default 3,600 s). Before v0.6 a
timed-out workload was requeued at once, without backoff. :data:`PRESETS` holds the v0.7 defaults as
``kueue``.

The jitter's ``u`` for a job's n-th requeue is the n-th output of a SplitMix64 generator (Steele, Lea and
Flood, OOPSLA 2014; :func:`jitter_u`) seeded by the job's own seed, itself the job's output of a SplitMix64
generator seeded by the run's ``jitter_seed`` (a draw of the clock's stream, or the replay's seed): the same
number whatever order the requeues happen in, so the kernel and its plain reference agree bit for bit.

The hold's timeout (``hold_timeout``, the discipline ``hold``) is a time T, or ``exp:MEAN``: a job draws one
exponential timeout of that mean per entry to the list (:func:`hold_draw`: ``-MEAN log1p(-u)``, ``u`` from the
jitter's SplitMix64 stream at numbers past every requeue's), memoryless, so that a small system has an exact
chain (:func:`barrier_queues.patience_chain.patience_chain` with ``hold=True``).

The fourth clock is a discipline, ``aging`` (Volcano's ``sla-waiting-time``; ``aging_after`` T): first-fit
while every waiting job has waited less than T since its arrival; once the oldest has waited T, backfill with
that job as EASY's head (a reservation at its shadow time, the others backfilled around it). T = 0 is backfill
and T = inf first-fit, job by job (tested). No event is needed when a job ages: first-fit has started every
job that fits at the last decision, so at that instant backfill would start none either.

Budgets (``wait_budget``): a time ``B``; ``exp:MEAN``, exponential patience of that mean (drawn per job from
a stream of its own, so that the arrivals and task times are those of the same system without a clock);
and Starburst's ``runtime:C``, ``tasks:C``, ``work:C``: ``C r``, ``C k``, ``C k r`` with ``r`` the job's
runtime (its largest task time; a trace's recorded runtime). ``inf`` is no clock at all: every job equals
today's model job by job (tested).

A lost job's results: ``lost`` True, ``start`` and ``departure`` the instant it left, ``completed`` 0, and
``work`` ``k r``, the worker time it would have held (how much work was turned away); it is counted apart
and never averaged into the served jobs' waiting or sojourn. Every job reports ``requeues`` and ``backoff``
(its time spent away in backoffs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._validation import ParameterError, check_choice, check_int

#: what a fired budget does
ON_BUDGET = ("leave", "requeue")
#: the kinds of budget: a constant time, exponential patience, and Starburst's three waiting policies
KINDS = ("time", "exp", "runtime", "tasks", "work")
#: where a returning job enters the waiting list: its arrival place, or the end (Kueue's requeuing timestamp)
ORDERS = ("creation", "eviction")
#: the disciplines that serve in list order, where eviction order is simulated (the others keep their jobs in
#: arrival order in structures of their own: backfill's trees, sjf's runtime order, server-filling's prefix)
EVICTION_DISCIPLINES = ("fcfs", "first-fit", "hold")
#: the system fields this module validates (``wait_budget`` first: the others need it)
FIELDS = ("wait_budget", "on_budget", "requeue_backoff", "requeue_limit", "requeue_order", "requeue_jitter")
#: every clock option of a system (``aging_after``: the aging discipline's wait)
OPTIONS = FIELDS + ("aging_after", "hold_timeout")
#: requeues a job may make before it is lost (Kueue's backoffLimitCount is unbounded; a bound keeps 2^(n-1) finite)
MAX_REQUEUES = 1000


@dataclass(frozen=True)
class ClockPreset:
    """A gang scheduler's default clock: ``name``, ``help`` (what it copies, from which version) and
    ``options``, the clock options it sets (field name -> the option's text, as given on the command line;
    options given beside the preset take their place)."""

    name: str
    help: str
    options: dict


#: the presets of the command line's ``--clock-preset`` (times in seconds)
PRESETS = {p.name: p for p in (
    ClockPreset("kueue", "Kueue v0.7 and later, waitForPodsReady's defaults: a 300 s timeout, then requeue after "
                "min(3600, 60 x 2^(n-1) (1 + 0.0001 u)) s at the end of the queue (timestamp Eviction), no limit; "
                "times in seconds. Kueue counts its timeout from admission until every pod runs, this model from "
                "entering the queue until the start: the same clock when quota admits the gang and it waits for "
                "free nodes",
                {"wait_budget": "300", "on_budget": "requeue", "requeue_backoff": "60,3600",
                 "requeue_order": "eviction", "requeue_jitter": "0.0001"}),
)}


@dataclass(frozen=True)
class WaitBudget:
    """A wait budget: ``kind`` (one of :data:`KINDS`) and its number (the time, the mean, or C)."""

    kind: str
    value: float

    def __str__(self) -> str:
        return f"{self.value!r}" if self.kind == "time" else f"{self.kind}:{self.value!r}"

    @property
    def off(self) -> bool:
        """An infinite constant budget: no clock."""
        return self.kind == "time" and math.isinf(self.value)


def parse_budget(spec) -> WaitBudget:
    """``"30"``, ``"inf"``, ``"exp:30"``, ``"runtime:2"``, ``"tasks:0.5"`` or ``"work:0.1"`` (or a number) as a
    :class:`WaitBudget`; a number must be >= 0 (0: a gang that cannot start at once leaves), C and MEAN > 0."""
    if isinstance(spec, WaitBudget):
        return spec
    if isinstance(spec, bool):
        raise ParameterError(f"wait_budget must be a time >= 0 or KIND:VALUE (got {spec!r})")
    if isinstance(spec, int | float):
        kind, text = "time", spec
    elif isinstance(spec, str):
        kind, sep, text = spec.strip().partition(":")
        if not sep:
            kind, text = "time", spec
        if kind not in KINDS or kind == "time" and sep:
            raise ParameterError(f"wait_budget must be a time >= 0, 'exp:MEAN', 'runtime:C', 'tasks:C' or "
                                 f"'work:C' (got {spec!r})")
    else:
        raise ParameterError(f"wait_budget must be a time >= 0 or KIND:VALUE (got {spec!r})")
    try:
        value = float(text)
    except ValueError:
        raise ParameterError(f"wait_budget {spec!r}: {text!r} is not a number") from None
    if kind == "time":
        if math.isnan(value) or value < 0:
            raise ParameterError(f"wait_budget must be a time >= 0 or inf (got {spec!r})")
    elif not (math.isfinite(value) and value > 0):
        raise ParameterError(f"wait_budget {kind}:C must have a finite C > 0 (got {spec!r})")
    return WaitBudget(kind, value)


def parse_hold_timeout(spec) -> float | WaitBudget:
    """A hold timeout: a time ``T >= 0`` (a float, the same for every hold) or ``"exp:MEAN"`` (a
    :class:`WaitBudget` of kind ``exp``: each hold's timeout an exponential draw of that mean, :func:`hold_draw`)."""
    if isinstance(spec, WaitBudget) and spec.kind == "exp":
        return spec
    if isinstance(spec, str) and spec.strip().startswith("exp:"):
        text = spec.strip()[4:]
        try:
            mean = float(text)
        except ValueError:
            raise ParameterError(f"hold_timeout {spec!r}: {text!r} is not a number") from None
        if not (math.isfinite(mean) and mean > 0):
            raise ParameterError(f"hold_timeout exp:MEAN must have a finite MEAN > 0 (got {spec!r})")
        return WaitBudget("exp", mean)
    if isinstance(spec, str):
        try:
            spec = float(spec)
        except ValueError:
            raise ParameterError(f"hold_timeout must be a time >= 0 or 'exp:MEAN' (got {spec!r})") from None
    if isinstance(spec, bool) or not isinstance(spec, int | float) or not math.isfinite(spec) or spec < 0:
        raise ParameterError(f"hold_timeout must be a finite time >= 0 or 'exp:MEAN' (got {spec!r})")
    return float(spec)


#: the stream number of a job's first hold draw (:func:`hold_draw`): past every requeue's jitter draw
#: (1 .. MAX_REQUEUES), so that the two never share a number
HOLD_DRAW = MAX_REQUEUES + 1


def hold_draw(seed: int, seq: int, requeues: int, mean: float) -> float:
    """An exponential hold timeout of mean ``mean`` for job ``seq`` holding after ``requeues`` requeues:
    ``-mean log1p(-u)`` with ``u = jitter_u(seed, seq, HOLD_DRAW + requeues)`` (one draw per entry to the list:
    a job that stops holding and holds again before it leaves keeps its draw)."""
    return -mean * math.log1p(-jitter_u(seed, seq, HOLD_DRAW + requeues))


def parse_backoff(spec) -> tuple[float, float]:
    """``"BASE"`` or ``"BASE,CAP"`` (or a number, or a pair) as ``(base, cap)``: base > 0, cap >= base (default
    infinite)."""
    if isinstance(spec, tuple | list):
        parts = list(spec)
    elif isinstance(spec, str):
        parts = spec.split(",")
    else:
        parts = [spec]
    try:
        values = [float(p) for p in parts]
    except (TypeError, ValueError):
        raise ParameterError(f"requeue_backoff must be BASE or BASE,CAP, numbers (got {spec!r})") from None
    if not 1 <= len(values) <= 2:
        raise ParameterError(f"requeue_backoff must be BASE or BASE,CAP (got {spec!r})")
    base = values[0]
    cap = values[1] if len(values) == 2 else math.inf
    if not (math.isfinite(base) and base > 0) or math.isnan(cap) or cap < base:
        raise ParameterError(f"requeue_backoff must have a finite BASE > 0 and CAP >= BASE (got {spec!r})")
    return base, cap


def backoff(n: int, base: float, cap: float, jitter: float = 0.0, u: float = 0.0) -> float:
    """The wait before the n-th return (n = 1, 2, ...): ``min(cap, base 2^(n-1) (1 + jitter u))`` (the power
    exact; from 2^1024 on it is infinite, as C's ``pow`` has it in the kernel; the same operations in the same
    order as the kernel's)."""
    b = base * (2.0 ** (n - 1) if n <= 1024 else math.inf)
    if jitter > 0:
        b = b * (1.0 + jitter * u)
    return min(cap, b)


_MASK = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15


def _mix(z: int) -> int:
    """SplitMix64's output function (Steele, Lea and Flood 2014), on 64-bit unsigned integers."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def jitter_u(seed: int, seq: int, n: int) -> float:
    """The jitter's uniform draw on [0, 1) for the n-th requeue (n = 1, 2, ...) of the job ``seq`` (its place
    in the run, from 0) of a run seeded ``seed``: ``s`` = output ``seq + 1`` of SplitMix64 seeded by ``seed``,
    ``u`` = the top 53 bits of output ``n`` of SplitMix64 seeded by ``s``, over 2^53 (the kernel's
    ``_gc_jitter_u``, bit for bit)."""
    s = _mix((seed + (seq + 1) * _GAMMA) & _MASK)
    return (_mix((s + n * _GAMMA) & _MASK) >> 11) * 2.0 ** -53


def jitter_seed(rng: np.random.Generator) -> int:
    """A run's jitter seed: one draw of a child of ``rng`` (:func:`~barrier_queues.inputs.child_stream`: the
    budgets drawn from ``rng`` are those of the same system without jitter)."""
    from .inputs import child_stream
    return int(child_stream(rng).integers(0, 2**63))


def enabled(system) -> bool:
    """Whether a system has gang clocks: a wait budget other than ``inf``, or the hold discipline's timeout."""
    return (system.wait_budget is not None and not system.wait_budget.off) or system.scheduling == "hold"


def validate(system, set_) -> None:
    """The clock fields of a system (called once, by ``BarrierSystem``): defaults, ranges, conflicts."""
    _validate_aging(system, set_)
    hold = _validate_hold(system, set_)
    if system.wait_budget is None and not hold:
        for name in FIELDS[1:]:
            if getattr(system, name) is not None:
                raise ParameterError(f"{name} must be None without wait_budget (got {getattr(system, name)!r}): it "
                                     "shapes what a fired wait budget does (--wait-budget turns the clock on)")
        return
    budget = None
    if system.wait_budget is not None:
        budget = parse_budget(system.wait_budget)
        set_("wait_budget", budget)
    mode = check_choice("on_budget", "leave" if system.on_budget is None else system.on_budget, ON_BUDGET)
    set_("on_budget", mode)
    if mode == "leave":
        for name in FIELDS[2:]:
            if getattr(system, name) is not None:
                raise ParameterError(f"{name} must be None with on_budget 'leave' (got {getattr(system, name)!r}): "
                                     "it shapes a requeue (--on-budget requeue)")
    else:
        if system.requeue_backoff is None:
            raise ParameterError("requeue_backoff must be given with on_budget 'requeue': BASE or BASE,CAP, the "
                                 "wait before the n-th return is min(CAP, BASE 2^(n-1))")
        base, cap = parse_backoff(system.requeue_backoff)
        set_("requeue_backoff", (base, cap))
        if system.requeue_limit is not None:
            set_("requeue_limit", check_int("requeue_limit", system.requeue_limit, low=0, high=MAX_REQUEUES))
        elif math.isinf(cap):
            raise ParameterError("requeue_backoff needs a CAP (BASE,CAP) without requeue_limit: an uncapped "
                                 "backoff doubles without bound")
        _validate_requeue(system, set_)
        limit = MAX_REQUEUES if system.requeue_limit is None else system.requeue_limit
        if limit and not math.isfinite(backoff(limit, base, cap, system.requeue_jitter or 0.0, 1.0)):
            raise ParameterError(f"requeue_backoff {base:g} doubled {limit - 1} times overflows: give a CAP")
    _check_model(system, budget)


def _validate_requeue(system, set_) -> None:
    """``requeue_order`` (None: creation; eviction under the disciplines that serve in list order) and
    ``requeue_jitter`` J (a finite number >= 0; None: 0). Left None when not given, so that a system
    ``replace``'d to ``on_budget='leave'`` carries no requeue field."""
    if system.requeue_order is not None:
        order = check_choice("requeue_order", system.requeue_order, ORDERS)
        if order == "eviction" and system.scheduling not in EVICTION_DISCIPLINES:
            raise ParameterError(f"requeue_order 'eviction' is simulated under {', '.join(EVICTION_DISCIPLINES)} "
                                 f"(got scheduling {system.scheduling!r}): it keeps waiting jobs in arrival order "
                                 "apart from the list")
        set_("requeue_order", order)
    j = system.requeue_jitter
    if j is not None:
        if isinstance(j, bool) or not isinstance(j, int | float) or not math.isfinite(j) or j < 0:
            raise ParameterError(f"requeue_jitter must be a finite number >= 0 (got {j!r})")
        set_("requeue_jitter", float(j))


def _validate_hold(system, set_) -> bool:
    """``hold_timeout`` T: given with discipline ``hold`` (a time >= 0 or ``exp:MEAN``,
    :func:`parse_hold_timeout`; its clock, so no wait budget) and only then. Returns whether the system holds."""
    if system.scheduling != "hold":
        if system.hold_timeout is not None:
            raise ParameterError(f"hold_timeout must be None unless scheduling = 'hold' (got {system.hold_timeout!r} "
                                 f"with {system.scheduling!r}): it is the hold discipline's clock")
        return False
    t = system.hold_timeout
    if t is None:
        raise ParameterError("hold_timeout must be given with scheduling 'hold': how long the head gang holds free "
                             "workers before it releases them (then --on-budget: leave or requeue)")
    set_("hold_timeout", parse_hold_timeout(t))
    if system.wait_budget is not None:
        raise ParameterError(f"wait_budget must be None with scheduling 'hold' (got {system.wait_budget!r}): the "
                             "hold's clock is its hold_timeout, from when the head gang begins to hold")
    return True


def _validate_aging(system, set_) -> None:
    """``aging_after`` T: given with discipline ``aging`` (a time >= 0, or inf: first-fit) and only then."""
    if system.scheduling != "aging":
        if system.aging_after is not None:
            raise ParameterError(f"aging_after must be None unless scheduling = 'aging' (got {system.aging_after!r} "
                                 f"with {system.scheduling!r}): it is the aging discipline's wait")
        return
    if system.aging_after is None:
        raise ParameterError("aging_after must be given with scheduling 'aging': the wait T after which the oldest "
                             "waiting job gets a reservation (0: backfill; inf: first-fit)")
    t = system.aging_after
    if isinstance(t, bool) or not isinstance(t, int | float) or math.isnan(t) or t < 0:
        raise ParameterError(f"aging_after must be a time >= 0 or inf (got {t!r})")
    set_("aging_after", float(t))


def _check_model(system, budget: WaitBudget | None) -> None:
    """What the clocks are simulated with: the waiting-list scheduler, one phase, no failures or Spark offers."""
    for name, value, ok, why in (
            ("placement", system.placement, "central", "the clocks are part of the waiting-list scheduler"),
            ("phases", system.phases, 1, "a gang's runtime is its largest task time with one phase"),
            ("overhead", system.overhead, None, "the clocks are simulated without Spark's overhead models"),
            ("failure_rate", system.failure_rate, None, "the clocks are not yet simulated with failures")):
        if value != ok:
            raise ParameterError(f"{name} must be {ok!r} with wait_budget (got {value!r}): {why}")
    if system.trace is None and system.barrier_fraction == 0:
        raise ParameterError("wait_budget needs barrier jobs (got barrier_fraction = 0): only a gang carries a "
                             "clock")


def budgets(system, jobs: dict, rng: np.random.Generator | None) -> np.ndarray:
    """Each job's wait budget (inf for a plain job): ``jobs`` holds ``tasks``, ``barrier``, ``times`` and
    ``offsets`` (each job's first draw; one draw per job for a rigid trace); ``rng`` draws exponential
    patience (one per job, in job order)."""
    b = system.wait_budget
    n = jobs["tasks"].size
    if b is None:                                       # (hold: its clock starts with the hold, not the entry)
        out = np.full(n, np.inf)
    elif b.kind == "time":
        out = np.full(n, b.value)
    elif b.kind == "exp":
        out = rng.standard_exponential(n) * b.value
    elif b.kind == "tasks":
        out = b.value * jobs["tasks"].astype(float)
    else:
        r = runtimes(jobs)
        out = b.value * r if b.kind == "runtime" else b.value * jobs["tasks"] * r
    out[~np.asarray(jobs["barrier"], dtype=bool)] = np.inf
    return out


def runtimes(jobs: dict) -> np.ndarray:
    """Each job's runtime: the largest of its draws (one phase; a rigid trace's one draw)."""
    if jobs["tasks"].size == 0:
        return np.empty(0)
    return np.maximum.reduceat(jobs["times"], jobs["offsets"])


def settings(system) -> dict:
    """The kernel's and the reference's clock settings: ``requeue``, ``base``, ``cap``, ``limit`` (-1: none),
    ``timeout`` (hold's, or its exponential mean with ``hold_exp``; inf otherwise), ``hold``, ``evict``
    (eviction order) and ``jitter``."""
    requeue = system.on_budget == "requeue"
    base, cap = system.requeue_backoff if requeue else (0.0, 0.0)
    limit = -1 if not requeue or system.requeue_limit is None else int(system.requeue_limit)
    t = system.hold_timeout
    exp = isinstance(t, WaitBudget)
    timeout = t.value if exp else t if t is not None else math.inf
    return {"requeue": requeue, "base": float(base), "cap": float(cap), "limit": limit, "timeout": float(timeout),
            "hold": system.scheduling == "hold", "evict": requeue and system.requeue_order == "eviction",
            "jitter": float(system.requeue_jitter or 0.0) if requeue else 0.0, "hold_exp": exp}


class Tally:
    """What the clocks did in one replication, per job class, as running sums with marks, so that the counts
    can be taken after the served jobs' warm-up (known only at the end).

    Columns (:data:`COLUMNS`): submitted jobs, lost jobs, their work (``k r``), requeues, time in backoff, the
    served jobs' work, the served jobs, and the worker time held idle for the jobs (hold; lost ones too). A
    mark (the sums so far) is taken every :attr:`every` submitted jobs, at most :data:`MARKS` in a run;
    :func:`tally_after` cuts at the first mark by which ``warmup`` jobs were served (so up to ``every`` more
    jobs are left out than the warm-up itself)."""

    COLUMNS = ("jobs", "lost", "lost_work", "requeues", "backoff", "served_work", "served", "held")
    MARKS = 1000

    def __init__(self, jobs: int, classes: int):
        self.every = max(1, -(-int(jobs) // self.MARKS))
        self.sums = np.zeros((max(classes, 1), len(self.COLUMNS)))
        self.seen = 0
        self.marks: list[np.ndarray] = []

    def add(self, cls, lost, work, requeues, backoff, held=None) -> None:
        """A chunk of jobs in arrival order: class index (None: one class), lost, work, requeues, backoff, held
        worker time (None: none)."""
        n, pos = lost.size, 0
        while pos < n:
            take = min(n - pos, self.every - self.seen % self.every)
            part = slice(pos, pos + take)
            c = np.zeros(take, dtype=np.int64) if cls is None else np.asarray(cls[part])
            gone = np.asarray(lost[part], dtype=bool)
            w = np.asarray(work[part], dtype=float)
            size = self.sums.shape[0]
            for col, values in ((0, np.ones(take)), (1, gone), (2, np.where(gone, w, 0.0)),
                                (3, requeues[part]), (4, backoff[part]), (5, np.where(gone, 0.0, w)), (6, ~gone),
                                (7, np.zeros(take) if held is None else held[part])):
                self.sums[:, col] += np.bincount(c, weights=np.asarray(values, dtype=float), minlength=size)
            self.seen += take
            pos += take
            if self.seen % self.every == 0:
                self.marks.append(self.sums.copy())

    def state(self) -> dict:
        """The tally as plain arrays (kept with a replication's statistics, and on disk by a sweep):
        ``every``, ``sums`` (class x column) and ``marks`` (mark x class x column)."""
        marks = np.stack(self.marks) if self.marks else np.empty((0, *self.sums.shape))
        return {"every": self.every, "sums": self.sums.copy(), "marks": marks}


def tally_after(state: dict, warmup: int) -> np.ndarray | None:
    """A tally's sums (:meth:`Tally.state`) over the jobs after the first mark by which ``warmup`` jobs were
    served (every job for a warm-up of 0); None when no mark passes it."""
    if warmup <= 0:
        return state["sums"].copy()
    served = state["marks"][:, :, 6].sum(axis=1)
    at = int(np.searchsorted(served, warmup))
    return state["sums"] - state["marks"][at] if at < served.size else None


__all__ = ["EVICTION_DISCIPLINES", "FIELDS", "HOLD_DRAW", "KINDS", "ON_BUDGET", "OPTIONS", "ORDERS", "PRESETS",
           "ClockPreset", "WaitBudget", "backoff", "budgets", "enabled", "hold_draw", "jitter_seed", "jitter_u",
           "parse_backoff", "parse_budget", "parse_hold_timeout", "runtimes", "settings", "tally_after", "validate",
           "Tally"]
