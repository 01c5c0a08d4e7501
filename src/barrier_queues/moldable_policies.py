"""The moldable policies (Appendix B, section 7): how many workers the head job takes, one registry entry each.

A moldable job of ``k`` tasks reaching the head with ``F >= 1`` free workers out of ``s`` starts on ``n`` of
them (its tasks dealt onto them) or waits; a :class:`MoldablePolicy` says which. Every part that reads a
policy reads it here: the plain reference (:func:`barrier_queues.moldable.moldable_run`, through
:attr:`MoldablePolicy.wanted`), the compiled kernel (``_moldable.pxi``, whose table ``MOLDABLE_POLICIES`` must
name exactly these: tested), the option checks, the command line's ``--moldable`` and its options, the sweep's
grid and the exact chain's list. A policy reads at most one option of :data:`OPTIONS`.

The policies and the workers ``n`` the head takes (0: it waits):

* ``take-fraction``: ``n = 1`` if ``F = 1``, else ``max(1, ceil(F f))`` (``f``: ``take_fraction``);
* ``take-random``: the same with a fresh ``U ~ Uniform[0, 1)`` per started job in place of ``f``;
* ``take-random-all``: each job's requirement ``min(k, max(1, ceil(s U)))``; it starts when ``F`` reaches it;
* ``fixed``: every job needs ``min(k, n)`` (``n``: ``requirement``; ``n = k``: the paper's system);
* ``patience``: ``F``, unless one more worker's speed-up ``k/F - k/(F+1)`` beats the expected wait ``E`` for it
  (``patience_wait``: ``min``, ``mean`` or ``height``; ``F = s``: no speed-up).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ._validation import ParameterError, check_choice, check_int

#: the estimates of the wait for one more worker that ``patience`` may use
PATIENCE_WAITS = ("min", "mean", "height")


@dataclass(frozen=True)
class PolicyOption:
    """An option one policy reads: its help, whether it must be given, its check (the value, checked), and its
    value's kind and range for the command line (``kind`` int, float or choice, as the system's fields)."""

    help: str
    required: bool
    check: Callable
    kind: str
    low: float | None = None
    high: float | None = None
    open_low: bool = False
    choices: tuple | None = None


def _fraction(value) -> float:
    if value is None or isinstance(value, bool) or not (0 < float(value) <= 1):
        raise ParameterError(f"take_fraction must be given with moldable 'take-fraction', 0 < f <= 1 (got {value!r})")
    return float(value)


def _requirement(value) -> int:
    if value is None:
        raise ParameterError("requirement must be given with moldable 'fixed': the workers n >= 1 every job needs")
    return check_int("requirement", value, low=1, high=1_000_000)


def _wait(value) -> str:
    return check_choice("patience_wait", value or "min", PATIENCE_WAITS)


#: the options of the policies, each read by one policy (the command line's ``--take-fraction`` ...)
OPTIONS = {
    "take_fraction": PolicyOption("the share f of the free workers a job takes (0 < f <= 1)", True, _fraction,
                                  "float", 0, 1, open_low=True),
    "patience_wait": PolicyOption("the estimate of the wait for one more worker: " + ", ".join(PATIENCE_WAITS)
                                  + " (default min)", False, _wait, "choice", choices=PATIENCE_WAITS),
    "requirement": PolicyOption("the workers n every job needs (its k tasks dealt onto min(k, n) of them)", True,
                                _requirement, "int", 1),
}


@dataclass(frozen=True)
class MoldablePolicy:
    """One policy: ``name``, ``help``, the option it reads (``option``, a key of :data:`OPTIONS`, or None),
    ``wanted(free, servers, k, value, u, expected_wait)`` (its plain rule: the workers the head takes now, 0 if
    it waits; ``value`` its option's, ``u`` the job's uniform, ``expected_wait()`` the patience estimate,
    computed only when called) and ``work_conserving`` (with 1 barrier it leaves no worker idle while jobs wait,
    so it is stable iff ``lambda k E[X] < s``). Its compiled part is its entry of the kernel's
    ``MOLDABLE_POLICIES``."""

    name: str
    help: str
    option: str | None
    wanted: Callable
    work_conserving: bool = False


def _share(free: int, share: float) -> int:
    return 1 if free == 1 else max(1, math.ceil(free * share))


def _need(need: int, free: int) -> int:
    return need if free >= need else 0


def _patience(free, servers, k, value, u, expected_wait) -> int:
    speedup = 0.0 if free >= servers else k / free - k / (free + 1)
    return 0 if speedup > expected_wait() else free


POLICIES: dict[str, MoldablePolicy] = {}


def register(policy: MoldablePolicy) -> MoldablePolicy:
    """Add a policy (its compiled part must be in the kernel's table: :func:`barrier_queues.moldable.
    moldable_compiled` refuses one that is not)."""
    if policy.option is not None and policy.option not in OPTIONS:
        raise ParameterError(f"moldable policy {policy.name!r}: option {policy.option!r} is not one of "
                             f"{', '.join(OPTIONS)}")
    POLICIES[policy.name] = policy
    return policy


for _policy in (
    MoldablePolicy("take-fraction", "a share f of the free workers (--take-fraction)", "take_fraction",
                   lambda free, servers, k, f, u, e: _share(free, f), work_conserving=True),
    MoldablePolicy("take-random", "a uniform random share of the free workers, drawn per job", None,
                   lambda free, servers, k, f, u, e: _share(free, u), work_conserving=True),
    MoldablePolicy("take-random-all", "a uniform random requirement of the s workers, drawn per job", None,
                   lambda free, servers, k, f, u, e: _need(min(k, max(1, math.ceil(servers * u))), free)),
    MoldablePolicy("patience", "all free workers, unless one more is worth its expected wait (--patience-wait)",
                   "patience_wait", _patience),
    MoldablePolicy("fixed", "always n workers (--requirement; n = k: the paper's rigid jobs)", "requirement",
                   lambda free, servers, k, n, u, e: _need(min(k, int(n)), free)),
):
    register(_policy)


def names() -> tuple[str, ...]:
    return tuple(POLICIES)


def get(name: str) -> MoldablePolicy:
    check_choice("moldable", name, names())
    return POLICIES[name]


def owner(option: str) -> str:
    """The policy that reads ``option`` (a key of :data:`OPTIONS`)."""
    return next(p.name for p in POLICIES.values() if p.option == option)


def label(policy: str, values) -> str:
    """``policy`` with the value of its option in ``values`` (a mapping of option names), e.g.
    ``'take-fraction 0.5'``; the policy alone when it reads none."""
    option = POLICIES[policy].option if policy in POLICIES else None
    value = values.get(option) if option is not None else None
    return policy if value is None else f"{policy} {value}"


def check_options(policy: str, **given) -> dict:
    """The options as the policy reads them: its own checked (a required one given, an optional one defaulted),
    every other one refused if given. ``patience_wait`` 'min' is its default and passes everywhere."""
    chosen = get(policy)
    out = {}
    for name, spec in OPTIONS.items():
        value = given.get(name)
        if name == chosen.option:
            out[name] = spec.check(value)
        elif value is not None and not (name == "patience_wait" and value == "min"):
            raise ParameterError(f"{name} must be given only with moldable "
                                 f"'{owner(name)}' (got {policy!r})")
        else:
            out[name] = "min" if name == "patience_wait" else None
    return out


__all__ = ["OPTIONS", "PATIENCE_WAITS", "POLICIES", "MoldablePolicy", "PolicyOption", "check_options", "get",
           "label", "names", "owner", "register"]
