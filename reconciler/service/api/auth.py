"""Bearer JWT verification and scopes of the REST API: the only module that imports `jwt`.

The operator gives the keys that sign the tokens, either a JWKS file (`--api-jwks-file`, the
`keys` of an identity provider's `jwks_uri`) or one key (`--api-jwt-key-file`: a PEM public key
or certificate; an HMAC secret only with `--api-jwt-algorithms HS256` given explicitly), the
audience the tokens must carry (`--api-audience`, required) and optionally their issuer
(`--api-issuer`). Accepted algorithms are those of the key's type unless
`--api-jwt-algorithms` narrows them, so `alg: none` and algorithm confusion (an HS256 token
"signed" with an RSA key's PEM text) never verify. The key file is read again when it changes
(`keyfile`): a rotated key verifies without a restart, and a token verified with a key since
withdrawn is verified again, and refused.

A token must carry `exp` and `sub` (and `aud`, `iss` when configured), be signed by a key of
the set (by `kid` when the set has several), be unexpired and already valid (`nbf`, `iat`), with
`LEEWAY` seconds for clock skew. Scopes come from `scope` (space-separated) or `scp` (a list):
`<resource>:read` and `<resource>:write` per resource, `policies:read` and `policies:write` for
all of them. Write does not imply read. A token that verified is remembered (at most
`VERIFIED_CACHE` of them) so that its next request skips the signature check; its expiry is
checked again on every use.

A refusal is an `AuthError`: 401 UNAUTHENTICATED or 403 INSUFFICIENT_SCOPE with the
`WWW-Authenticate` header of RFC 6750. Neither its message nor a log holds the token or a claim
other than `sub`.

Called by `cli.run`, `service.api.routes`, `web.access` and `web.pages`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa

from reconciler.errors import UsageError
from reconciler.service.api import keyfile, model

UNAUTHENTICATED = "UNAUTHENTICATED"
INSUFFICIENT_SCOPE = "INSUFFICIENT_SCOPE"

LEEWAY = 30.0
"""Seconds of clock skew allowed between the token's issuer and dro (exp, nbf, iat)."""

HMAC = ("HS256", "HS384", "HS512")
RSA = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")
EC_BY_CURVE = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512", "secp256k1": "ES256K"}
EC_BY_CRYPTOGRAPHY_CURVE = {
    "secp256r1": "ES256",
    "secp384r1": "ES384",
    "secp521r1": "ES512",
    "secp256k1": "ES256K",
}
MIN_HMAC_SECRET = {"HS256": 32, "HS384": 48, "HS512": 64}
"""Bytes an HMAC secret must have at least (RFC 7518 §3.2: as long as the hash's output)."""

VERIFIED_CACHE = 1024
"""Tokens whose signature and claims verified, kept so that a client's next request with the
same token skips the signature check; their time claims are checked again on every use."""

ALL_POLICIES = "policies"
"""The scope prefix that stands for every resource: `policies:read`, `policies:write`."""


class AuthError(model.ApiError):
    """A request refused by authentication (401) or authorization (403), with the
    `WWW-Authenticate` header its answer carries."""

    def __init__(self, status: int, code: str, message: str, challenge: str) -> None:
        super().__init__(status, code, message)
        self.challenge = challenge


def unauthenticated(message: str, *, token_sent: bool) -> AuthError:
    """401: no usable credentials (no `error` attribute), or a token that does not verify."""
    challenge = 'Bearer error="invalid_token"' if token_sent else "Bearer"
    return AuthError(401, UNAUTHENTICATED, message, challenge)


@dataclass(frozen=True)
class Key:
    """One verification key and the algorithms it may verify."""

    key: Any
    algorithms: tuple[str, ...]


@dataclass(frozen=True)
class KeySet:
    """The keys that sign the API's tokens: by `kid`, or the one key without a kid."""

    by_kid: Mapping[str, Key]
    anonymous: Key | None = None

    def lookup(self, kid: object) -> Key:
        """The key a token's header names; AuthError 401 when none fits."""
        if kid is None:
            if self.anonymous is not None:
                return self.anonymous
            if len(self.by_kid) == 1:
                return next(iter(self.by_kid.values()))
            raise unauthenticated("the token names no key (kid)", token_sent=True)
        found = self.by_kid.get(kid) if isinstance(kid, str) else None
        if found is None:
            if self.anonymous is not None and not self.by_kid:
                return self.anonymous
            raise unauthenticated("the token's key (kid) is not in the key set", token_sent=True)
        return found


