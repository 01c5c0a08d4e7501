"""The compiled simulation kernels, loaded on first use.

The kernels are Cython (``_kernels.pyx`` with one include per rule set and
per scheduler room), compiled to a C extension when the package is
installed. Codes shared with Python (release rules, batch-sampling state
slots) are read from the compiled module, never typed again.
"""

from __future__ import annotations

from ._validation import ParameterError


def kernels_module():
    """The compiled kernels (Cython, built at install time), imported on first use."""
    try:
        from . import _kernels
    except ImportError as exc:      # a source tree that was never built
        raise ParameterError("the compiled simulation kernels are not built: install the package "
                             "(make install, or pip install -e . with a C compiler)") from exc
    return _kernels


__all__ = ["kernels_module"]
