"""The node's cluster DNS, standing in for CoreDNS (one more Go build): A records for Services,
`<service>.<namespace>.svc.cluster.local` -> the Service's ClusterIP, read from the API server.
It listens on the bridge's address, port 53, which the kubelet writes into every pod's
resolv.conf (clusterDNS) with the usual search path, so `llamacpp` (same namespace) and
`<service>.<namespace>` (another one) resolve as on a device.

Hugging Face's names (HUB_NAMES: huggingface.co, hf.co and their subdomains, such as the
cdn-lfs*.hf.co and cas-bridge.xethub.hf.co its downloads redirect to) answer the server's own
address, where the stand-in hub (rehearse/hub.py) listens, over HTTPS too: a chart that downloads
from https://huggingface.co/... by name (an alpine init container's wget) reaches the stand-in
hub, pods only (the host's own resolver is never touched). Every report that ran so says it.

Any other name: NXDOMAIN (the node has no Internet); AAAA: no records."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable

DOMAIN = "cluster.local"
TTL = 5
HUB_NAMES = ("huggingface.co", "hf.co")  # and every name under them


def hub_name(name: str) -> bool:
    """A name the stand-in hub answers for (Hugging Face's own)."""
    return any(name == n or name.endswith("." + n) for n in HUB_NAMES)


def _name(packet: bytes, offset: int) -> tuple[str, int]:
    labels = []
    while packet[offset]:
        n = packet[offset]
        labels.append(packet[offset + 1: offset + 1 + n].decode(errors="replace"))
        offset += 1 + n
    return ".".join(labels).lower(), offset + 1


def answer(query: bytes, lookup: Callable[[str, str], str | None], hub: str | None = None) -> bytes | None:
    """The response to one query (None: not a query we can read). hub: the address Hugging Face's
    names answer (None: NXDOMAIN, as any name off the cluster)."""
    if len(query) < 12:
        return None
    ident, flags, qd = struct.unpack("!HHH", query[:6])
    if flags & 0x8000 or qd != 1:
        return None
    name, end = _name(query, 12)
    qtype, _qclass = struct.unpack("!HH", query[end:end + 4])
    question = query[12:end + 4]
    suffix = f".svc.{DOMAIN}"
    ip = None
    found = False
    if name.endswith(suffix):
        parts = name[: -len(suffix)].split(".")
        if len(parts) == 2:
            ip = lookup(parts[1], parts[0])
            found = ip is not None
    elif hub and hub_name(name):
        ip, found = hub, True
    rcode = 0 if found else 3
    records = b""
    count = 0
    if found and qtype == 1 and ip and ip != "None":
        records = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, TTL, 4) + socket.inet_aton(ip)
        count = 1
    header = struct.pack("!HHHHHH", ident, 0x8180 | rcode, 1, count, 0, 0)
    return header + question + records


class Server:
    def __init__(self, host: str, lookup: Callable[[str, str], str | None]) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((host, 53))
        self.host = host
        self.sock.settimeout(0.5)
        self.lookup = lookup
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopping:
            try:
                data, peer = self.sock.recvfrom(512)
            except (TimeoutError, OSError):
                continue
            try:
                out = answer(data, self.lookup, self.host)
            except Exception:  # noqa: BLE001 - a bad packet must not stop the server
                out = None
            if out:
                self.sock.sendto(out, peer)

    def stop(self) -> None:
        self.stopping = True
        self.thread.join(timeout=2)
        self.sock.close()


def cached(fetch: Callable[[str, str], str | None]) -> Callable[[str, str], str | None]:
    memo: dict[tuple[str, str], tuple[float, str | None]] = {}

    def lookup(ns: str, svc: str) -> str | None:
        hit = memo.get((ns, svc))
        if hit and time.monotonic() - hit[0] < 2:
            return hit[1]
        ip = fetch(ns, svc)
        memo[(ns, svc)] = (time.monotonic(), ip)
        return ip

    return lookup
