"""The facade's token-signing keys: ES256 key pairs derived from the seeds of one secret.

The secret has the request-state secret's shape, ``{"current": "<kid>", "<kid>": "<seed>"}``
(CloudFormation generates it; nothing but the seeds is ever stored). Each seed is expanded with
HKDF-SHA256 into a P-256 private key, so every instance derives the same key pair from the same
seed and no instance has to generate, share or store a private key. Tokens are signed with the
current key and name its kid; every key of the set is published in the JWKS and verifies, so a
rotation (add a seed under a new kid, make it current, drop the old one once its tokens have
expired) never invalidates a token in flight. The secret is re-read every five minutes.
"""

from __future__ import annotations

import base64
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # cryptography loads on the first key use, the ports with the rest of the facade
    from cryptography.hazmat.primitives.asymmetric import ec

    from mcp_platform.authorization_server.ports import KeySet

ALGORITHM = "ES256"
_CURVE_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551  # P-256 n
_INFO = b"mcp-platform oauth facade signing key v1"


def derive_private_key(seed: bytes, kid: str) -> ec.EllipticCurvePrivateKey:
    """The P-256 key of a seed: 48 bytes of HKDF output reduced into [1, n-1] (bias below 2^-128)."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    material = HKDF(algorithm=hashes.SHA256(), length=48, salt=kid.encode(), info=_INFO).derive(seed)
    scalar = int.from_bytes(material, "big") % (_CURVE_ORDER - 1) + 1
    return ec.derive_private_key(scalar, ec.SECP256R1())


def public_jwk(kid: str, key: ec.EllipticCurvePublicKey) -> dict[str, str]:
    numbers = key.public_numbers()
    return {
        "kty": "EC",
        "crv": "P-256",
        "x": _b64url(numbers.x.to_bytes(32, "big")),
        "y": _b64url(numbers.y.to_bytes(32, "big")),
        "kid": kid,
        "use": "sig",
        "alg": ALGORITHM,
    }


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class SigningKeys:
    """Derived key pairs, cached per (kid, seed): a rotated seed under the same kid is re-derived."""

    def __init__(self, seeds: KeySet) -> None:
        self.seeds = seeds
        self._derived: dict[tuple[str, bytes], ec.EllipticCurvePrivateKey] = {}
        self._lock = threading.Lock()

    def signer(self) -> tuple[str, ec.EllipticCurvePrivateKey]:
        """(kid, private key) for new tokens. Blocking (may read the secret)."""
        kid, seed = self.seeds.signing_key()
        return kid, self._key(kid, seed)

    def verifier(self, kid: str) -> ec.EllipticCurvePublicKey | None:
        """The public key named ``kid``; None when the set does not hold it. Blocking."""
        seed = self.seeds.verification_key(kid)
        return None if seed is None else self._key(kid, seed).public_key()

    def jwks(self) -> dict[str, Any]:
        """Every key of the set, public halves only. Blocking."""
        return {"keys": [public_jwk(kid, self._key(kid, seed).public_key()) for kid, seed in self.seeds.keys().items()]}

    def _key(self, kid: str, seed: bytes) -> ec.EllipticCurvePrivateKey:
        with self._lock:
            key = self._derived.get((kid, seed))
            if key is None:
                key = derive_private_key(seed, kid)
                self._derived[(kid, seed)] = key
            return key
