"""Command line: ``barrier-queues <command> ...``.

Commands
--------
stability
    Maximum stable load of a barrier system (Table I, CTMC, order
    statistics; timeout and knee release and phases for 2 barriers).
simulate
    Simulate any system (Appendix A, section 2, Appendix B): means and
    quantiles of waiting, sojourn and execution time with confidence
    intervals; ``--saturated`` estimates the stability limit.
sweep
    The options of ``simulate`` where numeric options may be comma-separated
    lists: one row per grid point, locally or on Spark, resumable.
bound
    Waiting, sojourn and service quantile bounds of a 1-barrier system
    (stochastic network calculus, paper section III).
plan
    The number of tasks per job k (and l) that minimises delay for a cluster.
plan-phases
    How many ``barrier()`` phases per job before Spark's sync cost dominates.
spark-bench
    Run barrier jobs on a real Spark (local-cluster by default) and record them.
spark-analyze
    Summarise a Spark event log: waiting and sojourn times, blocking-overhead
    samples and their KS test against min(U(0,R), Exp(lambda)).
replay
    Replay a real workload (an SWF log, a CSV trace or a Spark event log)
    under fcfs, first-fit, EASY backfill or server-filling: waiting,
    sojourn and bounded slowdown, overall and per size class.

Every bad input ends in exit status 2 and one line
``barrier-queues: error: ...`` naming the parameter and its valid range; no
command writes over an existing file unless given ``--force``, nor over its
own input; ``--json`` prints one strict JSON object (no NaN: null, with the
reason under ``null_values``).
"""

from __future__ import annotations

import argparse
import functools
import gc
import math
import os
import re
import sys
import warnings

from ._validation import ParameterError

PROG = "barrier-queues"


#: each command's one-line help (``barrier-queues --help`` lists them)
COMMAND_HELP = {
    "stability": "maximum stable load (Table I, CTMC, order statistics)",
    "simulate": "simulate a barrier system (queue or saturated)",
    "sweep": "simulate a grid of systems (comma-separated values), locally or on Spark",
    "bound": "quantile bounds of a 1-barrier system (section III)",
    "plan": "the k (and l) that minimises delay",
    "plan-phases": "how many barrier() phases before the sync cost dominates",
    "spark-bench": "run barrier jobs on a real Spark",
    "spark-analyze": "summarise a Spark event log",
    "replay": "replay a workload log (SWF, CSV, Spark event log) under a discipline",
}


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2) instead of usage + message, and no abbreviated options.

    Abbreviations are off because a prefix of one option silently became
    another: ``plan-phases --sync spark`` was read as ``--sync-poll spark``.
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        # a value such as "-1,2" (a list of negative numbers) is a value, not an option: it reaches the
        # option's check, which names the parameter and its range
        self._negative_number_matcher = re.compile(r"^-\d[\d.,:eE+-]*$|^-\.\d[\d.,:eE+-]*$")

    def error(self, message):
        self.exit(2, f"{PROG}: error: {message}\n")

    def _get_formatter(self):
        # argparse builds a formatter for every option it adds, each asking the terminal its width; ask once
        return self.formatter_class(prog=self.prog, width=_help_width())


@functools.cache
def _help_width() -> int:
    """argparse's default help width (the terminal's columns less 2), looked up once per process."""
    import shutil

    return shutil.get_terminal_size().columns - 2


def _int(name: str, low: int | None = None, high: int | None = None):
    def parse(text):
        try:
            value = int(text, 10)
        except (TypeError, ValueError):
            try:
                f = float(text)
            except ValueError:
                f = math.nan
            if not (math.isfinite(f) and f.is_integer()):
                raise argparse.ArgumentTypeError(_range_msg(name, "an integer", low, high, text)) from None
            value = int(f)
        if (low is not None and value < low) or (high is not None and value > high):
            raise argparse.ArgumentTypeError(_range_msg(name, "an integer", low, high, text))
        return value
    return parse


def _float(name: str, low: float | None = None, high: float | None = None, open_low: bool = False,
           open_high: bool = False):
    def parse(text):
        try:
            value = float(text)
        except (TypeError, ValueError):
            value = math.nan
        bad = not math.isfinite(value)
        if not bad and low is not None:
            bad = value <= low if open_low else value < low
        if not bad and high is not None:
            bad = value >= high if open_high else value > high
        if bad:
            raise argparse.ArgumentTypeError(_range_msg(name, "a finite number", low, high, text, open_low, open_high))
        return value
    return parse


def _scale(name: str):
    """A rate or a time in seconds, ``1e-9 <= x <= 1e9``: no reciprocal, product or
    sum of such values leaves the floating-point range."""
    return _float(name, 1e-9, 1e9)


def _range_msg(name, what, low, high, got, open_low=False, open_high=False) -> str:
    if low is not None and high is not None:
        rng = f" with {low} {'<' if open_low else '<='} {name} {'<' if open_high else '<='} {high}"
    elif low is not None:
        rng = f" {'>' if open_low else '>='} {low}"
    elif high is not None:
        rng = f" {'<' if open_high else '<='} {high}"
    else:
        rng = ""
    return f"{name} must be {what}{rng} (got {got!r})"


def _list(parse):
    """A comma-separated list of values for sweeps (each parsed by ``parse``)."""
    def parse_list(text):
        items = [t.strip() for t in str(text).split(",")]
        if not items or any(t == "" for t in items):
            raise argparse.ArgumentTypeError(f"a list must be comma-separated values without empty items "
                                             f"(got {text!r})")
        return [parse(t) for t in items]
    return parse_list


SEED = _int("seed", 0, 2**128 - 1)


# --------------------------------------------------------------------------------------------------
# the system options, shared by simulate, sweep and bound

def _option_parser(o: dict):
    label = o["flag"][2:]
    if o["kind"] == "int":
        return _int(label, o["low"], o["high"])
    if o["kind"] == "float":
        return _float(label, o["low"], o["high"], open_low=o["open_low"])
    if o["kind"] == "choice":
        return _choice(label, o["choices"])
    return str


def _system_options() -> dict:
    """``{flag: (dest, parser, help)}``: generated from the system's fields and the rule and scheduler
    registries (:func:`barrier_queues.system.option_fields`), plus ``--utilization``."""
    from .system import option_fields

    out = {}
    for o in option_fields():
        listed = o["kind"] == "choice" and o["name"] not in ("release", "sync", "retry_work")   # registries list theirs
        choices = f" ({', '.join(o['choices'])})" if listed else ""
        out[o["flag"]] = (o["name"], _option_parser(o), o["help"] + choices)
        if o["name"] == "arrival_rate":
            out["--utilization"] = ("utilization", _float("utilization", 0, open_low=True),
                                    "offered utilization rho > 0 (instead of --arrival-rate)")
    return out


def _short_flags() -> dict:
    from .system import option_fields

    return {o["flag"]: o["short"] for o in option_fields() if o["short"]}


def _numeric() -> set:
    from .system import option_fields

    return {o["name"] for o in option_fields() if o["kind"] in ("int", "float")} | {"utilization"}


def _choice(name, choices):
    def parse(text):
        if text not in choices:
            raise argparse.ArgumentTypeError(f"{name} must be one of {', '.join(choices)} (got {text!r})")
        return text
    return parse


#: choice and text options a sweep may list (their values hold no comma)
LISTED_CHOICES = ("scheduling", "wait_budget", "on_budget", "requeue_order")


def _add_system_options(p, names=None, lists: bool = False, required=()):
    short, numeric = _short_flags(), _numeric()
    for option, (dest, parse, help_) in _system_options().items():
        if names is not None and option not in names:
            continue
        listed = lists and (dest in numeric or dest in LISTED_CHOICES)
        if listed:
            parse = _list(parse)
        flags = [option] + ([short[option]] if option in short else [])
        p.add_argument(*flags, dest=dest, type=parse, default=None, required=option in required,
                       help=help_ + (" (a comma-separated list sweeps it)" if listed else ""))


def _system_kwargs(args, names=None) -> dict:
    kw = {}
    for option, (dest, _, _) in _system_options().items():
        if (names is not None and option not in names) or dest == "utilization":
            continue
        value = getattr(args, dest, None)
        if value is not None:
            kw[dest] = value
    return kw


def _system(args, names=None, need_rate: bool = True):
    from .system import BarrierSystem

    kw = _system_kwargs(args, names)
    utilization = getattr(args, "utilization", None)
    if utilization is not None and "arrival_rate" in kw:
        raise ParameterError("give at most one of --arrival-rate and --utilization (got both)")
    if "workload" in kw:
        kw = _with_workload(kw, utilization, need_rate and not getattr(args, "saturated", False))
    if "servers" not in kw:
        raise ParameterError("--servers must be given (an integer >= 1), or a --workload file with servers (cores)")
    if "tasks" not in kw and "tasks_pmf" not in kw and "workload" not in kw:
        raise ParameterError("give --tasks K (1 <= K <= servers), --tasks-pmf 'k:p,...' or --workload FILE "
                             "(got none)")
    if utilization is not None:
        from .load import system_at_utilization

        return system_at_utilization(kw, utilization)
    if need_rate and "arrival_rate" not in kw:
        raise ParameterError("--arrival-rate must be given (a number > 0), or --utilization")
    return BarrierSystem(**kw)


