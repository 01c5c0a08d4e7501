"""The command line's option types and the system options every command builds from ``BarrierSystem``'s
fields and the registries (:mod:`barrier_queues.cli`)."""

from __future__ import annotations

import argparse
import functools
import math
import re
import sys

from .._validation import ParameterError

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
    if o["kind"] == "time_or_exp":
        return _time_or_exp(label, o["low"])
    return str


def _time_or_exp(label: str, low):
    """A time (a float >= ``low``) or ``exp:MEAN`` (kept as its text, checked by the system)."""
    number = _float(label, low)

    def parse(text):
        return text.strip() if text.strip().startswith("exp:") else number(text)
    return parse


def _system_options() -> dict:
    """``{flag: (dest, parser, help)}``: generated from the system's fields and the rule and scheduler
    registries (:func:`barrier_queues.system.option_fields`), plus ``--utilization``."""
    from ..system import option_fields

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
    from ..system import option_fields

    return {o["flag"]: o["short"] for o in option_fields() if o["short"]}


def _numeric() -> set:
    from ..system import option_fields

    return {o["name"] for o in option_fields() if o["kind"] in ("int", "float", "time_or_exp")} | {"utilization"}


def _choice(name, choices):
    def parse(text):
        if text not in choices:
            raise argparse.ArgumentTypeError(f"{name} must be one of {', '.join(choices)} (got {text!r})")
        return text
    return parse


#: choice and text options a sweep may list (their values hold no comma)
LISTED_CHOICES = ("scheduling", "wait_budget", "on_budget", "requeue_order", "moldable", "patience_wait")


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
    from ..system import BarrierSystem

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
        from ..load import system_at_utilization

        return system_at_utilization(kw, utilization)
    if need_rate and "arrival_rate" not in kw:
        raise ParameterError("--arrival-rate must be given (a number > 0), or --utilization")
    return BarrierSystem(**kw)


def _input_files(args) -> list[str]:
    """The files a command reads: an empirical task law's file, a workload file."""

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
    from ..workload import read_workload

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


def _add_clock_preset(p) -> None:
    """``--clock-preset NAME`` (:data:`barrier_queues.clocks.PRESETS`): a gang scheduler's default clock options,
    applied by :func:`_apply_clock_preset`; the options given beside it take their place."""
    from ..clocks import PRESETS

    p.add_argument("--clock-preset", default=None, type=_choice("clock-preset", tuple(PRESETS)),
                   help="a gang scheduler's default clock: " + "; ".join(f"{n}: {x.help}" for n, x in PRESETS.items())
                   + " (options given beside it take their place)")
    p.set_defaults(_parser=p)


def _apply_clock_preset(args) -> str | None:
    """Set each clock option of ``args.clock_preset`` that was not given, parsed by its own option's parser (a
    list where the command takes lists); ``args._preset_set`` names the options it set. Returns the notice to
    show on stderr once the command has accepted its options (None without a preset)."""
    name = getattr(args, "clock_preset", None)
    if name is None:
        return None
    from ..clocks import PRESETS

    parser, taken = args._parser, []
    args._preset_set = []
    for dest, text in PRESETS[name].options.items():
        if getattr(args, dest, None) is None:
            action = next(a for a in parser._actions if a.dest == dest)
            setattr(args, dest, action.type(text) if action.type else text)
            taken.append(f"{action.option_strings[0]} {text}")
            args._preset_set.append(dest)
    return f"barrier-queues: --clock-preset {name}: " + (", ".join(taken) if taken else "every option given beside it")


def _unread(args, reads) -> list[str]:
    """The options given (away from their defaults) that a mode of a command does not read: every option of the
    command's parser but ``reads``, so that an option added to a command is refused by the modes that ignore it
    until they read it (options a clock preset set are named ``--clock-preset``)."""
    preset = set(getattr(args, "_preset_set", ()))
    given = [max(action.option_strings, key=len) for action in args._parser._actions
             if action.option_strings and action.dest not in reads and action.dest not in preset
             and action.dest != "help" and getattr(args, action.dest, action.default) != action.default]
    if preset - set(reads) and "--clock-preset" not in given:     # the options a preset set: named by the preset
        given.append("--clock-preset")
    return given
