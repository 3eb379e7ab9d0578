"""One HTTP client for the tests' requests to servers on loopback. `httpx.get()` builds a client
for each call, and with it a TLS context (the CA bundle read and parsed): about 55 ms of CPU a
request here, which made a test of 112 requests take 6 s. A server whose test needs TLS settings
of its own is asked with httpx.get(..., verify=...) as before.

The client drops a kept-alive connection after 0.5 s idle, under the shortest idle timeout of a
server the tests start (1 s, tests/test_server.py): reusing one just as the server closes it sent
the request into a closed socket (`Connection reset by peer` / `Server disconnected without sending
a response`, caught with the server's events logged: the idle sweep closed the connection the
client had left 1.1 s before, as its next GET arrived). A device's Go client retries such a
request; httpx does not, so the client here never reuses a connection that close to the timeout."""

from __future__ import annotations

import httpx

HTTP = httpx.Client(limits=httpx.Limits(keepalive_expiry=0.5))