def _input_files(args) -> list[str]:
    """The files a command reads: an empirical task law's file, a workload file."""
    import re

    files = []
    spec = getattr(args, "task_dist", None)
    if isinstance(spec, str):
        files += re.findall(r"file=([^,]+)", spec)
    if getattr(args, "workload", None):
        files.append(args.workload)
    return files


def _with_workload(kw: dict, utilization, need_rate: bool) -> dict:
    """Read a --workload file: its classes, and its servers, arrival rate and scheduling where the command
    line does not give them (options given on the command line override the file)."""
    from .workload import read_workload

    doc = read_workload(kw["workload"])
    for notice in doc.get("notices", ()):
        print(f"barrier-queues: --workload {kw['workload']}: {notice}", file=sys.stderr, flush=True)
    kw = dict(kw, workload=doc["classes"])
    for key in ("servers", "scheduling", "arrival"):
        if key in doc and key not in kw:
            kw[key] = doc[key]
    if "arrival_rate" in doc and "arrival_rate" not in kw and utilization is None and need_rate:
        kw["arrival_rate"] = doc["arrival_rate"]
    if "mjqm_policy" in doc and "scheduling" not in kw:
        raise ParameterError(f"--scheduling must be given for MJQM's policy {doc['mjqm_policy']!r}, which has no "
                             "counterpart here (fcfs, first-fit, backfill and server-filling do)")
    return kw


# --------------------------------------------------------------------------------------------------
# commands

def _stability(args) -> dict:
    from .stability import stability_limit

    system = _system(args, need_rate=False)
    lim = stability_limit(system, method=args.method, max_states=args.max_states)
    out = lim.to_dict()
    if out["states"] is None:
        out.pop("states")
    if out["lambda_max_ci"] is None:
        out.pop("lambda_max_ci")
    out["lambda_max_unit"] = "jobs per unit time" + (" (mu = 1)" if system.task_rate == 1.0 else "")
    out["system"] = system.describe()
    return out


def _print_stability(out: dict) -> None:
    name = f"({out['servers']},{out['tasks']},{out['needed']}) {out['barriers']}-barrier"
    print(f"system            {name}")
    print(f"task law          {_law_words(out['task_law'])}")
    print(f"method            {out['method']}" + (f" ({out['states']:,} states)" if "states" in out else ""))
    ci = f"  95% CI [{out['lambda_max_ci'][0]:.6g}, {out['lambda_max_ci'][1]:.6g}]" if "lambda_max_ci" in out else ""
    print(f"lambda_max        {out['lambda_max']:.10g}  {out['lambda_max_unit']}{ci}")
    print(f"rho_max           {out['rho_max']:.10g}")
    print(f"rho_useful        {out['rho_useful']:.10g}")
    print(f"task_throughput   {out['task_throughput']:.10g}  tasks per worker per mean task time")


#: what a moldable run reads of simulate's options (Appendix B, section 7); every other option of simulate given
#: with --moldable is refused, found by comparing each option with its default (SIMULATE_DEFAULTS), so that an
#: option added to simulate is refused with --moldable until the moldable path reads it
MOLDABLE_READS = {"servers", "tasks", "barriers", "task_dist", "task_rate", "arrival_rate", "utilization", "arrival",
                  "jobs", "replications", "seed", "saturated", "moldable", "take_fraction", "patience_wait",
                  "requirement", "allow_unstable", "json"}
#: the saturated moldable run: all jobs at time 0, so no load and no arrival process
MOLDABLE_SATURATED_REFUSED = ("arrival_rate", "utilization", "arrival")
#: simulate's options and their defaults (filled when its parser is built)
SIMULATE_DEFAULTS: dict = {}


def _simulate_moldable(args) -> dict:
    from .moldable import simulate_moldable

    given = [name for name, default in SIMULATE_DEFAULTS.items()
             if name not in MOLDABLE_READS and getattr(args, name, default) != default]
    if args.saturated:
        given += [name for name in MOLDABLE_SATURATED_REFUSED if getattr(args, name) is not None]
    if given:
        flags = ", ".join("--" + g.replace("_", "-") for g in given)
        raise ParameterError(f"--moldable must not be combined with {flags}: a moldable run reads only "
                             f"{', '.join('--' + n.replace('_', '-') for n in sorted(MOLDABLE_READS))} "
                             "(the load as --arrival-rate or --utilization, or --saturated for the limit)")
    if args.task_dist is not None and args.task_rate is not None:
        raise ParameterError(f"--task-rate must not be given with --task-dist (got both: {args.task_dist!r} "
                             "sets the task law); give the rate in the law")
    law = args.task_dist if args.task_dist is not None else (
        None if args.task_rate is None else f"exponential:rate={args.task_rate!r}")
    if args.saturated:
        from .moldable import saturated_moldable

        if args.servers is None or args.tasks is None:
            raise ParameterError("--moldable needs --servers and --tasks")
        out = saturated_moldable(args.servers, args.tasks, args.moldable, args.take_fraction, args.patience_wait,
                                 barriers=args.barriers or 1, task_dist=law, jobs=args.jobs,
                                 replications=max(args.replications, 2), seed=args.seed, requirement=args.requirement)
        out.update(mode="moldable-saturated", config={"servers": args.servers, "tasks": args.tasks,
                                                      "barriers": args.barriers or 1, "task_dist": law,
                                                      "seed": args.seed, "replications_asked": args.replications})
        return out
    if args.servers is None or args.tasks is None or (args.arrival_rate is None) == (args.utilization is None):
        raise ParameterError("--moldable needs --servers, --tasks and one of --arrival-rate and --utilization")
    rate = args.arrival_rate
    if args.utilization is not None:
        from .moldable import utilization_per_rate

        rate = args.utilization / utilization_per_rate(args.servers, args.tasks, law)
    out = simulate_moldable(args.servers, args.tasks, rate, args.moldable, args.take_fraction,
                            args.patience_wait, barriers=args.barriers or 1, task_dist=law,
                            arrival=args.arrival or "poisson", jobs=args.jobs, replications=args.replications,
                            seed=args.seed, requirement=args.requirement, allow_unstable=args.allow_unstable)
    out.update(mode="moldable", config={"servers": args.servers, "tasks": args.tasks, "barriers": args.barriers or 1,
                                        "arrival_rate": rate, "utilization": args.utilization, "task_dist": law,
                                        "seed": args.seed})
    return out


def _simulate(args) -> dict:
    from .outputs import check_new_file
    from .saturated import saturated_throughput
    from .simulate import simulate

    if args.moldable is not None:
        return _simulate_moldable(args)
    if args.take_fraction is not None or args.patience_wait is not None or args.requirement is not None:
        raise ParameterError("--take-fraction, --patience-wait and --requirement must come with --moldable")

    if args.saturated:
        for flag, value in (("--arrival-rate", args.arrival_rate), ("--utilization", args.utilization),
                            ("--jobs-csv", args.jobs_csv), ("--allow-unstable", args.allow_unstable or None),
                            ("--precision", args.precision), ("--precision-abs", args.precision_abs),
                            ("--budget", args.budget)):
            if value is not None:
                raise ParameterError(f"{flag} must not be given with --saturated (got {value!r}): every job "
                                     "arrives at time 0")
    if args.force and not args.jobs_csv:
        raise ParameterError("--force must come with --jobs-csv (got --force alone): nothing else is written")
    system = _system(args, need_rate=not args.saturated)
    _announce_long_run(system, args.jobs, args.replications)
    if args.jobs_csv:                                  # before a long run, not after it; never over an input
        check_new_file("--jobs-csv", args.jobs_csv, force=args.force, inputs=_input_files(args))
    if args.saturated:
        out = saturated_throughput(system, jobs=args.jobs, replications=args.replications, seed=args.seed,
                                   warmup=args.warmup, workers=args.workers, progress=False if args.json else None)
        out["mode"] = "saturated"
    else:
        result = simulate(system, jobs=args.jobs, replications=args.replications, seed=args.seed, warmup=args.warmup,
                          workers=args.workers, progress=False if args.json else None,
                          allow_unstable=args.allow_unstable, jobs_csv=args.jobs_csv, precision=args.precision,
                          absolute_precision=args.precision_abs, budget=args.budget)
        out = dict(result.summary())
        out["seed"] = result.seed
        out["mode"] = "queue"
        if args.jobs_csv:
            out["jobs_csv"] = args.jobs_csv
    out["config"] = system.describe()
    out["seed"] = int(out["seed"]) if out.get("seed") is not None else args.seed   # the seed drawn if none given
    return out


