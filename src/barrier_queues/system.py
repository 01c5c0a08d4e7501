"""The description of a barrier-mode parallel system, validated once.

One immutable, hashable, value-comparable :class:`BarrierSystem` describes
every system this library models (Appendix A, section 2, Appendix B); the
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
                               ``"knee"`` (knee detector, Appendix B, section 1) or
                               ``"timeout"`` (after ``timeout`` at the latest)
``placement``          --      ``"central"`` (the paper's FIFO queue) or ``"sample"`` (batch
                               sampling with late binding, Appendix B, section 2)
``phases``             m       phases per job, ``barrier()`` between them (Appendix B, section 3)
``moldable``           --      a moldable policy: each job's workers chosen at the head (Appendix B,
                               section 7), with its option ``take_fraction``, ``patience_wait`` or
                               ``requirement``
``trace``              --      a recorded log as the workload (Appendix B, section 6): its jobs'
                               submissions, k and times instead of drawn ones, with
                               ``load_scale`` (submissions compressed) and ``estimates``
                               (backfill's runtime predictions)
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
import warnings
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np

from . import clocks, failures, nodes, rules, schedulers
from ._validation import (
    TIME_SCALE,
    ParameterError,
    check_choice,
    check_int,
    check_positive,
    check_probability,
    check_time,
)
from .distributions import Exponential, TaskDistribution, as_task_distribution

#: the largest cluster described (every computation here is at least linear in s)
MAX_SERVERS = 1_000_000
#: the most task draws one job may need (k tasks x m phases)
MAX_DRAWS_PER_JOB = 1_000_000
ARRIVALS = ("poisson", "deterministic")
OVERHEADS = (None, "paper", "event")


def _opt(help_: str, kind: str, low=None, high=None, open_low: bool = False, short: str | None = None,
         flag: str | None = None, choices=None, commands=None) -> dict:
    """Field metadata from which the command line is generated: help, value kind and range, flags, and the
    commands that offer it (None: those that describe a system: ``simulate``, ``sweep``, ``stability``)."""
    return {"help": help_, "kind": kind, "low": low, "high": high, "open_low": open_low, "short": short,
            "flag": flag, "choices": choices, "commands": commands}


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
    if not abs(total - 1.0) <= 1e-6:                  # published mixes are rounded: normalised within 1e-6
        raise ParameterError(f"tasks_pmf probabilities must sum to 1 within 1e-6 (got {total!r})")
    return tuple(sorted((k, p / total) for k, p in pairs if p > 0))


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

    servers: int = field(metadata=_opt("workers s >= 1", "int", 1, short="-s"))
    tasks: int | None = field(default=None, metadata=_opt("tasks per job, 1 <= k <= s", "int", 1, short="-k"))
    needed: int | None = field(default=None, metadata=_opt("tasks that must finish, 1 <= l <= k (default k)", "int", 1,
                                                            short="-l"))
    barriers: int = field(default=1, metadata=_opt("1: start barrier; 2: start and departure barrier (default 1)",
                                                    "int", 1, 2, short="-b"))
    task_rate: float | None = field(default=None, metadata=_opt("rate mu of exponential tasks (default 1)", "float", 0,
                                                                open_low=True))
    arrival_rate: float | None = field(default=None, metadata=_opt("job arrival rate lambda > 0", "float", 0,
                                                                   open_low=True))
    task_dist: object = field(default=None, metadata=_opt(
        "task law, e.g. 'erlang:shape=4,rate=4', 'bimodal:p=0.9,rate1=10,rate2=0.1'", "str"))
    tasks_pmf: object = field(default=None, metadata=_opt("pmf of k, e.g. '4:0.5,12:0.5' (instead of --tasks)", "str"))
    arrival: str = field(default="poisson", metadata=_opt("arrival process (default poisson)", "choice",
                                                          choices=ARRIVALS))
    barrier_fraction: float = field(default=1.0, metadata=_opt(
        "probability p that a job is a barrier job (hybrid; default 1)", "float", 0, 1))
    overhead: str | None = field(default=None, metadata=_opt("Spark blocking overhead model", "choice",
                                                             choices=OVERHEADS[1:]))
    revive_interval: float | None = field(default=None, metadata=_opt(
        "revive interval R (with --overhead; default 1)", "float", 0, open_low=True, flag="--revive"))
    release: str = field(default="fixed", metadata=_opt("when a job departs (default fixed)", "rule"))
    min_fraction: float | None = None          # the rules' parameters: declared in barrier_queues.rules
    min_wait: float | None = None
    knee_gain: float | None = None
    timeout: float | None = None
    placement: str = field(default="central", metadata=_opt(
        "the scheduler: central (default: one FIFO queue) or sample (batch sampling)", "scheduler"))
    probe_ratio: float | None = field(default=None, metadata=_opt("sample: probes per task d >= 1 (default 2)",
                                                                  "float", 1))
    phases: int = field(default=1, metadata=_opt("phases per job m >= 1, barrier() between them (default 1)",
                                                 "int", 1))
    sync: str | None = field(default=None, metadata=_opt("barrier() release with --phases (default ideal)", "rule"))
    sync_poll: float | None = None
    scheduling: str = field(default="fcfs", metadata=_opt(
        "who starts next from the central queue: fcfs (default: the paper's FIFO), first-fit (Spark's rule), "
        "backfill or server-filling", "discipline"))
    workload: object = field(default=None, metadata=_opt(
        "job classes from a JSON or TOML file (or MJQM's TOML): shares, k, barrier or not, task law, shared time "
        "(instead of --tasks/--tasks-pmf)", "workload", flag="--workload"))
    # failures (Appendix B, section 5): validated in barrier_queues.failures
    failure_rate: float | None = field(default=None, metadata=_opt(
        "rate gamma at which each running task fails (default: no failures); a failure ends a barrier job's "
        "attempt, a plain job's task is retried alone",
        "float", 0, open_low=True))
    max_attempts: int | None = field(default=None, metadata=_opt(
        "attempts per barrier job (per task of a plain job) before the job is aborted, A >= 1 (default unlimited; "
        "Spark: 1 for a barrier ResultStage, 4 for a ShuffleMapStage and for a plain task)", "int", 1))
    resubmit_delay: float | None = field(default=None, metadata=_opt(
        "time D >= 0 from a failed attempt until the job (a plain job's task) waits again (default 0; Spark 0.2 s "
        "for a barrier stage)", "float", 0))
    retry_work: str | None = field(default=None, metadata=_opt(
        "the failure model: what a retry's work is", "failure_model"))
    checkpoint_interval: float | None = field(default=None, metadata=_opt(
        "work tau > 0 between checkpoints (with --retry-work identical; default none)", "float", 0, open_low=True))
    checkpoint_cost: float | None = field(default=None, metadata=_opt(
        "time delta >= 0 a checkpoint takes (default 0)", "float", 0))
    restart_cost: float | None = field(default=None, metadata=_opt(
        "time R >= 0 a retry spends restarting before it resumes (default 0)", "float", 0))
    # a recorded log as the workload (Appendix B, section 6): barrier_queues.trace_workload
    trace: object = field(default=None, metadata=_opt(
        "a recorded log as the workload (a Trace: barrier_queues.traces.read_trace)", "trace",
        commands=("replay",)))
    load_scale: float | None = field(default=None, metadata=_opt(
        "compress submissions by this factor (2: twice the load; default 1)", "float", 1e-3, 1e3,
        commands=("replay",)))
    estimates: str | None = field(default=None, metadata=_opt(
        "EASY's runtime predictions: the true runtimes (default exact) or the log's requested times", "choice",
        choices=("exact", "requested"), commands=("replay",)))
    # nodes a gang must fit in: validated in barrier_queues.nodes
    node_size: int | None = field(default=None, metadata=_opt(
        "workers per node G (a GPU machine's GPUs): a gang of k <= G starts on one node with k free (the fullest "
        "that fits), a wider one on whole free nodes plus one for k mod G; under every discipline but hold "
        "(default: no nodes)", "int", 1, commands=("simulate", "replay")))
    # gang clocks (Appendix B, section 8): validated in barrier_queues.clocks
    wait_budget: object = field(default=None, metadata=_opt(
        "a gang's wait budget, from each time it enters the queue: a time, 'exp:MEAN' (exponential patience), "
        "'runtime:C', 'tasks:C' or 'work:C' (C r, C k, C k r; r its runtime); 'inf' or none: no clock", "str",
        commands=("simulate", "sweep", "replay")))
    on_budget: str | None = field(default=None, metadata=_opt(
        "what a fired budget does: the gang leaves (lost) or is requeued after a backoff (default leave)",
        "choice", choices=("leave", "requeue"), commands=("simulate", "sweep", "replay")))
    requeue_backoff: object = field(default=None, metadata=_opt(
        "BASE[,CAP]: the n-th requeue waits min(CAP, BASE 2^(n-1)) before the gang returns at its place "
        "(with --on-budget requeue)", "str", commands=("simulate", "sweep", "replay")))
    requeue_limit: int | None = field(default=None, metadata=_opt(
        "requeues before a gang is lost (deactivated) when its budget fires again (default unlimited)", "int", 0,
        commands=("simulate", "sweep", "replay")))
    requeue_order: str | None = field(default=None, metadata=_opt(
        "where a requeued gang returns: its arrival place (default creation) or the end of the queue (eviction, "
        "Kueue's default; under fcfs, first-fit and hold)", "choice", choices=("creation", "eviction"),
        commands=("simulate", "sweep", "replay")))
    requeue_jitter: float | None = field(default=None, metadata=_opt(
        "J: the n-th requeue waits min(CAP, BASE 2^(n-1) (1 + J u)), u uniform on [0, 1) (Kueue: 0.0001; "
        "default 0)", "float", 0, commands=("simulate", "sweep", "replay")))
    aging_after: float | None = field(default=None, metadata=_opt(
        "with --scheduling aging: first-fit until the oldest waiting job has waited T, then that job is EASY's "
        "head (0: backfill; a sweep gives it to its aging points alone)", "float", 0,
        commands=("simulate", "sweep", "replay")))
    hold_timeout: object = field(default=None, metadata=_opt(
        "with --scheduling hold: how long the head gang holds free workers idle before it releases them and "
        "leaves or is requeued (--on-budget): a time T, or 'exp:MEAN' (each gang's T drawn, exponential)",
        "time_or_exp", 0, commands=("simulate", "sweep", "replay")))
    # moldable jobs (Appendix B, section 7): the room barrier_queues.schedulers.moldable, its policies a registry
    # (barrier_queues.moldable_policies) with one option each
    moldable: str | None = field(default=None, metadata=_opt(
        "moldable jobs: each takes a number of workers chosen when it reaches the head (k may exceed s; its tasks "
        "are dealt onto the workers taken)", "moldable", commands=("simulate", "sweep")))
    take_fraction: float | None = field(default=None, metadata=_opt("", "moldable_option",
                                                                    commands=("simulate", "sweep")))
    patience_wait: str | None = field(default=None, metadata=_opt("", "moldable_option",
                                                                  commands=("simulate", "sweep")))
    requirement: int | None = field(default=None, metadata=_opt("", "moldable_option",
                                                                commands=("simulate", "sweep")))

    def __post_init__(self):
        set_ = functools.partial(object.__setattr__, self)
        s = check_int("servers", self.servers, low=1, high=MAX_SERVERS, high_name=f"{MAX_SERVERS:,}")
        set_("servers", s)
        self._validate_tasks(set_, s)
        set_("barriers", check_choice("barriers", self.barriers, (1, 2)))
        self._validate_task_law(set_)
        self._validate_arrivals(set_)
        self._validate_overhead(set_)
        set_("release", check_choice("release", self.release, rules.names("release")))
        rules.validate(self, set_, "release")           # each rule's parameters and checks: barrier_queues.rules
        set_("placement", check_choice("placement", self.placement, schedulers.names()))
        set_("scheduling", check_choice("scheduling", self.scheduling, schedulers.disciplines()))
        failures.validate(self, set_)                   # failure_rate and what a failure does: barrier_queues.failures
        clocks.validate(self, set_)                     # wait budgets and requeues: barrier_queues.clocks
        nodes.validate(self, set_)                      # node_size: barrier_queues.nodes
        schedulers.validate(self, set_)                 # each scheduler's fields and checks: its room
        self._validate_phases(set_)
        self._validate_trace_setting()

    def _validate_tasks(self, set_, s: int) -> None:
        if self.trace is not None or self.load_scale is not None or self.estimates is not None:
            self._validate_trace(set_, s)
            return
        if self.workload is not None:
            self._validate_workload(set_, s)
            return
        if (self.tasks is None) == (self.tasks_pmf is None):
            raise ParameterError("give exactly one of tasks (an integer 1 <= tasks <= servers) and tasks_pmf "
                                 "(got " + ("neither" if self.tasks is None else "both") + ")")
        if self.tasks is not None and self.moldable is not None:     # its tasks are dealt onto the workers taken
            k = check_int("tasks", self.tasks, low=1, high=MAX_SERVERS, high_name=f"{MAX_SERVERS:,} with moldable jobs")
            set_("tasks", k)
            set_("needed", k if self.needed is None else self.needed)
            return
        if self.tasks is not None:
            k = check_int("tasks", self.tasks, low=1, high=s, high_name=f"servers = {s}")
            set_("tasks", k)
            set_("needed", k if self.needed is None else
                 check_int("needed", self.needed, low=1, high=k, high_name=f"tasks = {k}"))
            return
        set_("tasks_pmf", parse_pmf(self.tasks_pmf, s))
        if self.needed is not None:
            raise ParameterError(f"needed must be None with tasks_pmf (got {self.needed!r}): "
                                 "(s,k,l) jobs need a fixed tasks")
        if len(self.tasks_pmf) == 1:                        # a one-point pmf is a fixed k
            set_("tasks", self.tasks_pmf[0][0])
            set_("tasks_pmf", None)
            set_("needed", self.tasks)

    def _validate_workload(self, set_, s: int) -> None:
        from .workload import parse_workload

        for name in ("tasks", "tasks_pmf", "needed"):
            if getattr(self, name) is not None:
                raise ParameterError(f"{name} must be None with a workload (got {getattr(self, name)!r}): the "
                                     "workload's classes give each job's k")
        workload = self.workload
        if isinstance(workload, str | Path):                   # a file: its classes (the CLI reads the rest)
            from .workload import read_workload

            doc = read_workload(workload)
            for notice in doc.get("notices", ()):           # MJQM's run settings: what is used instead
                warnings.warn(f"workload {str(workload)!r}: {notice}", UserWarning, stacklevel=3)
            workload = doc["classes"]
        classes = parse_workload(workload, s)
        set_("workload", classes)
        p = math.fsum(c.share for c in classes if c.barrier)
        if self.barrier_fraction not in (1.0, p):
            raise ParameterError(f"barrier_fraction must not be given with a workload (got "
                                 f"{self.barrier_fraction!r}): each class says whether its jobs are barrier jobs")
        set_("barrier_fraction", p)

    def _validate_trace(self, set_, s: int) -> None:
        """A trace as the workload (:class:`~barrier_queues.trace_workload.TraceWorkload`): its jobs give k,
        the barrier flags, the submissions and the times, so the fields that would draw them are refused."""
        from .trace_workload import ESTIMATES, TraceWorkload

        if self.trace is None:
            given = "load_scale" if self.load_scale is not None else "estimates"
            raise ParameterError(f"{given} must come with a trace (got {given} = {getattr(self, given)!r} "
                                 "without one): it changes how a recorded log is replayed")
        for name in ("tasks", "tasks_pmf", "needed", "workload", "task_rate", "task_dist", "arrival_rate"):
            if getattr(self, name) is not None:
                raise ParameterError(f"{name} must be None with a trace (got {getattr(self, name)!r}): the "
                                     "trace's jobs give each job's k, times and submission")
        if self.arrival != "poisson":
            raise ParameterError(f"arrival must be left out with a trace (got {self.arrival!r}): the trace "
                                 "records its submissions")
        source = self.trace.trace if isinstance(self.trace, TraceWorkload) else self.trace
        scale = 1.0 if self.load_scale is None else check_positive("load_scale", self.load_scale)
        if not 1e-3 <= scale <= 1e3:
            raise ParameterError(f"load_scale must lie in [0.001, 1000] (got {scale!r})")
        work = TraceWorkload(source, s, scale)
        set_("trace", work)
        set_("load_scale", scale)
        set_("estimates", check_choice("estimates", "exact" if self.estimates is None else self.estimates,
                                       ESTIMATES))
        if self.estimates == "requested" and self.scheduling not in ("backfill", "aging", "sjf", "sjf-first-fit"):
            raise ParameterError(f"estimates must be 'exact' under {self.scheduling} (got 'requested'): only "
                                 "backfill predicts runtimes, the other disciplines never read an estimate")
        p = float(work.barrier.mean())
        if self.barrier_fraction not in (1.0, p):
            raise ParameterError(f"barrier_fraction must not be given with a trace (got {self.barrier_fraction!r})"
                                 ": the trace says which jobs are barrier jobs")
        set_("barrier_fraction", p)
        if work.rigid:                          # (one runtime for all k tasks: the same under 1 and 2 barriers)
            set_("barriers", 2)
        set_("task_dist", work.law)
        if self.failure_rate is not None:
            model = failures.get(self.retry_work or "identical")
            if model.fresh:
                redo = ", ".join(repr(n) for n in failures.names() if not failures.get(n).fresh)
                raise ParameterError(f"retry_work must be a model that redoes the recorded work with a trace ({redo};"
                                     f" got {self.retry_work!r}): a retry reruns the trace's job, whose work is "
                                     "recorded, so there is no task law to draw fresh work from")
            set_("retry_work", model.name)

    def _validate_trace_setting(self) -> None:
        """What a trace's replay reads once the rest is valid: requested estimates under backfill alone, from a
        rigid trace that has them; the trace's scheduler room (the waiting list) at every discipline."""
        if self.trace is None:
            return
        for name, value, ok in (("phases", self.phases, 1), ("release", self.release, "fixed"),
                                ("overhead", self.overhead, None), ("placement", self.placement, "central")):
            if value != ok:
                raise ParameterError(f"{name} must be {ok!r} with a trace (got {value!r}): a trace is replayed "
                                     "under the central queue's disciplines, its jobs as recorded")
        if self.estimates == "requested":
            if self.failure_rate is not None:
                raise ParameterError("estimates must be 'exact' with failure_rate (got 'requested'): a replay with "
                                     "failures backfills with the true runtimes")
            self.trace.check_estimates("requested")

    def _validate_task_law(self, set_) -> None:
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

    def _validate_arrivals(self, set_) -> None:
        mean = self.task_dist.mean()
        if self.arrival_rate is not None:
            lam = check_positive("arrival_rate", self.arrival_rate, "(jobs per unit time)")
            if not 1 / TIME_SCALE <= lam * mean <= TIME_SCALE:
                raise ParameterError(f"arrival_rate must lie within a factor 1e9 of one job per mean task time, "
                                     f"i.e. {1 / (TIME_SCALE * mean):.3g} <= arrival_rate <= "
                                     f"{TIME_SCALE / mean:.3g} (got {lam!r})")
            set_("arrival_rate", lam)
        set_("arrival", check_choice("arrival", self.arrival, ARRIVALS))
        p = check_probability("barrier_fraction", self.barrier_fraction)
        set_("barrier_fraction", p)
        if p < 1 and self.needed not in (None, self.tasks):
            raise ParameterError(f"needed must equal tasks when barrier_fraction < 1 (got needed = {self.needed}, "
                                 f"tasks = {self.tasks}): non-barrier jobs are conventional")
        if p == 0 and self.barriers == 2:
            raise ParameterError("barriers must be 1 when barrier_fraction = 0 (got 2): a departure barrier "
                                 "needs barrier jobs")

    def _validate_overhead(self, set_) -> None:
        set_("overhead", check_choice("overhead", self.overhead, OVERHEADS))
        if self.overhead is None:
            if self.revive_interval is not None:
                raise ParameterError(f"revive_interval must be None without an overhead model (got "
                                     f"{self.revive_interval!r}): it sets Spark's revive timer (--revive needs "
                                     "--overhead paper|event)")
            return
        set_("revive_interval", check_time("revive_interval", 1.0 if self.revive_interval is None
                                           else self.revive_interval, self.task_dist.mean()))
        if self.arrival_rate is None:
            raise ParameterError("arrival_rate must be given (> 0) with a Spark overhead model: "
                                 "offers follow job arrivals (got None)")

    def _validate_phases(self, set_) -> None:
        m = check_int("phases", self.phases, low=1)
        set_("phases", m)
        if self.workload is not None:
            for name, value, ok in (("phases", m, 1), ("release", self.release, "fixed"),
                                    ("overhead", self.overhead, None), ("placement", self.placement, "central")):
                if value != ok:
                    raise ParameterError(f"{name} must be {ok!r} with a workload (got {value!r}): job classes "
                                         "are simulated under the central queue without Spark's overhead models")
        if m * self.max_tasks > MAX_DRAWS_PER_JOB:
            raise ParameterError(f"phases must be at most {MAX_DRAWS_PER_JOB // self.max_tasks:,} for jobs of "
                                 f"{self.max_tasks} tasks (tasks x phases <= {MAX_DRAWS_PER_JOB:,}; got {m})")
        if m == 1:
            for name in ("sync", *(p.name for p in rules.params("sync"))):
                if getattr(self, name) is not None:
                    raise ParameterError(f"{name} must be None with phases = 1 (got {getattr(self, name)!r}): "
                                         "barrier() sync points need phases >= 2")
            return
        set_("sync", check_choice("sync", "ideal" if self.sync is None else self.sync, rules.names("sync")))
        rules.validate(self, set_, "sync")
        if self.tasks_pmf is None and self.needed != self.tasks:
            raise ParameterError(f"needed must equal tasks with phases > 1 (got needed = {self.needed}, "
                                 f"tasks = {self.tasks}): a phased job waits for every task")
        if self.release != "fixed":
            raise ParameterError(f"release must be 'fixed' with phases > 1 (got {self.release!r})")
        if self.overhead == "paper":
            raise ParameterError("overhead must be None or 'event' with phases > 1 (got 'paper'): the paper's "
                                 "iid overhead is defined for one-phase tasks")
        if self.barrier_fraction < 1:
            raise ParameterError(f"barrier_fraction must be 1 with phases > 1 (got {self.barrier_fraction!r}): "
                                 "barrier() needs tasks that run together")

    # -- derived quantities (no validation: the fields are valid) ------------------
    @property
    def ks(self) -> np.ndarray:
        """The values of k (int64 array): ``[k]``, the support of ``tasks_pmf``, the workload's or the trace's k."""
        if self.trace is not None:
            return self.trace.ks
        if self.workload is not None:
            return np.array(sorted({c.tasks for c in self.workload}), dtype=np.int64)
        if self.tasks_pmf is None:
            return np.array([self.tasks], dtype=np.int64)
        return np.array([k for k, _ in self.tasks_pmf], dtype=np.int64)

    @property
    def pk(self) -> np.ndarray:
        """The probabilities of :attr:`ks`."""
        if self.trace is not None:
            return self.trace.pk
        if self.workload is not None:
            return np.array([sum(c.share for c in self.workload if c.tasks == k) for k in self.ks])
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
        if self.tasks is None or self.release != "fixed":
            return 0
        return self.tasks - self.needed

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
        """E[X], the mean task time (time units; with a workload or a trace, over its tasks)."""
        if self.trace is not None:
            return self.trace.mean_task()
        if self.workload is not None:
            tasks = sum(c.share * c.tasks for c in self.workload)
            return float(sum(c.share * c.tasks * self.class_law(c).mean() for c in self.workload) / tasks)
        return float(self.task_dist.mean())

    def class_law(self, job_class):
        """The task law of a workload class (its own, or the system's)."""
        return job_class.task_dist if job_class.task_dist is not None else self.task_dist

    def without_rate(self) -> BarrierSystem:
        """The same system with ``arrival_rate=None``, not validated again: a validated system stays valid
        without its arrival rate (no check reads it but its own range), and the limits cached per system
        (the arrival rate does not enter them) are keyed on this copy without a second validation."""
        if self.arrival_rate is None:
            return self
        import copy

        out = copy.copy(self)
        object.__setattr__(out, "arrival_rate", None)
        return out

    def replace(self, **changes) -> BarrierSystem:
        """A copy with some fields changed (validated again).

        Fields that follow from a changed one are reset unless given too:
        ``needed`` follows ``tasks`` (unless the system kills stragglers),
        ``task_rate`` and ``task_dist`` replace each other, a new ``release``
        resets the knee and timeout parameters, ``placement="central"`` drops
        ``probe_ratio``, ``phases=1`` drops ``sync`` and ``sync_poll``, and
        ``overhead=None`` drops ``revive_interval``, a new ``moldable`` its policy's option.
        """
        c = dict(changes)

        def reset(*names):
            for name in names:
                c.setdefault(name, None)

        if c.get("workload") is not None:
            reset("tasks", "tasks_pmf", "needed")
            c.setdefault("barrier_fraction", 1.0)
        if self.trace is not None or c.get("trace") is not None:   # (what the trace sets, set again from it)
            reset("task_dist")
            c.setdefault("barrier_fraction", 1.0)
        if c.get("tasks") is not None or c.get("tasks_pmf") is not None:
            reset("workload")
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
        if "moldable" in c:
            reset("take_fraction", "patience_wait", "requirement")
        if "failure_rate" in c and c["failure_rate"] is None:
            reset(*failures.FIELDS[1:])
        if "retry_work" in c and not getattr(failures.MODELS.get(c["retry_work"]), "checkpoints", False):
            reset("checkpoint_interval", "checkpoint_cost")
        return replace(self, **c)

    def describe(self) -> dict:
        """JSON-able parameters (the task law as its own dict)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["task_dist"] = self.task_dist.describe()
        if self.workload is not None:
            out["workload"] = [c.describe() for c in self.workload]
        if self.tasks_pmf is not None:
            out["tasks_pmf"] = {str(k): p for k, p in self.tasks_pmf}
        if self.trace is not None:
            out["trace"] = self.trace.describe()
        if self.wait_budget is not None:                    # (as the specs the fields take)
            out["wait_budget"] = str(self.wait_budget)
        if self.hold_timeout is not None and not isinstance(self.hold_timeout, float):
            out["hold_timeout"] = str(self.hold_timeout)
        if self.requeue_backoff is not None:
            base, cap = self.requeue_backoff
            out["requeue_backoff"] = f"{base!r}" + ("" if math.isinf(cap) else f",{cap!r}")
        return out

    def to_dict(self) -> dict:
        """Alias of :meth:`describe`."""
        return self.describe()

    def kind(self) -> str:
        """A short human description, e.g. ``'(16,8,6) 1-barrier, exponential tasks'``."""
        k = (str(self.tasks) if self.tasks_pmf is None else "pmf " + ",".join(f"{k}:{p:g}" for k, p in self.tasks_pmf)
             ) if self.workload is None else f"{len(self.workload)} job classes"
        if self.trace is not None:
            k = f"the {len(self.trace.jobs)} jobs of {self.trace.trace.source}"
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
        if self.scheduling != "fcfs":
            parts.append(f"{self.scheduling} scheduling")
        if self.node_size is not None:
            parts.append(f"nodes of {self.node_size}")
        if self.moldable is not None:
            from .moldable_policies import label

            parts.append("moldable " + label(self.moldable, vars(self)))
        if self.wait_budget is not None:
            parts.append(f"wait budget {self.wait_budget} ({self.on_budget})")
        if self.hold_timeout is not None:
            t = self.hold_timeout
            parts.append(f"hold timeout {t:g} ({self.on_budget})" if isinstance(t, float) else
                         f"hold timeout {t}, exponential ({self.on_budget})")
        if self.overhead:
            parts.append(f"{self.overhead} overhead")
        if self.failure_rate is not None:
            parts.append(f"failure rate {self.failure_rate:g}"
                         + (f", at most {self.max_attempts} attempts" if self.max_attempts else ""))
        parts.append(f"{self.task_dist.describe()['law']} tasks")
        return ", ".join(parts)


def option_fields(command: str | None = None) -> list[dict]:
    """Every system field as a command-line option, generated from the field metadata and the registries:
    those a command offers (``command`` None: those of the commands that describe a system, ``simulate``,
    ``sweep`` and ``stability``; ``"replay"``: the fields a replay of a trace reads besides the system's).

    Each entry: ``name`` (the field), ``flag``, ``short``, ``kind`` (``int``,
    ``float``, ``str`` or ``choice``), ``low``, ``high``, ``open_low``,
    ``choices`` and ``help``. Rule parameters come from
    :mod:`barrier_queues.rules`, rule and scheduler choices from the registries.
    """
    out = []
    wanted = command or "simulate"
    for f in fields(BarrierSystem):
        meta = dict(f.metadata)
        if meta.get("commands") is not None and wanted not in meta["commands"]:
            continue
        if not meta:                                    # a rule's parameter
            p = rules.get_param(f.name)
            meta = {"help": p.help, "kind": "float", **p.cli_range(), "short": None, "flag": p.flag, "choices": None}
        elif meta["kind"] == "rule":
            names = rules.names(f.name)
            meta = {**meta, "kind": "choice", "choices": names,
                    "help": meta["help"] + ": " + "; ".join(f"{n}: {rules.get(f.name, n).help}" for n in names)}
        elif meta["kind"] == "scheduler":
            meta = {**meta, "kind": "choice", "choices": schedulers.names()}
        elif meta["kind"] == "discipline":
            meta = {**meta, "kind": "choice", "choices": schedulers.disciplines()}
        elif meta["kind"] == "failure_model":
            names = failures.names()
            meta = {**meta, "kind": "choice", "choices": names,
                    "help": meta["help"] + " (default different): " + "; ".join(
                        f"{n}: {failures.get(n).help}" for n in names)}
        elif meta["kind"] == "workload":
            meta = {**meta, "kind": "str"}
        elif meta["kind"] in ("moldable", "moldable_option"):
            meta = _moldable_meta(f.name, meta)
        meta["name"] = f.name
        meta["flag"] = meta.get("flag") or "--" + f.name.replace("_", "-")
        meta.setdefault("high", None)
        meta.setdefault("open_low", False)
        out.append(meta)
    return out


def _moldable_meta(name: str, meta: dict) -> dict:
    """The command line of a moldable field from the policy registry: the policies as choices, or the option's
    own kind, range and help (:data:`barrier_queues.moldable_policies.OPTIONS`)."""
    from .moldable_policies import OPTIONS, POLICIES, names, owner

    if name == "moldable":
        return {**meta, "kind": "choice", "choices": names(),
                "help": meta["help"] + ": " + "; ".join(f"{m.name}: {m.help}" for m in POLICIES.values())}
    option = OPTIONS[name]
    return {**meta, "kind": option.kind, "low": option.low, "high": option.high, "open_low": option.open_low,
            "choices": option.choices, "help": f"with --moldable {owner(name)}: {option.help}"}


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


__all__ = ["BarrierSystem", "MAX_SERVERS", "TaskDistribution", "as_system", "exponential_rate", "option_fields",
           "parse_pmf", "require"]
