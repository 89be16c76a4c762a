"""The REST API's token keys follow their file: a rotated key verifies without a restart, a
withdrawn one stops verifying (even for a token it verified before), and a broken file keeps
the keys in force (`service.api.keyfile`). The files are swapped as the kubelet swaps a
mounted Secret: a symlink to a new folder, replaced atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import structlog

from reconciler.errors import UsageError
from reconciler.service.api import auth, keyfile
from tests.apiserve import AUDIENCE, ISSUER, Keys, bearer


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Mounted:
    """A file behind a symlink, swapped as the kubelet updates a mounted Secret."""

    def __init__(self, folder: Path, name: str) -> None:
        self.folder = folder
        self.name = name
        self.path = folder / name
        self.version = 0

    def write(self, data: bytes) -> None:
        self.version += 1
        data_dir = self.folder / f"..{self.version}"
        data_dir.mkdir()
        (data_dir / self.name).write_bytes(data)
        link = self.folder / f".{self.name}.new"
        link.symlink_to(data_dir / self.name)
        os.replace(link, self.path)

    def remove(self) -> None:
        self.path.unlink()


def jwks(*keys: Keys) -> bytes:
    return json.dumps({"keys": [k.jwk() for k in keys]}).encode()


def watching(mounted: Mounted, clock: Clock, *, pem: bool = False) -> auth.Authenticator:
    parse = auth.single_key if pem else auth.jwks_keys
    source = keyfile.KeyFile(
        mounted.path, lambda data: parse(data, None, str(mounted.path)), flag="--x", clock=clock
    )
    return auth.Authenticator(source.current(), audience=AUDIENCE, issuer=ISSUER, source=source)


def accepts(authenticator: auth.Authenticator, token: str) -> bool:
    """Whether the token verifies; a refusal must be a 401."""
    try:
        authenticator.authenticate(bearer(token)["Authorization"])
    except auth.AuthError as error:
        refused = error.status
    else:
        return True
    assert refused == 401
    return False


@pytest.fixture(scope="module")
def old() -> Keys:
    return Keys(kid="old")


@pytest.fixture(scope="module")
def new() -> Keys:
    return Keys(kid="new")


def test_a_rotated_key_verifies_at_once_and_the_withdrawn_one_no_longer(
    tmp_path: Path, old: Keys, new: Keys
) -> None:
    mounted, clock = Mounted(tmp_path, "jwks.json"), Clock()
    mounted.write(jwks(old))
    authenticator = watching(mounted, clock)
    before = old.token()
    assert accepts(authenticator, before)
    assert not accepts(authenticator, new.token())

    mounted.write(jwks(new))  # the provider rotated: the old key is withdrawn
    clock.now += keyfile.FORCED
    with structlog.testing.capture_logs() as logs:
        assert accepts(authenticator, new.token())  # an unknown kid looks at the file now
    assert [e["event"] for e in logs] == ["api_keys_reloaded"]
    assert not accepts(authenticator, before), "verified before, by a key now withdrawn"


def test_a_key_without_an_id_is_looked_at_every_few_seconds(
    tmp_path: Path, old: Keys, new: Keys
) -> None:
    mounted, clock = Mounted(tmp_path, "key.pem"), Clock()
    mounted.write(old.public_pem)
    authenticator = watching(mounted, clock, pem=True)
    assert accepts(authenticator, old.token())
    mounted.write(new.public_pem)
    assert not accepts(authenticator, new.token()), "not looked at yet"
    clock.now += keyfile.RECHECK
    assert accepts(authenticator, new.token())
    assert not accepts(authenticator, old.token())


def test_a_broken_or_missing_file_keeps_the_keys_and_says_so_once(
    tmp_path: Path, old: Keys, new: Keys
) -> None:
    mounted, clock = Mounted(tmp_path, "jwks.json"), Clock()
    mounted.write(jwks(old))
    authenticator = watching(mounted, clock)
    token = old.token()
    with structlog.testing.capture_logs() as logs:
        mounted.write(b'{"keys": [')
        for _ in range(3):
            clock.now += keyfile.RECHECK
            assert accepts(authenticator, token)
        mounted.remove()
        for _ in range(3):
            clock.now += keyfile.RECHECK
            assert accepts(authenticator, token)
        mounted.write(jwks(old, new))
        clock.now += keyfile.RECHECK
        assert accepts(authenticator, new.token())
    assert [e["event"] for e in logs] == [
        "api_keys_not_reloaded",
        "api_keys_not_reloaded",
        "api_keys_reloaded",
    ]
    reasons = [str(e.get("reason")) for e in logs[:2]]
    assert "not JSON" in reasons[0]
    assert "gone" in reasons[1]
    assert all(old.private_pem.decode() not in str(e) for e in logs)


def test_tokens_naming_unknown_keys_look_at_the_file_once_a_second(
    tmp_path: Path, old: Keys
) -> None:
    mounted, clock = Mounted(tmp_path, "jwks.json"), Clock()
    mounted.write(jwks(old))
    parsed: list[bytes] = []

    def parse(data: bytes) -> auth.KeySet:
        parsed.append(data)
        return auth.jwks_keys(data, None, "jwks.json")

    source = keyfile.KeyFile(mounted.path, parse, flag="--x", clock=clock)
    authenticator = auth.Authenticator(
        source.current(), audience=AUDIENCE, issuer=ISSUER, source=source
    )
    stranger = Keys(private=old.private, kid="stranger")
    for version in range(5):  # a flood of tokens naming a key the set lacks
        mounted.write(jwks(old) + b" " * version)
        assert not accepts(authenticator, stranger.token())
    assert len(parsed) == 2, "read at start, and once for the flood"
    clock.now += keyfile.FORCED
    assert not accepts(authenticator, stranger.token())
    assert len(parsed) == 3


def test_an_unreadable_key_file_at_start_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--x .*missing\.json"):
        keyfile.KeyFile(tmp_path / "missing.json", lambda data: data, flag="--x")