def _announce_long_run(system, jobs: int, replications: int) -> None:
    """One line on stderr before a run of many task draws (it takes a while; the answer stays on stdout)."""
    from .runs import MAX_DRAWS, NOTICE_DRAWS, run_draws

    draws = run_draws(system, jobs, replications)
    if NOTICE_DRAWS < draws <= MAX_DRAWS:
        print(f"barrier-queues: this run draws {draws:.2g} task times; it takes a while (Ctrl-C stops it)",
              file=sys.stderr, flush=True)


def _law_words(law) -> str:
    """A task law's description (``{'law': 'exponential', 'rate': 1.0}``) in words: ``exponential (rate 1)``."""
    if not isinstance(law, dict):
        return str(law)
    def words(v):
        if isinstance(v, list | tuple):
            return "/".join(words(x) for x in v)
        return f"{v:.6g}" if isinstance(v, float | int) and not isinstance(v, bool) else str(v)

    params = ", ".join(f"{k} {words(v)}" for k, v in law.items() if k != "law")
    return f"{law.get('law', 'law')}" + (f" ({params})" if params else "")


def _fmt(value, spec=".4f") -> str:
    return "n/a" if value is None or (isinstance(value, float) and not math.isfinite(value)) else format(value, spec)


def _print_moldable(out: dict) -> None:
    """A moldable run (or its saturated limit) as text."""
    if out.get("mode") == "moldable-saturated":
        cfg = out["config"]
        lo, hi = out["lambda_max_ci"]
        more = (" (an interval needs at least 2 replications)" if out["replications"] != cfg["replications_asked"]
                else "")
        print(f"moldable {out['moldable']} jobs: s = {cfg['servers']}, k = {cfg['tasks']}, {cfg['barriers']} "
              f"barrier(s), always backlogged; {out['replications']} x {out['jobs']:,} jobs{more}")
        print(f"lambda_max  {out['lambda_max']:.6g}  [{lo:.6g}, {hi:.6g}]")
        print(f"rho_max     {out['rho_max']:.6g}  [{out['rho_max_ci'][0]:.6g}, {out['rho_max_ci'][1]:.6g}]")
        return
    cfg = out["config"]
    print(f"moldable {out['moldable']} jobs: s = {cfg['servers']}, k = {cfg['tasks']}, {cfg['barriers']} "
          f"barrier(s), lambda = {cfg['arrival_rate']:g}; {out['replications']} x {out['jobs']:,} jobs")
    if out["stable"] is None:
        print(f"stable: cannot tell: {out['reason']}")
    elif not out["stable"]:
        print(f"not stable: {out['reason']} (no steady-state means)")
        return
    for key in ("waiting", "sojourn", "execution", "workers"):
        ci = out["ci"][key]
        interval = f"[{ci[0]:.6g}, {ci[1]:.6g}]" if ci else "(an interval needs 2 or more replications)"
        print(f"mean {key:<10} {out[f'mean_{key}']:.6g}  {interval}")


def _print_simulation(out: dict) -> None:
    if out.get("mode") in ("moldable", "moldable-saturated"):
        _print_moldable(out)
        return
    cfg = out["config"]
    k = cfg["tasks"] if cfg["tasks_pmf"] is None else ", ".join(
        f"{kk} ({float(p):.3g})" for kk, p in cfg["tasks_pmf"].items()) + " (probability of each k)"
    if cfg.get("workload"):
        k = f"{len(cfg['workload'])} job classes"
    extra = []
    if cfg["release"] != "fixed":
        extra.append(f"release {cfg['release']}")
    if cfg["phases"] > 1:
        extra.append(f"{cfg['phases']} phases, {cfg['sync']} sync")
    if cfg["placement"] != "central":
        extra.append(f"batch sampling d = {cfg['probe_ratio']}")
    if cfg.get("scheduling", "fcfs") != "fcfs":
        extra.append(f"{cfg['scheduling']} scheduling")
    if cfg.get("node_size") is not None:
        extra.append(f"nodes of {cfg['node_size']} workers (a gang of k <= {cfg['node_size']} on one node)")
    if cfg.get("wait_budget") is not None or cfg.get("hold_timeout") is not None:
        extra.append(_clock_words(cfg))
    needed = "" if cfg["needed"] is None else f"l = {cfg['needed']}, "
    print(f"system        s = {cfg['servers']}, k = {k}, {needed}{cfg['barriers']}-barrier, "
          f"barrier fraction {cfg['barrier_fraction']}, task law {_law_words(cfg['task_dist'])}"
          + (", " + ", ".join(extra) if extra else ""))
    if out["mode"] == "saturated":
        print(f"saturated     {out['replications']} x {out['jobs']:,} jobs (warm-up: {out['warmup']['rule']})")
        for key in ("lambda_max", "rho_max", "rho_useful", "held_share"):
            if key in out:
                lo, hi = out[f"{key}_ci"]
                print(f"{key:<13} {out[key]:.6g}   {int(out['level'] * 100)}% CI "
                      f"[{_fmt(lo, '.6g')}, {_fmt(hi, '.6g')}]")
        return
    overhead = "no overhead model" if cfg["overhead"] is None else f"overhead {cfg['overhead']}"
    print(f"arrivals      {cfg['arrival']}, rate {cfg['arrival_rate']:.6g}; {overhead}")
    print(f"jobs          {out['jobs']:,} measured ({out['replications']} replication(s); "
          f"warm-up {out['warmup']['rule']}:"
          f" {', '.join(f'{w:,}' for w in out['warmup']['jobs'][:4])}{' ...' if out['replications'] > 4 else ''});"
          f" CI {out['ci']['method']}")
    measured = (f"{out['utilization']:.4f} measured" if "utilization_note" not in out
                else f"none measured ({out['utilization_note']})")
    print(f"utilization   {measured}, offered {_fmt(out['offered_utilization'])}; useful "
          f"{_fmt(out['useful_utilization'])}; tasks completed per job {out['mean_completed_tasks']:.4g}"
          + (f"; held share {out['held_share']:.4f}" if "held_share" in out else ""))
    if "precision" in out:
        pr = out["precision"]
        target = " or ".join(t for t in (f"{pr['target']:.2%} of the mean" if pr["target"] else "",
                                         f"{pr['absolute']:g} absolute" if pr["absolute"] else "") if t)
        reached = ", ".join(f"{m} {v:.2%}" for m, v in pr["reached"].items())
        print(f"precision     target {target}: {'met' if pr['met'] else 'NOT met'} after {pr['rounds']} round(s), "
              f"{pr['jobs_used']:,} jobs of a budget of {pr['budget']:,}; reached {reached}")
        if not pr["met"]:
            print(f"              {pr['reason']}")
    _print_verdict(out)
    print(f"{'':13} {'mean':>10} {'95% CI':>24} " + " ".join(f"{'q' + str(q):>10}"
                                                         for q in out["quantiles"]["waiting"]))
    for name in ("waiting", "sojourn", "execution"):
        lo, hi = out["ci"][name] or (None, None)
        qs = " ".join(f"{v:>10.4f}" for v in out["quantiles"][name].values())
        print(f"{name:<13} {_fmt(out['mean_' + name], '>10.4f')} [{_fmt(lo, '>10.4f')}, {_fmt(hi, '>10.4f')}] {qs}")
    for c in out.get("classes", []):
        lo, hi = c["ci"]["waiting"] or (None, None)
        label = f"k = {c['tasks']}{'' if c['barrier'] else ' plain'}"
        print(f"{label:<13} {'waiting':>7} {_fmt(c['mean_waiting'], '>10.4f')} [{_fmt(lo, '>10.4f')}, "
              f"{_fmt(hi, '>10.4f')}] q0.99 {c['quantiles']['waiting'][0.99]:.4f}; {c['share']:.1%} of jobs"
              + ("" if c.get("stable", True) else "; UNSTABLE (its queue or waiting grows)"
                 if c["stable"] is False else "; cannot tell (none of its jobs started before the last arrival)"))
    if "aborted_share" in out:
        _print_failures(out)
    if "clocks" in out:
        _print_clocks(out)
    for w in out.get("warnings") or []:
        print(f"warning       {w}")
    print(f"speed         {out['jobs_per_second']:,.0f} jobs/s end to end, "
          f"{out['kernel_jobs_per_second']:,.0f} jobs/s in the kernel")


