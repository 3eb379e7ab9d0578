"""Kubernetes resource quantities: parsing, comparing and the string forms Olares reads."""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation

from olares_pack.common.errors import QuantityError

# The Kubernetes quantity grammar (apimachinery resource.Quantity), without exotic exponents.
# Digits and exponents are bounded so that a typo cannot overflow the arithmetic.
_QUANTITY = re.compile(r"^(?P<num>[+]?([0-9]{1,30}(\.[0-9]{0,30})?|\.[0-9]{1,30}))"
                       r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?[0-9]{1,2})?$")

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"m": Decimal("0.001"), "k": Decimal(10**3), "M": Decimal(10**6), "G": Decimal(10**9),
            "T": Decimal(10**12), "P": Decimal(10**15), "E": Decimal(10**18)}




def parse(value: str | int | float) -> Decimal:
    """The quantity's value in base units (cores or bytes) as an exact Decimal."""
    text = str(value).strip()
    m = _QUANTITY.match(text)
    if not m:
        raise QuantityError(
            f"{text!r} is not a Kubernetes quantity (expected e.g. '4', '4000m', '512Mi', '24Gi')"
        )
    try:
        num = Decimal(m["num"])
    except InvalidOperation:  # pragma: no cover - the regex admits only decimals
        raise QuantityError(f"{text!r} is not a number") from None
    suffix = m["suffix"] or ""
    if suffix in _BINARY:
        return num * _BINARY[suffix]
    if suffix in _DECIMAL:
        return num * _DECIMAL[suffix]
    if suffix[:1] in ("e", "E"):
        return num * (Decimal(10) ** int(suffix[1:]))
    return num


def parse_or_none(value: object) -> Decimal | None:
    """The quantity's value, or None for anything that is not one (a hand-written chart holds anything)."""
    try:
        return parse(value)  # type: ignore[arg-type]
    except (QuantityError, TypeError):
        return None


def to_bytes(value: str | int | float) -> int:
    return int(parse(value).to_integral_value(rounding=ROUND_CEILING))


def to_millicores(value: str | int | float) -> int:
    return int((parse(value) * 1000).to_integral_value(rounding=ROUND_CEILING))


def cores_string(value: str | int | float) -> str:
    """CPU in cores as the market API shows it: '4000m' -> '4', '500m' -> '0.5'."""
    d = parse(value).normalize()
    text = format(d, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def canonical_cpu(value: str | int | float) -> str:
    """A CPU quantity in the shortest exact form: whole cores as '4', fractions as '1500m'."""
    milli = to_millicores(value)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def whole_cores(value: str | int | float) -> int:
    """Rounded up to whole cores (manifest 0.10.0 wants whole cores)."""
    return int(parse(value).to_integral_value(rounding=ROUND_CEILING))


def mib_string(mib: int) -> str:
    return f"{mib}Mi"
