"""Resource quantities as Kubernetes reads them (apimachinery's resource.ParseQuantity), and the
one table of the device resources topogate counts as GPUs.

Every reader of a GPU count (the job analysis, the shapes a file is checked against, a live
node's allocatable, a running pod's limits) asks here, so `check` and `--live` cannot count the
same node differently.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

# The extended resources of the GPU device plugins: NVIDIA's, AMD's and Intel Gaudi's (Habana).
GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu", "habana.ai/gaudi")

# <quantity> ::= <signedNumber><suffix>; <number> ::= digits | digits.digits | digits. | .digits;
# <suffix> ::= binarySI (Ki..Ei) | decimalSI (n u m "" k M G T P E) | e|E <signedNumber>.
# apimachinery's parser reads the exponent as a whole number, so a fractional one is refused.
_QUANTITY = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_MAX_TEXT = 128
# An exponent past this is refused, not computed: 10**999999999 is a hostile input's way to make
# a reader spin (the API server itself answers such a quantity only after a long while).
MAX_EXPONENT = 256
# Go's strings.TrimSpace, which the API server applies to a quantity's text: Unicode White_Space.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def parse(value: Any) -> Fraction | None:
    """The quantity a YAML value means, or None where Kubernetes would refuse it (or its exponent
    is past MAX_EXPONENT). A YAML number is read as its text, as a Quantity decodes a JSON
    number; surrounding white space is trimmed, as the API server trims it."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        text = repr(value)
    elif isinstance(value, str):
        text = value.strip(_GO_SPACE)
    else:
        return None
    if not text or len(text) > _MAX_TEXT:
        return None
    m = _QUANTITY.fullmatch(text)
    if m is None:
        return None
    sign, whole, frac, suffix = m.group(1), m.group(2), m.group(3) or "", m.group(4) or ""
    if not whole and not frac and m.group(3) is None and not sign and not suffix:
        return None
    number = Fraction(int(whole or "0")) + (Fraction(int(frac), 10 ** len(frac)) if frac else 0)
    if suffix in _BINARY:
        scaled = number * 1024 ** _BINARY[suffix]
    else:
        exp = _DECIMAL.get(suffix, 0) if suffix[:1] not in ("e", "E") else int(suffix[1:])
        if not number:
            return Fraction(0)
        if abs(exp) > MAX_EXPONENT:
            return None
        scaled = number * Fraction(10) ** exp
    return -scaled if sign == "-" else scaled


def whole(value: Any) -> int | None:
    """The count an extended resource's quantity means: a non-negative whole number, as the API
    server's validation requires of extended resources, or None."""
    q = parse(value)
    if q is None or q < 0 or q.denominator != 1:
        return None
    return int(q)


def count(value: Any) -> int:
    """whole(value), with 0 for what is not a count (a file's shapes check says so elsewhere)."""
    return whole(value) or 0


__all__ = ["GPU_RESOURCES", "count", "parse", "whole"]