def _clock_words(cfg: dict) -> str:
    """A system's gang clock in words, from its description."""
    clock = (f"wait budget {cfg['wait_budget']}" if cfg.get("wait_budget") is not None
             else f"hold timeout {cfg['hold_timeout']:g}")
    words = f"{clock}, then {'the gang leaves' if cfg['on_budget'] == 'leave' else 'requeue'}"
    if cfg["on_budget"] == "requeue":
        base, _, cap = cfg["requeue_backoff"].partition(",")
        jitter = cfg.get("requeue_jitter") or 0.0
        words += f" after min({cap or 'inf'}, {base} x 2^(n-1){f' x (1 + {jitter:g} u)' if jitter else ''})"
        words += f" at its {'arrival place' if cfg.get('requeue_order') != 'eviction' else 'return (end of queue)'}"
        words += "" if cfg["requeue_limit"] is None else f", lost after {cfg['requeue_limit']} requeue(s)"
    return words


def _print_clocks(out: dict) -> None:
    """A run with gang clocks: what the rows above cover, and what the clocks turned away, overall and per
    class."""
    c = out["clocks"]

    def share(row: dict, ci: dict) -> str:
        interval = ci.get("lost_share")
        inside = f" (95% CI [{interval[0]:.2%}, {interval[1]:.2%}])" if interval else ""
        return (f"{row['lost_jobs']:,} of {row['jobs']:,} lost, {_fmt(row['lost_share'], '.2%')}{inside}; "
                f"{_fmt(row['lost_work_share'], '.2%')} of the work; {_fmt(row['requeues_per_job'], '.4f')} "
                f"requeues and {_fmt(row['backoff_per_job'], '.4g')} time in backoff per job")

    print(f"clocks        the rows above are the served jobs; of the jobs submitted after the warm-up "
          f"{share(c, c['ci'])}")
    for row in c.get("classes", []):
        label = f"k = {row['tasks']}{'' if row['barrier'] else ' plain'}"
        print(f"{label:<13} {share(row, row['ci'])}")


def _print_failures(out: dict) -> None:
    """A run with failures: what the rows above cover, the aborts, attempts and goodput, and the sojourn of every
    submitted job beside the completed jobs' one."""
    ci = out["failure_ci"]
    lo, hi = ci["aborted_share"]
    print(f"failures      the rows above are the {out['jobs']:,} completed jobs measured; {out['aborted_jobs']:,} of "
          f"{out['failure_jobs']:,} submitted jobs aborted ({out['aborted_share']:.2%}, 95% CI [{lo:.2%}, "
          f"{hi:.2%}]); {out['mean_attempts']:.4f} attempts per job; goodput {out['goodput']:.4f}")
    if out["mean_sojourn_submitted"] is None:
        return                                  # unstable: no steady-state mean (run_means has this run's)
    sub = ci.get("sojourn_submitted")
    interval = f"95% CI [{sub[0]:.4f}, {sub[1]:.4f}]" if sub else "an interval needs 2 or more replications"
    print(f"{'':13} sojourn of every submitted job (aborted ones until their abort) "
          f"{out['mean_sojourn_submitted']:.4f} ({interval}); of the aborted ones "
          f"{_fmt(out['mean_abort_sojourn'], '.4f')}")


BOUND_OPTIONS = ("--servers", "--tasks", "--tasks-pmf", "--arrival-rate", "--utilization", "--task-rate",
                 "--barrier-fraction", "--arrival")


def _bound(args) -> dict:
    from .bounds import bound

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
    from .planning import plan

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
    from .phases import plan_phases

    if args.task_dist is not None and args.task_rate is not None:
        raise ParameterError("give at most one of --task-rate and --task-dist (got both)")
    law = args.task_dist if args.task_dist is not None else (
        None if args.task_rate is None else f"exponential:rate={args.task_rate!r}")
    result = plan_phases(args.tasks, law, args.sync_poll, args.max_share, args.max_phases, args.samples)
    return {"recommended": result["recommended"], "curve": result["curve"].to_dict(orient="records")}


def _print_verdict(out: dict) -> None:
    """A queueing run's stability verdict as text: the verdict, what decided it, and a note when it withdrew
    the means."""
    stab = out["stability"]
    stable = "cannot tell" if out["stable"] is None else out["stable"]
    limit = ("no lambda_max known for this system" if stab["method"] is None
             else f"no lambda_max: {stab['method']}" if stab["lambda_max"] is None
             else f"lambda_max {_fmt(stab['lambda_max'], '.6g')} by {stab['method']}")
    print(f"stable        {stable} ({limit}; "
          f"waiting-time drift tau {_fmt(stab['kendall_tau'], '.2f')}; {stab['unstarted']:,} job(s) still waiting "
          "at the last arrival)")
    for reason in stab["reasons"]:
        print(f"{'':13} unstable: {reason}")
    if out["stable"] is None and "undecided" in stab:
        print(f"{'':13} cannot tell: {stab['undecided']}")
    if out["stable"] is False:
        print(f"{'':13} no steady-state means: the means of this run grow with its length (run means:"
              f" {', '.join(f'{m} {v:.4g}' for m, v in out['run_means'].items())})")


def _print_plan_phases(out: dict) -> None:
    import pandas as pd

    rec = out["recommended"]
    print(f"k = {rec['tasks']} tasks, task law {_law_words(rec['task_law'])} split into m phases, Spark barrier() poll "
          f"{rec['sync_poll']:g}")
    print(pd.DataFrame(out["curve"]).round(4).to_string(index=False))
    print(f"recommended: at most {rec['phases']} phases (sync share {rec['share_at_recommended']:.3f} <= "
          f"{rec['max_share']:g})")


def _sweep(args) -> dict:
    from .backends import resolve
    from .sweep import grid_from_options, sweep

    if args.trace is not None:
        args.trace = _located_trace(args.trace)
        return _trace_sweep(args)
    if args.moldable is not None:
        return _moldable_sweep(args)
    for flag, value in (("--take-fraction", args.take_fraction), ("--patience-wait", args.patience_wait),
                        ("--requirement", args.requirement)):
        if value is not None:
            raise ParameterError(f"{flag} must come with --moldable (got {flag} without it)")
    for flag, value in (("--estimates", args.estimates), ("--load-scale", args.load_scale),
                        ("--bsld-tau", args.bsld_tau), ("--trim", args.trim or None)):
        if value is not None:
            raise ParameterError(f"{flag} must come with --trace (got {flag} without a trace): it sets how a "
                                 "trace is replayed")
    where = resolve(args.backend, args.master)            # (the SWEEP_BACKEND setting, checked, when not given)

    options = {dest: getattr(args, dest) for _, (dest, _, _) in _system_options().items()
               if getattr(args, dest) is not None}
    if "servers" not in options:
        raise ParameterError("--servers must be given (an integer >= 1, or a comma-separated list)")
    grid = grid_from_options(options)
    table = sweep(grid, args.out, jobs=args.jobs, replications=args.replications, seed=args.seed,
                  warmup=args.warmup, backend=where, master=None, workers=args.workers,
                  fmt=args.format, allow_unstable=args.allow_unstable, progress=False if args.json else None,
                  precision=args.precision, absolute_precision=args.precision_abs, budget=args.budget)
    return {"out": args.out, "points": int(len(table)), "backend": where.name,
            "rows": table.to_dict(orient="records") if args.json else None, "_table": table}


def _refused_run_flags(args, kept=()) -> list[str]:
    """The sweep's run options given away from their defaults, outside ``kept``."""
    return [flag for flag, value, default in (("--jobs", args.jobs, 100_000),
                                              ("--replications", args.replications, 1),
                                              ("--warmup", args.warmup, None), ("--workers", args.workers, None),
                                              ("--allow-unstable", args.allow_unstable, False),
                                              ("--precision", args.precision, None),
                                              ("--precision-abs", args.precision_abs, None),
                                              ("--budget", args.budget, None), ("--backend", args.backend, None),
                                              ("--master", args.master, None))
            if value != default and flag not in kept]


def _moldable_sweep(args) -> dict:
    from .sweep import MOLDABLE_GRID, moldable_sweep

    # the system options a moldable sweep takes are its grid's (and --task-rate, read as an exponential law)
    given = [flag for flag, (dest, _, _) in _system_options().items()
             if getattr(args, dest) is not None and dest not in (*MOLDABLE_GRID, "task_rate")]
    given += _refused_run_flags(args, kept=("--jobs", "--replications"))
    given += [flag for flag, value in (("--estimates", args.estimates), ("--load-scale", args.load_scale),
                                       ("--bsld-tau", args.bsld_tau), ("--trim", args.trim or None))
              if value is not None]
    if given:
        raise ParameterError(f"--moldable must not be combined with {', '.join(given)} in a sweep (it varies "
                             "--servers, --tasks, --barriers, the policies' options and the load)")
    if args.task_dist is not None and args.task_rate is not None:
        raise ParameterError("give at most one of --task-rate and --task-dist (got both)")
    if args.task_rate is not None and len(args.task_rate) > 1:
        raise ParameterError(f"--task-rate must be one value with --moldable (got {args.task_rate}); --task-dist "
                             "names any law")
    law = args.task_dist if args.task_dist is not None else (
        None if args.task_rate is None else f"exponential:rate={args.task_rate[0]!r}")
    grid = {"servers": args.servers, "tasks": args.tasks, "barriers": args.barriers, "task_dist": law,
            "arrival": args.arrival, "moldable": args.moldable, "take_fraction": args.take_fraction,
            "patience_wait": args.patience_wait, "requirement": args.requirement, "arrival_rate": args.arrival_rate,
            "utilization": args.utilization}
    table = moldable_sweep({k: v for k, v in grid.items() if v is not None}, args.out, jobs=args.jobs,
                           replications=args.replications, seed=args.seed, fmt=args.format)
    return {"out": args.out, "points": int(len(table)), "backend": "local",
            "rows": table.to_dict(orient="records") if args.json else None, "_table": table}


