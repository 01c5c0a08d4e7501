"""``barrier-queues replay``: a workload log under a discipline, with shaken or resampled copies and per virtual
cluster (:mod:`barrier_queues.cli`)."""

from __future__ import annotations

import sys

from .._validation import ParameterError
from .options import COMMAND_HELP, _add_clock_preset, _float, _int, _list, _option_parser, _unread
from .text import _fmt


def _located_trace(path) -> str:
    """The trace's path: as given, or a bare log name found in the logs' folder setting (said on stderr)."""
    from ..traces import locate_trace

    found, notice = locate_trace(path)
    if notice:
        print(f"barrier-queues: {notice}", file=sys.stderr, flush=True)
    return str(found)


def _replay(args) -> dict:
    from ..outputs import check_new_file
    from ..replay import replay
    from ..traces import read_trace

    args.trace = _located_trace(args.trace)

    if args.force and not args.jobs_out:
        raise ParameterError("--force must come with --jobs-out (got --force alone): nothing else is written")
    for flag, value in (("--jobs-out", args.jobs_out), ("--size-classes", args.size_classes)):
        if value is not None and not value.strip():
            raise ParameterError(f"{flag} must not be empty (got {value!r}): give a value or leave the option out")
    if args.jobs_out:
        check_new_file("--jobs-out", args.jobs_out, force=args.force, inputs=[args.trace])
    edges = None
    if args.size_classes:
        try:
            edges = [int(x) for x in args.size_classes.split(",")]
        except ValueError:
            raise ParameterError(f"--size-classes must be comma-separated integers >= 1, the lower bounds of k "
                                 f"(got {args.size_classes!r})") from None
    grid = {name: values for name, values in (("servers", args.servers), ("scheduling", args.scheduling),
                                               ("estimates", args.estimates), ("load_scale", args.load_scale))
            if values is not None and len(values) > 1}
    _check_mode(args, grid)
    trace = read_trace(args.trace, width=args.width)
    if args.by_cluster is not None:
        return _replay_by_cluster(args, trace, edges)
    if args.shake is not None or args.resample is not None:
        return _replay_shaken(args, trace)
    if grid:                                             # a trace as the workload of a grid: one row per point
        from ..replay import replay_grid

        fixed = {name: values[0] for name, values in (("servers", args.servers), ("scheduling", args.scheduling),
                                                      ("estimates", args.estimates), ("load_scale", args.load_scale))
                 if values is not None and len(values) == 1}
        table = replay_grid(trace, {**fixed, **grid}, tau=args.bsld_tau, trim=args.trim, **_replay_failures(args))
        return {"trace": trace.describe(), "rows": table.to_dict(orient="records"), "_table": table}
    result = replay(trace, servers=args.servers[0] if args.servers else None, scheduling=args.scheduling[0],
                    estimates=args.estimates[0], load_scale=args.load_scale[0], **_replay_failures(args))
    out = result.summary(tau=args.bsld_tau, trim=args.trim, size_edges=edges)
    if args.jobs_out:
        columns = ["job_id", "submit", "start", "end", "tasks"] + [c for c in ("lost", "requeues", "backoff")
                                                                   if c in result.jobs]
        result.jobs[columns].to_csv(args.jobs_out, index=False, float_format="%.17g")
        out["jobs_out"] = args.jobs_out
    return out


#: what every mode of replay reads: the log, how it is read and measured, and the system fields of a replay
_READ_ALWAYS = ("trace", "width", "bsld_tau", "trim", "seed", "json", "clock_preset")


def _check_mode(args, grid: dict) -> None:
    """The mode of a replay (by cluster, shaken, resampled, a grid, one replay) and the options it reads; any
    other option given is refused in one line, by construction (:func:`barrier_queues.cli.options._unread`)."""
    fields = (*REPLAY_FIELDS, *_READ_ALWAYS)
    if args.shake is not None and args.resample is not None:
        raise ParameterError("--shake and --resample must not be given together: each makes its own copies of the log")
    if args.by_cluster is not None:
        mode, reads = "--by-cluster runs each cluster on its own size", (*fields, "by_cluster", "size_classes")
        reads = tuple(r for r in reads if r != "servers")
    elif args.shake is not None:
        mode, reads = "--shake reports each point's metrics over the copies", (*fields, "shake", "shake_by")
    elif args.resample is not None:
        mode, reads = "--resample reports each point's metrics over the copies", (*fields, "resample",
                                                                                 "resample_load")
    elif grid:
        mode = "a grid (" + ", ".join(f"{k} {v}" for k, v in grid.items()) + ") reports one row per point"
        reads = fields
    else:
        mode, reads = "one replay", (*fields, "size_classes", "jobs_out", "force")
    given = _unread(args, reads)
    owners = {"--shake-by": "--shake N", "--resample-load": "--resample N"}
    if given and given[0] in owners:
        raise ParameterError(f"{given[0]} must come with {owners[given[0]]} (got it with {mode.split()[0]})"
                             if mode != "one replay" else f"{given[0]} must come with {owners[given[0]]} (got "
                             f"{given[0]} alone)")
    if given:
        raise ParameterError(f"{mode}: {', '.join(given)} must not be given with it")


