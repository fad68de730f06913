"""Units used in scenario files: durations, sizes, percentages and memory growth rates.

These live in `servers` (not `loadgen`) because server configs use them too and the import
direction is loadgen → servers only. Each parser accepts a plain number (in the base unit) or a
string with a unit, and raises ValueError with a message fit to show a user.
"""

from __future__ import annotations

import math
import re
from typing import Annotated

from pydantic import BeforeValidator, Field, PlainSerializer

_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"

_DURATION_UNITS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
# Binary units: 100KB at 50 req/s is 293 MB/min, the figure the tracker quotes.
_SIZE_UNITS = {"B": 1, "KB": 1024, "KiB": 1024, "MB": 1024**2, "MiB": 1024**2, "GB": 1024**3, "GiB": 1024**3}
_PER_UNITS = {"s": 1 / 60, "min": 1.0, "m": 1.0, "h": 60.0}
# Beyond these a value is a typo, not a plan: a year-long wait or a terabyte line would only
# fail later (a timer overflow, an allocation), far from the line that asked for it.
MAX_DURATION_S = 366 * 24 * 3600.0
MAX_SIZE = 1024**4
MAX_GROWTH_RATE = 1024.0**3  # MB/min: a petabyte a minute


def _finite(value: float, what: str) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number")
    return value


def _split(text: str, what: str, units: dict[str, float] | dict[str, int], example: str) -> tuple[float, str]:
    match = re.fullmatch(_NUMBER + r"\s*([A-Za-zµ]*)", text.strip())
    if not match:
        raise ValueError(f"{what} {text!r} is not a number with a unit, e.g. {example}")
    value, unit = _finite(float(match.group(1)), f"{what} {text!r}"), match.group(2)
    if unit not in units:
        raise ValueError(f"unknown {what} unit {unit!r} in {text!r}; use one of {', '.join(units)}")
    return value, unit


def parse_duration(value: object) -> float:
    """'50ms' → 0.05; a bare number is seconds."""
    if isinstance(value, bool):
        raise ValueError("a duration must be a number of seconds or a string like '50ms'")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        number, unit = _split(value, "duration", _DURATION_UNITS, "'50ms', '2s', '5m'")
        if not unit:
            raise ValueError(f"duration {value!r} needs a unit (ms, s, m, h)")
        seconds = number * _DURATION_UNITS[unit]
    else:
        raise ValueError("a duration must be a number of seconds or a string like '50ms'")
    _finite(seconds, "a duration")
    if seconds < 0:
        raise ValueError("a duration cannot be negative")
    if seconds > MAX_DURATION_S:
        raise ValueError(f"a duration must be at most 366 days ({MAX_DURATION_S:g}s)")
    return seconds


def parse_size(value: object) -> int:
    """'100KB' → 102400 bytes; a bare number is bytes."""
    if isinstance(value, bool):
        raise ValueError("a size must be a number of bytes or a string like '100KB'")
    if isinstance(value, int | float):
        size = float(value)
    elif isinstance(value, str):
        number, unit = _split(value, "size", _SIZE_UNITS, "'100KB', '2MB'")
        size = number * _SIZE_UNITS[unit or "B"]
    else:
        raise ValueError("a size must be a number of bytes or a string like '100KB'")
    _finite(size, "a size")
    if size < 0:
        raise ValueError("a size cannot be negative")
    if size > MAX_SIZE:
        raise ValueError("a size must be at most 1024GB")
    return int(size)


def parse_fraction(value: object) -> float:
    """'1%' → 0.01; a bare number is a fraction (0.01), so 1 means 100%."""
    if isinstance(value, bool):
        raise ValueError("a percentage must be a string like '1%' or a fraction like 0.01")
    if isinstance(value, int | float):
        fraction = float(value)
    elif isinstance(value, str) and value.strip().endswith("%"):
        try:
            fraction = float(value.strip()[:-1]) / 100
        except ValueError:
            raise ValueError(f"percentage {value!r} is not a number followed by %") from None
    else:
        raise ValueError("a percentage must be a string like '1%' or a fraction like 0.01")
    if not 0 <= _finite(fraction, "a percentage") <= 1:
        raise ValueError("a percentage must lie between 0% and 100%")
    return fraction


def parse_growth_rate(value: object) -> float:
    """'10MB/min' → 10.0 MB per minute (MiB, like the rest); a bare number is MB/min."""
    if isinstance(value, bool):
        raise ValueError("a growth rate must be a string like '10MB/min'")
    if isinstance(value, int | float):
        rate = float(value)
    elif isinstance(value, str) and "/" in value:
        size_text, per = (part.strip() for part in value.split("/", 1))
        if per not in _PER_UNITS:
            raise ValueError(f"unknown time unit {per!r} in {value!r}; use s, min or h")
        rate = parse_size(size_text) / 1024**2 / _PER_UNITS[per]
    else:
        raise ValueError("a growth rate must be a string like '10MB/min'")
    if abs(_finite(rate, "a growth rate")) > MAX_GROWTH_RATE:
        raise ValueError("a growth rate must be at most 1024TB/min")
    return rate


def format_duration(seconds: float) -> str:
    """Compact text for messages: 0.05 → '50ms', 90 → '90s'."""
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    return f"{seconds:g}s"


# Annotated types for pydantic models. Values are stored in base units (seconds, bytes,
# fractions, MB/min) and serialised as plain numbers, so a dumped scenario reloads unchanged.
Duration = Annotated[float, BeforeValidator(parse_duration), PlainSerializer(float, return_type=float)]
PositiveDuration = Annotated[Duration, Field(gt=0)]
Size = Annotated[int, BeforeValidator(parse_size)]
Fraction = Annotated[float, BeforeValidator(parse_fraction)]
GrowthRate = Annotated[float, BeforeValidator(parse_growth_rate)]
