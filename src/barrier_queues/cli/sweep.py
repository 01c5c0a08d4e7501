"""``barrier-queues sweep``: grids of drawn systems (moldable jobs among them) and of a trace's replays
(:mod:`barrier_queues.cli`)."""

from __future__ import annotations

from .._validation import ParameterError
from .options import (
    COMMAND_HELP,
    _add_clock_preset,
    _add_system_options,
    _choice,
    _float,
    _list,
    _option_parser,
    _run_options,
    _system_options,
    _unread,
)
from .replay import REPLAY_FIELDS, _located_trace, _seed_needs_failures

#: what every mode of sweep reads beside its own options: where the table goes, and how it is shown
_ALWAYS = ("out", "format", "json", "seed")
#: the run options of a grid of drawn systems (``_run_options``) and where its points run
_GRID_RUN = ("jobs", "replications", "warmup", "workers", "allow_unstable", "precision", "precision_abs", "budget",
             "backend", "master")
#: the options only a trace sweep reads (beside the replay fields: ``REPLAY_FIELDS``)
_TRACE_OWN = ("trace", "estimates", "load_scale", "bsld_tau", "trim")


def _sweep(args) -> dict:
    from ..backends import resolve
    from ..sweep import grid_from_options, sweep

    if args.trace is not None:
        args.trace = _located_trace(args.trace)
        return _trace_sweep(args)
    system = [dest for _, (dest, _, _) in _system_options().items()]
    given = _unread(args, (*system, *_GRID_RUN, *_ALWAYS, "clock_preset"))
    if given:
        flag = given[0]
        raise ParameterError(f"{flag} must come with --trace (got {flag} without it: a sweep of drawn systems "
                             f"does not read it)")
    where = resolve(args.backend, args.master)            # (the SWEEP_BACKEND setting, checked, when not given)

    options = {dest: getattr(args, dest) for dest in system if getattr(args, dest) is not None}
    if "servers" not in options:
        raise ParameterError("--servers must be given (an integer >= 1, or a comma-separated list)")
    grid = grid_from_options(options)
    table = sweep(grid, args.out, jobs=args.jobs, replications=args.replications, seed=args.seed,
                  warmup=args.warmup, backend=where, master=None, workers=args.workers,
                  fmt=args.format, allow_unstable=args.allow_unstable, progress=False if args.json else None,
                  precision=args.precision, absolute_precision=args.precision_abs, budget=args.budget)
    return {"out": args.out, "points": int(len(table)), "backend": where.name,
            "rows": table.to_dict(orient="records") if args.json else None, "_table": table}


def _trace_sweep(args) -> dict:
    from ..sweep import trace_sweep

    # a trace sweep reads the fields a replay reads (the trace sets everything else) and how it is replayed
    given = _unread(args, (*REPLAY_FIELDS, *_TRACE_OWN, *_ALWAYS, "clock_preset"))
    if given:
        raise ParameterError(f"--trace takes its workload from the trace: {', '.join(given)} must not be given with "
                             "it (a trace sweep varies --servers, --scheduling, --estimates and --load-scale)")
    from ..replay import GRID_OPTIONS

    failures = {}                                   # every other field a replay reads: one value for all points
    for name in REPLAY_FIELDS:
        value = getattr(args, name)
        if name in GRID_OPTIONS or value is None:
            continue
        if isinstance(value, list) and len(value) > 1:
            raise ParameterError(f"--{name.replace('_', '-')} must be one value with --trace (got {value}): a trace "
                                 "sweep varies --servers, --scheduling, --estimates and --load-scale")
        failures[name] = value[0] if isinstance(value, list) else value
    _seed_needs_failures(failures.get("failure_rate"), args.seed, failures.get("wait_budget"),
                         failures.get("hold_timeout"))
    grid = {"servers": args.servers, "scheduling": args.scheduling, "estimates": args.estimates,
            "load_scale": args.load_scale}
    table = trace_sweep(args.trace, {k: v for k, v in grid.items() if v is not None}, args.out, fmt=args.format,
                        tau=args.bsld_tau, trim=args.trim, seed=args.seed or 0, **failures)
    return {"out": args.out, "points": int(len(table)), "backend": "local",
            "rows": table.to_dict(orient="records") if args.json else None, "_table": table}


def _print_sweep(out: dict) -> None:
    table = out["_table"]
    cols = [c for c in ("point", "servers", "tasks", "scheduling", "moldable", "take_fraction", "patience_wait",
                        "requirement", "estimates", "load_scale", "wait_budget", "on_budget", "arrival_rate",
                        "utilization", "mean_waiting", "mean_sojourn", "mean_workers", "mean_bounded_slowdown",
                        "sojourn_q0.99", "lost_share", "requeues_per_job", "stable") if c in table.columns]
    print(table[cols].to_string(index=False))
    print(f"{out['points']} points in {out['out']} ({out['backend']} backend)")


def _trace_grid_options(sw) -> None:
    """The replay fields a trace sweep varies besides the system's (``estimates``, ``load_scale``), generated
    from their field metadata as replay's own (:func:`barrier_queues.system.option_fields`)."""
    from ..system import option_fields

    offered = {o["name"]: o for o in option_fields("replay")}
    for name in ("estimates", "load_scale"):
        o = offered[name]
        choices = f" ({', '.join(o['choices'])})" if o["kind"] == "choice" else ""
        sw.add_argument(o["flag"], dest=name, type=_list(_option_parser(o)), default=None,
                        help=f"with --trace: {o['help']}{choices} (a list sweeps it)")


def _add_sweep(sub) -> None:
    sw = sub.add_parser("sweep", help=COMMAND_HELP["sweep"],
                        description="One row per grid point: the options of simulate, numeric ones may be lists.")
    _add_system_options(sw, lists=True)
    _run_options(sw)
    sw.add_argument("--out", required=True, help="folder for the results (resumable: rerun to complete it, or "
                    "with more values or replications to extend it; only what is new is computed)")
    sw.add_argument("--format", default="csv", type=_choice("format", ("csv", "parquet")))
    sw.add_argument("--backend", default=None, type=_choice("backend", ("local", "spark")),
                    help="where the points run (default: the SWEEP_BACKEND setting, else local)")
    sw.add_argument("--master", default=None, help="Spark master with --backend spark: local[N], "
                                                   "local-cluster[N,1,MB] or spark://host:port")
    sw.add_argument("--trace", default=None,
                    help="a trace as the workload (SWF, CSV or Spark event log, as replay reads it): one replay per "
                         "combination of --servers, --scheduling, --estimates and --load-scale")
    _trace_grid_options(sw)
    sw.add_argument("--bsld-tau", type=_float("bsld-tau", 0, 1e9, open_low=True), default=None,
                    help="with --trace: bounded slowdown's threshold (default 10 s)")
    sw.add_argument("--trim", action="store_true", help="with --trace: the Tsafrir 2007 trimming")
    sw.add_argument("--json", action="store_true")
    _add_clock_preset(sw)
    sw.set_defaults(run=_sweep, show=_print_sweep)
