"""One HTTP client for the tests' requests to servers on loopback. `httpx.get()` builds a client
for each call, and with it a TLS context (the CA bundle read and parsed): about 55 ms of CPU a
request here, which made a test of 112 requests take 6 s. A server whose test needs TLS settings
of its own is asked with httpx.get(..., verify=...) as before."""

from __future__ import annotations

import httpx

HTTP = httpx.Client()
