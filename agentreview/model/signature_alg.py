"""The shape of a signature ``alg`` name (``attestor.signature.alg``, ``Signer.algorithms``).

Any short name of ASCII letters, digits and ``. _ + -``, so a verifier can say which alg it has no signer for
rather than refuse the shape, while nothing can smuggle whitespace or controls into a message. Free of pydantic.
"""

from __future__ import annotations

import re

SIGNATURE_ALG_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$"
_ALG = re.compile(SIGNATURE_ALG_PATTERN)


def is_signature_alg(value: object) -> bool:
    """True when ``value`` is a string of the shape a signature alg must have."""
    return isinstance(value, str) and _ALG.fullmatch(value) is not None
