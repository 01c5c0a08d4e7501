"""The description of a barrier-mode parallel system, validated once.

One immutable, hashable, value-comparable :class:`BarrierSystem` describes
every system this library models (MODEL.md section 2, EXTENSIONS.md); the
stability limits, the CTMC, the simulators, the bounds, the planner and the
Spark replay all take it. It is validated once, here, when it is made: every
other part trusts its fields.

Notation follows the paper (Walker & Fidler 2025, section I and Table I):

=====================  ======  ==========================================================
field                  symbol  meaning
=====================  ======  ==========================================================
``servers``            s       workers (task slots)
``tasks``              k       tasks per job (or ``tasks_pmf``, a pmf of k)
``needed``             l       tasks that must finish before the job departs (fixed release)
``barriers``           --      1: start barrier (Spark's Barrier Execution Mode);
                               2: start and departure barrier
``task_rate``          mu      rate of exponential task times (or ``task_dist``, any law)
``arrival_rate``       lambda  jobs per unit time (Poisson or periodic ``arrival``)
``barrier_fraction``   p       probability that a job is a barrier job (hybrid systems)
``overhead``           --      Spark's blocking overhead: ``"paper"`` (iid, eq. 40) or
                               ``"event"`` (revive timer, offers on arrivals)
``revive_interval``    R       Spark's ``spark.scheduler.revive.interval`` (with ``overhead``)
``release``            --      when a job departs: ``"fixed"`` (after ``needed`` tasks),
                               ``"knee"`` (knee detector, EXTENSIONS.md section 1) or
                               ``"timeout"`` (after ``timeout`` at the latest)
``placement``          --      ``"central"`` (the paper's FIFO queue) or ``"sample"`` (batch
                               sampling with late binding, EXTENSIONS.md section 2)
``phases``             m       phases per job, ``barrier()`` between them (EXTENSIONS.md 3)
=====================  ======  ==========================================================

Time is in one unit throughout (the mean task time is ``1/mu`` of it).
Options that have no effect in a system are refused rather than ignored
(e.g. ``revive_interval`` without ``overhead``, ``min_fraction`` without
``release="knee"``), and every refusal is one :class:`ParameterError` naming
the parameter and its valid range.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, fields, replace

import numpy as np

from ._validation import (
    ParameterError,
    check_choice,
    check_int,
    check_nonnegative,
    check_positive,
    check_probability,
)
from .distributions import Exponential, TaskDistribution, as_task_distribution

#: the largest cluster described (every computation here is at least linear in s)
MAX_SERVERS = 1_000_000
#: the most task draws one job may need (k tasks x m phases)
MAX_DRAWS_PER_JOB = 1_000_000
#: time-like parameters must lie within this factor of the mean task time (floating-point range)
TIME_SCALE = 1e9

RELEASES = ("fixed", "knee", "timeout")
PLACEMENTS = ("central", "sample")
SYNCS = ("ideal", "spark")
ARRIVALS = ("poisson", "deterministic")
OVERHEADS = (None, "paper", "event")

#: defaults of the knee detector (EXTENSIONS.md section 1; RFC 6298's gains)
KNEE_DEFAULTS = {"min_fraction": 0.5, "min_wait": 0.0, "knee_gain": 0.125}
#: Sparrow's probe ratio (seed 003)
DEFAULT_PROBE_RATIO = 2.0
#: Spark's barrier() polling period in seconds (SPARK.md)
DEFAULT_SYNC_POLL = 1.0


def parse_pmf(pmf, servers: int) -> tuple[tuple[int, float], ...]:
    """A pmf of k as sorted ``((k, p), ...)``: from a dict, pairs or ``"4:0.5,12:0.5"``."""
    if isinstance(pmf, str):
        items = {}
        for part in pmf.split(","):
            key, sep, value = part.partition(":")
            try:
                if not sep:
                    raise ValueError
                k, p = int(key), float(value)
            except ValueError:
                raise ParameterError(f"tasks_pmf must look like '4:0.5,12:0.5' (got {pmf!r})") from None
            if k in items:
                raise ParameterError(f"tasks_pmf must name each k once (got {k} twice in {pmf!r})")
            items[k] = p
        pmf = items
    elif isinstance(pmf, list | tuple):
        try:
            pmf = dict(pmf)
        except (TypeError, ValueError):
            raise ParameterError(f"tasks_pmf must be a dict {{k: p}}, pairs (k, p) or '4:0.5,12:0.5' "
                                 f"(got {pmf!r})") from None
    if not isinstance(pmf, dict):
        raise ParameterError(f"tasks_pmf must be a dict {{k: p}}, pairs (k, p) or '4:0.5,12:0.5' "
                             f"(got {type(pmf).__name__})")
    if not pmf:
        raise ParameterError("tasks_pmf must have at least one value of k (got an empty pmf)")
    pairs = []
    for k, p in pmf.items():
        k = check_int("tasks_pmf value k", k, low=1, high=servers, high_name=f"servers = {servers}")
        pairs.append((k, check_probability("tasks_pmf probability", p)))
    if len({k for k, _ in pairs}) != len(pairs):
        raise ParameterError(f"tasks_pmf must name each k once (got {sorted(k for k, _ in pairs)})")
    total = math.fsum(p for _, p in pairs)
    if not math.isclose(total, 1.0, abs_tol=1e-9):
        raise ParameterError(f"tasks_pmf probabilities must sum to 1 (got {total!r})")
    return tuple(sorted((k, p / total) for k, p in pairs if p > 0))


def _time(name: str, value, mean_task: float, allow_zero: bool = False) -> float:
    """A time-like parameter, finite, > 0 (or >= 0) and within TIME_SCALE of the mean task time."""
    v = check_nonnegative(name, value) if allow_zero else check_positive(name, value, "(time units)")
    lo, hi = mean_task / TIME_SCALE, mean_task * TIME_SCALE
    if (v > 0 or not allow_zero) and not lo <= v <= hi:
        raise ParameterError(f"{name} must lie within a factor 1e9 of the mean task time {mean_task:.6g}, "
                             f"i.e. {lo:.3g} <= {name} <= {hi:.3g}" + (" or be 0" if allow_zero else "")
                             + f" (got {v!r})")
    return v


@dataclass(frozen=True)
class BarrierSystem:
    """A barrier-mode parallel system (see the module docstring for every field).

    Give ``tasks`` (k) or ``tasks_pmf``, and ``task_rate`` (exponential tasks)
    or ``task_dist`` (any law); leave the rest at their defaults for the
    paper's 1-barrier system. After validation the fields are normalised:
    ``task_dist`` is always a :class:`~barrier_queues.TaskDistribution`,
    ``tasks_pmf`` a tuple of ``(k, p)`` pairs (None for a fixed k), ``needed``
    an int for a fixed k, and options without effect are None.

    Raises
    ------
    ParameterError
        If any parameter is outside its valid range, or two options conflict;
        the message names the parameter and its valid range.

    Examples
    --------
    >>> BarrierSystem(servers=16, tasks=4).needed
    4
    >>> BarrierSystem(16, 4, arrival_rate=2.0) == BarrierSystem(servers=16, tasks=4, arrival_rate=2)
    True
    """

    servers: int
    tasks: int | None = None
    needed: int | None = None
    barriers: int = 1
    task_rate: float | None = None
    arrival_rate: float | None = None
    task_dist: object = None
    tasks_pmf: object = None
    arrival: str = "poisson"
    barrier_fraction: float = 1.0
    overhead: str | None = None
    revive_interval: float | None = None
    release: str = "fixed"
    min_fraction: float | None = None
    min_wait: float | None = None
    knee_gain: float | None = None
    timeout: float | None = None
    placement: str = "central"
    probe_ratio: float | None = None
    phases: int = 1
    sync: str | None = None
    sync_poll: float | None = None

    def __post_init__(self):
        set_ = functools.partial(object.__setattr__, self)
        s = check_int("servers", self.servers, low=1, high=MAX_SERVERS, high_name=f"{MAX_SERVERS:,}")
        set_("servers", s)
        # -- tasks per job ------------------------------------------------------
        if (self.tasks is None) == (self.tasks_pmf is None):
            raise ParameterError("give exactly one of tasks (an integer 1 <= tasks <= servers) and tasks_pmf "
                                 "(got " + ("neither" if self.tasks is None else "both") + ")")
        if self.tasks is not None:
            k = check_int("tasks", self.tasks, low=1, high=s, high_name=f"servers = {s}")
            set_("tasks", k)
            set_("needed", k if self.needed is None else
                 check_int("needed", self.needed, low=1, high=k, high_name=f"tasks = {k}"))
        else:
            set_("tasks_pmf", parse_pmf(self.tasks_pmf, s))
            if len(self.tasks_pmf) == 1:                        # a one-point pmf is a fixed k
                set_("tasks", self.tasks_pmf[0][0])
                set_("tasks_pmf", None)
                if self.needed is not None:
                    raise ParameterError(f"needed must be None with tasks_pmf (got {self.needed!r}): "
                                         "(s,k,l) jobs need a fixed tasks")
                set_("needed", self.tasks)
            elif self.needed is not None:
                raise ParameterError(f"needed must be None with tasks_pmf (got {self.needed!r}): "
                                     "(s,k,l) jobs need a fixed tasks")
        set_("barriers", check_choice("barriers", self.barriers, (1, 2)))
        # -- task law -----------------------------------------------------------
        if self.task_dist is not None and self.task_rate is not None and not (
                isinstance(self.task_dist, Exponential) and self.task_dist.rate == self.task_rate):
            raise ParameterError("give at most one of task_rate (exponential tasks) and task_dist (any law) "
                                 f"(got task_rate = {self.task_rate!r} and task_dist = {self.task_dist!r})")
        if isinstance(self.task_dist, Exponential) and self.task_rate is not None:
            law = self.task_dist                             # normalised before (dataclasses.replace)
        elif self.task_dist is None:
            rate = 1.0 if self.task_rate is None else check_positive("task_rate", self.task_rate,
                                                                     "(tasks per unit time)")
            law = Exponential(rate)
        else:
            law = as_task_distribution(self.task_dist)
        set_("task_dist", law)
        set_("task_rate", law.rate if isinstance(law, Exponential) else None)
        mean = law.mean()
        if not (math.isfinite(mean) and 1e-12 <= mean <= 1e12):
            raise ParameterError(f"task_dist must have a mean task time between 1e-12 and 1e12 time units "
                                 f"(got {mean!r})")
        # -- arrivals -----------------------------------------------------------
        if self.arrival_rate is not None:
            lam = check_positive("arrival_rate", self.arrival_rate, "(jobs per unit time)")
            if not 1 / TIME_SCALE <= lam * mean <= TIME_SCALE:
                raise ParameterError(f"arrival_rate must lie within a factor 1e9 of one job per mean task time, "
                                     f"i.e. {1 / (TIME_SCALE * mean):.3g} <= arrival_rate <= "
                                     f"{TIME_SCALE / mean:.3g} (got {lam!r})")
            set_("arrival_rate", lam)
        set_("arrival", check_choice("arrival", self.arrival, ARRIVALS))
        # -- hybrid -------------------------------------------------------------
        p = check_probability("barrier_fraction", self.barrier_fraction)
        set_("barrier_fraction", p)
        if p < 1 and self.needed not in (None, self.tasks):
            raise ParameterError(f"needed must equal tasks when barrier_fraction < 1 (got needed = {self.needed}, "
                                 f"tasks = {self.tasks}): non-barrier jobs are conventional")
        if p == 0 and self.barriers == 2:
            raise ParameterError("barriers must be 1 when barrier_fraction = 0 (got 2): a departure barrier "
                                 "needs barrier jobs")
        # -- Spark overhead -----------------------------------------------------
        set_("overhead", check_choice("overhead", self.overhead, OVERHEADS))
        if self.overhead is None:
            if self.revive_interval is not None:
                raise ParameterError(f"revive_interval must be None without an overhead model (got "
                                     f"{self.revive_interval!r}): it sets Spark's revive timer (--revive needs "
                                     "--overhead paper|event)")
        else:
            set_("revive_interval", _time("revive_interval", 1.0 if self.revive_interval is None
                                          else self.revive_interval, mean))
            if self.arrival_rate is None:
                raise ParameterError("arrival_rate must be given (> 0) with a Spark overhead model: "
                                     "offers follow job arrivals (got None)")
        # -- release policy -----------------------------------------------------
        release = check_choice("release", self.release, RELEASES)
        knee = {"min_fraction": self.min_fraction, "min_wait": self.min_wait, "knee_gain": self.knee_gain}
        if release != "knee":
            for name, value in knee.items():
                if value is not None:
                    raise ParameterError(f"{name} must be None unless release = 'knee' (got {value!r} with "
                                         f"release = {release!r})")
        else:
            f = KNEE_DEFAULTS["min_fraction"] if self.min_fraction is None else self.min_fraction
            set_("min_fraction", check_probability("min_fraction", f, open_low=True))
            set_("min_wait", _time("min_wait", KNEE_DEFAULTS["min_wait"] if self.min_wait is None
                                   else self.min_wait, mean, allow_zero=True))
            set_("knee_gain", check_probability("knee_gain", KNEE_DEFAULTS["knee_gain"] if self.knee_gain is None
                                                else self.knee_gain, open_low=True))
        if release != "timeout":
            if self.timeout is not None:
                raise ParameterError(f"timeout must be None unless release = 'timeout' (got {self.timeout!r})")
        else:
            if self.timeout is None:
                raise ParameterError("timeout must be given (a time > 0) with release = 'timeout' (got None)")
            set_("timeout", _time("timeout", self.timeout, mean))
        if release != "fixed":
            if self.tasks_pmf is None and self.needed != self.tasks:
                raise ParameterError(f"needed must equal tasks with release = {release!r} (got needed = "
                                     f"{self.needed}, tasks = {self.tasks}): the {release} rule chooses how many "
                                     "tasks finish")
            if p < 1:
                raise ParameterError(f"barrier_fraction must be 1 with release = {release!r} (got {p!r}): "
                                     "a release rule needs tasks that start together")
        # -- placement ----------------------------------------------------------
        set_("placement", check_choice("placement", self.placement, PLACEMENTS))
        if self.placement == "central":
            if self.probe_ratio is not None:
                raise ParameterError(f"probe_ratio must be None with placement = 'central' (got "
                                     f"{self.probe_ratio!r}): --probe-ratio needs --placement sample")
        else:
            d = DEFAULT_PROBE_RATIO if self.probe_ratio is None else self.probe_ratio
            d = check_positive("probe_ratio", d)
            if d < 1:
                raise ParameterError(f"probe_ratio must be a number >= 1 (got {d!r}): a job probes at least "
                                     "k workers")
            set_("probe_ratio", float(min(d, s)))      # d k >= s probes every worker (EXTENSIONS.md 2)
            if self.overhead is not None:
                raise ParameterError(f"overhead must be None with placement = 'sample' (got {self.overhead!r}): "
                                     "Spark's revive timer belongs to its central scheduler")
        # -- phases -------------------------------------------------------------
        m = check_int("phases", self.phases, low=1)
        set_("phases", m)
        if m * self.max_tasks > MAX_DRAWS_PER_JOB:
            raise ParameterError(f"phases must be at most {MAX_DRAWS_PER_JOB // self.max_tasks:,} for jobs of "
                                 f"{self.max_tasks} tasks (tasks x phases <= {MAX_DRAWS_PER_JOB:,}; got {m})")
        if m == 1:
            for name in ("sync", "sync_poll"):
                if getattr(self, name) is not None:
                    raise ParameterError(f"{name} must be None with phases = 1 (got {getattr(self, name)!r}): "
                                         "barrier() sync points need phases >= 2")
        else:
            set_("sync", check_choice("sync", "ideal" if self.sync is None else self.sync, SYNCS))
            if self.sync == "ideal":
                if self.sync_poll is not None:
                    raise ParameterError(f"sync_poll must be None with sync = 'ideal' (got {self.sync_poll!r}): "
                                         "only Spark's barrier() polls")
            else:
                set_("sync_poll", _time("sync_poll", DEFAULT_SYNC_POLL if self.sync_poll is None
                                        else self.sync_poll, mean))
            if self.tasks_pmf is None and self.needed != self.tasks:
                raise ParameterError(f"needed must equal tasks with phases > 1 (got needed = {self.needed}, "
                                     f"tasks = {self.tasks}): a phased job waits for every task")
            if release != "fixed":
                raise ParameterError(f"release must be 'fixed' with phases > 1 (got {release!r})")
            if self.overhead == "paper":
                raise ParameterError("overhead must be None or 'event' with phases > 1 (got 'paper'): the paper's "
                                     "iid overhead is defined for one-phase tasks")
            if p < 1:
                raise ParameterError(f"barrier_fraction must be 1 with phases > 1 (got {p!r}): barrier() "
                                     "needs tasks that run together")

    # -- derived quantities (no validation: the fields are valid) ------------------
    @property
    def ks(self) -> np.ndarray:
        """The values of k (int64 array): ``[k]`` or the support of ``tasks_pmf``."""
        if self.tasks_pmf is None:
            return np.array([self.tasks], dtype=np.int64)
        return np.array([k for k, _ in self.tasks_pmf], dtype=np.int64)

    @property
    def pk(self) -> np.ndarray:
        """The probabilities of :attr:`ks`."""
        if self.tasks_pmf is None:
            return np.ones(1)
        return np.array([p for _, p in self.tasks_pmf])

    @property
    def max_tasks(self) -> int:
        return int(self.ks.max())

    @property
    def mean_tasks(self) -> float:
        return float(self.ks @ self.pk)

    @property
    def stragglers(self) -> int:
        """k - l under the fixed release (0 for conventional jobs, a pmf of k and other rules)."""
        return self.tasks - self.needed if self.tasks_pmf is None and self.release == "fixed" else 0

    @property
    def conventional(self) -> bool:
        """Every task must finish, in one phase, under the central queue, with no overhead model."""
        return (self.stragglers == 0 and self.release == "fixed" and self.phases == 1
                and self.placement == "central" and self.overhead is None)

    @property
    def parallel_jobs(self) -> int:
        """floor(s / k): how many jobs a 2-barrier system runs at once (fixed k)."""
        return self.servers // self.max_tasks

    @property
    def mean_task(self) -> float:
        """E[X], the mean task time (time units)."""
        return float(self.task_dist.mean())

    def replace(self, **changes) -> BarrierSystem:
        """A copy with some fields changed (validated again).

        Fields that follow from a changed one are reset unless given too:
        ``needed`` follows ``tasks`` (unless the system kills stragglers),
        ``task_rate`` and ``task_dist`` replace each other, a new ``release``
        resets the knee and timeout parameters, ``placement="central"`` drops
        ``probe_ratio``, ``phases=1`` drops ``sync`` and ``sync_poll``, and
        ``overhead=None`` drops ``revive_interval``.
        """
        c = dict(changes)

        def reset(*names):
            for name in names:
                c.setdefault(name, None)

        if c.get("tasks") is not None:
            reset("tasks_pmf")
        if c.get("tasks_pmf") is not None:
            reset("tasks")
        if ("tasks" in c or "tasks_pmf" in c) and self.stragglers == 0:
            reset("needed")
        if "task_dist" in c:
            reset("task_rate")
        if "task_rate" in c:
            reset("task_dist")
        if "release" in c:
            reset("min_fraction", "min_wait", "knee_gain", "timeout")
        if c.get("placement") == "central":
            reset("probe_ratio")
        if c.get("phases") == 1:
            reset("sync", "sync_poll")
        if c.get("sync") == "ideal":
            reset("sync_poll")
        if "overhead" in c and c["overhead"] is None:
            reset("revive_interval")
        return replace(self, **c)

    def describe(self) -> dict:
        """JSON-able parameters (the task law as its own dict)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["task_dist"] = self.task_dist.describe()
        if self.tasks_pmf is not None:
            out["tasks_pmf"] = {str(k): p for k, p in self.tasks_pmf}
        return out

    def to_dict(self) -> dict:
        """Alias of :meth:`describe`."""
        return self.describe()

    def kind(self) -> str:
        """A short human description, e.g. ``'(16,8,6) 1-barrier, exponential tasks'``."""
        k = str(self.tasks) if self.tasks_pmf is None else "pmf " + ",".join(f"{k}:{p:g}" for k, p in self.tasks_pmf)
        parts = [f"s = {self.servers}, k = {k}"]
        if self.stragglers:
            parts.append(f"l = {self.needed}")
        parts.append(f"{self.barriers}-barrier")
        if self.barrier_fraction < 1:
            parts.append(f"barrier fraction {self.barrier_fraction:g}")
        if self.release != "fixed":
            parts.append(f"release {self.release}")
        if self.phases > 1:
            parts.append(f"{self.phases} phases ({self.sync} sync)")
        if self.placement != "central":
            parts.append(f"batch sampling d = {self.probe_ratio:g}")
        if self.overhead:
            parts.append(f"{self.overhead} overhead")
        parts.append(f"{self.task_dist.describe()['law']} tasks")
        return ", ".join(parts)