def _replay_shaken(args, trace) -> dict:
    """``replay --shake N`` or ``--resample N``: the grid (or the one replay) on the log and on N shaken or
    resampled copies."""
    from ..replay import shaken_grid
    from ..resampling import resampled_grid

    grid = {name: values for name, values in (("servers", args.servers), ("scheduling", args.scheduling),
                                               ("estimates", args.estimates), ("load_scale", args.load_scale))
            if values is not None}
    failures = _replay_failures(args)
    if args.resample is not None:
        table, info = resampled_grid(trace, grid, args.resample, 1.0 if args.resample_load is None else
                                     args.resample_load, seed=failures.pop("seed"), tau=args.bsld_tau,
                                     trim=args.trim, **failures)
        return {"trace": trace.describe(), "rows": table.to_dict(orient="records"), "shaken": info, "_table": table}
    table, info = shaken_grid(trace, grid, args.shake, 60.0 if args.shake_by is None else args.shake_by,
                              seed=failures.pop("seed"), tau=args.bsld_tau, trim=args.trim, **failures)
    return {"trace": trace.describe(), "rows": table.to_dict(orient="records"), "shaken": info, "_table": table}


def _replay_by_cluster(args, trace, edges) -> dict:
    """``replay --by-cluster``: every sized cluster on its own size, for each combination of the listed
    disciplines, estimates and load scales (the log read once); one combination gives its summary, several a
    list of them under ``runs``."""
    import itertools
    from pathlib import Path

    from ..replay import check_aging, check_estimates, replay_by_cluster

    spec = args.by_cluster.strip()
    if Path(spec).is_file():
        spec = ",".join(x.strip() for x in Path(spec).read_text().replace("\n", ",").split(",") if x.strip())
    for name in ("scheduling", "estimates", "load_scale"):
        values = getattr(args, name)
        if len(set(map(str, values))) < len(values):
            raise ParameterError(f"--{name.replace('_', '-')} must list distinct values (got {values})")
    check_estimates(args.scheduling, args.estimates)
    failures = _replay_failures(args)
    check_aging(args.scheduling, failures)
    runs = []
    for rule, estimates, scale in itertools.product(args.scheduling, args.estimates, args.load_scale):
        own = rule == "aging"                            # (aging's wait goes to its runs alone, as a grid's)
        result = replay_by_cluster(trace, spec, scheduling=rule, estimates=estimates, load_scale=scale,
                                   **{k: v for k, v in failures.items() if own or k != "aging_after"})
        runs.append(result.summary(tau=args.bsld_tau, trim=args.trim, size_edges=edges))
    if len(runs) == 1:
        return {"mode": "by-cluster", **runs[0]}
    return {"mode": "by-cluster", "trace": runs[0]["trace"], "runs": runs}


def _seed_needs_failures(failure_rate, seed, wait_budget=None, hold_timeout=None) -> None:
    """A replay's only randomness is its failure clocks, exponential patience and exponential hold timeouts: a
    seed without any of them is refused, not ignored."""
    drawn = any(isinstance(v, str) and v.strip().startswith("exp:") for v in (wait_budget, hold_timeout))
    if failure_rate is None and not drawn and seed is not None:
        raise ParameterError(f"--seed must come with --failure-rate, --wait-budget exp:MEAN or --hold-timeout "
                             f"exp:MEAN (got --seed {seed} alone): a replay without them has no randomness")


