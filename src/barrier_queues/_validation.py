"""Input checking shared by every public function.

Each check raises :class:`ParameterError` with one message that names the
parameter, the valid range and the value received, e.g.
``tasks must be an integer with 1 <= tasks <= servers = 8 (got 10)``.
"""

from __future__ import annotations

import math
import numbers


class ParameterError(ValueError):
    """Invalid model parameter; the message names the parameter and its valid range."""


def _describe(value) -> str:
    return repr(value)


def check_int(name: str, value, low: int | None = None, high: int | None = None,
              high_name: str | None = None) -> int:
    """Return ``value`` as ``int`` if it is an integer in ``[low, high]``.

    ``high_name`` is a symbolic name for the upper bound (``"servers = 8"``)
    so that the message says where the bound comes from.
    """
    bounds = _range_text(name, low, high, high_name)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and not isinstance(value, bool) \
                and math.isfinite(value) and float(value).is_integer():
            value = int(value)
        else:
            raise ParameterError(f"{name} must be an integer{bounds} (got {_describe(value)})")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ParameterError(f"{name} must be an integer{bounds} (got {value})")
    return value


def _range_text(name, low, high, high_name) -> str:
    hi = high_name if high_name is not None else (str(high) if high is not None else None)
    if low is not None and hi is not None:
        return f" with {low} <= {name} <= {hi}"
    if low is not None:
        return f" >= {low}"
    if hi is not None:
        return f" <= {hi}"
    return ""


def check_positive(name: str, value, unit: str = "") -> float:
    """Return ``value`` as ``float`` if it is a finite number > 0."""
    suffix = f" {unit}" if unit else ""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{name} must be a finite number > 0{suffix} (got {_describe(value)})")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ParameterError(f"{name} must be a finite number > 0{suffix} (got {value!r})")
    return value


def check_nonnegative(name: str, value) -> float:
    """Return ``value`` as ``float`` if it is a finite number >= 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{name} must be a finite number >= 0 (got {_describe(value)})")
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ParameterError(f"{name} must be a finite number >= 0 (got {value!r})")
    return value


def check_probability(name: str, value, open_low: bool = False, open_high: bool = False) -> float:
    """Return ``value`` as ``float`` if it lies in the (half-)closed unit interval."""
    lo = "0 <" if open_low else "0 <="
    hi = "< 1" if open_high else "<= 1"
    msg = f"{name} must be a number with {lo} {name} {hi}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{msg} (got {_describe(value)})")
    value = float(value)
    if not math.isfinite(value) or value < 0 or value > 1 or (open_low and value == 0) \
            or (open_high and value == 1):
        raise ParameterError(f"{msg} (got {value!r})")
    return value


def check_choice(name: str, value, choices) -> object:
    """Return ``value`` if it is one of ``choices``."""
    if value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ParameterError(f"{name} must be one of {allowed} (got {_describe(value)})")
    return value


#: time-like parameters must lie within this factor of the mean task time (floating-point range)
TIME_SCALE = 1e9


def check_time(name: str, value, mean_task: float, allow_zero: bool = False) -> float:
    """A time-like parameter, finite, > 0 (or >= 0) and within TIME_SCALE of the mean task time."""
    v = check_nonnegative(name, value) if allow_zero else check_positive(name, value, "(time units)")
    lo, hi = mean_task / TIME_SCALE, mean_task * TIME_SCALE
    if (v > 0 or not allow_zero) and not lo <= v <= hi:
        raise ParameterError(f"{name} must lie within a factor 1e9 of the mean task time {mean_task:.6g}, "
                             f"i.e. {lo:.3g} <= {name} <= {hi:.3g}" + (" or be 0" if allow_zero else "")
                             + f" (got {v!r})")
    return v
