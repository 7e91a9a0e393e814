"""The one rule for an integer field in a document a person or a reviewer writes.

A manifest's ``timeoutMs`` and a verdict file's ``line`` are read by JavaScript on the
reference host, where ``1000``, ``1000.0`` and ``1e3`` are the same number. So an integral
number is a whole number here too, whatever its spelling; a fraction, a boolean, infinity and
text are not. (A leading-zero spelling such as ``010`` never reaches this rule: the YAML
reader refuses it as ambiguous, and JSON has no such spelling.)
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["whole_number"]


def whole_number(value: Any) -> int | None:
    """``value`` as an ``int`` when it is an integral number (``3``, ``3.0``, ``1e1``), else None."""
    if type(value) is int:
        return value
    if type(value) is float and math.isfinite(value) and value.is_integer():
        return int(value)
    return None