def _replay_failures(args) -> dict:
    """A replay's failure, clock and node options, and its seed."""
    _seed_needs_failures(args.failure_rate, args.seed, args.wait_budget, args.hold_timeout)
    from ..clocks import OPTIONS

    clock = {name: getattr(args, name) for name in OPTIONS if getattr(args, name) is not None}
    nodes = {"node_size": args.node_size} if args.node_size is not None else {}
    retry = {"retry_work": args.retry_work} if args.retry_work is not None else {}
    return {"failure_rate": args.failure_rate, "max_attempts": args.max_attempts,
            "resubmit_delay": args.resubmit_delay, "seed": 0 if args.seed is None else args.seed, **retry, **clock,
            **nodes}


def _print_replay(out: dict) -> None:
    tr = out["trace"]
    if out.get("mode") == "by-cluster":
        _print_by_cluster(out)
        return
    if "rows" in out:                                    # a grid
        skipped = ", ".join(f"{n} {reason}" for reason, n in tr["skipped"].items()) or "none"
        print(f"trace             {tr['source']} ({tr['format']}): {tr['jobs']} jobs; skipped: {skipped}")
        if "shaken" in out:
            _print_shaken(out)
            return
        print(out["_table"].drop(columns=["point"]).to_string(index=False, float_format=lambda x: f"{x:.6g}"))
        return
    skipped = ", ".join(f"{n} {reason}" for reason, n in tr["skipped"].items()) or "none"
    print(f"trace             {tr['source']} ({tr['format']}): {tr['replayed']} jobs replayed; skipped: {skipped}")
    for note in tr["notes"]:
        print(f"note              {note}")
    nodes = f" in nodes of {out['node_size']}" if out.get("node_size") else ""
    print(f"setting           {out['servers']} workers{nodes}, {out['scheduling']}, estimates {out['estimates']}, "
          f"load scale {out['load_scale']:g}; {out['trimming']}")
    if out.get("failures"):
        f = out["failures"]
        print(f"failures          rate {f['failure_rate']:g} per running task, at most "
              f"{f['max_attempts'] or 'unlimited'} attempts, resubmit delay {f['resubmit_delay']:g}, retry "
              f"{f['retry_work']}, seed {f['seed']}: {out['aborted_jobs']} jobs aborted (not in the means), "
              f"{out['mean_attempts']:.4g} attempts per job")
    if out.get("clocks"):
        c = out["clocks"]
        jitter = f" x (1 + {c['requeue_jitter']:g} u)" if c.get("requeue_jitter") else ""
        requeue = (f", requeued after min({c['requeue_backoff'][1]:g}, {c['requeue_backoff'][0]:g} x 2^(n-1)"
                   f"{jitter}) in {c.get('requeue_order') or 'creation'} order"
                   + (f", lost after {c['requeue_limit']} requeue(s)" if c["requeue_limit"] is not None else "")
                   if c["on_budget"] == "requeue" else ", then the job leaves")
        print(f"clocks            wait budget {c['wait_budget']}{requeue}: {out['lost_jobs']} jobs lost "
              f"({_fmt(out['lost_share'], '.2%')}; {_fmt(out['lost_work_share'], '.2%')} of the work; not in the "
              f"means), {_fmt(out['requeues_per_job'], '.4g')} requeues and {_fmt(out['backoff_per_job'], '.4g')} "
              "time in backoff per job")
    if out["mean_waiting"] is None:
        print("metrics           no job measured")
        return
    print(f"waiting           mean {out['mean_waiting']:.6g}, max {out['max_waiting']:.6g}")
    print(f"sojourn           mean {out['mean_sojourn']:.6g}")
    print(f"bounded slowdown  mean {out['mean_bounded_slowdown']:.6g}, max {out['max_bounded_slowdown']:.6g} "
          f"(tau {out['bsld_tau']:g})")
    util = "not defined" if out["utilization"] is None else f"{out['utilization']:.4f}"
    print(f"utilization       {util}; makespan {out['makespan']:.6g}")
    lost = "lost_share" in out
    print(f"{'size class':<12}{'jobs':>8}{'mean wait':>14}{'max wait':>14}{'mean bsld':>12}{'max bsld':>12}"
          f"{'late':>7}{'trend':>7}" + (f"{'lost':>9}" if lost else ""))
    for c in out["classes"]:
        print(f"{c['class']:<12}{c['jobs']:>8}{_fmt(c['mean_waiting'], '>14.6g')}{_fmt(c['max_waiting'], '>14.6g')}"
              f"{_fmt(c['mean_bounded_slowdown'], '>12.4g')}{_fmt(c['max_bounded_slowdown'], '>12.4g')}"
              f"{c['late_starts']:>7}{_fmt(c['waiting_trend'], '>7.2f')}"
              + (_fmt(c["lost_share"], ">9.2%") if lost else ""))
    print("starving          " + (", ".join(out["starving_classes"]) + " (a start after the last submission, or a "
                                  "waiting that grows through the log)" if out["starving_classes"] else "none"))
    if out.get("jobs_out"):
        print(f"jobs written to   {out['jobs_out']}")


