"""barrier_queues: stability, CTMC, simulation and bounds for barrier-mode parallel systems.

Reproduces and extends Walker & Fidler, "Performance and Stability of Barrier
Mode Parallel Systems with Heterogeneous and Redundant Jobs" (2025). The
public API is re-exported here; implementation modules are named for the part
of the paper they model (``system``, ``stability``, ``ctmc``, ``order_stats``,
``simulate``, ``bounds``, ``release``, ``phases``, ...).

Names are imported on first use (PEP 562), so that ``import barrier_queues``
and quick command-line answers do not pay for scipy or pandas.
"""

import os as _os
import sys as _sys
from importlib import import_module

#: set for the ``barrier-queues`` command before numpy loads (see :func:`_command_environment`)
COMMAND_ENVIRONMENT = {"OPENBLAS_THREAD_TIMEOUT": "4"}


def _command_environment() -> bool:
    """In the ``barrier-queues`` command's own process (the script pip installs, started by name), before numpy
    is loaded: set :data:`COMMAND_ENVIRONMENT` where the user has not. Returns whether this is such a process.

    numpy's OpenBLAS starts its threads when numpy is imported, and each one spins for about 2**28 cycles (its
    ``OPENBLAS_THREAD_TIMEOUT``, 28) before it sleeps: a tenth of a second of one core in every command, which
    uses no BLAS while it simulates and shares two cores between its kernel, draw and statistics threads. At 4
    they sleep at once; they still serve BLAS calls (the dense CTMC solve). Only the command: ``import
    barrier_queues`` in a host process leaves its environment alone (measured: CHANGELOG)."""
    argv = getattr(_sys, "argv", None) or [""]
    if _os.path.splitext(_os.path.basename(argv[0]))[0] != "barrier-queues" or "numpy" in _sys.modules:
        return False
    for name, value in COMMAND_ENVIRONMENT.items():
        _os.environ.setdefault(name, value)
    return True


_command_environment()

from ._validation import ParameterError  # noqa: E402 (after the command's environment: numpy loads here)
from ._version import __version__  # noqa: E402, F401  (the package's version, in one place)
from .simulate import simulate  # noqa: E402
from .sweep import sweep  # noqa: E402
from .system import BarrierSystem  # noqa: E402

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
_MODULES = ("backends", "bounds", "cli", "ctmc", "distributions", "eventlog", "failures", "figures", "inputs",
            "kernels", "load", "moldable", "moldable_ctmc", "order_stats", "outputs", "overhead", "phases",
            "planning", "precision", "reference", "release", "replay", "results", "rules", "runs", "saturated",
            "schedulers", "simulate", "spark_analysis", "spark_bench", "stability", "statistics", "sweep", "system",
            "traces")
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name):
    if name == "SimulationConfig":           # the one system description, under its old name
        import warnings

        warnings.warn("barrier_queues.SimulationConfig is BarrierSystem under its old name; use BarrierSystem "
                      "(the old name will go)", FutureWarning, stacklevel=2)
        return BarrierSystem
    if name in _WHERE:
        value = getattr(import_module(f".{_WHERE[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _MODULES:
        return import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_WHERE))


__all__ = ["BarrierSystem", "ParameterError", "simulate", "sweep", *sorted(_WHERE)]
