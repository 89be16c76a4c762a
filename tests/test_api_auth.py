"""The REST API's Bearer JWT: the token edge cases over HTTP, scopes, and the settings that
configure the keys."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from reconciler import settings
from reconciler.errors import UsageError
from reconciler.service.api import auth, routes
from tests.apiserve import AUDIENCE, ISSUER, Keys, authenticator, bearer, served
from tests.apistore import MemoryPolicyStore

RPP = "/apis/multicluster.io/v1alpha1/resourceplacementpolicies"
COP = "/apis/multicluster.io/v1alpha1/clusteroverridepolicies"
PP = "/api/v1/propagationpolicies"


@pytest.fixture(scope="module")
def keys() -> Keys:
    return Keys()


@pytest.fixture
def url(keys: Keys, tmp_path: Path) -> Iterator[str]:
    with served(routes.routes(MemoryPolicyStore(), authenticator(keys, tmp_path))) as server:
        yield server.url


def b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def unsigned(claims: dict[str, Any]) -> str:
    return f"{b64({'alg': 'none', 'typ': 'JWT'})}.{b64(claims)}."


def claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    found = {"sub": "alice", "aud": AUDIENCE, "iss": ISSUER, "exp": now + 600, "iat": now}
    found.update(changes)
    return {k: v for k, v in found.items() if v is not None}


def refused(url: str, headers: dict[str, str], *, challenge: str) -> dict[str, Any]:
    answer = httpx.get(url + RPP, headers=headers)
    assert answer.status_code == 401, answer.text
    assert answer.headers["www-authenticate"] == challenge
    body: dict[str, Any] = answer.json()
    assert body["code"] == auth.UNAUTHENTICATED
    return body


def test_a_valid_token_reads(url: str, keys: Keys) -> None:
    answer = httpx.get(url + RPP, headers=bearer(keys.token()))
    assert answer.status_code == 200
    assert answer.json()["items"] == []


@pytest.mark.parametrize(
    "header",
    [
        {},
        {"Authorization": "Basic YWxpY2U6c2VjcmV0"},
        {"Authorization": "Bearer"},
        {"Authorization": ""},
    ],
)
def test_no_bearer_token_is_401_without_an_error_code(url: str, header: dict[str, str]) -> None:
    refused(url, header, challenge="Bearer")


def forged(keys: Keys) -> dict[str, str]:
    """Each way a token can fail, by name."""
    other = Keys(kid="other")
    now = int(time.time())
    return {
        "alg none": unsigned(claims()),
        "algorithm confusion": _confused(keys),
        "unknown kid": other.token(),
        "known kid, wrong key": Keys(private=other.private, kid=keys.kid).token(),
        "expired": keys.token(exp=now - 120),
        "not yet valid": keys.token(nbf=now + 3600),
        "issued in the future": keys.token(iat=now + 3600),
        "wrong audience": keys.token(aud="someone-else"),
        "wrong issuer": keys.token(iss="https://evil.example"),
        "no exp": keys.token(exp=None),
        "no sub": keys.token(sub=None),
        "empty sub": keys.token(sub=" "),
        "no aud": keys.token(aud=None),
        "no iss": keys.token(iss=None),
        "malformed": "abc.def.ghi",
        "not a jwt": "hello",
        "tampered": _tampered(keys),
    }


def _confused(keys: Keys) -> str:
    """HS256 "signed" with the RSA public key's PEM text (PyJWT refuses to make one)."""
    header = b64({"alg": "HS256", "typ": "JWT", "kid": keys.kid})
    payload = b64(claims())
    signature = hmac.new(keys.public_pem, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{base64.urlsafe_b64encode(signature).rstrip(b'=').decode()}"


def _tampered(keys: Keys) -> str:
    header, _, signature = keys.token().split(".")
    return f"{header}.{b64(claims(sub='root'))}.{signature}"


CASES = list(forged(Keys()))


@pytest.mark.parametrize("case", CASES)
def test_a_token_that_does_not_verify_is_401_invalid_token(url: str, keys: Keys, case: str) -> None:
    token = forged(keys)[case]
    body = refused(url, dict(bearer(token)), challenge='Bearer error="invalid_token"')
    assert token not in json.dumps(body)
    assert "alice" not in body["message"]


def test_refusals_name_what_failed(url: str, keys: Keys) -> None:
    cases = forged(keys)
    assert (
        "expired"
        in refused(url, dict(bearer(cases["expired"])), challenge='Bearer error="invalid_token"')[
            "message"
        ]
    )
    assert (
        "audience"
        in refused(
            url, dict(bearer(cases["wrong audience"])), challenge='Bearer error="invalid_token"'
        )["message"]
    )


def scoped(
    url: str, keys: Keys, method: str, path: str, scope: Any, **kwargs: Any
) -> httpx.Response:
    token = (
        keys.token(scope=scope)
        if isinstance(scope, str | None)
        else keys.token(scope=None, scp=scope)
    )
    return httpx.request(method, url + path, headers=bearer(token), **kwargs)


def test_scopes_map_to_read_and_write_per_resource(url: str, keys: Keys) -> None:
    body = {
        "apiVersion": "multicluster.io/v1alpha1",
        "kind": "ResourcePlacementPolicy",
        "metadata": {"name": "p"},
        "spec": {},
    }
    denied = scoped(url, keys, "POST", RPP, "resourceplacementpolicies:read", json=body)
    assert denied.status_code == 403
    assert denied.json()["code"] == auth.INSUFFICIENT_SCOPE
    assert denied.headers["www-authenticate"] == (
        'Bearer error="insufficient_scope", scope="resourceplacementpolicies:write"'
    )
    assert (
        scoped(url, keys, "POST", RPP, "resourceplacementpolicies:write", json=body).status_code
        == 201
    )
    # write does not imply read; another resource's scope does not count
    assert scoped(url, keys, "GET", RPP, "resourceplacementpolicies:write").status_code == 403
    assert scoped(url, keys, "GET", RPP, "clusteroverridepolicies:read").status_code == 403
    assert scoped(url, keys, "GET", RPP, "resourceplacementpolicies:read").status_code == 200
    # policies:<action> covers all three; scp as a list works as scope does
    for path in (RPP, COP, PP):
        assert scoped(url, keys, "GET", path, ["policies:read"]).status_code == 200
        assert scoped(url, keys, "GET", path, None).status_code == 403
    assert scoped(url, keys, "DELETE", f"{RPP}/p", ["policies:read"]).status_code == 403
    assert scoped(url, keys, "DELETE", f"{RPP}/p", ["policies:write"]).status_code == 200


def test_the_caller_comes_from_sub_name_and_email() -> None:
    full = auth.caller_of(
        {"sub": "u1", "name": "Ada <L>", "email": "ada@example.com", "scope": "a b"}
    )
    assert (full.subject, full.name, full.email) == ("u1", "Ada L", "ada@example.com")
    assert full.scopes == frozenset({"a", "b"})
    bare = auth.caller_of({"sub": "u1", "scp": ["x"]})
    assert (bare.name, bare.email, bare.scopes) == ("u1", "u1@dro.invalid", frozenset({"x"}))


# --- the settings ---------------------------------------------------------------------------


def values(**given: Any) -> dict[str, Any]:
    table = settings.pick(
        "api-jwks-file", "api-jwt-key-file", "api-audience", "api-issuer", "api-jwt-algorithms"
    )
    return settings.resolve(table, {}, config=given, environ={})


def test_the_api_is_off_without_a_key_setting() -> None:
    assert auth.from_settings(values(**{"api-audience": "x"})) is None
    assert not auth.enabled(values())


def test_the_settings_come_from_the_one_table(tmp_path: Path, keys: Keys) -> None:
    pem = tmp_path / "key.pem"
    pem.write_bytes(keys.public_pem)
    table = settings.pick("api-jwt-key-file", "api-audience", "api-jwt-algorithms")
    resolved = settings.resolve(
        table,
        {"api_jwt_algorithms": "RS256,PS256"},
        environ={"DRO_API_JWT_KEY_FILE": str(pem)},
        config={"api-audience": "aud-from-config"},
    )
    assert resolved == {
        "api_jwt_key_file": pem,
        "api_audience": "aud-from-config",
        "api_jwt_algorithms": ("RS256", "PS256"),
    }


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"api-jwt-key-file": "PEM"}, "--api-audience"),
        ({"api-jwt-key-file": "PEM", "api-jwks-file": "JWKS", "api-audience": "a"}, "not both"),
        ({"api-jwt-key-file": "SECRET", "api-audience": "a"}, "HMAC secret needs"),
        (
            {"api-jwt-key-file": "PEM", "api-audience": "a", "api-jwt-algorithms": "HS256"},
            "PEM key cannot",
        ),
        (
            {"api-jwt-key-file": "SHORT", "api-audience": "a", "api-jwt-algorithms": "HS256"},
            "32 bytes",
        ),
        ({"api-jwt-key-file": "PEM", "api-audience": "a", "api-jwt-algorithms": "none"}, "none"),
        (
            {"api-jwt-key-file": "PEM", "api-audience": "a", "api-jwt-algorithms": "RS256,HS256"},
            "mixed",
        ),
        (
            {"api-jwt-key-file": "PEM", "api-audience": "a", "api-jwt-algorithms": "ES256"},
            "cannot verify",
        ),
        ({"api-jwks-file": "PRIVATE", "api-audience": "a"}, "private key"),
        ({"api-jwks-file": "SECRET", "api-audience": "a"}, "not JSON"),
        ({"api-jwks-file": "EMPTY", "api-audience": "a"}, "non-empty"),
        ({"api-jwt-key-file": "MISSING", "api-audience": "a"}, "No such file"),
    ],
)
def test_settings_that_cannot_work_are_one_line(
    tmp_path: Path, keys: Keys, given: dict[str, str], message: str
) -> None:
    files = {
        "PEM": write(tmp_path, "key.pem", keys.public_pem),
        "JWKS": write(tmp_path, "jwks.json", json.dumps({"keys": [keys.jwk()]})),
        "SECRET": write(tmp_path, "secret", "s" * 40),
        "SHORT": write(tmp_path, "short", "short\n"),
        "PRIVATE": write(
            tmp_path,
            "private.json",
            json.dumps({"keys": [json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(keys.private))]}),
        ),
        "EMPTY": write(tmp_path, "empty.json", '{"keys": []}'),
        "MISSING": tmp_path / "missing.pem",
    }
    resolved = {k: files.get(v, v) for k, v in given.items()}
    with pytest.raises(UsageError, match=message) as caught:
        auth.from_settings(values(**resolved))
    assert "\n" not in str(caught.value)


