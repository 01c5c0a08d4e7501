"""Command line: ``barrier-queues <command> ...``.

Commands
--------
stability
    Maximum stable load of a 1- or 2-barrier (s,k,l) system (Table I, CTMC,
    order statistics). ``--json`` prints one JSON object.

Bad input prints one line ``barrier-queues: error: ...`` naming the
parameter and its valid range, and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from ._validation import ParameterError


def _stability(args) -> dict:
    from .stability import stability_limit

    lim = stability_limit(args.servers, args.tasks, args.needed, args.barriers,
                          task_rate=args.task_rate, task_dist=args.task_dist,
                          method=args.method, max_states=args.max_states)
    out = lim.to_dict()
    if out["states"] is None:
        out.pop("states")
    out["lambda_max_unit"] = "jobs per unit time" + (" (mu = 1)" if args.task_rate == 1.0
                                                      and args.task_dist is None else "")
    return out


def _print_stability(out: dict) -> None:
    name = f"({out['servers']},{out['tasks']},{out['needed']}) {out['barriers']}-barrier"
    print(f"system            {name}")
    print(f"task law          {out['task_law']}")
    print(f"method            {out['method']}" + (f" ({out['states']:,} states)"
                                                   if "states" in out else ""))
    print(f"lambda_max        {out['lambda_max']:.10g}  {out['lambda_max_unit']}")
    print(f"rho_max           {out['rho_max']:.10g}")
    print(f"rho_useful        {out['rho_useful']:.10g}")
    print(f"task_throughput   {out['task_throughput']:.10g}  tasks per worker per mean task time")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="barrier-queues",
        description="Stability, CTMC, simulation and bounds for barrier-mode parallel systems "
                    "(Walker & Fidler 2025).")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    st = sub.add_parser("stability", help="maximum stable load (Table I, CTMC, order statistics)",
                        description="Maximum stable job rate and utilization of a barrier system.")
    st.add_argument("--servers", "-s", type=int, required=True, help="workers s >= 1")
    st.add_argument("--tasks", "-k", type=int, required=True, help="tasks per job, 1 <= k <= s")
    st.add_argument("--needed", "-l", type=int, default=None,
                    help="tasks that must finish, 1 <= l <= k (default k)")
    st.add_argument("--barriers", "-b", type=int, choices=(1, 2), default=1,
                    help="1: start barrier; 2: start and departure barrier (default 1)")
    st.add_argument("--task-rate", type=float, default=1.0,
                    help="rate mu of exponential tasks (default 1)")
    st.add_argument("--task-dist", default=None,
                    help="task law, e.g. 'bimodal:p=0.9,rate1=10,rate2=0.1', 'erlang:shape=4,rate=4',"
                         " 'deterministic:value=1', 'empirical:file=PATH' (2-barrier only)")
    st.add_argument("--method", default="auto",
                    choices=("auto", "closed-form", "ctmc", "order-statistics"))
    st.add_argument("--max-states", type=int, default=12_000_000,
                    help="refuse CTMCs with more feasible states (default 12,000,000)")
    st.add_argument("--json", action="store_true", help="print one JSON object")
    st.set_defaults(run=_stability, show=_print_stability)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        out = args.run(args)
    except ParameterError as exc:
        parser.exit(2, f"barrier-queues: error: {exc}\n")
    if args.json:
        print(json.dumps(out, sort_keys=True))
    else:
        args.show(out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
