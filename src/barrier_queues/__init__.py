"""barrier_queues: stability, CTMC, simulation and bounds for barrier-mode parallel systems.

Reproduces and extends Walker & Fidler, "Performance and Stability of Barrier
Mode Parallel Systems with Heterogeneous and Redundant Jobs" (2025). The
public API is re-exported here; implementation modules are named for the part
of the paper they model (``system``, ``stability``, ``ctmc``, ``order_stats``,
``simulate``, ``bounds``, ``release``, ``phases``, ...).

Names are imported on first use (PEP 562), so that ``import barrier_queues``
and quick command-line answers do not pay for scipy or pandas.
"""

from importlib import import_module

from ._validation import ParameterError
from .simulate import simulate
from .sweep import sweep
from .system import BarrierSystem

__version__ = "0.2.0"

_EXPORTS = {
    "ctmc": ["BackloggedChain", "CTMCStability", "build_backlogged_chain", "count_feasible_states",
             "ctmc_stability", "stationary_distribution"],
    "distributions": ["Deterministic", "Empirical", "Erlang", "Exponential", "HyperExponential", "TaskDistribution",
                      "as_task_distribution", "parse_task_distribution", "scaled"],
    "order_stats": ["exp_order_stat_mean", "exp_order_stat_mgf", "exp_order_stat_var", "exp_server_time_per_job",
                    "harmonic", "order_stat_mean", "server_time_per_job"],
    "simulate": ["SimulationResult", "compare_with_exact", "simulate_many", "simulate_to_precision", "trace"],
    "saturated": ["saturated_curve", "saturated_many", "saturated_throughput"],
    "stability": ["StabilityLimit", "known_limit", "one_barrier_lambda_max", "stability_curve", "stability_limit",
                  "table_one", "two_barrier_lambda_max"],
    "load": ["arrival_rate_for", "at_utilization", "mean_work", "offered_utilization", "system_at_utilization"],
    "release": ["release_law"],
    "phases": ["phase_law", "plan_phases"],
    "bounds": ["bound"],
    "planning": ["plan"],
}
_MODULES = ("backends", "bounds", "cli", "ctmc", "distributions", "eventlog", "figures", "inputs", "kernels", "load",
            "order_stats", "outputs", "overhead", "phases", "planning", "precision", "reference", "release",
            "results", "rules", "runs", "saturated", "schedulers", "simulate", "spark_analysis", "spark_bench",
            "stability", "statistics", "sweep", "system")
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name):
    if name == "SimulationConfig":           # the one system description, under its old name
        return BarrierSystem
    if name in _WHERE:
        value = getattr(import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _MODULES:
        return import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_WHERE) | {"SimulationConfig"})


__all__ = ["BarrierSystem", "ParameterError", "SimulationConfig", "simulate", "sweep", *sorted(_WHERE)]
