"""The GPU memory verdict every gate gives: `vram`, lint's vram.budget, `release` and `new`
(vram/gate.py gathers what it is given for an app).

An estimate's own verdict compares its headroom with its uncertainty. The verdict adds what the
app's own records say: a configuration of the same app that ran out of GPU memory on devices
(vram/outcomes.py) is a measurement of the device itself, so a configuration whose estimate is
not clearly below that one's (less than the estimate's uncertainty apart) is never `fits`: the
estimate cannot tell the two apart. That also keeps a version from being called `fits` beside its
own out-of-memory record.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from olares_pack.vram.estimate import Estimate


@dataclass(frozen=True)
class Reference:
    """A published version of the app that ran out of GPU memory on devices, with its estimate."""

    version: str
    total_mib: float
    record: str  # where its record is: "<version>'s changelog"


@dataclass(frozen=True)
class Verdict:
    verdict: str  # fits | tight | does not fit
    estimate: Estimate
    reasons: tuple[str, ...]

    @property
    def figures(self) -> str:
        e = self.estimate
        return (f"{e.total_mib:,.0f} MiB at full context ({e.boot_mib:,.0f} at boot), headroom {e.headroom_mib:,.0f} MiB "
                f"on {e.device.name}, uncertainty ±{e.uncertainty_mib:,.0f} MiB")

    def line(self) -> str:
        """One line a finding, a changelog or a log can carry: the verdict, its figures, its reasons."""
        return f"{self.verdict}: {self.figures}" + "".join(f"; {r}" for r in self.reasons)

    def to_dict(self) -> dict[str, object]:
        return {"verdict": self.verdict, "reasons": list(self.reasons)}


def judge(est: Estimate, references: Iterable[Reference] = (), version: str | None = None) -> Verdict:
    """The verdict of an estimate (of the app's `version`, when it is a published one), given the
    out-of-memory records of the app's configurations."""
    v, u = est.verdict, est.uncertainty_mib
    reasons = []
    if v == "does not fit":
        reasons.append(f"needs {est.total_mib - est.device.usable_mib:,.0f} MiB more than the device leaves")
    elif v == "tight":
        reasons.append("the headroom is less than the estimate's uncertainty")
    for ref in references:
        gap = ref.total_mib - est.total_mib
        if gap >= u:
            continue
        if v == "fits":
            v = "tight"
        if ref.version == version:
            reasons.append(f"this version ran out of GPU memory on devices ({ref.record})")
            continue
        where = (f"the same estimate as {ref.version}" if abs(gap) < 0.5 else
                 f"{abs(gap):,.0f} MiB {'below' if gap > 0 else 'above'} the estimate of {ref.version}")
        reasons.append(f"{where}, which ran out of GPU memory on devices ({ref.record}): within the uncertainty, the "
                       "estimate cannot tell them apart")
    return Verdict(v, est, tuple(reasons))
