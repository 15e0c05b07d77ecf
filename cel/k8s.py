"""Kubernetes' own CEL libraries: format, URL, IP, CIDR and Quantity.

Owns the functions kube-apiserver adds to CEL in ``k8s.io/apiserver/pkg/cel/library`` —
``format.dns1123Label().validate(s)``, ``url(s).getHost()``, ``cidr(s).containsIP(ip)``,
``quantity(s).isGreaterThan(…)`` and their ``isX(s)`` predicates — as library objects the
evaluator treats as opaque values. Name validators are shared with the API server's own name
checks (``apimachinery.names``) so the messages match what the server itself says.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import ipaddress
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any
from urllib.parse import parse_qs, urlsplit

from apimachinery.names import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    is_qualified_name,
)
from apimachinery.quantity import BINARY_SUFFIXES, DECIMAL_SUFFIXES, quantity_value
from cel.stdlib.timestamps import parse_timestamp
from cel.types import NONE, EvalError, Meter, NoOverload, Opaque, Optional, register, size_cost

# --- format ----------------------------------------------------------------------------------------


def _prefix(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    # generateName prefixes may end in '-': upstream masks the trailing dash before validating.
    def validate(value: str) -> list[str]:
        if len(value) > 1 and value.endswith("-"):
            value = value[:-2] + "a"
        return check(value)
    return validate


def _uri(value: str) -> list[str]:
    return [] if _parse_request_uri(value) is not None else ["invalid URI"]


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _uuid(value: str) -> list[str]:
    return [] if _UUID.fullmatch(value) else ["does not match the UUID format"]


def _byte(value: str) -> list[str]:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return ["invalid base64"]
    return []


def _date(value: str) -> list[str]:
    try:
        dt.date.fromisoformat(value) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value) else dt.date.fromisoformat("x")
    except ValueError:
        return ["invalid date"]
    return []


def _datetime(value: str) -> list[str]:
    try:
        parse_timestamp(value)
    except EvalError:
        return ["invalid datetime"]
    return []


FORMATS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": is_dns1123_label,
    "dns1123Subdomain": is_dns1123_subdomain,
    "dns1035Label": is_dns1035_label,
    "qualifiedName": is_qualified_name,
    "dns1123LabelPrefix": _prefix(is_dns1123_label),
    "dns1123SubdomainPrefix": _prefix(is_dns1123_subdomain),
    "dns1035LabelPrefix": _prefix(is_dns1035_label),
    "labelValue": is_label_value,
    "uri": _uri,
    "uuid": _uuid,
    "byte": _byte,
    "date": _date,
    "datetime": _datetime,
}


class Format(Opaque):
    type_name = "kubernetes.NamedFormat"

    def __init__(self, name: str) -> None:
        self.name = name

    def cel_equal(self, other: Any) -> bool:
        return isinstance(other, Format) and other.name == self.name

    def __str__(self) -> str:
        return f"format.{self.name}"


def _validate(m: Meter, fmt: Any, value: Any) -> Optional:
    if not isinstance(fmt, Format) or not isinstance(value, str):
        raise NoOverload("validate", (fmt, value))
    m.charge(size_cost(len(value)) + 1)
    errors = FORMATS[fmt.name](value)
    return Optional(True, errors) if errors else NONE


def _named(m: Meter, name: Any) -> Optional:
    if not isinstance(name, str):
        raise NoOverload("format.named", (name,))
    return Optional(True, Format(name)) if name in FORMATS else NONE


for _fmt in FORMATS:
    register(f"format.{_fmt}", (lambda n: lambda m: Format(n))(_fmt), sigs=("->Format",))
register("format.named", _named, sigs=("string->optional(Format)",))
register("validate", _validate, member=("Format,string->optional(list(string))",))


# --- URL -------------------------------------------------------------------------------------------

_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.\-]*:")


class URL(Opaque):
    type_name = "kubernetes.URL"

    def __init__(self, text: str, parts: Any) -> None:
        self.text = text
        self.parts = parts

    def cel_equal(self, other: Any) -> bool:
        return isinstance(other, URL) and other.text == self.text

    def __str__(self) -> str:
        return self.text


def _parse_request_uri(text: str) -> Any:
    """``url.ParseRequestURI``: an absolute URI or an absolute path, else None."""
    if not text or any(c in text for c in " \t\n\r\x7f") or any(ord(c) < 0x20 for c in text):
        return None
    if not _SCHEME.match(text) and not text.startswith("/"):
        return None
    try:
        parts = urlsplit(text, allow_fragments=False)
        _ = parts.port
    except ValueError:
        return None
    if parts.scheme and not parts.netloc and not parts.path.startswith("/") and parts.path:
        # An opaque URI (mailto:x) is accepted by Go as long as it has a scheme.
        return parts
    return parts


def _url(m: Meter, text: Any) -> URL:
    if not isinstance(text, str):
        raise NoOverload("url", (text,))
    m.charge(size_cost(len(text)))
    parts = _parse_request_uri(text)
    if parts is None:
        raise EvalError(f'URL parse error during conversion from string: parse "{text}": invalid URI for request')
    return URL(text, parts)


def _url_arg(name: str, u: Any) -> Any:
    if not isinstance(u, URL):
        raise NoOverload(name, (u,))
    return u.parts


def _hostname(parts: Any) -> str:
    host = parts.netloc.rsplit("@", 1)[-1]
    if host.startswith("["):
        return host[1:host.index("]")] if "]" in host else host[1:]
    return host.rsplit(":", 1)[0] if ":" in host else host


def _port(parts: Any) -> str:
    host = parts.netloc.rsplit("@", 1)[-1]
    if host.startswith("["):
        rest = host[host.index("]") + 1:] if "]" in host else ""
        return rest[1:] if rest.startswith(":") else ""
    return host.rsplit(":", 1)[1] if ":" in host else ""


register("url", _url, sigs=("string->URL",))
register("isURL", lambda m, s: isinstance(s, str) and _parse_request_uri(s) is not None, sigs=("string->bool",))
register("getScheme", lambda m, u: _url_arg("getScheme", u).scheme, member=("URL->string",))
register("getHost", lambda m, u: _url_arg("getHost", u).netloc.rsplit("@", 1)[-1], member=("URL->string",))
register("getHostname", lambda m, u: _hostname(_url_arg("getHostname", u)), member=("URL->string",))
register("getPort", lambda m, u: _port(_url_arg("getPort", u)), member=("URL->string",))
register("getEscapedPath", lambda m, u: _url_arg("getEscapedPath", u).path, member=("URL->string",))
register("getQuery", lambda m, u: {k: v for k, v in parse_qs(_url_arg("getQuery", u).query,
                                                              keep_blank_values=True).items()},
         member=("URL->map(string,list(string))",))


# --- IP and CIDR -----------------------------------------------------------------------------------

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class IP(Opaque):
    type_name = "net.IP"

    def __init__(self, addr: IPAddress) -> None:
        self.addr = addr

    def cel_equal(self, other: Any) -> bool:
        return isinstance(other, IP) and other.addr == self.addr

    def __str__(self) -> str:
        return str(self.addr)


class CIDR(Opaque):
    type_name = "net.CIDR"

    def __init__(self, addr: IPAddress, prefix: int) -> None:
        self.addr = addr
        self.prefix = prefix
        self.network = ipaddress.ip_network(f"{addr}/{prefix}", strict=False)

    def cel_equal(self, other: Any) -> bool:
        return isinstance(other, CIDR) and (other.addr, other.prefix) == (self.addr, self.prefix)

    def __str__(self) -> str:
        return f"{self.addr}/{self.prefix}"


def parse_ip(text: str) -> IPAddress:
    if "%" in text:
        raise ValueError("IP address with zone value is not allowed")
    addr = ipaddress.ip_address(text)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise ValueError("IPv4-mapped IPv6 address is not allowed")
    return addr


def parse_cidr(text: str) -> CIDR:
    if "/" not in text:
        raise ValueError(f'netip.ParsePrefix("{text}"): no \'/\'')
    addr_text, bits = text.rsplit("/", 1)
    addr = parse_ip(addr_text)
    if not bits.isdigit() or int(bits) > addr.max_prefixlen or (len(bits) > 1 and bits[0] == "0"):
        raise ValueError(f'netip.ParsePrefix("{text}"): bad bits after slash: "{bits}"')
    return CIDR(addr, int(bits))


def _ip(m: Meter, text: Any) -> IP:
    if isinstance(text, CIDR):
        return IP(text.addr)
    if not isinstance(text, str):
        raise NoOverload("ip", (text,))
    try:
        return IP(parse_ip(text))
    except ValueError as exc:
        raise EvalError(f'IP Address "{text}" parse error during conversion from string: {exc}') from None


def _cidr(m: Meter, text: Any) -> CIDR:
    if not isinstance(text, str):
        raise NoOverload("cidr", (text,))
    try:
        return parse_cidr(text)
    except ValueError as exc:
        raise EvalError(f'network address parse error during conversion from string: {exc}') from None


def _is(parse: Callable[[str], Any]) -> Callable[[Meter, Any], bool]:
    def check(m: Meter, text: Any) -> bool:
        if not isinstance(text, str):
            raise NoOverload("is", (text,))
        try:
            parse(text)
        except ValueError:
            return False
        return True
    return check


def _ip_arg(name: str, v: Any) -> IPAddress:
    if isinstance(v, IP):
        return v.addr
    if isinstance(v, CIDR):
        return v.addr
    raise NoOverload(name, (v,))


def _global_unicast(a: IPAddress) -> bool:
    if isinstance(a, ipaddress.IPv4Address) and a == ipaddress.IPv4Address("255.255.255.255"):
        return False
    return not (a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local)


def _link_local_multicast(a: IPAddress) -> bool:
    if isinstance(a, ipaddress.IPv4Address):
        return a in ipaddress.ip_network("224.0.0.0/24")
    return a in ipaddress.ip_network("ff02::/16")


def _contains_ip(m: Meter, c: Any, other: Any) -> bool:
    if not isinstance(c, CIDR):
        raise NoOverload("containsIP", (c, other))
    addr = _ip(m, other).addr if isinstance(other, str) else _ip_arg("containsIP", other)
    return addr.version == c.network.version and addr in c.network


def _contains_cidr(m: Meter, c: Any, other: Any) -> bool:
    if not isinstance(c, CIDR):
        raise NoOverload("containsCIDR", (c, other))
    sub = _cidr(m, other) if isinstance(other, str) else other
    if not isinstance(sub, CIDR):
        raise NoOverload("containsCIDR", (c, other))
    return sub.network.version == c.network.version and sub.prefix >= c.prefix and sub.network.subnet_of(
        c.network)  # type: ignore[arg-type]


register("ip", _ip, sigs=("string->IP",), member=("CIDR->IP",))
register("isIP", _is(parse_ip), sigs=("string->bool",))
register("ip.isCanonical", lambda m, s: str(_ip(m, s).addr) == s, sigs=("string->bool",))
register("cidr", _cidr, sigs=("string->CIDR",))
register("isCIDR", _is(parse_cidr), sigs=("string->bool",))
register("family", lambda m, v: _ip_arg("family", v).version, member=("IP->int",))
register("isUnspecified", lambda m, v: _ip_arg("isUnspecified", v).is_unspecified, member=("IP->bool",))
register("isLoopback", lambda m, v: _ip_arg("isLoopback", v).is_loopback, member=("IP->bool",))
register("isLinkLocalMulticast", lambda m, v: _link_local_multicast(_ip_arg("isLinkLocalMulticast", v)),
         member=("IP->bool",))
register("isLinkLocalUnicast", lambda m, v: _ip_arg("isLinkLocalUnicast", v).is_link_local, member=("IP->bool",))
register("isGlobalUnicast", lambda m, v: _global_unicast(_ip_arg("isGlobalUnicast", v)), member=("IP->bool",))
register("containsIP", _contains_ip, member=("CIDR,IP->bool", "CIDR,string->bool"))
register("containsCIDR", _contains_cidr, member=("CIDR,CIDR->bool", "CIDR,string->bool"))
register("prefixLength", lambda m, c: c.prefix if isinstance(c, CIDR) else _raise(NoOverload("prefixLength", (c,))),
         member=("CIDR->int",))
register("masked", lambda m, c: CIDR(c.network.network_address, c.prefix) if isinstance(c, CIDR)
         else _raise(NoOverload("masked", (c,))), member=("CIDR->CIDR",))


def _raise(exc: Exception) -> Any:
    raise exc


# --- Quantity --------------------------------------------------------------------------------------

_DECIMAL_BY_EXP = {v: k for k, v in DECIMAL_SUFFIXES.items()}


class Quantity(Opaque):
    type_name = "kubernetes.Quantity"

    def __init__(self, value: Fraction, binary: bool = False) -> None:
        self.value = value
        self.binary = binary

    def cel_equal(self, other: Any) -> bool:
        return isinstance(other, Quantity) and other.value == self.value

    def compare(self, other: Quantity) -> int:
        return (self.value > other.value) - (self.value < other.value)

    def __str__(self) -> str:
        # resource.Quantity's canonical form: the largest suffix that keeps an integer mantissa.
        v = self.value
        if self.binary and v.denominator == 1 and v != 0:
            for suffix, power in sorted(BINARY_SUFFIXES.items(), key=lambda kv: -kv[1]):
                if v.numerator % (1024 ** power) == 0:
                    return f"{v.numerator // 1024 ** power}{suffix}"
            if abs(v) < 1024:
                return str(v.numerator)
        nanos = v * 10**9
        if nanos.denominator != 1:
            nanos = Fraction(-((-nanos.numerator) // nanos.denominator))   # round up like upstream
        n = int(nanos)
        if n == 0:
            return "0"
        exp = -9
        while exp < 18 and n % 1000 == 0:
            n //= 1000
            exp += 3
        return f"{n}{_DECIMAL_BY_EXP[exp]}"


def parse_quantity(text: str) -> Quantity:
    parsed = quantity_value(text)
    if parsed is None:
        raise ValueError("quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    return Quantity(*parsed)


def _quantity(m: Meter, text: Any) -> Quantity:
    if not isinstance(text, str):
        raise NoOverload("quantity", (text,))
    try:
        return parse_quantity(text)
    except ValueError as exc:
        raise EvalError(str(exc)) from None


def _q(name: str, v: Any) -> Quantity:
    if not isinstance(v, Quantity):
        raise NoOverload(name, (v,))
    return v


def _q_or_int(name: str, v: Any) -> Quantity:
    if isinstance(v, int) and not isinstance(v, bool):
        return Quantity(Fraction(v))
    return _q(name, v)


def _as_integer(m: Meter, v: Any) -> int:
    q = _q("asInteger", v)
    if q.value.denominator != 1 or not -(2**63) <= q.value.numerator < 2**63:
        raise EvalError("cannot convert value to integer")
    return q.value.numerator


def _arith(name: str, sign: int) -> Callable[[Meter, Any, Any], Quantity]:
    def op(m: Meter, a: Any, b: Any) -> Quantity:
        left, right = _q(name, a), _q_or_int(name, b)
        return Quantity(left.value + sign * right.value, (left.binary and right.binary) or (left.binary and
                        isinstance(b, int)))
    return op


register("quantity", _quantity, sigs=("string->Quantity",))
register("isQuantity", _is(parse_quantity), sigs=("string->bool",))
register("sign", lambda m, q: _q("sign", q).compare(Quantity(Fraction(0))), member=("Quantity->int",))
register("isInteger", lambda m, q: _q("isInteger", q).value.denominator == 1 and
         -(2**63) <= _q("isInteger", q).value.numerator < 2**63, member=("Quantity->bool",))
register("asInteger", _as_integer, member=("Quantity->int",))
register("asApproximateFloat", lambda m, q: float(_q("asApproximateFloat", q).value), member=("Quantity->double",))
register("add", _arith("add", 1), member=("Quantity,Quantity->Quantity", "Quantity,int->Quantity"))
register("sub", _arith("sub", -1), member=("Quantity,Quantity->Quantity", "Quantity,int->Quantity"))
register("compareTo", lambda m, a, b: _q("compareTo", a).compare(_q("compareTo", b)),
         member=("Quantity,Quantity->int",))
register("isGreaterThan", lambda m, a, b: _q("isGreaterThan", a).compare(_q("isGreaterThan", b)) > 0,
         member=("Quantity,Quantity->bool",))
register("isLessThan", lambda m, a, b: _q("isLessThan", a).compare(_q("isLessThan", b)) < 0,
         member=("Quantity,Quantity->bool",))
