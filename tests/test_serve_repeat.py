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