class Authenticator:
    """Verifies a request's Bearer token and makes its caller."""

    def __init__(
        self,
        keys: KeySet,
        *,
        audience: str,
        issuer: str | None = None,
        clock: Callable[[], float] = time.time,
        source: keyfile.KeyFile[KeySet] | None = None,
    ) -> None:
        if not audience:
            raise UsageError("the REST API needs --api-audience")
        self.keys = keys
        self.source = source
        """The file `keys` came from, re-read when it changes (`keyfile`); None: fixed."""
        self.audience = audience
        self.issuer = issuer
        self.clock = clock
        self._verified: OrderedDict[str, tuple[float, model.Caller]] = OrderedDict()
        self._lock = threading.Lock()

    def authenticate(self, authorization: str | None) -> model.Caller:
        """The caller of a request with this `Authorization` header, or AuthError 401."""
        if not authorization:
            raise unauthenticated("a Bearer token is required", token_sent=False)
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer":
            raise unauthenticated(
                "the Authorization header must be 'Bearer <token>'", token_sent=False
            )
        token = token.strip()
        if not token:
            raise unauthenticated("a Bearer token is required", token_sent=False)
        if self.source is not None:
            self._take(self.source.current())
        with self._lock:
            known = self._verified.get(token)
            if known is not None:
                self._verified.move_to_end(token)
        if known is not None:
            expires, caller = known
            if self.clock() < expires + LEEWAY:
                return caller
            with self._lock:
                self._verified.pop(token, None)
            raise unauthenticated("the token has expired", token_sent=True)
        claims = self._verify(token)
        caller = caller_of(claims)
        with self._lock:
            self._verified[token] = (float(claims["exp"]), caller)
            while len(self._verified) > VERIFIED_CACHE:
                self._verified.popitem(last=False)
        return caller

    def _take(self, keys: KeySet) -> None:
        """Verify with `keys` from now on; a token verified with the old ones is verified
        again (its key may have been withdrawn)."""
        if keys is self.keys:
            return
        with self._lock:
            self.keys = keys
            self._verified.clear()

    def _lookup(self, kid: object) -> Key:
        """The key `kid` names; when the set lacks it, the key file is looked at again
        first (a key just rotated in)."""
        try:
            return self.keys.lookup(kid)
        except AuthError:
            if self.source is None:
                raise
        self._take(self.source.refresh())
        return self.keys.lookup(kid)

    def _verify(self, token: str) -> dict[str, Any]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            raise unauthenticated("the token is malformed", token_sent=True) from None
        key = self._lookup(header.get("kid"))
        algorithm = header.get("alg")
        if not isinstance(algorithm, str) or algorithm not in key.algorithms:
            raise unauthenticated("the token's algorithm is not accepted", token_sent=True)
        required = ["exp", "sub", "aud"] + (["iss"] if self.issuer else [])
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=list(key.algorithms),
                audience=self.audience,
                issuer=self.issuer,
                leeway=LEEWAY,
                options={"require": required},
            )
        except jwt.ExpiredSignatureError:
            raise unauthenticated("the token has expired", token_sent=True) from None
        except jwt.ImmatureSignatureError:
            raise unauthenticated("the token is not valid yet", token_sent=True) from None
        except jwt.InvalidAudienceError:
            raise unauthenticated(
                "the token is not meant for this audience", token_sent=True
            ) from None
        except jwt.InvalidIssuerError:
            raise unauthenticated("the token's issuer is not accepted", token_sent=True) from None
        except jwt.MissingRequiredClaimError as error:
            message = f"the token lacks the claim {error.claim}"
            raise unauthenticated(message, token_sent=True) from None
        except jwt.InvalidSignatureError:
            raise unauthenticated(
                "the token's signature does not verify", token_sent=True
            ) from None
        except jwt.InvalidAlgorithmError:
            raise unauthenticated(
                "the token's algorithm is not accepted", token_sent=True
            ) from None
        except (jwt.InvalidTokenError, jwt.PyJWKError, ValueError, TypeError):
            raise unauthenticated("the token is malformed or invalid", token_sent=True) from None
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject.strip():
            raise unauthenticated("the token's subject (sub) is empty", token_sent=True)
        return claims


