"""Words for the command line's text output: task laws, clocks, failures and verdicts in words, shared by the
commands (:mod:`barrier_queues.cli`)."""

from __future__ import annotations

import math


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


def _clock_words(cfg: dict) -> str:
    """A system's gang clock in words, from its description."""
    clock = (f"wait budget {cfg['wait_budget']}" if cfg.get("wait_budget") is not None
             else f"hold timeout {cfg['hold_timeout']:g}" if isinstance(cfg["hold_timeout"], float)
             else f"hold timeout {cfg['hold_timeout']} (exponential)")
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