def _print_shaken(out: dict) -> None:
    """``replay --shake`` (or ``--resample``) as text: per point the log's metric, its interval over the copies
    and how often the point keeps its rank; then how often the log's best point stays the best."""
    from ..replay import SHAKEN_METRICS

    info, table = out["shaken"], out["_table"]
    if "resamples" in info:
        print(f"resampled         {info['resamples']} logs of the users' weeks drawn anew, {info['load']:g} x the "
              f"active users of each week, seed {info['seed']}; {int(info['level'] * 100)}% t intervals over them")
    else:
        print(f"shaken            {info['shakes']} copies, each submission moved by U(-{info['by']:g}, "
              f"{info['by']:g}), seed {info['seed']}; {int(info['level'] * 100)}% t intervals over the copies")
    keys = [c for c in ("servers", "scheduling", "estimates", "load_scale") if table[c].nunique() > 1] or ["scheduling"]
    word = "resampled" if "resamples" in info else "shaken"
    for m in SHAKEN_METRICS:
        print(f"{m}")
        for _, row in table.iterrows():
            point = ", ".join(f"{k} {row[k]}" for k in keys)
            print(f"  {point:<34} {row[m]:>12.6g}  {word} [{row[m + '_shaken_low']:.6g}, "
                  f"{row[m + '_shaken_high']:.6g}]; keeps its rank in {row[m + '_rank_kept']:.0%}")
        kept = info["best_kept"][m]
        print(f"  the log's best point stays the best in {kept:.0%} of the {word} logs"
              + ("" if kept == 1 else f": a ranking that a {word} log overturns"))


def _print_by_cluster(out: dict) -> None:
    """``replay --by-cluster`` as text: per combination of options, one row per cluster, then all clusters
    together and the unsized ones."""
    for i, run in enumerate(out.get("runs", [out])):
        if i:
            print()
        _print_one_by_cluster(run)


def _print_one_by_cluster(out: dict) -> None:
    tr = out["trace"]
    print(f"trace             {tr['source']} ({tr['format']}), {out['scheduling']}, load scale "
          f"{out['load_scale']:g}, estimates {out['estimates']}")
    print(f"{'cluster':<10}{'workers':>8}{'jobs':>8}{'skipped':>8}{'mean wait':>12}{'max wait':>12}"
          f"{'mean bsld':>11}{'utilization':>12}")
    rows = [(name, c) for name, c in out["clusters"].items()] + [("all", out["all"])]
    for name, c in rows:
        skipped = sum(c.get("skipped", {}).values()) if name != "all" else sum(
            sum(x["skipped"].values()) for x in out["clusters"].values())
        print(f"{name:<10}{c['servers']:>8}{c['measured_jobs']:>8}{skipped:>8}{_fmt(c['mean_waiting'], '>12.6g')}"
              f"{_fmt(c['max_waiting'], '>12.6g')}{_fmt(c['mean_bounded_slowdown'], '>11.4g')}"
              f"{_fmt(c['utilization'], '>12.4f')}")
    unsized = out["unsized"]
    if unsized["jobs"]:
        names = ", ".join(f"{k} ({v})" for k, v in unsized["clusters"].items())
        print(f"unsized           {unsized['jobs']} jobs of clusters given no size, skipped: {names}")


#: the system fields a replay reads (generated from the fields, as simulate's options are): each one's default
#: and what the command says of it beside the field's help; GRID_OPTIONS take a comma-separated list (a grid)
REPLAY_FIELDS = {"servers": (None, "default: the log's MaxProcs"),
                 "scheduling": (["fcfs"], "backfill is EASY"),
                 "estimates": (["exact"], "read by backfill alone"),
                 "load_scale": ([1.0], ""),
                 "node_size": (None, "a gang of k <= G GPUs on one node; jobs of a cluster of no whole nodes are "
                               "refused"),
                 "failure_rate": (None, "per trace time unit"),
                 "max_attempts": (None, ""),
                 "resubmit_delay": (None, ""),
                 "retry_work": (None, "a trace's retry redoes the recorded work: identical (the default) or another "
                                "model that does"),
                 "wait_budget": (None, "in the log's time unit; 'exp:MEAN' patience is drawn from --seed"),
                 "on_budget": (None, ""),
                 "requeue_backoff": (None, ""),
                 "requeue_limit": (None, ""),
                 "requeue_order": (None, ""),
                 "requeue_jitter": (None, "u drawn from --seed"),
                 "aging_after": (None, "in the log's time unit"),
                 "hold_timeout": (None, "in the log's time unit")}


