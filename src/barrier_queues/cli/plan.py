"""``barrier-queues bound``, ``plan`` and ``plan-phases``: quantile bounds and the best k
(:mod:`barrier_queues.cli`)."""

from __future__ import annotations

from .._validation import ParameterError
from .options import COMMAND_HELP, SEED, _add_system_options, _float, _int, _scale, _system
from .text import _law_words

BOUND_OPTIONS = ("--servers", "--tasks", "--tasks-pmf", "--arrival-rate", "--utilization", "--task-rate",
                 "--barrier-fraction", "--arrival")


def _bound(args) -> dict:
    from ..bounds import bound

    system = _system(args, BOUND_OPTIONS)
    out = bound(system, args.epsilon, args.form).to_dict()
    out["config"] = system.describe()
    return out


def _print_bound(out: dict) -> None:
    print(f"form              {out['form']} ({'martingale' if out['form'] == 'gigi' else 'union bound'})")
    print(f"epsilon           {out['epsilon']:g}")
    for key in ("waiting_quantile", "sojourn_quantile", "service_quantile"):
        print(f"{key:<17} {out[key]:.6g}")
    print(f"theta             {out['theta']:.6g} (theta* = {out['theta_star']:.6g}); "
          f"E[spacing] = {out['mean_spacing']:.6g}")


def _plan(args) -> dict:
    from ..planning import plan

    if args.replications is not None and not args.simulate_jobs:
        raise ParameterError("--replications must come with --simulate-jobs N (got --replications alone)")
    if args.seed is not None and not args.simulate_jobs:
        raise ParameterError("--seed must come with --simulate-jobs N (got --seed alone): the bounds are exact")
    if args.form is not None and args.barriers == 2:
        raise ParameterError("--form must not be given with --barriers 2 (got it): 2-barrier plans use the M/G/c "
                             "model, not the bounds")
    if args.min_needed_fraction != 1.0 and args.barriers != 2:
        raise ParameterError("--min-needed-fraction must come with --barriers 2 (got barriers = 1): 1-barrier "
                             "plans use l = k")
    result = plan(args.servers, args.utilization, args.epsilon, args.barriers, args.form or "gigi",
                  simulate_jobs=args.simulate_jobs, replications=args.replications or 10, seed=args.seed,
                  min_needed_fraction=args.min_needed_fraction, progress=False if args.json else None)
    return {"recommended": result["recommended"], "servers": args.servers, "utilization": args.utilization,
            "epsilon": args.epsilon, "barriers": args.barriers, "grid": result["grid"],
            "curve": result["curve"].to_dict(orient="records")}


def _print_plan(out: dict) -> None:
    import pandas as pd

    rec = out["recommended"]
    print(f"servers {out['servers']}, utilization {out['utilization']}, {out['barriers']}-barrier, "
          f"task mean s/k (constant work per job); k evaluated: {out['grid']}")
    print(pd.DataFrame(out["curve"]).round(4).to_string(index=False))
    print(f"recommended: k = {rec['tasks']}, l = {rec['needed']} ({rec['criterion']} = {rec['value']:.4g})")


def _plan_phases(args) -> dict:
    from ..phases import plan_phases

    if args.task_dist is not None and args.task_rate is not None:
        raise ParameterError("give at most one of --task-rate and --task-dist (got both)")
    law = args.task_dist if args.task_dist is not None else (
        None if args.task_rate is None else f"exponential:rate={args.task_rate!r}")
    result = plan_phases(args.tasks, law, args.sync_poll, args.max_share, args.max_phases, args.samples)
    return {"recommended": result["recommended"], "curve": result["curve"].to_dict(orient="records")}


def _print_plan_phases(out: dict) -> None:
    import pandas as pd

    rec = out["recommended"]
    print(f"k = {rec['tasks']} tasks, task law {_law_words(rec['task_law'])} split into m phases, Spark barrier() poll "
          f"{rec['sync_poll']:g}")
    print(pd.DataFrame(out["curve"]).round(4).to_string(index=False))
    print(f"recommended: at most {rec['phases']} phases (sync share {rec['share_at_recommended']:.3f} <= "
          f"{rec['max_share']:g})")


def _add_bound(sub) -> None:
    bd = sub.add_parser("bound", help=COMMAND_HELP["bound"],
                        description="Waiting, sojourn and service quantile bounds (network calculus).")
    _add_system_options(bd, BOUND_OPTIONS)
    bd.add_argument("--epsilon", type=_float("epsilon", 0, 1, True, True), required=True,
                    help="violation probability, 0 < eps < 1")
    bd.add_argument("--form", choices=("gigi", "gg"), default="gigi")
    bd.add_argument("--json", action="store_true")
    bd.set_defaults(run=_bound, show=_print_bound)


def _add_plan(sub) -> None:
    pl = sub.add_parser("plan", help=COMMAND_HELP["plan"],
                        description="Choose tasks per job for a cluster (task mean s/k, rho = lambda).")
    pl.add_argument("--servers", "-s", type=_int("servers", 1, 1_000_000), required=True)
    pl.add_argument("--utilization", type=_float("utilization", 0, 1, True, True), required=True, help="0 < rho < 1")
    pl.add_argument("--epsilon", type=_float("epsilon", 0, 1, True, True), default=0.01,
                    help="quantile 1 - eps (default 0.01)")
    pl.add_argument("--barriers", "-b", type=_int("barriers", 1, 2), default=1)
    pl.add_argument("--form", choices=("gigi", "gg"), default=None, help="bound form, 1 barrier (default gigi)")
    pl.add_argument("--simulate-jobs", type=_int("simulate-jobs", 0, 10**9), default=0,
                    help="also simulate each k (jobs per run)")
    pl.add_argument("--replications", type=_int("replications", 1, 1000), default=None)
    pl.add_argument("--min-needed-fraction", type=_float("min-needed-fraction", 0, 1, open_low=True), default=1.0,
                    help="2-barrier: consider l >= this fraction of k (default 1: l = k)")
    pl.add_argument("--seed", type=SEED, default=None)
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(run=_plan, show=_print_plan)


def _add_plan_phases(sub) -> None:
    pp = sub.add_parser("plan-phases", help=COMMAND_HELP["plan-phases"],
                        description="A task's work split into m phases with Spark's polling barrier() between.")
    pp.add_argument("--tasks", "-k", type=_int("tasks", 1, 10_000), required=True)
    pp.add_argument("--task-rate", type=_scale("task-rate"), default=None,
                    help="rate of an exponential task's whole work (default 1)")
    pp.add_argument("--task-dist", default=None, help="law of a task's whole work (instead of --task-rate)")
    pp.add_argument("--sync-poll", type=_scale("sync-poll"), default=1.0)
    pp.add_argument("--max-share", type=_float("max-share", 0, 1, True, True), default=0.5,
                    help="largest acceptable share of job time spent on sync (default 0.5)")
    pp.add_argument("--max-phases", type=_int("max-phases", 1, 1000), default=32)
    pp.add_argument("--samples", type=_int("samples", 100, 10**7), default=50_000, help="Monte Carlo jobs per m")
    pp.add_argument("--json", action="store_true")
    pp.set_defaults(run=_plan_phases, show=_print_plan_phases)
