"""The one rule for an integer field in a document a person or a reviewer writes.

As on the JavaScript reference host, ``1000``, ``1000.0`` and ``1e3`` are the same whole number; a fraction,
a boolean, infinity and text are not. (A leading-zero ``010`` is refused earlier, by the YAML reader.)
"""

from __future__ import annotations

import math
from typing import Any


def whole_number(value: Any) -> int | None:
    """``value`` as an ``int`` when it is an integral number (``3``, ``3.0``, ``1e1``), else None."""
    if type(value) is int:
        return value
    if type(value) is float and math.isfinite(value) and value.is_integer():
        return int(value)
    return None