def _trace_sweep(args) -> dict:
    from .sweep import trace_sweep

    # the system options a trace sweep takes are the fields a replay reads (the trace sets everything else)
    given = [flag for flag, (dest, _, _) in _system_options().items()
             if getattr(args, dest) is not None and dest not in REPLAY_FIELDS]
    given += _refused_run_flags(args)
    given += [flag for flag, value in (("--moldable", args.moldable), ("--take-fraction", args.take_fraction),
                                       ("--patience-wait", args.patience_wait), ("--requirement", args.requirement))
              if value is not None]
    if given:
        raise ParameterError(f"--trace takes its workload from the trace: {', '.join(given)} must not be given with "
                             "it (a trace sweep varies --servers, --scheduling, --estimates and --load-scale)")
    from .replay import GRID_OPTIONS

    failures = {}                                   # every other field a replay reads: one value for all points
    for name in REPLAY_FIELDS:
        value = getattr(args, name)
        if name in GRID_OPTIONS or value is None:
            continue
        if isinstance(value, list) and len(value) > 1:
            raise ParameterError(f"--{name.replace('_', '-')} must be one value with --trace (got {value}): a trace "
                                 "sweep varies --servers, --scheduling, --estimates and --load-scale")
        failures[name] = value[0] if isinstance(value, list) else value
    _seed_needs_failures(failures.get("failure_rate"), args.seed, failures.get("wait_budget"))
    grid = {"servers": args.servers, "scheduling": args.scheduling, "estimates": args.estimates,
            "load_scale": args.load_scale}
    table = trace_sweep(args.trace, {k: v for k, v in grid.items() if v is not None}, args.out, fmt=args.format,
                        tau=args.bsld_tau, trim=args.trim, seed=args.seed or 0, **failures)
    return {"out": args.out, "points": int(len(table)), "backend": "local",
            "rows": table.to_dict(orient="records") if args.json else None, "_table": table}


def _print_sweep(out: dict) -> None:
    table = out["_table"]
    if "moldable" in table.columns:                 # a moldable sweep: its policies, and empty means unstable
        cols = [c for c in ("point", "servers", "tasks", "barriers", "moldable", "take_fraction", "patience_wait",
                            "requirement", "utilization", "mean_waiting", "mean_sojourn", "mean_workers", "stable")
                if c in table.columns]
        print(table[cols].astype(object).where(table[cols].notna(), "-").to_string(index=False))
        print(f"{out['points']} points in {out['out']}")
        return
    cols = [c for c in ("point", "servers", "tasks", "scheduling", "estimates", "load_scale", "wait_budget",
                        "on_budget", "arrival_rate", "utilization", "mean_waiting", "mean_sojourn",
                        "mean_bounded_slowdown", "sojourn_q0.99", "lost_share", "requeues_per_job", "stable")
            if c in table.columns]
    print(table[cols].to_string(index=False))
    print(f"{out['points']} points in {out['out']} ({out['backend']} backend)")


def _serving_verdict(event_log) -> dict | None:
    """The harness's serving check of the run an event log belongs to (``metadata.json`` of the run folder that
    holds ``eventlog/``), or None for a log outside such a folder."""
    import json
    from pathlib import Path

    log = Path(event_log).resolve()
    for folder in (log.parent.parent, log.parent, log.parent.parent.parent):
        meta = folder / "metadata.json"
        if (folder / "eventlog").is_dir() and meta.is_file():
            try:
                serving = json.loads(meta.read_text()).get("serving")
            except (OSError, ValueError):
                return None
            if isinstance(serving, dict):
                return {"honest": serving.get("honest"), "problems": serving.get("problems") or [],
                        "assessed": serving.get("assessed"), "metadata": str(meta)}
            return None
    return None


def _spark_analyze(args) -> dict:
    import pandas as pd

    from .eventlog import blocking_overhead, parse_event_log
    from .outputs import check_new_file
    from .spark_analysis import overhead_tests

    if args.force and not args.jobs_csv:
        raise ParameterError("--force must come with --jobs-csv (got --force alone): nothing else is written")
    if args.jobs_csv:
        check_new_file("--jobs-csv", args.jobs_csv, force=args.force, inputs=[args.event_log])
    tables = parse_event_log(args.event_log, key_property=args.key_property)
    jobs = tables.jobs.sort_values("submission")
    if args.skip_jobs >= len(jobs):
        raise ParameterError(f"--skip-jobs must be below the number of jobs, {len(jobs)} (got {args.skip_jobs})")
    jobs = jobs.iloc[args.skip_jobs:]
    span = jobs.submission.iloc[-1] - jobs.submission.iloc[0]
    rate = args.arrival_rate or ((len(jobs) - 1) / span if span > 0 else None)      # every submitted job arrives
    warnings = list(tables.warnings)
    attempts = (tables.tasks.groupby("job_id").stage_attempt.max() + 1) if len(tables.tasks) else pd.Series(dtype=int)
    failed_mask = jobs.result.notna() & (jobs.result != "JobSucceeded")
    unknown = int(jobs.result.isna().sum())
    if unknown:
        warnings.append(f"{unknown} job(s) without a Job Result: counted as completed")
    failed, jobs = jobs[failed_mask], jobs[~failed_mask]
    if len(failed):
        kinds = ", ".join(sorted(set(failed.result)))
        warnings.append(f"{len(failed)} of {len(failed) + len(jobs)} jobs failed ({kinds}): reported under "
                        "'failed', left out of every mean, quantile and overhead test")
    if not len(jobs):
        warnings.append(f"no job of the log completed (all {len(failed)} failed): no waiting, sojourn or overhead "
                        "can be measured")
    without = jobs[~jobs.job_id.isin(tables.tasks.job_id)] if len(tables.tasks) else jobs
    if len(without):
        warnings.append(f"{len(without)} job(s) launched no task in the log (job {int(without.job_id.iat[0])} the "
                        "first): their waiting and execution are not measured from tasks")
    if "barrier" in jobs and len(jobs) and not jobs.barrier.any():
        warnings.append("no job of the log is a barrier job (no stage with the barrier flag, or no Stage Infos): "
                        "the blocking overhead is measured on barrier jobs only")
    resubmitted = jobs.job_id.map(attempts).fillna(1).gt(1)
    samples = blocking_overhead(tables)
    samples = samples[samples.job_id.isin(jobs.job_id)]
    done = len(jobs) > 0
    out = {"event_log": str(args.event_log), "spark_version": tables.app.get("spark_version"),
           "jobs": int(len(jobs)), "submitted_jobs": int(len(jobs) + len(failed)), "failed_jobs": int(len(failed)),
           "resubmitted_jobs": int(resubmitted.sum()),
           "tasks": int(tables.tasks.job_id.isin(jobs.job_id).sum()),
           "arrival_rate": rate, "mean_waiting": float(jobs.waiting.mean()) if done else None,
           "mean_sojourn": float(jobs.sojourn.mean()) if done else None,
           "mean_execution": float(jobs.execution.mean()) if done else None,
           "quantiles": {m: {str(q): float(jobs[m].quantile(q)) if done else None for q in (0.5, 0.9, 0.99)}
                         for m in ("waiting", "sojourn")},
           "failed": [{"job_id": int(j.job_id), "result": j.result, "stage_attempts": int(attempts.get(j.job_id, 1)),
                       "submission": float(j.submission), "completion": float(j.completion), "message": j.message}
                      for j in failed.itertuples()],
           "overhead_samples": [float(x) for x in samples.overhead], "revive": args.revive,
           "ks_statistic": None, "ks_pvalue": None, "warnings": warnings}
    out["serving"] = _serving_verdict(args.event_log)
    if out["serving"] is not None and not out["serving"].get("honest", True):
        out["warnings"].append("the harness judged this run not served honestly by its machine ("
                               + "; ".join(out["serving"].get("problems") or ["no reason recorded"])
                               + "): its times carry the machine's load, not only Spark's")
    if len(samples) >= 2 and rate:
        tests = overhead_tests(samples.overhead, args.revive, rate, bootstrap=args.bootstrap)
        out.update(ks_statistic=tests["model"]["ks_statistic"], ks_pvalue=tests["model"]["ks_pvalue"],
                   model_mean=tests["model_mean"], mle_revive=tests["mle"]["revive"], mle_rate=tests["mle"]["rate"],
                   mle_ks_pvalue=tests["mle"]["ks_pvalue"], mle_ks_pvalue_method=tests["mle"]["pvalue_method"],
                   uniform_ks_pvalue=tests["uniform"]["ks_pvalue"])
    if args.jobs_csv:
        tables.jobs.to_csv(args.jobs_csv, index=False)
        out["jobs_csv"] = args.jobs_csv
    return out


