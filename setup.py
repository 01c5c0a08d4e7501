"""Build of the compiled simulation kernels (everything else is in pyproject.toml).

The kernels (src/barrier_queues/_kernels.pyx) are Cython, compiled to C at
install time. ``-ffp-contract=off`` keeps every a*b+c as two IEEE-754
operations (GCC would fuse them on CPUs with FMA), so the kernels equal the
plain-Python reference bit for bit on every architecture. ``-O3`` rather
than ``-O2`` lets GCC unswitch loops on invariant branches and vectorize
element-wise loops; without ``-ffast-math`` it never reorders a floating-point
sum, so every result is the same (the 8 benchmark systems' 2M-job summaries
are identical under both); measured 2026-11-26, before the block sums were
rewritten, the statistics' block sums and histogram bins took 0.064 s and
0.060 s per 2M jobs at -O2, 0.043 s and 0.037 s at -O3.
"""

import sys

from Cython.Build import cythonize
from setuptools import Extension, setup

flags = [] if sys.platform == "win32" else ["-O3", "-ffp-contract=off", "-fno-fast-math"]
kernels = Extension("barrier_queues._kernels", ["src/barrier_queues/_kernels.pyx"], extra_compile_args=flags)
# the generated C goes under build/, not beside the source (src/ holds only what we wrote)
setup(ext_modules=cythonize([kernels], language_level=3, build_dir="build"))
