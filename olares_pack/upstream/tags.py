"""Which tags of an image repository are newer than the app's, following the tag's own scheme.

A tag that names a llama.cpp build (`server-cuda13-b11434`, `b9101`) has a scheme: the same text
with another build (`server-cuda13-{build}`); newer tags of that scheme order by the number.
Any other tag (`master-ad27757`, `0.1.0`) has a shape (its digit runs and hex runs generalised) and
newer tags of that shape order by their image's `created` date (image-spec config), read from the
registry.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from olares_pack.engines import registry
from olares_pack.remote import oci

# the most tags of one shape whose config is read to order them by date
DATED_MAX = 40
# the newest tags whose digest is asked (a HEAD each): an app many builds behind does not cost
# hundreds of requests
WITH_DIGEST = 5


@dataclass(frozen=True)
class Tag:
    tag: str
    digest: str | None  # asked for the newest WITH_DIGEST only
    build: str | None  # the llama.cpp build the tag names
    created: str | None  # the image config's `created`, when read


def scheme(tag: str) -> str | None:
    """`server-cuda13-b11434` -> `server-cuda13-{build}`; None when the tag names no build."""
    build = registry.tag_build(tag)
    if build is None:
        return None
    m = re.search(rf"(?:^|(?<=[-_.])){build}(?=$|[-_.])", tag)
    assert m is not None
    return tag[:m.start()] + "{build}" + tag[m.end():]


def shape(tag: str) -> str:
    """A tag's shape: hex runs of 7+ (a commit) as <sha>, digit runs as <n>."""
    out = re.sub(r"(?<![0-9a-z])[0-9a-f]{7,40}(?![0-9a-z])", "<sha>", tag)
    return re.sub(r"[0-9]+", "<n>", out)


def of_scheme(tags: list[str], pattern: str) -> dict[str, str]:
    """build -> tag for the tags that follow `pattern` (`server-cuda13-{build}`)."""
    head, _, tail = pattern.partition("{build}")
    rx = re.compile(re.escape(head) + r"(b[0-9]+)" + re.escape(tail) + "$")
    return {m.group(1): t for t in tags if (m := rx.match(t))}


def newer_tags(client: oci.RegistryClient, repository: str, tag: str, *, page_size: int = 1000) -> tuple[list[Tag], str]:
    """The tags of `repository` newer than `tag` in its scheme, oldest first, the newest WITH_DIGEST
    with their digest; and how they were ordered (for the report). RegistryError when the registry
    cannot be read, TagNotFound when it has no `tag`."""
    image = oci.ImageName.parse(repository)
    tags = client.list_tags(image, page_size=page_size)
    pattern = scheme(tag)
    if pattern is not None:
        mine = registry.build_number(registry.tag_build(tag) or "")
        found = sorted(((registry.build_number(b), b, t) for b, t in of_scheme(tags, pattern).items()
                        if registry.build_number(b) > mine))
        out = [Tag(t, _digest(client, image, t) if i >= len(found) - WITH_DIGEST else None, b, None)
               for i, (_, b, t) in enumerate(found)]
        return out, f"tags {pattern} by build number"
    same = sorted(t for t in tags if shape(t) == shape(tag) and t != tag)[-DATED_MAX:]
    created = client.config(image, tag).get("created")
    since = _when(created)
    if since is None:
        return [], f"tags shaped {shape(tag)}: {tag} has no created date, so none is known to be newer"
    dated = []
    for t in same:
        c = client.config(image, t).get("created")
        when = _when(c)
        if when is not None and when > since:
            dated.append((when, str(c), t))
    ordered = sorted(dated)
    out = [Tag(t, _digest(client, image, t) if i >= len(ordered) - WITH_DIGEST else None, registry.tag_build(t), c)
           for i, (_, c, t) in enumerate(ordered)]
    return out, f"tags shaped {shape(tag)} by image creation date (after {created})"


def _when(created: object) -> dt.datetime | None:
    """An image config's `created` (RFC 3339, as Go writes it: up to nanoseconds) as a datetime."""
    if not isinstance(created, str):
        return None
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)", created.strip())
    if m is None:
        return None
    frac = (m.group(2) or ".0")[:7]
    try:
        when = dt.datetime.fromisoformat(m.group(1) + frac + ("+00:00" if m.group(3) == "Z" else m.group(3)))
    except ValueError:
        return None
    return when


def _digest(client: oci.RegistryClient, image: oci.ImageName, tag: str) -> str:
    digest = client.head_digest(image, tag)
    if digest is None:
        raise oci.RegistryError(f"{image}:{tag}: listed by the registry but names no manifest")
    return digest
