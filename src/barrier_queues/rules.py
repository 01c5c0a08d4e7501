"""The service rules of one job, without queueing: one registry, one place per rule.

A *rule* says how one job's tasks, once started together, occupy their
workers and when the job departs. Two axes of rules exist:

* **release** (``BarrierSystem.release``; Appendix B, section 1): ``fixed``
  (depart after ``l`` of ``k`` tasks: the paper's (s,k,l) jobs), ``knee``
  (a knee detector on the completion gaps) and ``timeout`` (depart at ``T``
  at the latest);
* **sync** (``BarrierSystem.sync``, jobs of ``m > 1`` phases; Appendix B
  section 3): ``ideal`` (every task resumes when the last arrives at
  ``barrier()``) and ``spark`` (each task polls every ``P``).

Each :class:`Rule` declares, once: its name, its parameters (the
:class:`~barrier_queues.BarrierSystem` fields it owns, with defaults, ranges
and help, from which the CLI flags and the sweep grid fields are generated),
its validation beyond the ranges, its kernel code (read from the compiled
module) and kernel parameters, its plain-Python reference, its law (the
module that computes the law of one job's service) and how the stability
limit of a system under it is found. Everything else (the system's
validation, the kernels' inputs, the references, the stability guard, the
CLI and sweeps) reads it from here.

Adding a rule: one :class:`Rule` in :data:`RULES` (or :func:`register` from
outside), one branch in the compiled ``_job_service`` and its reference
service function; see the book's extension guide.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ._validation import ParameterError, check_probability, check_time
from .reference import KNEE_GAIN

#: the kernels' float parameters of a job's service, in the order the compiled ``_service`` reads them
KERNEL_SLOTS = ("min_fraction", "min_wait", "knee_gain", "timeout", "spark_sync", "sync_poll")
KERNEL_DEFAULTS = {"min_fraction": 0.0, "min_wait": 0.0, "knee_gain": 0.0, "timeout": math.inf,
                   "spark_sync": 0.0, "sync_poll": 1.0}


@dataclass(frozen=True)
class Param:
    """A parameter a rule owns: a :class:`~barrier_queues.BarrierSystem` field.

    ``kind``: ``"fraction"`` (0 < x <= 1), ``"time"`` (> 0, within 1e9 of the
    mean task time) or ``"time0"`` (the same, or 0). ``default`` None means
    the parameter must be given when its rule is chosen.
    """

    name: str
    kind: str
    default: float | None
    help: str

    @property
    def flag(self) -> str:
        """The command-line option, e.g. ``--min-fraction``."""
        return "--" + self.name.replace("_", "-")

    def check(self, value, mean_task: float) -> float:
        if self.kind == "fraction":
            return check_probability(self.name, value, open_low=True)
        return check_time(self.name, value, mean_task, allow_zero=self.kind == "time0")

    def cli_range(self) -> dict:
        """Keyword arguments of the CLI's float parser (the ranges the CLI can check before the system)."""
        if self.kind == "fraction":
            return {"low": 0, "high": 1, "open_low": True}
        return {"low": 0, "open_low": self.kind == "time"}


def _no_check(system) -> None:
    return None


def _needs_fixed_tasks(system) -> None:
    """A rule other than ``fixed`` chooses how many tasks finish, and needs tasks that start together."""
    if system.tasks_pmf is None and system.needed != system.tasks:
        raise ParameterError(f"needed must equal tasks with release = {system.release!r} (got needed = "
                             f"{system.needed}, tasks = {system.tasks}): the {system.release} rule chooses how "
                             "many tasks finish")
    if system.barrier_fraction < 1:
        raise ParameterError(f"barrier_fraction must be 1 with release = {system.release!r} (got "
                             f"{system.barrier_fraction!r}): a release rule needs tasks that start together")


