"""Build of the compiled simulation kernels (everything else is in pyproject.toml).

The kernels (src/barrier_queues/_kernels.pyx) are Cython, compiled to C at
install time. ``-ffp-contract=off`` keeps every a*b+c as two IEEE-754
operations (GCC would fuse them on CPUs with FMA), so the kernels equal the
plain-Python reference bit for bit on every architecture.
"""

import sys

from Cython.Build import cythonize
from setuptools import Extension, setup

flags = [] if sys.platform == "win32" else ["-O2", "-ffp-contract=off", "-fno-fast-math"]
kernels = Extension("barrier_queues._kernels", ["src/barrier_queues/_kernels.pyx"], extra_compile_args=flags)
# the generated C goes under build/, not beside the source (src/ holds only what we wrote)
setup(ext_modules=cythonize([kernels], language_level=3, build_dir="build"))
