"""A request whose exact bytes were answered before from the cache is answered without being
parsed again (server.Connection.data_received): the answers must be the ones a parse gives."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from conftest import serving

from olares_pack.market.server import Source

HASH = b"GET /api/v1/appstore/hash?version=1.12.6 HTTP/1.1\r\nHost: x\r\n\r\n"


def exchange(port: int, data: bytes, answers: int, *, head: bool = False) -> list[tuple[bytes, dict[bytes, bytes], bytes]]:
    """Send DATA on one connection and read ANSWERS responses: (status line, headers, body)."""
    out = []
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(data)
        buf = b""
        while len(out) < answers:
            while b"\r\n\r\n" not in buf:
                buf += sock.recv(65536)
            top, _, buf = buf.partition(b"\r\n\r\n")
            status, *lines = top.split(b"\r\n")
            headers = {k.lower(): v for k, _, v in (line.partition(b": ") for line in lines)}
            size = int(headers.get(b"content-length", b"0")) if not (head or status.endswith(b"304 Not Modified")) else 0
            while len(buf) < size:
                buf += sock.recv(65536)
            out.append((status, headers, buf[:size]))
            buf = buf[size:]
    return out


def test_repeated_requests_get_what_a_parse_gives(repo: Path) -> None:
    with serving(Source(repo, repo / "market-index.json")) as url:
        port = int(url.rsplit(":", 1)[1])
        first = exchange(port, HASH, 1)[0]
        # the same bytes again, one read each, on a kept-alive connection: answered from memory
        again = exchange(port, HASH, 1)[0]
        assert again[0] == first[0] == b"HTTP/1.1 200 OK" and again[2] == first[2]
        assert json.loads(again[2])["version"] == "1.12.6"
        etag = first[1][b"etag"]
        conditional = HASH.replace(b"\r\n\r\n", b"\r\nIf-None-Match: " + etag + b"\r\n\r\n")
        assert [a[0] for a in (exchange(port, conditional, 1)[0], exchange(port, conditional, 1)[0])] == \
            [b"HTTP/1.1 304 Not Modified"] * 2
        head = HASH.replace(b"GET", b"HEAD", 1)
        for _ in range(2):
            status, headers, _ = exchange(port, head, 1, head=True)[0]
            assert status == b"HTTP/1.1 200 OK" and headers[b"content-length"] == first[1][b"content-length"]
        # pipelined: two requests in one read, then that read again; each request answered once
        pair = exchange(port, HASH + HASH.replace(b"1.12.6", b"1.12.5"), 2)
        assert [json.loads(b)["version"] for _, _, b in pair] == ["1.12.6", "1.12.5"]
        pair = exchange(port, HASH + HASH.replace(b"1.12.6", b"1.12.5"), 2)
        assert [json.loads(b)["version"] for _, _, b in pair] == ["1.12.6", "1.12.5"]
        # a details POST, head and body in one read: the same bytes are the same ids
        def details(ids: list[str]) -> bytes:
            body = json.dumps({"app_ids": ids, "version": "1.12.6"}).encode()
            return b"POST /api/v1/applications/info HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" \
                b"Content-Length: %d\r\n\r\n%s" % (len(body), body)

        ids = sorted(json.loads(exchange(port, HASH.replace(b"hash", b"info"), 1)[0][2])["data"]["apps"])
        answers = [json.loads(exchange(port, details(ids), 1)[0][2]) for _ in range(3)]
        assert answers[0] == answers[1] == answers[2] and sorted(answers[0]["apps"]) == ids
        one = [json.loads(exchange(port, details(ids[:1]), 1)[0][2]) for _ in range(3)]
        assert [sorted(a["apps"]) for a in one] == [ids[:1]] * 3
        # a request that asks to close is answered and closed, however often it was seen
        closing = HASH.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
        for _ in range(2):
            assert exchange(port, closing, 1)[0][1][b"connection"] == b"close"


def test_a_request_split_across_reads_is_parsed(repo: Path) -> None:
    with serving(Source(repo, repo / "market-index.json")) as url:
        port = int(url.rsplit(":", 1)[1])
        whole = exchange(port, HASH, 1)[0]
        exchange(port, HASH, 1)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            # the first half, then the whole request's bytes: the parser holds the half, so the
            # second read is not a request of its own (the answer: one 400, not a stored 200)
            sock.sendall(HASH[:20])
            import time

            time.sleep(0.1)
            sock.sendall(HASH)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        assert data.startswith(b"HTTP/1.1 400") and whole[0] == b"HTTP/1.1 200 OK"


def test_a_repeated_request_carries_the_current_date_and_catalogue(repo: Path) -> None:
    """The third time on, a request's whole answer is written from memory (`Source.wires`): its Date
    must still turn with the clock, and a reload must change it at once."""
    import time
    from email.utils import parsedate_to_datetime

    from olares_pack.cli import main
    from olares_pack.common.errors import ExitCode

    source = Source(repo, repo / "market-index.json")
    with serving(source) as url:
        port = int(url.rsplit(":", 1)[1])
        first = [exchange(port, HASH, 1)[0] for _ in range(3)]
        assert len({a[2] for a in first}) == 1
        time.sleep(1.3 - time.time() % 1.0)  # into the next second, and past the server's tick
        sent = int(time.time())
        status, headers, body = exchange(port, HASH, 1)[0]
        assert status == b"HTTP/1.1 200 OK" and body == first[0][2]
        assert int(parsedate_to_datetime(headers[b"date"].decode()).timestamp()) == sent
        # a new release, swapped in as the reload thread does: the same bytes get the new catalogue
        assert main(["release", "llamacppqwen36mtpone", "--apps-dir", str(repo / "apps"), "--bump", "patch",
                     "--summary", "x", "--date", "2026-06-01"]) == ExitCode.OK
        time.sleep(1.05 - time.time() % 1.0)  # a whole second ahead for the old answer to be kept in
        assert [exchange(port, HASH, 1)[0][2] for _ in range(2)] == [first[0][2]] * 2  # not reloaded yet
        source.load(initial=False)
        after = exchange(port, HASH, 1)[0][2]
        assert json.loads(after)["hash"] != json.loads(first[0][2])["hash"]
