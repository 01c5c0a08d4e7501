"""The description of a barrier-mode parallel system, validated once.

Notation follows the paper (Walker & Fidler 2025, section I and Table I):
``servers`` = s workers, ``tasks`` = k tasks per job, ``needed`` = l tasks that
must finish before the job departs (the other k - l stragglers are killed),
``barriers`` = 1 (start barrier only, Spark's Barrier Execution Mode) or 2
(start and departure barrier), ``task_rate`` = mu (tasks are Exp(mu) unless a
task law is given elsewhere) and ``arrival_rate`` = lambda (jobs per unit time).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ._validation import ParameterError, check_choice, check_int, check_positive


@dataclass(frozen=True)
class BarrierSystem:
    """A (s, k, l) barrier system with 1 or 2 barriers.

    Parameters
    ----------
    servers : int
        Number of workers s >= 1.
    tasks : int
        Tasks per job k, 1 <= k <= s.
    needed : int, optional
        Tasks that must finish before the job departs, 1 <= l <= k; defaults
        to k (the conventional system).
    barriers : {1, 2}
        1: start barrier only; 2: start and departure barrier.
    task_rate : float
        Rate mu of the exponential task service time (per unit time), > 0.
    arrival_rate : float, optional
        Job arrival rate lambda (per unit time), > 0; needed only for queueing
        questions, not for stability limits.

    Raises
    ------
    ParameterError
        If any parameter is outside its valid range; the message names it.

    Examples
    --------
    >>> BarrierSystem(servers=16, tasks=4).needed
    4
    """

    servers: int
    tasks: int
    needed: int | None = None
    barriers: int = 1
    task_rate: float = 1.0
    arrival_rate: float | None = None

    def __post_init__(self):
        s = check_int("servers", self.servers, low=1)
        k = check_int("tasks", self.tasks, low=1, high=s, high_name=f"servers = {s}")
        needed = k if self.needed is None else self.needed
        l_ = check_int("needed", needed, low=1, high=k, high_name=f"tasks = {k}")
        b = check_choice("barriers", self.barriers, (1, 2))
        mu = check_positive("task_rate", self.task_rate, "(tasks per unit time)")
        lam = None
        if self.arrival_rate is not None:
            lam = check_positive("arrival_rate", self.arrival_rate, "(jobs per unit time)")
        for name, value in (("servers", s), ("tasks", k), ("needed", l_), ("barriers", b),
                            ("task_rate", mu), ("arrival_rate", lam)):
            object.__setattr__(self, name, value)

    @property
    def conventional(self) -> bool:
        """True when every task must finish (l = k)."""
        return self.needed == self.tasks

    @property
    def parallel_jobs(self) -> int:
        """floor(s / k): how many jobs a 2-barrier system runs at once."""
        return self.servers // self.tasks

    def offered_utilization(self) -> float:
        """rho = lambda E[server time per job] / s with exponential tasks.

        E[server time per job] = l / mu for every (s,k,l) system (paper eq. 13),
        so rho = lambda l / (s mu); for l = k this is lambda k / (s mu).
        """
        if self.arrival_rate is None:
            raise ParameterError("arrival_rate must be given (a finite number > 0) "
                                 "to compute the offered utilization (got None)")
        return self.arrival_rate * self.needed / (self.servers * self.task_rate)

    def to_dict(self) -> dict:
        """Plain dict of the parameters (for JSON and tables)."""
        return asdict(self)