def _spark_bench(args) -> dict:
    import json
    from pathlib import Path

    from .outputs import check_new_folder
    from .spark_bench import SparkBenchConfig, archive_run, run_spark_bench

    if args.arrival_rate is None and not args.saturated:
        raise ParameterError("--arrival-rate must be given (jobs per second > 0), or --saturated")
    config = SparkBenchConfig(executors=args.executors, tasks=args.tasks, arrival_rate=args.arrival_rate,
                              jobs=args.jobs, warmup_jobs=args.warmup_jobs, task_mean=args.task_mean,
                              sync_points=args.sync_points, phases=args.phases, saturated=args.saturated,
                              revive_interval=args.revive, seed=args.seed, master=args.master,
                              time_limit=args.time_limit, tasks_pmf=args.tasks_pmf,
                              barrier_fraction=args.barrier_fraction, failure_rate=args.failure_rate,
                              stage=args.stage)
    out_dir = check_new_folder("--out", args.out, "measured data")      # before a run of many minutes
    if args.archive:
        if Path(args.archive).resolve() == out_dir.resolve():
            raise ParameterError("--archive must differ from --out (got the same folder)")
        check_new_folder("--archive", args.archive, "measured data")
    run_dir = run_spark_bench(config, out_dir, progress=not args.json)
    meta = json.loads((run_dir / "metadata.json").read_text())
    meta["run_dir"] = str(run_dir)
    if args.archive:
        meta["archive"] = str(archive_run(run_dir, args.archive))
    return meta


def _print_bench(out: dict) -> None:
    print(f"run folder        {out['run_dir']}  (status: {out['status']})")
    print(f"Spark {out['spark']}, Java {out['java']}, Python {out['python']}, master {out['master']}")
    print(f"submitted         {out.get('submitted')} jobs at {out.get('achieved_arrival_rate') or 0:.4g}/s "
          f"(offered utilization {out.get('offered_utilization') or 0:.3g}); total {out['total_seconds']:.1f} s")
    serving = out.get("serving") or {}
    if "honest" in serving:
        print(f"served honestly   {'yes' if serving['honest'] else 'no: ' + '; '.join(serving['problems'])} "
              f"(s = {serving['executors']} executors on {serving['cores']} cores; Python start-up median "
              f"{1000 * serving['python_startup_median']:.0f} ms)")
    elif serving:
        print(f"served honestly   not assessed ({serving.get('error')})")
    print(f"analyse with      barrier-queues spark-analyze {out['run_dir']}/eventlog/* "
          f"--skip-jobs {out['config']['warmup_jobs']}")
    if out.get("archive"):
        print(f"archived to       {out['archive']}")


def _print_spark(out: dict) -> None:
    version = f"Spark {out['spark_version']}" if out.get("spark_version") else "no Spark version in the log"
    print(f"event log         {out['event_log']} ({version})")
    serving = out.get("serving")
    if serving is not None:
        print(f"served honestly   {'yes' if serving['honest'] else 'no'} (the harness's check, {serving['assessed']})")
    for w in out.get("warnings") or []:
        print(f"warning           {w}")
    rate = f"{out['arrival_rate']:.4g}/s" if out["arrival_rate"] else "unknown"
    print(f"jobs              {out['jobs']} completed ({out['tasks']} tasks) of {out['submitted_jobs']} submitted, "
          f"{out['failed_jobs']} failed, {out['resubmitted_jobs']} completed after a resubmission; "
          f"arrival rate {rate}")
    if out["mean_waiting"] is None:
        print("mean waiting      not defined: no job completed")
    else:
        print(f"mean waiting      {out['mean_waiting']:.4f} s;  mean sojourn {out['mean_sojourn']:.4f} s "
              "(completed jobs)")
    n = len(out["overhead_samples"])
    if n:
        print(f"blocking overhead {n} samples, mean {sum(out['overhead_samples']) / n:.4f} s")
    if out["ks_statistic"] is not None:
        print(f"KS vs min(U(0,{out['revive']}), Exp({out['arrival_rate']:.4g})): "
              f"D = {out['ks_statistic']:.4f}, p = {out['ks_pvalue']:.4f} (model mean {out['model_mean']:.4f} s)")
        print(f"maximum likelihood R = {out['mle_revive']:.4f} s, lambda = {out['mle_rate']:.4g}/s "
              f"(KS p = {out['mle_ks_pvalue']:.4f}, {out['mle_ks_pvalue_method']})")
    else:
        print("KS test           not run (fewer than 2 blocked jobs or unknown arrival rate)")


# --------------------------------------------------------------------------------------------------

def _run_options(p, saturated: bool = True):
    p.add_argument("--jobs", type=_int("jobs", 2, 10**11), default=100_000,
                   help="jobs per replication (default 100,000)")
    p.add_argument("--replications", type=_int("replications", 1, 100_000), default=1)
    p.add_argument("--warmup", type=_int("warmup", 0), default=None,
                   help="jobs dropped per replication (default: MSER-5 on the replication-averaged series)")
    p.add_argument("--workers", type=_int("workers", 1, 4096), default=None, help="processes (default: all cores)")
    p.add_argument("--seed", type=SEED, default=None, help="seed, an integer >= 0")
    p.add_argument("--allow-unstable", action="store_true", help="simulate even at or above the known stability limit")
    p.add_argument("--precision", type=_float("precision", 0, 1, True, True), default=None,
                   help="run until every mean's 95%% interval half-width is at most this share of the mean (e.g. "
                        "0.01), adding replications of --jobs jobs in rounds (the first: --replications, default "
                        "10)")
    p.add_argument("--precision-abs", type=_scale("precision-abs"), default=None,
                   help="or at most this half-width in time units (either target suffices)")
    p.add_argument("--budget", type=_int("budget", 1, 10**13), default=None,
                   help="with a precision target: at most this many jobs in all (default 100,000,000); the run "
                        "stops there and reports the precision reached")


def _add_stability(sub) -> None:
    st = sub.add_parser("stability", help=COMMAND_HELP["stability"],
                        description="Maximum stable job rate and utilization of a barrier system.")
    _add_system_options(st, ("--servers", "--tasks", "--needed", "--barriers", "--task-rate", "--task-dist",
                             "--release", "--min-fraction", "--min-wait", "--knee-gain", "--timeout", "--phases",
                             "--sync", "--sync-poll"))
    st.add_argument("--method", default="auto", type=_choice("method", ("auto", "closed-form", "ctmc",
                                                                        "order-statistics", "quadrature",
                                                                        "monte-carlo")))
    st.add_argument("--max-states", type=_int("max-states", 1, 10**9), default=12_000_000,
                    help="refuse CTMCs with more feasible states (default 12,000,000)")
    st.add_argument("--json", action="store_true", help="print one JSON object")
    # workloads simulate takes that have no analytic limit here: each option names the command that answers
    for flag, answer in STABILITY_ELSEWHERE.items():
        st.add_argument(flag, action=_Elsewhere, answer=answer, nargs="?", help=argparse.SUPPRESS)
    st.set_defaults(run=_stability, show=_print_stability)


#: options of simulate that stability does not take, and the command that gives such a system's limit
STABILITY_ELSEWHERE = {
    "--tasks-pmf": "a mix of k has its limit from 'simulate ... --tasks-pmf ... --saturated' (fcfs)",
    "--workload": "a workload file's classes have their limit from 'simulate --workload FILE --saturated' (fcfs)",
    "--scheduling": ("under first-fit, backfill or server-filling the limit comes from queueing runs: 'sweep ... "
                     "--scheduling RULE --utilization 0.5,0.6,0.7,...' and each row's stable column"),
    "--moldable": "moldable jobs have their limit from 'simulate --moldable POLICY ... --saturated'",
}


class _Elsewhere(argparse.Action):
    """An option this command does not take, refused with the command that answers it (one line, exit 2)."""

    def __init__(self, *args, answer: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.answer = answer

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"stability takes one k and the central FIFO queue, not {option_string}: {self.answer}")

