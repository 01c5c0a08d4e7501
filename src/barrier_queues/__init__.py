"""barrier_queues: stability, CTMC, simulation and bounds for barrier-mode parallel systems.

Reproduces and extends Walker & Fidler, "Performance and Stability of Barrier
Mode Parallel Systems with Heterogeneous and Redundant Jobs" (2025). The
public API is re-exported here; implementation modules are named for the part
of the paper they model (``stability``, ``ctmc``, ``order_stats``,
``simulate``, ...).
"""

from ._validation import ParameterError
from .ctmc import (
    BackloggedChain,
    CTMCStability,
    build_backlogged_chain,
    count_feasible_states,
    ctmc_stability,
    stationary_distribution,
)
from .distributions import (
    Deterministic,
    Empirical,
    Erlang,
    Exponential,
    HyperExponential,
    TaskDistribution,
    as_task_distribution,
    parse_task_distribution,
)
from .order_stats import (
    exp_order_stat_mean,
    exp_order_stat_mgf,
    exp_order_stat_var,
    exp_server_time_per_job,
    harmonic,
    order_stat_mean,
    server_time_per_job,
)
from .simulate import (
    SimulationConfig,
    SimulationResult,
    compare_with_exact,
    saturated_curve,
    saturated_many,
    saturated_throughput,
    simulate,
    simulate_many,
    trace,
)
from .stability import (
    StabilityLimit,
    one_barrier_lambda_max,
    stability_curve,
    stability_limit,
    table_one,
    two_barrier_lambda_max,
)
from .system import BarrierSystem

__version__ = "0.1.0"

__all__ = [
    "BackloggedChain", "BarrierSystem", "CTMCStability", "Deterministic", "Empirical", "Erlang",
    "Exponential", "HyperExponential", "ParameterError", "SimulationConfig", "SimulationResult",
    "StabilityLimit", "TaskDistribution", "as_task_distribution", "build_backlogged_chain",
    "compare_with_exact", "count_feasible_states", "ctmc_stability", "exp_order_stat_mean",
    "exp_order_stat_mgf", "exp_order_stat_var", "exp_server_time_per_job", "harmonic",
    "one_barrier_lambda_max", "order_stat_mean", "parse_task_distribution", "saturated_curve",
    "saturated_many", "saturated_throughput", "server_time_per_job", "simulate", "simulate_many",
    "stability_curve", "stability_limit", "stationary_distribution", "table_one", "trace",
    "two_barrier_lambda_max",
]