def caller_of(claims: Mapping[str, Any]) -> model.Caller:
    """The caller a verified token names: sub, name (else sub), email (else
    `<sub>@dro.invalid`) and its scopes."""
    subject = _ident(str(claims["sub"]))
    name = claims.get("name")
    email = claims.get("email")
    return model.Caller(
        subject=subject,
        name=_ident(name) if isinstance(name, str) and _ident(name) else subject,
        email=_ident(email)
        if isinstance(email, str) and _ident(email)
        else f"{subject}@dro.invalid",
        scopes=scopes_of(claims),
    )


def _ident(text: str) -> str:
    """Text fit for a git identity: no angle brackets, no control characters."""
    return "".join(c for c in text if c not in "<>" and c.isprintable()).strip()


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes of `scope` (space-separated text) and `scp` (a list, or text)."""
    found: set[str] = set()
    for claim in ("scope", "scp"):
        value = claims.get(claim)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list):
            found.update(item for item in value if isinstance(item, str))
    return frozenset(found)


def require(caller: model.Caller, resource: str | None, action: str) -> None:
    """AuthError 403 unless the caller may `action` (read or write) `resource`; a None
    resource (the OpenAPI document) needs only a valid token."""
    if resource is None:
        return
    wanted = f"{resource}:{action}"
    if wanted in caller.scopes or f"{ALL_POLICIES}:{action}" in caller.scopes:
        return
    challenge = f'Bearer error="insufficient_scope", scope="{wanted}"'
    raise AuthError(403, INSUFFICIENT_SCOPE, f"the token lacks the scope {wanted}", challenge)


def enabled(values: Mapping[str, Any]) -> bool:
    """Whether the settings turn the API on: a JWKS file or a key file is given."""
    return bool(values.get("api_jwks_file") or values.get("api_jwt_key_file"))


def from_settings(values: Mapping[str, Any]) -> Authenticator | None:
    """The authenticator the resolved settings describe; None when the API is off. A setting
    that cannot work is a UsageError naming it."""
    jwks_file, key_file = values.get("api_jwks_file"), values.get("api_jwt_key_file")
    if not jwks_file and not key_file:
        return None
    if jwks_file and key_file:
        raise UsageError("give --api-jwks-file or --api-jwt-key-file, not both")
    audience = values.get("api_audience")
    if not audience:
        raise UsageError("the REST API needs --api-audience: the audience its tokens carry")
    algorithms = values.get("api_jwt_algorithms")
    algorithms = tuple(algorithms) if algorithms else None
    path = Path(str(jwks_file or key_file))
    parse = jwks_keys if jwks_file else single_key
    source = keyfile.KeyFile(
        path,
        lambda data: parse(data, algorithms, str(path)),
        flag="--api-jwks-file" if jwks_file else "--api-jwt-key-file",
    )
    return Authenticator(
        source.current(),
        audience=str(audience),
        issuer=values.get("api_issuer") or None,
        source=source,
    )


def _check_algorithms(algorithms: Sequence[str]) -> None:
    unknown = sorted(
        set(algorithms) - set(jwt.algorithms.get_default_algorithms())
        | ({"none"} & set(algorithms))
    )
    if unknown:
        raise UsageError(f"--api-jwt-algorithms: {', '.join(unknown)} cannot verify a token")
    if set(algorithms) & set(HMAC) and set(algorithms) - set(HMAC):
        raise UsageError("--api-jwt-algorithms: HMAC and public-key algorithms cannot be mixed")


def _narrow(own: Sequence[str], given: Sequence[str] | None, where: str) -> tuple[str, ...]:
    if given is None:
        return tuple(own)
    kept = tuple(a for a in given if a in own)
    if not kept:
        raise UsageError(f"{where}: the key cannot verify {', '.join(given)}")
    return kept


def single_key(data: bytes, algorithms: Sequence[str] | None, where: str) -> KeySet:
    """The key of `--api-jwt-key-file`: a PEM public key or certificate, or an HMAC secret
    when the algorithms are given and all HMAC."""
    if algorithms is not None:
        _check_algorithms(algorithms)
    if algorithms is not None and set(algorithms) <= set(HMAC):
        if b"-----BEGIN" in data:
            raise UsageError(f"{where}: a PEM key cannot be an HMAC secret ({algorithms[0]})")
        secret = data.rstrip(b"\r\n")
        needed = max(MIN_HMAC_SECRET[a] for a in algorithms)
        if len(secret) < needed:
            raise UsageError(f"{where}: an HMAC secret needs {needed} bytes at least")
        return KeySet(by_kid={}, anonymous=Key(secret, tuple(algorithms)))
    public = _public_key(data)
    if public is None:
        raise UsageError(
            f"{where}: not a PEM public key or certificate (an HMAC secret needs "
            "--api-jwt-algorithms HS256)"
        )
    own = _algorithms_of(public)
    return KeySet(by_kid={}, anonymous=Key(public, _narrow(own, algorithms, where)))


def _public_key(data: bytes) -> Any:
    try:
        if b"-----BEGIN CERTIFICATE-----" in data:
            return x509.load_pem_x509_certificate(data).public_key()
        return serialization.load_pem_public_key(data)
    except (ValueError, TypeError):
        return None


def _algorithms_of(public: Any) -> tuple[str, ...]:
    if isinstance(public, rsa.RSAPublicKey):
        return RSA
    if isinstance(public, ec.EllipticCurvePublicKey):
        return (EC_BY_CRYPTOGRAPHY_CURVE.get(public.curve.name, "ES256"),)
    if isinstance(public, ed25519.Ed25519PublicKey | ed448.Ed448PublicKey):
        return ("EdDSA",)
    raise UsageError("the key's type cannot verify a JWT")


def jwks_keys(data: bytes, algorithms: Sequence[str] | None, where: str) -> KeySet:
    """The keys of a JWKS file (`{"keys": [...]}`); symmetric keys only with HMAC
    algorithms given explicitly, private keys never."""
    if algorithms is not None:
        _check_algorithms(algorithms)
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise UsageError(f'{where}: not JSON (a JWKS: {{"keys": [...]}})') from None
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise UsageError(f'{where}: a JWKS needs a non-empty "keys" list')
    by_kid: dict[str, Key] = {}
    anonymous: Key | None = None
    for index, entry in enumerate(entries):
        at = f"{where}: keys[{index}]"
        if not isinstance(entry, dict):
            raise UsageError(f"{at}: not an object")
        if entry.get("use") not in (None, "sig"):
            continue
        if "d" in entry or "p" in entry:
            raise UsageError(f"{at}: a private key; give the public keys only")
        kty = entry.get("kty")
        if kty == "oct" and (algorithms is None or not set(algorithms) <= set(HMAC)):
            raise UsageError(f"{at}: a symmetric key needs --api-jwt-algorithms HS256")
        try:
            parsed = jwt.PyJWK.from_dict(entry)
        except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError, KeyError) as error:
            raise UsageError(f"{at}: not a usable key ({type(error).__name__})") from None
        own = _jwk_algorithms(entry)
        key = Key(parsed.key, _narrow(own, algorithms, at))
        kid = entry.get("kid")
        if isinstance(kid, str) and kid:
            if kid in by_kid:
                raise UsageError(f"{at}: the kid {kid} is taken by an earlier key")
            by_kid[kid] = key
        elif anonymous is None and not by_kid and len(entries) == 1:
            anonymous = key
        else:
            raise UsageError(f"{at}: a key set of several keys needs a kid on each")
    if not by_kid and anonymous is None:
        raise UsageError(f"{where}: no signing key")
    return KeySet(by_kid=by_kid, anonymous=anonymous)


def _jwk_algorithms(entry: Mapping[str, Any]) -> tuple[str, ...]:
    alg = entry.get("alg")
    if isinstance(alg, str):
        return (alg,)
    kty = entry.get("kty")
    if kty == "RSA":
        return RSA
    if kty == "EC":
        return (EC_BY_CURVE.get(str(entry.get("crv")), "ES256"),)
    if kty == "OKP":
        return ("EdDSA",)
    return HMAC