def _moldable_options(p, lists: bool = False) -> None:
    """--moldable and its policies' options, on simulate (one value each) and sweep (comma-separated lists)."""
    def parse(one):
        return _list(one) if lists else one

    from .moldable_policies import OPTIONS, POLICIES, names

    some = " (a comma-separated list sweeps it)" if lists else ""
    p.add_argument("--moldable", default=None, type=parse(_choice("moldable", names())),
                   help="moldable jobs: each takes a number of workers chosen when it reaches the head (k may "
                        "exceed s; tasks are dealt onto the workers taken): "
                        + "; ".join(f"{m.name}: {m.help}" for m in POLICIES.values()) + some)
    for name, option in OPTIONS.items():
        owner = next(m.name for m in POLICIES.values() if m.option == name)
        flag = "--" + name.replace("_", "-")
        kind = {"flag": flag, "kind": option.kind, "low": option.low, "high": option.high,
                "open_low": option.open_low, "choices": option.choices}
        p.add_argument(flag, type=parse(_option_parser(kind)), default=None,
                       help=f"with --moldable {owner}: {option.help}{some}")


def _add_simulate(sub) -> None:
    sim = sub.add_parser("simulate", help=COMMAND_HELP["simulate"],
                         description="Simulate a barrier system with the compiled kernels.")
    _add_system_options(sim)
    _run_options(sim)
    sim.add_argument("--saturated", action="store_true",
                     help="all jobs at time 0: estimate the stability limit lambda_max")
    sim.add_argument("--jobs-csv", default=None, help="write the per-job table to this new CSV file")
    sim.add_argument("--force", action="store_true", help="overwrite --jobs-csv if it exists")
    _moldable_options(sim)
    sim.add_argument("--json", action="store_true", help="print one JSON object")
    sim.set_defaults(run=_simulate, show=_print_simulation)
    SIMULATE_DEFAULTS.update({a.dest: a.default for a in sim._actions if a.dest != "help"})

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
    sw.add_argument("--estimates", type=_list(_choice("estimates", ("exact", "requested"))), default=None,
                    help="with --trace: EASY's runtime predictions, exact or requested (a list sweeps it)")
    sw.add_argument("--load-scale", type=_list(_float("load-scale", 1e-3, 1e3)), default=None,
                    help="with --trace: compress submissions by this factor (a list sweeps it)")
    sw.add_argument("--bsld-tau", type=_float("bsld-tau", 0, 1e9, open_low=True), default=None,
                    help="with --trace: bounded slowdown's threshold (default 10 s)")
    sw.add_argument("--trim", action="store_true", help="with --trace: the Tsafrir 2007 trimming")
    _moldable_options(sw, lists=True)
    sw.add_argument("--json", action="store_true")
    sw.set_defaults(run=_sweep, show=_print_sweep)

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

def _add_spark_bench(sub) -> None:
    sb = sub.add_parser("spark-bench", help=COMMAND_HELP["spark-bench"],
                        description="Poisson arrivals of k-task barrier jobs on Spark; writes a run folder.")
    sb.add_argument("--executors", "-s", type=_int("executors", 1, 4096), default=4, help="single-core executors s")
    sb.add_argument("--tasks", "-k", type=_int("tasks", 1, 4096), default=2, help="barrier tasks per job k <= s")
    sb.add_argument("--tasks-pmf", default=None,
                    help="mixed workload: pmf of k, e.g. '2:0.5,8:0.5' (--tasks is then its largest k)")
    sb.add_argument("--barrier-fraction", type=_float("barrier-fraction", 0, 1), default=1.0,
                    help="share of barrier jobs; the others are plain stages of k tasks (default 1)")
    sb.add_argument("--arrival-rate", type=_scale("arrival-rate"), default=None,
                    help="jobs per second (required unless --saturated)")
    sb.add_argument("--jobs", type=_int("jobs", 1, 1_000_000), default=100, help="measured jobs")
    sb.add_argument("--warmup-jobs", type=_int("warmup-jobs", 0, 1000), default=3)
    sb.add_argument("--task-mean", type=_scale("task-mean"), default=None,
                    help="mean sleep of one phase, s (default s/(k m))")
    sb.add_argument("--phases", type=_int("phases", 1, 1000), default=1, help="iid sleeps per task, barrier() between")
    sb.add_argument("--sync-points", type=_int("sync-points", 0, 1000), default=0,
                    help="barrier() calls splitting one sleep (older runs)")
    sb.add_argument("--saturated", action="store_true", help="submit every job at once (the start rate is the limit)")
    sb.add_argument("--revive", type=_scale("revive"), default=1.0,
                    help="spark.scheduler.revive.interval, s")
    sb.add_argument("--seed", type=SEED, default=1)
    sb.add_argument("--master", default=None, help="spark://host:port (default local-cluster[s,1,MB])")
    sb.add_argument("--time-limit", type=_scale("time-limit"), default=3600.0,
                    help="seconds for the whole run")
    sb.add_argument("--failure-rate", type=_scale("failure-rate"), default=None,
                    help="inject failures: each task attempt fails at this rate per second of running (default none)")
    sb.add_argument("--stage", choices=("result", "shuffle-map"), default="result",
                    help="the barrier stage as the job's ResultStage (aborted at a failure; default) or as a "
                         "ShuffleMapStage (resubmitted, 4 attempts in all)")
    sb.add_argument("--out", required=True, help="run folder to create")
    sb.add_argument("--archive", default=None,
                    help="also write a compact copy (gzip tables, zstd event log) to this folder, e.g. data/spark/RUN")
    sb.add_argument("--json", action="store_true")
    sb.set_defaults(run=_spark_bench, show=_print_bench)

def _add_spark_analyze(sub) -> None:
    sa = sub.add_parser("spark-analyze", help=COMMAND_HELP["spark-analyze"],
                        description="Waiting/sojourn times and blocking overhead from a Spark event log "
                                    "(plain, gzip, zstd or rolled).")
    sa.add_argument("event_log", help="event-log file or rolled event-log directory")
    sa.add_argument("--revive", type=_scale("revive"), default=1.0,
                    help="spark.scheduler.revive.interval in seconds (default 1)")
    sa.add_argument("--arrival-rate", type=_scale("arrival-rate"), default=None,
                    help="job arrival rate (default: measured from submission times)")
    sa.add_argument("--skip-jobs", type=_int("skip-jobs", 0), default=0, help="drop the first N jobs (warm-up)")
    sa.add_argument("--key-property", default="bq.job", help="thread-local property with the job tag")
    sa.add_argument("--bootstrap", type=_int("bootstrap", 0, 100_000), default=0,
                    help="parametric-bootstrap replicates for the KS p-value at fitted parameters (default 0: "
                         "report the plain p-value, which is too large at fitted parameters)")
    sa.add_argument("--jobs-csv", default=None, help="write the per-job table to this new CSV file")
    sa.add_argument("--force", action="store_true", help="overwrite --jobs-csv if it exists")
    sa.add_argument("--json", action="store_true")
    sa.set_defaults(run=_spark_analyze, show=_print_spark)

def _located_trace(path) -> str:
    """The trace's path: as given, or a bare log name found in the logs' folder setting (said on stderr)."""
    from .traces import locate_trace

    found, notice = locate_trace(path)
    if notice:
        print(f"barrier-queues: {notice}", file=sys.stderr, flush=True)
    return str(found)


def _replay(args) -> dict:
    from .outputs import check_new_file
    from .replay import replay
    from .traces import read_trace

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
    trace = read_trace(args.trace, width=args.width)
    if args.by_cluster is not None:
        return _replay_by_cluster(args, trace, edges)
    if args.shake is not None and args.resample is not None:
        raise ParameterError("--shake and --resample must not be given together: each makes its own copies of the log")
    if args.shake is not None or args.resample is not None:
        return _replay_shaken(args, trace)
    if args.shake_by is not None:
        raise ParameterError("--shake-by must come with --shake N (got --shake-by alone)")
    if args.resample_load is not None:
        raise ParameterError("--resample-load must come with --resample N (got --resample-load alone)")
    grid = {name: values for name, values in (("servers", args.servers), ("scheduling", args.scheduling),
                                               ("estimates", args.estimates), ("load_scale", args.load_scale))
            if values is not None and len(values) > 1}
    if grid:                                             # a trace as the workload of a grid: one row per point
        if args.jobs_out is not None or args.size_classes is not None:
            raise ParameterError("--jobs-out and --size-classes must come with one value of each option (got a "
                                 "grid: " + ", ".join(f"{k} {v}" for k, v in grid.items()) + ")")
        from .replay import replay_grid

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


