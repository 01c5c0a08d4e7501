"""Nodes that a gang must fit in: the workers grouped in nodes of ``G`` (a GPU cluster's 8-GPU machines).

Workers ``0 .. s-1`` form ``s / G`` nodes, node ``g`` holding workers ``g G .. g G + G - 1``. A job of ``k`` tasks
(a barrier job's gang, or one task of a plain job, ``k = 1``) is placed by one rule, in every discipline that
uses nodes and in the kernel and its plain reference alike:

* ``k = w G + r`` with ``w = k // G`` whole nodes and a remainder ``r = k mod G``;
* the ``w`` whole nodes are the lowest-numbered nodes with all ``G`` workers free;
* the remainder goes on one other node: the one with the fewest free workers that still has ``r`` (best fit;
  ties to the lowest number);
* the job fits if both exist; it takes the whole nodes' workers, then the ``r`` lowest-numbered free workers of
  the remainder's node, in that order (task ``i`` on the ``i``-th of them).

So a gang of at most ``G`` tasks sits on one node; a wider gang takes whole nodes and, if its ``k`` is not a
multiple of ``G`` (a log may hold such jobs), one partial node. The Helios study's simulator (its artifact's
``policies/placer/consolidate.py``, read here, for ``G = 8``) places a gang of at most 8 and a multiple of 8 the
same way; for the remainder of a wider gang it takes the node with the *most* free GPUs, where we take the best
fit (the same gangs fit either way: only which node holds the remainder differs). ``G = 1`` is the model
without nodes: a job fits when ``k`` workers are free and takes the lowest free ones, job by job as without the
option (tested).

Nodes are simulated under every discipline of the waiting list but the hold: fcfs, first-fit, sjf and
sjf-first-fit start a job when it fits; server-filling starts its prefix's jobs in decreasing k while they fit;
EASY backfilling (and aging's reservation) reserves the head's start at the first release time at which the
head *fits on nodes* (every release up to it counted, those of one instant together), and lets a later job that
fits now start if it ends by then, or if the head still fits then on the workers that job leaves (a job that
outlasts the reservation takes its workers out of the head's count; which nodes the head will use is not
fixed, as a reservation of workers, not of named nodes). The hold (a head holding idle workers until it has
``k``) is not modelled with nodes, and is refused.
"""

from __future__ import annotations

from ._validation import ParameterError, check_int

#: the disciplines simulated with nodes
DISCIPLINES = ("fcfs", "first-fit", "backfill", "server-filling", "aging", "sjf", "sjf-first-fit")


def validate(system, set_) -> None:
    """``node_size`` G of a system (called once, by ``BarrierSystem``): a divisor of ``servers``, under the
    disciplines of :data:`DISCIPLINES`, in the central queue, without failures or Spark's offers (gang clocks'
    wait budgets apply)."""
    g = system.node_size
    if g is None:
        return
    g = check_int("node_size", g, low=1, high=system.servers)
    if system.servers % g:
        raise ParameterError(f"node_size must divide servers (got {g} with {system.servers} servers): the workers "
                             "form whole nodes")
    if system.scheduling not in DISCIPLINES:
        raise ParameterError(f"node_size is simulated under {', '.join(DISCIPLINES)} (got scheduling "
                             f"{system.scheduling!r}): a hold would need to say which node's workers the head "
                             "holds")
    for name, value, ok in (("placement", system.placement, "central"), ("failure_rate", system.failure_rate, None),
                            ("overhead", system.overhead, None)):
        if value != ok:
            raise ParameterError(f"{name} must be {ok!r} with node_size (got {value!r}): nodes are simulated in the "
                                 "waiting-list scheduler without failures or Spark's offers")
    if system.estimates == "requested":
        raise ParameterError("estimates must be 'exact' with node_size (got 'requested'): sjf with nodes orders by "
                             "the exact runtimes")
    set_("node_size", g)


def _counts(free, g: int, servers: int) -> list[int]:
    counts = [0] * (servers // g)
    for w in free:
        counts[w // g] += 1
    return counts


def fits(free, g: int, servers: int, k: int) -> bool:
    """Whether a job of ``k`` tasks fits on the free workers ``free`` (module docstring's rule): ``w = k // g``
    whole free nodes, and for ``r = k mod g`` one other node with ``r`` free."""
    if k > len(free):
        return False
    counts = _counts(free, g, servers)
    whole, rest = divmod(k, g)
    full = sum(1 for c in counts if c == g)
    if not rest:
        return full >= whole
    return full > whole or (full == whole and any(rest <= c < g for c in counts))


def place(free, g: int, servers: int, k: int) -> list[int] | None:
    """The workers a job of ``k`` tasks takes from the free workers ``free`` (any iterable of ids), in task
    order, or None when it does not fit (the plain reference of the kernel's ``_nd_take``)."""
    if k > len(free := sorted(free)):
        return None
    counts = _counts(free, g, servers)
    whole, rest = divmod(k, g)
    nodes = [n for n, c in enumerate(counts) if c == g][:whole]
    if len(nodes) < whole:
        return None
    taken = [w for n in nodes for w in range(n * g, n * g + g)]
    if rest:
        best = None
        for n, c in enumerate(counts):
            if n not in nodes and c >= rest and (best is None or c < counts[best]):
                best = n
        if best is None:
            return None
        taken += [w for w in free if w // g == best][:rest]
    return taken


__all__ = ["DISCIPLINES", "fits", "place", "validate"]
