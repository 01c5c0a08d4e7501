"""``python -m barrier_queues.cli``: the command (:func:`barrier_queues.cli.entry`)."""

import sys

from . import entry

sys.exit(entry())
