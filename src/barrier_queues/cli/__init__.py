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
import gc
import os
import re
import sys
import warnings

from .._validation import ParameterError
from .options import COMMAND_HELP, PROG, _apply_clock_preset, _help_width
from .plan import _add_bound, _add_plan, _add_plan_phases
from .replay import _add_replay
from .simulate import _add_simulate, _add_stability
from .spark import _add_spark_analyze, _add_spark_bench
from .sweep import _add_sweep


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
            notice = _apply_clock_preset(args)
            out = args.run(args)
        if notice:                                     # (after the command accepted its options: no second line)
            print(notice, file=sys.stderr, flush=True)
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
        from ..outputs import strict_json

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
