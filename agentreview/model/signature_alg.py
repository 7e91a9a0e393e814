"""The shape of a signature ``alg`` name (``attestor.signature.alg``, ``Signer.algorithms``).

A signature alg names the scheme a signer plugin writes and verifies; the built-in ``ssh``
signer's is ``ssh-ed25519``. Any short name of ASCII letters, digits and ``. _ + -`` is
accepted, so a verifier can say which alg it has no signer for instead of refusing the
document's shape, while a name that could smuggle whitespace or control characters into
a one-line message is still refused. Kept apart from the pydantic model so plugin
discovery can check a signer's declared algorithms without importing pydantic.
"""

from __future__ import annotations

import re

SIGNATURE_ALG_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$"
_ALG = re.compile(SIGNATURE_ALG_PATTERN)


def is_signature_alg(value: object) -> bool:
    """True when ``value`` is a string of the shape a signature alg must have."""
    return isinstance(value, str) and _ALG.fullmatch(value) is not None
