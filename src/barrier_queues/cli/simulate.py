"""``barrier-queues stability`` and ``simulate``: stability limits and simulations of drawn workloads, moldable
jobs included (:mod:`barrier_queues.cli`)."""

from __future__ import annotations

import argparse
import sys

from .._validation import ParameterError
from .options import (
    COMMAND_HELP,
    _add_clock_preset,
    _add_system_options,
    _choice,
    _input_files,
    _int,
    _run_options,
    _system,
)
from .text import _clock_words, _fmt, _law_words, _print_clocks, _print_failures, _print_verdict


def _stability(args) -> dict:
    from ..stability import stability_limit

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


def _simulate(args) -> dict:
    from ..outputs import check_new_file
    from ..saturated import saturated_throughput
    from ..simulate import simulate

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
    from ..runs import MAX_DRAWS, NOTICE_DRAWS, run_draws

    draws = run_draws(system, jobs, replications)
    if NOTICE_DRAWS < draws <= MAX_DRAWS:
        print(f"barrier-queues: this run draws {draws:.2g} task times; it takes a while (Ctrl-C stops it)",
              file=sys.stderr, flush=True)


def _print_workers(out: dict) -> None:
    """Moldable jobs: the mean workers a job took, with its interval."""
    if "mean_workers" in out:
        lo, hi = out["ci"]["workers"] or (None, None)
        print(f"{'workers':<13} {_fmt(out['mean_workers'], '>10.4f')} [{_fmt(lo, '>10.4f')}, {_fmt(hi, '>10.4f')}]"
              " taken per job")


def _print_simulation(out: dict) -> None:
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
    if cfg.get("moldable") is not None:
        from ..moldable_policies import label

        extra.append(f"moldable jobs: {label(cfg['moldable'], cfg)}")
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
    _print_workers(out)
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


def _add_simulate(sub) -> None:
    sim = sub.add_parser("simulate", help=COMMAND_HELP["simulate"],
                         description="Simulate a barrier system with the compiled kernels.")
    _add_system_options(sim)
    _run_options(sim)
    sim.add_argument("--saturated", action="store_true",
                     help="all jobs at time 0: estimate the stability limit lambda_max")
    sim.add_argument("--jobs-csv", default=None, help="write the per-job table to this new CSV file")
    sim.add_argument("--force", action="store_true", help="overwrite --jobs-csv if it exists")
    sim.add_argument("--json", action="store_true", help="print one JSON object")
    _add_clock_preset(sim)
    sim.set_defaults(run=_simulate, show=_print_simulation)
