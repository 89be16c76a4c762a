"""The REST API served for tests: its routes in a Starlette app under uvicorn, in a thread on
127.0.0.1 with a free port, and the keys and tokens its clients present.

`Keys` makes an RSA key pair (the public half as PEM and as a JWKS) and signs tokens with it;
`served(routes)` serves routes until the block ends. The store is a parameter of the routes, so
a test can serve the in-memory store (tests/apistore.py) or the git store alike.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.routing import BaseRoute

from reconciler.service.api import auth

AUDIENCE = "dro-api"
ISSUER = "https://issuer.example"
ALL_SCOPES = "policies:read policies:write"


def _private_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class Keys:
    """An RSA signing key, its public half, and tokens signed by it."""

    private: rsa.RSAPrivateKey = field(default_factory=_private_key)
    kid: str = "test-key"

    @property
    def public_pem(self) -> bytes:
        """The public key as PEM (what --api-jwt-key-file holds)."""
        return self.private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    @property
    def private_pem(self) -> bytes:
        """The private key as PEM."""
        return self.private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def jwk(self) -> dict[str, Any]:
        """The public key as one JWK with this kid."""
        entry: dict[str, Any] = json.loads(
            jwt.algorithms.RSAAlgorithm.to_jwk(self.private.public_key())
        )
        entry.update(kid=self.kid, use="sig", alg="RS256")
        return entry

    def token(self, scope: str | None = ALL_SCOPES, **claims: Any) -> str:
        """A token: sub alice, the test audience and issuer, an hour to live, the scopes;
        `claims` override or add (a None value drops the claim)."""
        now = int(time.time())
        body: dict[str, Any] = {
            "sub": "alice",
            "aud": AUDIENCE,
            "iss": ISSUER,
            "iat": now,
            "exp": now + 3600,
            "scope": scope,
        }
        body.update(claims)
        body = {k: v for k, v in body.items() if v is not None}
        return jwt.encode(body, self.private_pem, algorithm="RS256", headers={"kid": self.kid})


def authenticator(keys: Keys, tmp: Path, *, jwks: bool = True) -> auth.Authenticator:
    """An authenticator trusting `keys`, through the settings as an operator gives them."""
    values: dict[str, Any] = {"api_audience": AUDIENCE, "api_issuer": ISSUER}
    if jwks:
        path = tmp / "jwks.json"
        path.write_text(json.dumps({"keys": [keys.jwk()]}), encoding="utf-8")
        values["api_jwks_file"] = path
    else:
        path = tmp / "key.pem"
        path.write_bytes(keys.public_pem)
        values["api_jwt_key_file"] = path
    found = auth.from_settings(values)
    assert found is not None
    return found


@dataclass
class Served:
    """A running server: its base URL."""

    url: str
    server: uvicorn.Server


@contextmanager
def served(routes: Sequence[BaseRoute], *, deadline: float = 10.0) -> Iterator[Served]:
    """Serve the routes with uvicorn on 127.0.0.1, a free port, until the block ends."""
    app = Starlette(routes=list(routes))
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", lifespan="off", access_log=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    limit = time.monotonic() + deadline
    while not server.started:
        assert thread.is_alive(), "uvicorn stopped before it served"
        assert time.monotonic() < limit, "uvicorn did not start in time"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield Served(url=f"http://127.0.0.1:{port}", server=server)
    finally:
        server.should_exit = True
        thread.join(timeout=deadline)


def bearer(token: str) -> Mapping[str, str]:
    """The Authorization header of a token."""
    return {"Authorization": f"Bearer {token}"}