@dataclass(frozen=True)
class Rule:
    """One service rule (see the module docstring).

    Attributes
    ----------
    name, axis : str
        The value of the system field ``axis`` (``"release"`` or ``"sync"``) that selects it.
    params : tuple of Param
        The system fields it owns (None unless it is chosen).
    kernel_code : str
        The name of its code in the compiled module (``FIXED``, ``KNEE``, ...); None for a sync rule.
    kernel : callable
        ``kernel(system) -> dict``: its entries of :data:`KERNEL_SLOTS`.
    reference : callable
        ``reference(system) -> dict``: its keyword arguments of :func:`barrier_queues.reference.service`.
    check : callable
        Validation beyond the parameters' ranges (raises :class:`ParameterError`).
    law : str
        Where the law of one job's service is computed (``module:function``).
    limits : dict
        How the stability limit is found, by number of barriers: ``"exact"``
        (closed form, CTMC, order statistics or quadrature), ``"monte-carlo"``
        (an estimate with an interval) or None (the drift test and saturated
        runs decide).
    service : callable, optional
        ``service(system, draws, k) -> (D, L, useful, occupation per task)``:
        the rule's own plain-Python reference of one job, for a rule that
        :func:`barrier_queues.reference.service` does not know (the built-in
        rules are all there).
    """

    name: str
    axis: str
    help: str
    params: tuple = ()
    kernel_code: str | None = None
    kernel: Callable = field(default=lambda system: {})
    reference: Callable = field(default=lambda system: {})
    check: Callable = _no_check
    law: str = ""
    limits: dict = field(default_factory=dict)
    service: Callable | None = None

    def code(self) -> int:
        """The rule's code in the compiled kernels (from the compiled module, not typed again)."""
        from .kernels import kernels_module

        return int(getattr(kernels_module(), self.kernel_code))


RULES: dict[tuple[str, str], Rule] = {}


def register(rule: Rule) -> Rule:
    """Add a rule to the registry (its parameters must be fields of :class:`~barrier_queues.BarrierSystem`)."""
    if rule.axis not in ("release", "sync"):
        raise ParameterError(f"rule axis must be 'release' or 'sync' (got {rule.axis!r})")
    RULES[(rule.axis, rule.name)] = rule
    return rule


def unregister(axis: str, name: str) -> None:
    RULES.pop((axis, name), None)


def names(axis: str) -> tuple[str, ...]:
    """The registered rules of one axis, in registration order."""
    return tuple(name for (a, name) in RULES if a == axis)


def get(axis: str, name: str) -> Rule:
    try:
        return RULES[(axis, name)]
    except KeyError:
        allowed = ", ".join(repr(n) for n in names(axis))
        raise ParameterError(f"{axis} must be one of {allowed} (got {name!r})") from None


def params(axis: str | None = None) -> list[Param]:
    """Every rule parameter (of one axis), each once, in registration order."""
    seen, out = set(), []
    for (a, _), rule in RULES.items():
        for p in rule.params:
            if (axis is None or a == axis) and p.name not in seen:
                seen.add(p.name)
                out.append(p)
    return out


def get_param(name: str) -> Param:
    """The registered rule parameter called ``name``."""
    for p in params():
        if p.name == name:
            return p
    raise KeyError(name)


def owner(param: str) -> Rule:
    for rule in RULES.values():
        if any(p.name == param for p in rule.params):
            return rule
    raise KeyError(param)


def validate(system, set_, axis: str) -> None:
    """Validate a system's fields of one rule axis (called once, by ``BarrierSystem``): parameters of rules
    not chosen are None, the chosen rule's parameters get their defaults and are range-checked, then the
    rule's own checks run."""
    mean = system.task_dist.mean()
    chosen = getattr(system, axis)
    rule = get(axis, chosen)
    for p in params(axis):
        value = getattr(system, p.name)
        if all(q.name != p.name for q in rule.params):
            if value is not None:
                raise ParameterError(f"{p.name} must be None unless {axis} = {owner(p.name).name!r} "
                                     f"(got {value!r} with {axis} = {chosen!r})")
            continue
        if value is None and p.default is None:
            raise ParameterError(f"{p.name} must be given with {axis} = {chosen!r} (got None): {p.help}")
        set_(p.name, p.check(p.default if value is None else value, mean))
    rule.check(system)


def service_rule(system) -> Rule:
    """The rule that decides a job's service: the sync rule with phases, else the release rule."""
    return get("sync", system.sync) if system.phases > 1 else get("release", system.release)


def kernel_params(system) -> tuple[int, int, list[float]]:
    """(release code, stragglers, float parameters in :data:`KERNEL_SLOTS` order) for the kernels."""
    release = get("release", system.release)
    values = dict(KERNEL_DEFAULTS)
    values.update(release.kernel(system))
    if system.phases > 1:
        values.update(get("sync", system.sync).kernel(system))
    stragglers = values.pop("stragglers", system.stragglers)
    return release.code(), stragglers, [values[s] for s in KERNEL_SLOTS]