def test_an_hmac_secret_verifies_hs256_only_when_given(tmp_path: Path) -> None:
    secret = "k" * 64
    path = write(tmp_path, "secret", secret + "\n")
    found = auth.from_settings(
        values(
            **{"api-jwt-key-file": path, "api-audience": AUDIENCE, "api-jwt-algorithms": "HS256"}
        )
    )
    assert found is not None
    good = jwt.encode(claims(), secret, algorithm="HS256")
    assert found.authenticate(f"Bearer {good}").subject == "alice"
    with pytest.raises(auth.AuthError, match="algorithm"):
        found.authenticate("Bearer " + jwt.encode(claims(), secret, algorithm="HS512"))
    with pytest.raises(auth.AuthError, match="signature"):
        found.authenticate("Bearer " + jwt.encode(claims(), "x" * 64, algorithm="HS256"))


def test_a_pem_key_file_verifies_its_own_algorithms(tmp_path: Path, keys: Keys) -> None:
    path = write(tmp_path, "key.pem", keys.public_pem)
    narrow = auth.from_settings(
        values(
            **{"api-jwt-key-file": path, "api-audience": AUDIENCE, "api-jwt-algorithms": "RS256"}
        )
    )
    assert narrow is not None
    assert narrow.authenticate("Bearer " + keys.token()).subject == "alice"
    ps256 = jwt.encode(claims(), keys.private_pem, algorithm="PS256")
    with pytest.raises(auth.AuthError):
        narrow.authenticate("Bearer " + ps256)
    wide = auth.from_settings(values(**{"api-jwt-key-file": path, "api-audience": AUDIENCE}))
    assert wide is not None
    assert wide.authenticate("Bearer " + ps256).subject == "alice"