def _replay_shaken(args, trace) -> dict:
    """``replay --shake N`` or ``--resample N``: the grid (or the one replay) on the log and on N shaken or
    resampled copies."""
    from .replay import shaken_grid
    from .resampling import resampled_grid

    given = [flag for flag, value in (("--jobs-out", args.jobs_out), ("--size-classes", args.size_classes)) if value]
    if given:
        raise ParameterError(f"--shake and --resample report each point's metrics over the copies: "
                             f"{', '.join(given)} must not be given with them")
    grid = {name: values for name, values in (("servers", args.servers), ("scheduling", args.scheduling),
                                               ("estimates", args.estimates), ("load_scale", args.load_scale))
            if values is not None}
    failures = _replay_failures(args)
    if args.resample is not None:
        if args.shake_by is not None:
            raise ParameterError("--shake-by must come with --shake N (got it with --resample)")
        table, info = resampled_grid(trace, grid, args.resample, 1.0 if args.resample_load is None else
                                     args.resample_load, seed=failures.pop("seed"), tau=args.bsld_tau,
                                     trim=args.trim, **failures)
        return {"trace": trace.describe(), "rows": table.to_dict(orient="records"), "shaken": info, "_table": table}
    if args.resample_load is not None:
        raise ParameterError("--resample-load must come with --resample N (got it with --shake)")
    table, info = shaken_grid(trace, grid, args.shake, 60.0 if args.shake_by is None else args.shake_by,
                              seed=failures.pop("seed"), tau=args.bsld_tau, trim=args.trim, **failures)
    return {"trace": trace.describe(), "rows": table.to_dict(orient="records"), "shaken": info, "_table": table}


def _replay_by_cluster(args, trace, edges) -> dict:
    """``replay --by-cluster``: every sized cluster on its own size, one value of each option."""
    from pathlib import Path

    from .replay import replay_by_cluster

    spec = args.by_cluster.strip()
    if Path(spec).is_file():
        spec = ",".join(x.strip() for x in Path(spec).read_text().replace("\n", ",").split(",") if x.strip())
    given = [flag for flag, value in (("--servers", args.servers), ("--jobs-out", args.jobs_out)) if value]
    lists = [f"--{name.replace('_', '-')}" for name in ("scheduling", "estimates", "load_scale")
             if len(getattr(args, name)) > 1]
    if given or lists:
        raise ParameterError(f"--by-cluster runs each cluster on its own size with one value of each option (got "
                             f"{', '.join(given + lists)})")
    result = replay_by_cluster(trace, spec, scheduling=args.scheduling[0], estimates=args.estimates[0],
                               load_scale=args.load_scale[0], **_replay_failures(args))
    return {"mode": "by-cluster", **result.summary(tau=args.bsld_tau, trim=args.trim, size_edges=edges)}


def _seed_needs_failures(failure_rate, seed, wait_budget=None) -> None:
    """A replay's only randomness is its failure clocks and exponential patience: a seed without either is
    refused, not ignored."""
    patience = isinstance(wait_budget, str) and wait_budget.strip().startswith("exp:")
    if failure_rate is None and not patience and seed is not None:
        raise ParameterError(f"--seed must come with --failure-rate or --wait-budget exp:MEAN (got --seed {seed} "
                             "alone): a replay without them has no randomness")


def _replay_failures(args) -> dict:
    """A replay's failure, clock and node options, and its seed."""
    _seed_needs_failures(args.failure_rate, args.seed, args.wait_budget)
    from .clocks import OPTIONS

    clock = {name: getattr(args, name) for name in OPTIONS if getattr(args, name) is not None}
    nodes = {"node_size": args.node_size} if args.node_size is not None else {}
    return {"failure_rate": args.failure_rate, "max_attempts": args.max_attempts,
            "resubmit_delay": args.resubmit_delay, "seed": 0 if args.seed is None else args.seed, **clock, **nodes}


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
              f"{f['max_attempts'] or 'unlimited'} attempts, resubmit delay {f['resubmit_delay']:g}, "
              f"seed {f['seed']}: {out['aborted_jobs']} jobs aborted (not in the means), "
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
          + (f"{'lost':>9}" if lost else ""))
    for c in out["classes"]:
        print(f"{c['class']:<12}{c['jobs']:>8}{_fmt(c['mean_waiting'], '>14.6g')}{_fmt(c['max_waiting'], '>14.6g')}"
              f"{_fmt(c['mean_bounded_slowdown'], '>12.4g')}{_fmt(c['max_bounded_slowdown'], '>12.4g')}"
              + (_fmt(c["lost_share"], ">9.2%") if lost else ""))
    if out.get("jobs_out"):
        print(f"jobs written to   {out['jobs_out']}")


def _print_shaken(out: dict) -> None:
    """``replay --shake`` (or ``--resample``) as text: per point the log's metric, its interval over the copies
    and how often the point keeps its rank; then how often the log's best point stays the best."""
    from .replay import SHAKEN_METRICS

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
    """``replay --by-cluster`` as text: one row per cluster, then all clusters together and the unsized ones."""
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
    from .replay import GRID_OPTIONS
    from .system import option_fields

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
    rp.set_defaults(run=_replay, show=_print_replay)


_COMMANDS = {"stability": _add_stability, "simulate": _add_simulate, "sweep": _add_sweep, "bound": _add_bound,
             "plan": _add_plan, "plan-phases": _add_plan_phases, "spark-bench": _add_spark_bench,
             "spark-analyze": _add_spark_analyze, "replay": _add_replay}


def build_parser(argv=None) -> argparse.ArgumentParser:
    """The command-line parser. Given the arguments ``argv``, only the command they name gets its options
    (the others are listed with their help): building every command's parser is paid by every command (timing:
    CHANGELOG)."""
    parser = _Parser(prog=PROG, description="Stability, CTMC, simulation and bounds for barrier-mode parallel "
                                            "systems (Walker & Fidler 2025).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    chosen = next((a for a in argv if not a.startswith("-")), None) if argv is not None else None
    for name, add in _COMMANDS.items():
        if chosen not in _COMMANDS or chosen == name:
            add(sub)
        else:
            sub.add_parser(name, help=COMMAND_HELP[name])
    return parser


#: what to do when a command runs out of memory, by command (default: the simulating commands' advice)
MEMORY_HINTS = {"replay": "the log (after decompression) or its per-task times do not fit: replay a smaller log",
                "spark-analyze": "the event log does not fit: analyze a smaller log",
                "stability": "use a smaller system or fewer states (--max-states)",
                "bound": "use a smaller system"}


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """The library's notices (a ``UserWarning``) as one line on standard error, named by the command; any other
    warning as Python shows it."""
    if issubclass(category, UserWarning) and "barrier_queues" in str(filename):
        print(f"{PROG}: {message}", file=sys.stderr, flush=True)
    else:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            out = args.run(args)
    except ParameterError as exc:
        parser.exit(2, f"{PROG}: error: {exc}\n")
    except KeyboardInterrupt:
        parser.exit(130, f"{PROG}: interrupted\n")
    except MemoryError:
        hint = MEMORY_HINTS.get(args.command, "use fewer jobs, replications or states")
        parser.exit(2, f"{PROG}: error: the computation needs more memory than this machine has; {hint}\n")
    except OSError as exc:
        parser.exit(2, f"{PROG}: error: {exc.strerror or exc} ({exc.filename or 'output'})\n")
    if args.json:
        from .outputs import strict_json

        out.pop("_table", None)
        print(strict_json(out, sort_keys=True))
    else:
        args.show(out)
    return 0


#: glibc's mallopt(3) parameters set by the command (:func:`keep_freed_memory`): M_MMAP_THRESHOLD 32 MiB (the
#: ceiling of glibc's own sliding threshold), M_TOP_PAD 64 MiB, M_TRIM_THRESHOLD 256 MiB
MALLOPT = ((-3, 32 << 20), (-2, 64 << 20), (-1, 256 << 20))


def keep_freed_memory() -> bool:
    """Ask glibc's allocator to keep freed memory for reuse instead of handing it back to the system (the
    command only: a process of its own; the library leaves its host's allocator alone). Returns whether it was
    set (False where there is no glibc ``mallopt``).

    A run allocates its arrays chunk by chunk (each a few MB: draws, attempts, the window's new values) and
    frees them; by default glibc maps arrays above its threshold afresh, and trims the free top of its heaps
    (the main one and the helper threads'), so the next chunk's arrays fault their pages in again, zeroed
    by the kernel; keeping them costs a little resident memory (measured: CHANGELOG)."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return all([mallopt(param, value) == 1 for param, value in MALLOPT])


def entry() -> int:
    """The ``barrier-queues`` command: :func:`main` (after :func:`keep_freed_memory`), then ``gc.freeze()``
    before the interpreter exits; a closed standard output (``barrier-queues ... | head``) ends it quietly
    with status 1.

    At exit Python collects garbage over every object still alive (numpy's,
    argparse's, ours); frozen objects are skipped, and they are freed as
    usual otherwise (measured: CHANGELOG).
    """
    keep_freed_memory()
    try:
        return main()
    except BrokenPipeError:           # the reader left (``... | head``): no traceback, as Python's docs advise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    finally:
        gc.freeze()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(entry())
