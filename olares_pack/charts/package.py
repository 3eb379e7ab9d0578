"""Byte-reproducible chart archives: `<name>-<version>.tgz` with every member under `<name>/`.

The same files give the same tar on every run and machine: members sorted by path, fixed mtime,
owner and mode, no directory entries. Reproducibility is defined on that uncompressed tar (its
sha256 is the *content digest*): the gzip layer around it depends on the zlib the Python was built
with (zlib-ng compresses the same stream to other bytes), so a published .tgz is never
recompressed, and a re-gzipped copy is recognised as the same content with other bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
import zlib

MTIME = 0  # the archive says nothing about when it was built
FILE_MODE = 0o644


def archive_name(name: str, version: str) -> str:
    return f"{name}-{version}.tgz"


def build_archive(name: str, files: dict[str, str]) -> bytes:
    """The .tgz bytes of a chart given as relative path -> text."""
    return compress(build_tar(name, files))


def build_tar(name: str, files: dict[str, str] | dict[str, bytes]) -> bytes:
    """The uncompressed tar of a chart: what the content digest covers."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for rel in sorted(files):
            value = files[rel]
            data = value if isinstance(value, bytes) else value.encode("utf-8")
            info = tarfile.TarInfo(f"{name}/{rel}")
            info.size = len(data)
            info.mtime = MTIME
            info.mode = FILE_MODE
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.type = tarfile.REGTYPE
            tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def compress(tar: bytes) -> bytes:
    out = io.BytesIO()
    # filename="" and mtime=0 keep the gzip header free of the machine's path and the clock.
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz:
        gz.write(tar)
    return out.getvalue()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# A chart is a few KiB to a few MiB; more than this uncompressed is a gzip bomb, not a chart.
MAX_UNPACKED = 64 << 20


def gunzip(tgz: bytes) -> bytes:
    """The one gzip member of a .tgz, refused past MAX_UNPACKED bytes (never inflated further)."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(tgz, MAX_UNPACKED + 1)
    except zlib.error as exc:
        raise ValueError(f"not a gzip stream: {exc}") from None
    if len(out) > MAX_UNPACKED:
        raise ValueError(f"unpacks to more than {MAX_UNPACKED >> 20} MiB: not a chart")
    if not d.eof:
        raise ValueError("a truncated gzip stream")
    if d.unused_data:
        raise ValueError("more than one gzip member (a chart archive holds one)")
    return out


def content_digest(tgz: bytes) -> str:
    """sha256 of the uncompressed tar inside a .tgz: equal for the same chart whatever gzip made it."""
    return sha256(gunzip(tgz))


def _plain_members(tar: bytes) -> list[tuple[str, bytes]] | None:
    """Regular files of a tar made of ustar/GNU headers, read straight from the headers (ten times
    tarfile on a chart); None for anything else (pax headers, links, base-256 sizes), which
    tarfile then reads."""
    out = []
    off, longname = 0, None
    while off + 512 <= len(tar):
        head = tar[off:off + 512]
        if head.count(0) == 512:
            return out
        size_field = head[124:136]
        if size_field[0] & 0x80:
            return None
        try:
            size = int(size_field.strip(b"\0 ") or b"0", 8)
        except ValueError:
            return None
        kind, body = head[156:157], tar[off + 512:off + 512 + size]
        off += 512 + (size + 511) // 512 * 512
        name = head[:100].split(b"\0", 1)[0]
        if head[257:263] == b"ustar\0" and head[345] != 0:  # POSIX ustar: a name prefix
            name = head[345:500].split(b"\0", 1)[0] + b"/" + name
        if kind == b"L":  # GNU long name: the next header's name
            longname = body.split(b"\0", 1)[0]
            continue
        if kind in (b"0", b"\0"):
            out.append(((longname or name).decode("utf-8", "surrogateescape"), body))
        elif kind != b"5":  # directories carry nothing; anything else goes to tarfile
            return None
        longname = None
    return out


def read_archive_split(data: bytes) -> tuple[str, dict[str, str], dict[str, bytes]]:
    """(chart name, text members, binary members) of a chart archive, paths relative to its folder."""
    raw_tar = gunzip(data)
    members = _plain_members(raw_tar)
    if members is None:
        with tarfile.open(fileobj=io.BytesIO(raw_tar), mode="r:") as tar:
            members = []
            for member in tar.getmembers():
                if member.isfile():
                    f = tar.extractfile(member)
                    assert f is not None
                    members.append((member.name, f.read()))
    files: dict[str, str] = {}
    binary: dict[str, bytes] = {}
    names: set[str] = set()
    for path, raw in members:
        top, _, rel = path.partition("/")
        if not rel or rel.startswith("/") or ".." in rel.split("/"):
            raise ValueError(f"archive member {path!r} is not under a chart folder")
        names.add(top)
        try:
            files[rel] = raw.decode("utf-8")
        except UnicodeDecodeError:
            binary[rel] = raw
    if len(names) != 1:
        raise ValueError(f"archive holds {len(names)} top-level folders, expected one")
    return names.pop(), dict(sorted(files.items())), binary
