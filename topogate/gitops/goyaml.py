"""YAML text read back as kustomize-controller reads an object after substitution.

Flux substitutes variables in the YAML text of each built object and turns the result into
JSON with sigs.k8s.io/yaml's YAMLToJSON, which decodes with go-yaml v2 (YAML 1.1). So a plain
value that a substitution made `yes`, `on`, `y`, `~`, `0x1F`, `017`, `1e3` or `1_000` is no
longer a string: it is a bool, null, an int (octal for a leading 0) or a float. Quoted values
stay strings, timestamps stay the text they were (go-yaml keeps them as strings when decoding
into an interface), `.inf` and `.nan` cannot be JSON (an error, as in Flux), and map keys become
strings (ints as decimals, floats as Go's 32-bit %g, bools as true/false, null refused).

PyYAML's own implicit types are YAML 1.1 too but not go-yaml's (no `y`/`n`, sexagesimal
`1:20`, timestamps as datetimes, `1e3` a string), so every plain scalar is resolved here instead.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml

from topogate.safeio import limits
from topogate.safeio.saferead import InputError, check_node

_PLAIN = "tag:topogate.dev,2026:plain"
_MERGE = "tag:yaml.org,2002:merge"
_STR = "tag:yaml.org,2002:str"

_MAP: dict[str, Any] = {}
for _words, _value in (
    (("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    (("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
    (("", "~", "null", "Null", "NULL"), None),
    ((".nan", ".NaN", ".NAN"), math.nan),
    ((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    (("-.inf", "-.Inf", "-.INF"), -math.inf),
):
    for _w in _words:
        _MAP[_w] = _value

_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
# Go's strconv.ParseFloat: decimal or hexadecimal mantissa, an exponent, or inf/infinity/nan
_GO_FLOAT = re.compile(r"[-+]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
                       r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][-+]?[0-9]+"
                       r"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN])\Z")
_INT64 = (-(1 << 63), (1 << 63) - 1)
_UINT64 = (1 << 64) - 1


def _digits(s: str, base: int) -> int | None:
    try:
        return int(s, base) if s and s.isascii() and "_" not in s and s.strip() == s else None
    except ValueError:
        return None


def _go_int(text: str, base: int = 0) -> int | None:
    """strconv.ParseInt(text, base, 64), else ParseUint (no sign there): None where both err."""
    s = text
    sign = s[:1] if s[:1] in "+-" else ""
    s = s[len(sign):]
    if base == 0:
        base = 10
        if s[:1] == "0" and len(s) > 1:
            p = s[1].lower()
            base, s = {"x": (16, s[2:]), "o": (8, s[2:]), "b": (2, s[2:])}.get(p, (8, s[1:]))
    v = _digits(s, base)
    if v is None:
        return None
    v = -v if sign == "-" else v
    if _INT64[0] <= v <= _INT64[1]:
        return v
    return v if not sign and v <= _UINT64 else None


def _go_float(text: str) -> float | None:
    """strconv.ParseFloat(text, 64) where it succeeds (an overflow to infinity is an error)."""
    if not _GO_FLOAT.match(text):
        return None
    low = text.lower().lstrip("+-")
    if low.startswith(("inf", "nan")):
        return float(text.lower().replace("infinity", "inf"))
    f = float.fromhex(text) if "x" in low else float(text)
    return None if math.isinf(f) else f


def resolve_plain(text: str) -> Any:
    """A plain scalar as go-yaml v2 decodes it into an interface value (its resolve(), with
    timestamps kept as text)."""
    first = text[:1]
    hint = "N" if not text else ("D" if first in "0123456789" else "S" if first in "+-" else
                                "M" if first in "yYnNtTfFoO~" else "." if first == "." else "")
    if not hint:
        return text
    if text in _MAP:
        return _MAP[text]
    if hint == ".":
        f = _go_float(text)
        return text if f is None else f
    if hint in "DS":
        plain = text.replace("_", "")
        v = _go_int(plain)
        if v is not None:
            return v
        if _YAML_FLOAT.match(plain):
            f = _go_float(plain)
            if f is not None:
                return f
        if plain.startswith("0b"):
            v = _go_int(plain[2:], 2)
            if v is not None:
                return v
        elif plain.startswith("-0b"):
            v = _go_int("-" + plain[3:], 2)
            if v is not None and v >= _INT64[0]:
                return v
    # A timestamp (four digits and a dash first) is kept as its text, as is anything else.
    return text


class _Resolver(yaml.resolver.BaseResolver):
    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode and implicit[0]:
            return _MERGE if value == "<<" else _PLAIN
        if kind is yaml.ScalarNode:
            return _STR
        return super().resolve(kind, value, implicit)


class _Loader(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser, yaml.composer.Composer,
              yaml.constructor.SafeConstructor, _Resolver):
    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        _Resolver.__init__(self)


_Loader.add_constructor(_PLAIN, lambda loader, node: resolve_plain(node.value))


class JSONError(ValueError):
    """What YAMLToJSON refuses (Flux's build fails the same way)."""


class Unsafe(ValueError):
    """Text topogate does not read (an alias bomb, too deep, too large), whatever Flux does."""


def _key(k: Any) -> str:
    if isinstance(k, bool):
        return "true" if k else "false"
    if isinstance(k, str):
        return k
    if isinstance(k, int) and _INT64[0] <= k <= _INT64[1]:
        return str(k)
    if isinstance(k, float):
        if math.isnan(k):
            return ".nan"
        if math.isinf(k):
            return ".inf" if k > 0 else "-.inf"
        return _go_g32(k)
    raise JSONError(f"unsupported map key: {k!r}")


def _go_g32(f: float) -> str:
    """strconv.FormatFloat(f, 'g', -1, 32): the fewest digits that read back as the same
    float32, in %e form when the exponent is below -4 or at least 6 (Go's rule for the shortest
    form), else in %f form."""
    import struct  # lazy: map keys that are floats are rare

    f32 = struct.unpack("f", struct.pack("f", f))[0]
    if f32 == 0:
        return "-0" if str(f32).startswith("-") else "0"
    for n in range(1, 10):
        text = f"{f32:.{n - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == f32:
            break
    mant, _, e = text.partition("e")
    sign = "-" if mant.startswith("-") else ""
    digits = mant.lstrip("-").replace(".", "").rstrip("0") or "0"
    exp = int(e)
    if exp < -4 or exp >= 6:
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    point = exp + 1  # digits before the decimal point
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {_key(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        raise JSONError(f"json: unsupported value: {v}")
    return v


def yaml_to_json(text: str) -> Any:
    """The JSON value (dicts, lists, str, int, float, bool, None) YAMLToJSON makes of one
    document; JSONError or yaml.YAMLError where it fails."""
    if len(text) > limits.max_file_bytes():
        raise Unsafe("the substituted text is over the file size limit")
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        # A substituted value may hold anchors and aliases: the same checks as every file read.
        check_node(node, "the substituted text")
        value = loader.construct_document(node)
    except InputError as e:
        raise Unsafe(f"{e.message}") from None
    except RecursionError:
        raise Unsafe("nested too deeply to read") from None
    finally:
        loader.dispose()
    return _jsonable(value)


__all__ = ["JSONError", "Unsafe", "resolve_plain", "yaml_to_json"]
