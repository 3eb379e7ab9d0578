"""After a deploy: does the market source at URL answer this catalogue's hash?

`python -m olares_pack.ci.verify URL [--root .] [--version V]...` asks URL's
/api/v1/appstore/hash for each Olares version and compares the bytes with what `serve` answers
for the catalogue at --root (the same code computes both: market/server.py). A fresh deploy may
take a few seconds to reach every edge, so it asks again until --timeout. Exit 0 when every
version matches, 1 when one still differs (the body seen and the body expected are printed), 2
on bad input."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from olares_pack import olares

HASH_ROUTE = "/api/v1/appstore/hash"


def expected(root: Path, version: str) -> bytes:
    from olares_pack.catalogue.repo import INDEX_FILE
    from olares_pack.market import payloads
    from olares_pack.market.server import Answers

    answers = Answers(payloads.load(root, root / INDEX_FILE), olares.DEFAULT_OS_VERSION)
    reply = answers.get(f"{HASH_ROUTE}?version={version}".encode())
    return reply.body


def check(url: str, root: Path, versions: list[str], timeout: float, say=print) -> bool:  # noqa: ANN001
    import httpx

    want = {v: expected(root, v) for v in versions}
    deadline = time.monotonic() + timeout
    while True:
        seen: dict[str, bytes | str] = {}
        for v in versions:
            try:
                r = httpx.get(url.rstrip("/") + HASH_ROUTE, params={"version": v}, timeout=15,
                              headers={"Accept-Encoding": "identity", "Cache-Control": "no-cache"})
                seen[v] = r.content if r.status_code == 200 else f"HTTP {r.status_code}"
            except httpx.HTTPError as exc:
                seen[v] = f"{type(exc).__name__}: {exc}"
        wrong = [v for v in versions if seen[v] != want[v]]
        if not wrong:
            for v in versions:
                say(f"{url}{HASH_ROUTE}?version={v}: {want[v].decode()} (the catalogue's)")
            return True
        if time.monotonic() > deadline:
            for v in wrong:
                got = seen[v]
                say(f"{url}{HASH_ROUTE}?version={v}: answers {got.decode() if isinstance(got, bytes) else got}, "
                    f"expected {want[v].decode()}")
            return False
        time.sleep(3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m olares_pack.ci.verify", description=__doc__.splitlines()[0])
    parser.add_argument("url", help="The deployed market source's base URL.")
    parser.add_argument("--root", type=Path, default=Path("."), help="The catalogue repository (default: .).")
    parser.add_argument("--version", dest="versions", action="append", metavar="V",
                        help="An Olares version to ask for (repeatable; default: every release olares-pack knows).")
    parser.add_argument("--timeout", type=float, default=120, help="Seconds to keep asking (default: 120).")
    args = parser.parse_args(argv)
    versions = args.versions or list(olares.KNOWN_RELEASES)
    try:
        for v in versions:
            olares.parse_os_version(v)
        ok = check(args.url, args.root, versions, args.timeout, lambda m: print(m, file=sys.stderr))
    except Exception as exc:  # noqa: BLE001 - a catalogue that does not load: say it, exit 2
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
