"""Names and addresses as the device checks them, for the manifest models, lint and the server
alike (a module of its own so that none of them loads the others to read a pattern)."""

from __future__ import annotations

import re

# Olares naming rules (framework/oac): app names are short lowercase alphanumerics, no hyphens.
# The 30-character bounds (names, titles) are the 1.12.6+ installer's checker (oac, PR #3221); the
# installers of 1.12.3-1.12.5 do not apply it (`lint --olares 1.12.5` has no such rule), and
# third-party catalogues for those releases publish 31-character names. What an app of that line
# may be called is bounded by Kubernetes instead: the app's objects are named after it (a DNS
# label, at most 63 characters).
NAME_RE = re.compile(r"^[a-z0-9]{1,30}$")
ANY_LINE_NAME_RE = re.compile(r"^[a-z0-9]{1,63}$")
MAX_TITLE = 30  # characters of metadata.title the 1.12.6+ checker takes (framework/oac validate.go)
MAX_LEGACY_TITLE = 100  # olares-pack's own bound where no installer sets one: a title is one line of the store


def name_re(current: bool) -> re.Pattern[str]:
    """The app-name pattern of an app that installs on the 1.12.6+ line (`current`) or only on 1.12.3-1.12.5."""
    return NAME_RE if current else ANY_LINE_NAME_RE
RESERVED_NAMES = frozenset(
    "user system space default os kubesphere kube kubekey kubernetes gpu tapr bfl bytetrade project pod".split()
)
URL_RE = re.compile(r"^https?://[^\s/$.?#][^\s]*$")