def as_system(system=None, **kwargs) -> BarrierSystem:
    """A :class:`BarrierSystem` from a system or from keyword arguments (the boundary of public functions)."""
    if system is None:
        return BarrierSystem(**kwargs)
    if not isinstance(system, BarrierSystem):
        raise ParameterError(f"system must be a BarrierSystem (got {type(system).__name__})")
    return system.replace(**kwargs) if kwargs else system


def require(system: BarrierSystem, what: str, **conditions) -> None:
    """Refuse a system that a method cannot handle: ``require(sys, "the CTMC", barriers=1, ...)``.

    Each condition is ``field=value`` (or a tuple of allowed values); the
    message names the first field that differs and what ``what`` needs.
    """
    for name, allowed in conditions.items():
        allowed = allowed if isinstance(allowed, tuple) else (allowed,)
        value = getattr(system, name)
        if value not in allowed:
            shown = " or ".join(repr(a) for a in allowed)
            raise ParameterError(f"{name} must be {shown} for {what} (got {value!r})")


def exponential_rate(system: BarrierSystem, what: str) -> float:
    """mu of an exponential task law; refuses other laws naming ``what`` needs them."""
    if not isinstance(system.task_dist, Exponential):
        raise ParameterError(f"task_dist must be exponential for {what} (got "
                             f"{system.task_dist.describe()['law']!r})")
    return system.task_dist.rate


__all__ = ["BarrierSystem", "TaskDistribution", "as_system", "exponential_rate", "parse_pmf", "require",
           "KNEE_DEFAULTS", "DEFAULT_PROBE_RATIO", "DEFAULT_SYNC_POLL", "MAX_SERVERS"]
