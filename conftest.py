"""nbval's collection of the book: a chapter that replays the real workload logs runs only where the logs are
(the ``BARRIER_QUEUES_TRACES`` folder that ``make`` sets from its ``TRACES`` variable); elsewhere it is skipped
with the reason, and ``make test`` does not compare its results files. (Here, at the root, outside the test
paths: a second ``conftest.py`` under ``book/`` was collected by ``--doctest-modules`` and clashed with
``tests/conftest.py``.)"""

import os
from pathlib import Path

#: chapters that read the logs' folder, and the log each needs
NEEDS_LOGS = {"traces.ipynb": "KTH-SP2.swf.gz", "clocks.ipynb": "philly-pollux.csv.gz",
              "gpu.ipynb": "philly-pollux.csv.gz"}


def logs_missing(name: str) -> bool:
    folder = os.environ.get("BARRIER_QUEUES_TRACES")
    return name in NEEDS_LOGS and not (folder and (Path(folder) / NEEDS_LOGS[name]).is_file())


def pytest_ignore_collect(collection_path, config):
    if collection_path.parent.name == "book" and logs_missing(collection_path.name):
        print(f"\nbook/{collection_path.name} not executed: the workload logs' folder (BARRIER_QUEUES_TRACES; "
              "make sets it from TRACES) lacks " + NEEDS_LOGS[collection_path.name])
        return True
    return None
