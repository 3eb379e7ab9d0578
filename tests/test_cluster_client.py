"""The API server client olares-pack's own reads go through (controlplane.Cluster.request): one
kept-alive connection per thread, reopened when the server has closed it."""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor


def test_requests_from_several_threads_each_get_their_own_answer(control_plane) -> None:
    made = {f"kept-alive-{i}" for i in range(4)}
    for name in made:
        status, _ = control_plane.request("POST", "/api/v1/namespaces",
                                          {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        assert status in (201, 409)

    def ask(i: int) -> str:
        return control_plane.get(f"/api/v1/namespaces/kept-alive-{i % 4}")["metadata"]["name"]

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(ask, range(40))) == [f"kept-alive-{i % 4}" for i in range(40)]
    for name in made:
        control_plane.request("DELETE", f"/api/v1/namespaces/{name}")


def test_a_connection_the_server_closed_is_opened_again(control_plane) -> None:
    assert control_plane.get("/version")["gitVersion"]
    conn = control_plane._connection(fresh=False)
    assert conn.sock is not None  # kept alive after the answer
    conn.sock.shutdown(socket.SHUT_RDWR)  # as when the server has closed an idle connection
    assert control_plane.get("/version")["gitVersion"]
    status, body = control_plane.request("GET", "/api/v1/namespaces/no-such-namespace")
    assert status == 404 and body["reason"] == "NotFound"
