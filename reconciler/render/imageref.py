"""Container image references, parsed and rewritten as Karmada's imageOverrider does.

An image is `[registry/]repository[:tag][@digest]` by the distribution reference grammar: the
first path component is a registry when it holds `.` or `:` or is `localhost`; a tag is
`[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`; a digest is `algorithm:hex` with 32 or more hex digits.
Karmada keeps a tag or a digest, never both: an image with both keeps its tag, and a Tag
component set to a digest value (`sha256:…`) is written `name@sha256:…`. A value that is
neither a tag nor a digest leaves the tag as it was, as Karmada's `SetTagOrDigest` does; dro's
validate reports it instead (`tag_problem`). The overrides module is the caller.

Called by `render.overrides`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][0-9a-fA-F]{32,}"
_REFERENCE = re.compile(
    rf"(?P<name>(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*)"
    rf"(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?",
    re.ASCII,
)
_ANCHORED_TAG = re.compile(_TAG, re.ASCII)
_ANCHORED_DIGEST = re.compile(_DIGEST, re.ASCII)
_MAX_NAME = 255


class ImageError(ValueError):
    """An image reference that the distribution grammar does not accept."""


@dataclass(frozen=True, slots=True)
class Image:
    """An image split into Karmada's components; `tag` and `digest` are never both set."""

    registry: str
    repository: str
    tag: str = ""
    digest: str = ""

    def __str__(self) -> str:
        name = f"{self.registry}/{self.repository}" if self.registry else self.repository
        if self.tag:
            return f"{name}:{self.tag}"
        return f"{name}@{self.digest}" if self.digest else name

    @property
    def tag_or_digest(self) -> str:
        """The tag when there is one, else the digest (Karmada's `TagOrDigest`)."""
        return self.tag or self.digest


def parse(image: str) -> Image:
    """Split `image`; raises `ImageError` for what `reference.Parse` rejects."""
    match = _REFERENCE.fullmatch(image)
    if match is None:
        raise ImageError(f"image {image!r} is not a valid image reference")
    name = match["name"]
    if len(name) > _MAX_NAME:
        raise ImageError(f"image {image!r}: its name is longer than {_MAX_NAME} characters")
    first, slash, rest = name.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        registry, repository = first, rest
    else:
        registry, repository = "", name
    tag = match["tag"] or ""
    return Image(registry, repository, tag, "" if tag else match["digest"] or "")


def with_tag_or_digest(image: Image, value: str) -> Image:
    """Karmada's `SetTagOrDigest`: a tag replaces tag and digest, a digest replaces both too;
    anything else changes nothing."""
    if _ANCHORED_TAG.fullmatch(value):
        return replace(image, tag=value, digest="")
    if _ANCHORED_DIGEST.fullmatch(value):
        return replace(image, tag="", digest=value)
    return image


def tag_problem(value: str) -> str:
    """Why `value` cannot be a Tag component's result ("" when it is a tag or a digest)."""
    if _ANCHORED_TAG.fullmatch(value) or _ANCHORED_DIGEST.fullmatch(value):
        return ""
    return (
        f"{value!r} is neither a tag ([A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}}) nor a digest "
        "(sha256: and 64 hex digits); Karmada would leave the image unchanged"
    )


def rewrite(image: str, component: str, operator: str, value: str) -> str:
    """`image` with one component added to, replaced or removed, as Karmada's
    `overrideImage` does; raises `ImageError` for an unparseable image or tag value."""
    parts = parse(image)
    if component == "Registry":
        registry = {"add": parts.registry + value, "replace": value, "remove": ""}[operator]
        return str(replace(parts, registry=registry))
    if component == "Repository":
        repository = {"add": parts.repository + value, "replace": value, "remove": ""}[operator]
        return str(replace(parts, repository=repository))
    if operator == "remove":
        return str(replace(parts, tag="", digest=""))
    wanted = parts.tag_or_digest + value if operator == "add" else value
    problem = tag_problem(wanted)
    if problem:
        raise ImageError(f"image {image!r}: Tag {operator} {value!r}: {problem}")
    return str(with_tag_or_digest(parts, wanted))
