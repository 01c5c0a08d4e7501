"""Run a list of real Spark benchmark runs one at a time, each on a quiet machine.

Usage::

    python tools/spark_campaign.py PLAN.json [--work _build/spark-campaign] [--max-load 0.3]

``PLAN.json`` is a list of runs, each ``{"name": ..., "dest": "data/spark/NAME",
"args": [spark-bench options ...]}``. For each run, in order:

* skip it if ``dest`` already exists (a finished run is never redone or
  overwritten);
* wait while ``WORK/PAUSE`` exists (create it to hold the campaign between
  runs, e.g. before running the test suite; a run in progress is not
  interrupted) and until the 1-minute load average is below ``--max-load``;
* run ``barrier-queues spark-bench ARGS --out WORK/NAME-tryN`` in a child
  process, its output in ``WORK/NAME-tryN.log``;
* if the run completed and the machine served it honestly
  (``metadata.json: serving.honest``), archive it to ``dest``; otherwise keep
  it under ``WORK`` and repeat it (at most ``--tries`` times): a run judged not
  honest is repeated, not used. A plan item with ``"keep_not_honest": true``
  is archived even when the serving check fails (its verdict stays in its
  metadata and must be reported with it): for runs whose question does not
  depend on timing, e.g. which attempts Spark makes after injected failures.

Progress lines go to stdout and ``WORK/campaign.log``. Never run the test suite
or a benchmark beside a campaign: the serving check would (rightly) reject the
runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def log(work: Path, message: str) -> None:
    line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}"
    print(line, flush=True)
    with (work / "campaign.log").open("a") as f:
        f.write(line + "\n")


def wait_quiet(work: Path, max_load: float) -> None:
    announced = False
    while (work / "PAUSE").exists() or os.getloadavg()[0] >= max_load:
        if not announced:
            log(work, f"waiting (pause file: {(work / 'PAUSE').exists()}, load {os.getloadavg()[0]:.2f})")
            announced = True
        time.sleep(10)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("plan", help="JSON list of {name, dest, args}")
    parser.add_argument("--work", default="_build/spark-campaign", help="folder for raw runs and logs")
    parser.add_argument("--max-load", type=float, default=0.3, help="start a run only below this 1-min load")
    parser.add_argument("--tries", type=int, default=2, help="attempts per run")
    args = parser.parse_args(argv)
    plan = json.loads(Path(args.plan).read_text())
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    for item in plan:
        name, dest = item["name"], Path(item["dest"])
        if dest.exists():
            log(work, f"{name}: {dest} exists, skipped")
            continue
        for attempt in range(1, args.tries + 1):
            out = work / f"{name}-try{attempt}"
            if out.exists():
                log(work, f"{name}: {out} exists from an earlier campaign; next attempt")
                continue
            wait_quiet(work, args.max_load)
            log(work, f"{name}: start attempt {attempt} (load {os.getloadavg()[0]:.2f})")
            cmd = [sys.executable, "-m", "barrier_queues.cli", "spark-bench", *item["args"], "--out", str(out)]
            t0 = time.time()
            with (work / f"{name}-try{attempt}.log").open("w") as f:
                rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
            meta_path = out / "metadata.json"
            meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
            serving = meta.get("serving") or {}
            honest = bool(serving.get("honest"))
            log(work, f"{name}: attempt {attempt} exit {rc}, status {meta.get('status')}, "
                      f"{time.time() - t0:.0f} s, honest {honest} {serving.get('problems') or ''}")
            if rc == 0 and meta.get("status") == "complete" and honest:
                from barrier_queues.spark_bench import archive_run

                archive_run(out, dest)
                log(work, f"{name}: archived to {dest}")
                break
            if rc == 0 and meta.get("status") == "complete" and item.get("keep_not_honest"):
                from barrier_queues.spark_bench import archive_run

                archive_run(out, dest)
                log(work, f"{name}: judged not honest {serving.get('problems')}, kept as the plan asks; archived to "
                          f"{dest}")
                break
            if rc == 0 and meta.get("status") == "time limit" and honest and item.get("keep_time_limit"):
                from barrier_queues.spark_bench import archive_run

                archive_run(out, dest)
                log(work, f"{name}: hit its time limit (kept: the plan asks for it); archived to {dest}")
                break
        else:
            log(work, f"{name}: no usable attempt in {args.tries}")
    log(work, "campaign done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