def reference_rule(system) -> dict:
    """The system's service rule as keyword arguments of :func:`barrier_queues.reference.service`."""
    rule = {"phases": system.phases, "release": system.release}
    rule.update(get("release", system.release).reference(system))
    if system.phases > 1:
        rule.update(get("sync", system.sync).reference(system))
    return rule


def reference_service(system):
    """``fn(draws, k)`` of one job under the system's rule when the rule brings its own reference
    (:attr:`Rule.service`), else None (the schedulers' references use :func:`barrier_queues.reference.service`)."""
    rule = service_rule(system)
    if rule.service is None:
        return None
    return lambda draws, k: rule.service(system, draws, k)


def limit_kind(system) -> str | None:
    """How the stability limit of a pure-barrier, fixed-k system under its rule is found (``Rule.limits``)."""
    if system.phases > 1:
        sync = get("sync", system.sync).limits.get(system.barriers)
        return None if sync is None else sync
    return service_rule(system).limits.get(system.barriers)


# --------------------------------------------------------------------------------------------------
# the rules

register(Rule(
    "fixed", "release", "depart after l of the k tasks (the paper's (s,k,l) jobs; l = k by default)",
    kernel_code="FIXED",
    reference=lambda s: {"needed": s.needed} if s.tasks_pmf is None else {},
    law="barrier_queues.release:release_law",
    limits={1: "exact", 2: "exact"}))           # 1-barrier: closed form (exponential tasks) or the CTMC

register(Rule(
    "knee", "release", "depart at the first knee in the completion gaps (Appendix B, section 1)",
    params=(Param("min_fraction", "fraction", 0.5, "knee: tasks that must finish first, 0 < f <= 1 (default 0.5)"),
            Param("min_wait", "time0", 0.0, "knee: time before a knee counts, w >= 0 (default 0)"),
            Param("knee_gain", "fraction", KNEE_GAIN,
                  "knee: EWMA gain of the mean gap, 0 < a <= 1 (default 0.3, seed 002's; RFC 6298 uses 1/8)")),
    kernel_code="KNEE",
    kernel=lambda s: {"min_fraction": s.min_fraction, "min_wait": s.min_wait, "knee_gain": s.knee_gain},
    reference=lambda s: {"min_fraction": s.min_fraction, "min_wait": s.min_wait, "gain": s.knee_gain},
    check=_needs_fixed_tasks,
    law="barrier_queues.release:release_law",
    limits={1: None, 2: "monte-carlo"}))

register(Rule(
    "timeout", "release", "depart when every task is done or at time T after the start, whichever is first",
    params=(Param("timeout", "time", None, "timeout: release after T > 0 at the latest"),),
    kernel_code="TIMEOUT",
    kernel=lambda s: {"timeout": s.timeout},
    reference=lambda s: {"timeout": s.timeout},
    check=_needs_fixed_tasks,
    law="barrier_queues.release:release_law",
    limits={1: None, 2: "exact"}))              # 2-barrier: quadrature

register(Rule(
    "ideal", "sync", "barrier() releases every task when the last one arrives",
    reference=lambda s: {"sync": "ideal", "poll": 1.0},
    law="barrier_queues.phases:system_phase_law",
    limits={1: None, 2: "exact"}))              # 2-barrier: order statistics

register(Rule(
    "spark", "sync", "Spark's barrier(): each task polls every P from its own arrival (Appendix C)",
    params=(Param("sync_poll", "time", 1.0, "Spark's barrier() poll period P (default 1)"),),
    kernel=lambda s: {"spark_sync": 1.0, "sync_poll": s.sync_poll},
    reference=lambda s: {"sync": "spark", "poll": s.sync_poll},
    law="barrier_queues.phases:system_phase_law",
    limits={1: None, 2: "monte-carlo"}))


__all__ = ["KERNEL_SLOTS", "Param", "RULES", "Rule", "get", "get_param", "kernel_params", "limit_kind", "names",
           "params", "reference_rule", "reference_service", "register", "service_rule", "unregister", "validate"]