def _replay_system_options(rp) -> None:
    """The system fields of :data:`REPLAY_FIELDS` as replay's options, from
    :func:`barrier_queues.system.option_fields` (ranges, choices and help: one place)."""
    from ..replay import GRID_OPTIONS
    from ..system import option_fields

    offered = {o["name"]: o for o in option_fields("replay")}
    for name, (default, note) in REPLAY_FIELDS.items():
        o = offered[name]
        grid = name in GRID_OPTIONS
        named = o["kind"] != "choice" or all(c in o["help"] for c in o["choices"])
        choices = "" if named else f" ({', '.join(o['choices'])})"
        said = "; ".join(x for x in (note, "a comma-separated list makes a grid" if grid else "") if x)
        rp.add_argument(o["flag"], dest=name, type=_list(_option_parser(o)) if grid else _option_parser(o),
                        default=default, help=o["help"] + choices + (f"; {said}" if said else ""))


def _add_replay(sub) -> None:
    rp = sub.add_parser("replay", help=COMMAND_HELP["replay"],
                        description="Replay a workload log under a scheduling discipline: an SWF log of the "
                                    "Parallel Workloads Archive (plain or gzip), a CSV trace, the Philly GPU "
                                    "cluster's log, or a Spark event log.")
    rp.add_argument("trace", help="SWF file (.swf or .swf.gz), CSV trace, Philly log, or Spark event log (file or "
                                  "folder)")
    _replay_system_options(rp)
    rp.add_argument("--width", choices=("requested", "allocated"), default="requested",
                    help="SWF job width: field 8 (requested processors) first, else field 5 (default), or the "
                         "other way round")
    rp.add_argument("--bsld-tau", type=_float("bsld-tau", 0, 1e9, open_low=True), default=10.0,
                    help="bounded slowdown's threshold in the trace's time unit (default 10 s)")
    rp.add_argument("--trim", action="store_true",
                    help="leave out the first 1%% of the jobs and those ending after the last submission")
    rp.add_argument("--size-classes", default=None,
                    help="lower bounds of k of the size classes, e.g. 1,2,4,16 (default 1, 2, 4, 8, ...)")
    rp.add_argument("--seed", type=_int("seed", 0, 2**63 - 1), default=None,
                    help="with --failure-rate: seed of the failure clocks (default 0)")
    rp.add_argument("--jobs-out", default=None, help="write one row per job (job_id, submit, start, end, tasks)")
    rp.add_argument("--force", action="store_true", help="overwrite --jobs-out if it exists")
    rp.add_argument("--by-cluster", default=None, metavar="SIZES",
                    help="replay each virtual cluster of the log (the Philly log's cluster column) on its own size: "
                         "'vc:workers,vc:workers,...' or a file holding that; the jobs of a cluster given no size "
                         "are skipped and counted by name")
    rp.add_argument("--shake", type=_int("shake", 2, 10_000), default=None, metavar="N",
                    help="also replay N shaken copies of the log (each submission moved by its own U(-S, S)): "
                         "every metric with its interval over them, and how often each point keeps its rank")
    rp.add_argument("--shake-by", type=_float("shake-by", 0, 1e9, open_low=True), default=None, metavar="S",
                    help="with --shake: the largest move of a submission, in the log's time unit (default 60)")
    rp.add_argument("--resample", type=_int("resample", 2, 10_000), default=None, metavar="N",
                    help="also replay N resampled logs (its users' weeks drawn anew, after Zakay and Feitelson; an "
                         "SWF log's users; a log naming no users, as Philly's: its weeks): every metric with its "
                         "interval over them")
    rp.add_argument("--resample-load", type=_float("resample-load", 0, 100, open_low=True), default=None,
                    metavar="L", help="with --resample: L times the active users of each week (default 1; above 1 "
                                      "a busier cluster of the same users, not compressed time)")
    rp.add_argument("--json", action="store_true")
    _add_clock_preset(rp)
    rp.set_defaults(run=_replay, show=_print_replay)
