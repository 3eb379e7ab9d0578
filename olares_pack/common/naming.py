"""Names and addresses as the device checks them, for the manifest models, lint and the server
alike (a module of its own so that none of them loads the others to read a pattern)."""

from __future__ import annotations

import re

# Olares naming rules (framework/oac): app names are short lowercase alphanumerics, no hyphens.
NAME_RE = re.compile(r"^[a-z0-9]{1,30}$")
RESERVED_NAMES = frozenset(
    "user system space default os kubesphere kube kubekey kubernetes gpu tapr bfl bytetrade project pod".split()
)
URL_RE = re.compile(r"^https?://[^\s/$.?#][^\s]*$")