def test_an_ec_key_defaults_to_its_curves_algorithm(tmp_path: Path) -> None:
    private = ec.generate_private_key(ec.SECP256R1())
    public = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    found = auth.from_settings(
        values(**{"api-jwt-key-file": write(tmp_path, "ec.pem", public), "api-audience": AUDIENCE})
    )
    assert found is not None
    assert (
        found.authenticate("Bearer " + jwt.encode(claims(), private, algorithm="ES256")).subject
        == "alice"
    )


def test_a_jwks_of_several_keys_picks_by_kid(tmp_path: Path, keys: Keys) -> None:
    second = Keys(kid="second")
    path = write(tmp_path, "jwks.json", json.dumps({"keys": [keys.jwk(), second.jwk()]}))
    found = auth.from_settings(values(**{"api-jwks-file": path, "api-audience": AUDIENCE}))
    assert found is not None
    assert found.authenticate("Bearer " + second.token(iss=None)).subject == "alice"
    no_kid = jwt.encode(claims(), keys.private_pem, algorithm="RS256")
    with pytest.raises(auth.AuthError, match="kid"):
        found.authenticate("Bearer " + no_kid)


def test_a_verified_token_is_checked_for_expiry_on_every_use(keys: Keys) -> None:
    now = [time.time()]
    found = auth.Authenticator(
        auth.single_key(keys.public_pem, None, "key.pem"), audience=AUDIENCE, clock=lambda: now[0]
    )
    token = keys.token(exp=int(now[0]) + 60)
    assert found.authenticate(f"Bearer {token}").subject == "alice"
    assert found.authenticate(f"Bearer {token}").subject == "alice"  # from the cache
    now[0] += 60 + auth.LEEWAY + 1
    with pytest.raises(auth.AuthError, match="expired"):
        found.authenticate(f"Bearer {token}")
    assert token not in found._verified  # dropped: the next use verifies afresh


def test_the_cache_of_verified_tokens_is_bounded(
    keys: Keys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(auth, "VERIFIED_CACHE", 8)
    found = auth.Authenticator(auth.single_key(keys.public_pem, None, "k"), audience=AUDIENCE)
    tokens = [keys.token(jti=str(i)) for i in range(auth.VERIFIED_CACHE + 5)]
    for token in tokens:
        found.authenticate(f"Bearer {token}")
    assert len(found._verified) == auth.VERIFIED_CACHE
    assert tokens[0] not in found._verified
    assert tokens[-1] in found._verified


@pytest.mark.parametrize("given", ["", " , ", []])
def test_an_empty_algorithm_list_is_a_usage_error(given: Any) -> None:
    setting = settings.TABLE["api-jwt-algorithms"]
    with pytest.raises(UsageError, match="--api-jwt-algorithms: expected at least one name"):
        setting.value(given, "--api-jwt-algorithms")


def test_an_algorithm_list_reads_commas_spaces_and_yaml_lists() -> None:
    setting = settings.TABLE["api-jwt-algorithms"]
    assert setting.value("RS256, ES256", "flag") == ("RS256", "ES256")
    assert setting.value(["PS256"], "config") == ("PS256",)
