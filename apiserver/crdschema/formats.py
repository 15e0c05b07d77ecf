"""The string ``format`` values CRD schemas validate, as kube-openapi's ``strfmt`` registry checks them.

Only formats upstream supports for CRDs are validated (``supportedVersionedFormats`` of
apiextensions-apiserver at compatibility version 1.34+); any other format is stripped from the
schema before validation and so checks nothing. Format names are matched after removing ``-``,
so ``date-time`` and ``datetime`` are the same format.

Each checker mirrors the Go function behind the format (``url.ParseRequestURI``,
``mail.ParseAddress``, ``net.ParseIP`` and the k8s "sloppy" IPv4 parser that allows leading zeros,
``net.ParseMAC``, ``time.Parse``, strfmt's scala-style durations ...).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

_HEX = frozenset("0123456789abcdefABCDEF")
_DIGITS = frozenset("0123456789")


def normalize(name: str) -> str:
    return name.replace("-", "")


# --- network addresses ---------------------------------------------------------------------------


def _dtoi(s: str) -> tuple[int, int] | None:
    """Go's net.dtoi: leading decimal digits (at least one) -> (value, length)."""
    n = 0
    i = 0
    while i < len(s) and s[i] in _DIGITS:
        n = n * 10 + int(s[i])
        if n >= 0xFFFFFF:
            return None
        i += 1
    return (n, i) if i else None


def _xtoi(s: str) -> tuple[int, int] | None:
    n = 0
    i = 0
    while i < len(s) and s[i] in _HEX:
        n = n * 16 + int(s[i], 16)
        if n >= 0xFFFFFF:
            return None
        i += 1
    return (n, i) if i else None


def _ipv4_sloppy(s: str) -> bool:
    """k8s.io/utils/net's parseIPv4: four decimal fields <= 255, leading zeros allowed."""
    for i in range(4):
        if not s:
            return False
        if i > 0:
            if s[0] != ".":
                return False
            s = s[1:]
        got = _dtoi(s)
        if got is None or got[0] > 0xFF:
            return False
        s = s[got[1]:]
    return not s


def _ipv6(s: str, *, strict: bool) -> bool:
    """IPv6 parsing; ``strict`` is netip's (at most 4 hex digits, strict embedded IPv4)."""
    ellipsis = -1
    if len(s) >= 2 and s[0] == ":" and s[1] == ":":
        ellipsis = 0
        s = s[2:]
        if not s:
            return True
    i = 0
    while i < 16:
        got = _xtoi(s)
        if got is None or got[0] > 0xFFFF or (strict and got[1] > 4):
            return False
        c = got[1]
        if c < len(s) and s[c] == ".":
            if (ellipsis < 0 and i != 12) or i + 4 > 16:
                return False
            if not (_ipv4_strict(s) if strict else _ipv4_sloppy(s)):
                return False
            s = ""
            i += 4
            break
        i += 2
        s = s[c:]
        if not s:
            break
        if s[0] != ":" or len(s) == 1:
            return False
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                return False
            ellipsis = i
            s = s[1:]
            if not s:
                break
    if s:
        return False
    if i < 16:
        return ellipsis >= 0
    return ellipsis < 0


def _ipv4_strict(s: str) -> bool:
    """netip's IPv4 parser: like the sloppy one, but without leading zeros."""
    fields = s.split(".")
    if len(fields) != 4:
        return False
    for f in fields:
        if not f or len(f) > 3 or any(c not in _DIGITS for c in f) or (len(f) > 1 and f[0] == "0") \
                or int(f) > 255:
            return False
    return True


def _parse_ip_sloppy(s: str) -> bool:
    for c in s:
        if c == ".":
            return _ipv4_sloppy(s)
        if c == ":":
            return _ipv6(s, strict=False)
    return False


def _parse_ip_strict(s: str) -> bool:
    """Go's net.ParseIP (netip based): no zones, no leading zeros in IPv4 fields."""
    for c in s:
        if c == ".":
            return _ipv4_strict(s)
        if c == ":":
            return _ipv6(s, strict=True)
    return False


def is_ipv4(s: str) -> bool:
    return _parse_ip_sloppy(s) and "." in s


def is_ipv6(s: str) -> bool:
    return _parse_ip_strict(s) and ":" in s


def is_cidr(s: str) -> bool:
    """k8s.io/utils/net ParseCIDRSloppy."""
    addr, sep, mask = s.partition("/")
    if not sep:
        return False
    bits = 32
    if not _ipv4_sloppy(addr):
        bits = 128
        if not _ipv6(addr, strict=False):
            return False
    got = _dtoi(mask)
    return got is not None and got[1] == len(mask) and got[0] <= bits


def _xtoi2(s: str, sep: str) -> bool:
    if len(s) > 2 and s[2] != sep:
        return False
    return len(s) >= 2 and s[0] in _HEX and s[1] in _HEX


def is_mac(s: str) -> bool:
    """Go's net.ParseMAC: 6, 8 or 20 octets as aa:bb:.., aa-bb-.. or aabb.ccdd.."""
    if len(s) < 14:
        return False
    if s[2] in ":-":
        if (len(s) + 1) % 3:
            return False
        n = (len(s) + 1) // 3
        if n not in (6, 8, 20):
            return False
        return all(_xtoi2(s[3 * i:], s[2]) for i in range(n))
    if s[4] == ".":
        if (len(s) + 1) % 5:
            return False
        n = 2 * (len(s) + 1) // 5
        if n not in (6, 8, 20):
            return False
        return all(_xtoi2(s[x:x + 2], "") and _xtoi2(s[x + 2:], s[4]) for x in range(0, len(s), 5))
    return False


# --- URIs and e-mail -----------------------------------------------------------------------------

_HOST_OK = frozenset("!$&'()*+,;=:[]<>\"-_.~")
_USERINFO_OK = frozenset("-._:~!$&'()*+,;=%@")


def _unescape_ok(s: str, host: bool) -> bool:
    """Go's url.unescape validity: well-formed %XX, and for hosts only allowed characters."""
    i = 0
    while i < len(s):
        c = s[i]
        if c == "%":
            if i + 2 >= len(s) or not (s[i + 1] in _HEX and s[i + 2] in _HEX):
                return False
            # RFC 6874: in hosts, only %25 (the zone separator) may escape an ASCII byte.
            if host and int(s[i + 1], 16) < 8 and s[i:i + 3] != "%25":
                return False
            i += 3
            continue
        if host and c < "\x80" and not (c.isalnum() or c in _HOST_OK):
            return False
        i += 1
    return True


def _valid_port(port: str) -> bool:
    return not port or (port[0] == ":" and all(c in _DIGITS for c in port[1:]))


def is_request_uri(raw: str) -> bool:
    """Go's url.ParseRequestURI: an absolute URI or an absolute path."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in raw) or raw == "":
        return False
    if raw == "*":
        return True
    scheme = ""
    rest = raw
    for i, c in enumerate(raw):
        if c.isascii() and c.isalpha():
            continue
        if c.isascii() and (c.isdigit() or c in "+-."):
            if i == 0:
                break
            continue
        if c == ":":
            if i == 0:
                return False
            scheme, rest = raw[:i], raw[i + 1:]
        break
    # The query is not validated; a lone trailing "?" is a "forced" empty query.
    rest = rest[:-1] if rest.endswith("?") and rest.count("?") == 1 else rest.partition("?")[0]
    if not rest.startswith("/"):
        return bool(scheme)  # rootless: opaque with a scheme, otherwise "invalid URI for request"
    if scheme and rest.startswith("//"):
        authority, slash, path = rest[2:].partition("/")
        rest = slash + path
        at = authority.rfind("@")
        host = authority[at + 1:]
        if host.startswith("["):
            close = host.rfind("]")
            if close < 0 or not _valid_port(host[close + 1:]):
                return False
        elif ":" in host and not _valid_port(host[host.rfind(":"):]):
            return False
        if not _unescape_ok(host, host=True):
            return False
        if at >= 0:
            userinfo = authority[:at]
            if not all((c.isalnum() and c.isascii()) or c in _USERINFO_OK for c in userinfo):
                return False
            if not _unescape_ok(userinfo, host=False):
                return False
    return _unescape_ok(rest, host=False)


_ATOM = r"[!#-'*+\-/-9=?A-Z^-~\u0080-\U0010ffff]+"
_DOT_ATOM = rf"{_ATOM}(?:\.{_ATOM})*"
_QUOTED = r'"(?:[^"\\\r\n]|\\.)*"'
_DOMAIN_LITERAL = r"\[[!-Z^-~\u0080-\U0010ffff]*\]"
_ADDR_SPEC = rf"(?:{_DOT_ATOM}|{_QUOTED})[ \t]*@[ \t]*(?:{_DOT_ATOM}|{_DOMAIN_LITERAL})"
_COMMENT = r"\((?:[^()\\]|\\.)*\)"
_WORD = rf"(?:{_ATOM}|{_QUOTED})"
_EMAIL = re.compile(
    rf"[ \t]*(?:(?:{_ADDR_SPEC})(?:[ \t]*{_COMMENT})?"
    rf"|(?:{_WORD}(?:[ \t]+{_WORD})*[ \t]*)?<[ \t]*{_ADDR_SPEC}[ \t]*>)[ \t]*(?:{_COMMENT}[ \t]*)?")


def is_email(s: str) -> bool:
    """Go's mail.ParseAddress for the common forms: addr-spec, or display name and <addr-spec>."""
    return _EMAIL.fullmatch(s) is not None


# --- dates, times, durations ---------------------------------------------------------------------

_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_date(s: str) -> bool:
    """Go's time.Parse("2006-01-02", s)."""
    if len(s) != 10 or s[4] != "-" or s[7] != "-":
        return False
    y, m, d = s[:4], s[5:7], s[8:]
    if not (y.isascii() and y.isdigit() and m.isascii() and m.isdigit() and d.isascii() and d.isdigit()):
        return False
    year, month, day = int(y), int(m), int(d)
    if not 1 <= month <= 12:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= day <= (29 if month == 2 and leap else _DAYS[month - 1])


_TIME_OF_DAY = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))", re.S)


def is_datetime(s: str) -> bool:
    """strfmt.IsDateTime: a date, 't', and a time of day with a zone (compared as strings)."""
    if len(s) < 4:
        return False
    parts = s.lower().split("t")
    if len(parts) < 2 or not is_date(parts[0]):
        return False
    m = _TIME_OF_DAY.fullmatch(parts[1])
    return m is not None and m.group(1) <= "23" and m.group(2) <= "59" and m.group(3) <= "59"


_GO_UNITS = {"ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000, "s": 10**9,
             "m": 60 * 10**9, "h": 3600 * 10**9}
_GO_DURATION_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")


def _go_duration(s: str) -> bool:
    """Go's time.ParseDuration."""
    if s in ("0", "+0", "-0"):
        return True
    if s[:1] in "+-":
        s = s[1:]
    if not s:
        return False
    total = 0
    while s:
        m = _GO_DURATION_PART.match(s)
        if m is None or (not m.group(1) and not m.group(2)):
            return False
        unit = m.group(3)
        if unit not in _GO_UNITS:
            return False
        whole = int(m.group(1) or "0")
        frac = m.group(2) or ""
        total += whole * _GO_UNITS[unit] + (int(frac) * _GO_UNITS[unit] // 10 ** len(frac) if frac else 0)
        if total > 2**63:
            return False
        s = s[m.end():]
    return True


_SCALA_DURATION = re.compile(r"(([0-9]+)\s*([A-Za-z\u00b5]+))")
_SCALA_UNITS = (("ns", "nano"), ("us", "\u00b5s", "micro"), ("ms", "milli"), ("s", "sec"), ("m", "min"),
                ("h", "hr", "hour"), ("d", "day"), ("w", "wk", "week"))


def is_duration(s: str) -> bool:
    """strfmt.ParseDuration: Go syntax, or any "<n> <unit>" run in the scala style."""
    if _go_duration(s):
        return True
    for match in _SCALA_DURATION.finditer(s):
        unit = match.group(3).strip().lower()
        for variants in _SCALA_UNITS:
            last = len(variants) - 1
            for i, variant in enumerate(variants):
                if (i == last and unit.startswith(variant)) or unit == variant:
                    return True
    return False


# --- other formats -------------------------------------------------------------------------------

def _host_char(c: str) -> bool:
    """``[a-zA-Z0-9\\p{S}\\p{L}]`` of strfmt's HostnamePattern."""
    return (c.isascii() and c.isalnum()) or unicodedata.category(c)[0] in "SL"


def _tld_char(c: str) -> bool:
    return (c.isascii() and c.isalpha()) or unicodedata.category(c)[0] == "L"


def _hostname_pattern(s: str) -> bool:
    """strfmt's HostnamePattern, evaluated directly.

    The pattern is either one label whose only hyphen may be its second character
    (``X-?X{0,62}``), or dot-terminated labels of 1-63 characters followed by a 2-63 letter TLD.
    Written out rather than compiled because its Unicode classes are large for any regexp engine.
    """
    if s and _host_char(s[0]):
        rest = s[1:]
        if rest.startswith("-"):
            rest = rest[1:]
        if len(rest) <= 62 and all(_host_char(c) for c in rest):
            return True
    labels = s.split(".")
    if len(labels) < 2 or not (2 <= len(labels[-1]) <= 63 and all(_tld_char(c) for c in labels[-1])):
        return False
    return all(1 <= len(label) <= 63 and _host_char(label[0]) and _host_char(label[-1])
               and all(_host_char(c) or c == "-" for c in label) for label in labels[:-1])


def is_hostname(s: str) -> bool:
    if not _hostname_pattern(s):
        return False
    # Go measures these lengths in bytes.
    return len(s.encode()) <= 255 and all(len(p.encode()) <= 63 for p in s.split("."))


def _rx(pattern: str, flags: int = 0) -> Callable[[str], bool]:
    compiled = re.compile(pattern, flags)
    return lambda s: compiled.fullmatch(s) is not None


_SHORT_NAME = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_short_name = _rx(_SHORT_NAME)
_long_name = _rx(rf"{_SHORT_NAME}(\.{_SHORT_NAME})*")
_credit_card = _rx(r"(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|"
                   r"3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11})")
_rgb_part = r"\s*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])\s*"


def is_credit_card(s: str) -> bool:
    digits = "".join(c for c in s if "0" <= c <= "9")
    if not _credit_card(digits):
        return False
    total = 0
    double = False
    for ch in reversed(digits):
        n = int(ch)
        if double:
            n *= 2
            total += n % 10 + 1 if n >= 10 else n
        else:
            total += n
        double = not double
    return total % 10 == 0


def _isbn(s: str, version: int) -> bool:
    clean = re.sub(r"[\s-]+", "", s)
    if version == 10:
        if not re.fullmatch(r"[0-9]{9}X|[0-9]{10}", clean):
            return False
        checksum = sum((i + 1) * int(clean[i]) for i in range(9))
        checksum += 100 if clean[9] == "X" else 10 * int(clean[9])
        return checksum % 11 == 0
    if not re.fullmatch(r"[0-9]{13}", clean):
        return False
    checksum = sum((1, 3)[i % 2] * int(clean[i]) for i in range(12))
    return int(clean[12]) - (10 - checksum % 10) % 10 == 0


def is_bson_object_id(s: str) -> bool:
    return len(s) == 24 and all(c in _HEX for c in s)


_VALIDATORS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": is_bson_object_id,
    "uri": is_request_uri,
    "email": is_email,
    "hostname": is_hostname,
    "ipv4": is_ipv4,
    "ipv6": is_ipv6,
    "cidr": is_cidr,
    "mac": is_mac,
    "uuid": _rx(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.I),
    "uuid3": _rx(r"[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.I),
    "uuid4": _rx(r"[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}", re.I),
    "uuid5": _rx(r"[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}", re.I),
    "isbn": lambda s: _isbn(s, 10) or _isbn(s, 13),
    "isbn10": lambda s: _isbn(s, 10),
    "isbn13": lambda s: _isbn(s, 13),
    "creditcard": is_credit_card,
    "ssn": lambda s: len(s) == 11 and re.fullmatch(r"[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}", s) is not None,
    "hexcolor": _rx(r"#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})"),
    "rgbcolor": _rx(rf"rgb\({_rgb_part},{_rgb_part},{_rgb_part}\)"),
    "byte": _rx(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})"),
    "password": lambda s: True,
    "date": is_date,
    "duration": is_duration,
    "datetime": is_datetime,
    "k8sshortname": lambda s: len(s) <= 63 and _short_name(s),
    "k8slongname": lambda s: len(s) <= 253 and _long_name(s),
}


def supported_string_format(name: str) -> bool:
    """Whether a string format survives upstream's StripUnsupportedFormats (and is validated)."""
    return normalize(name) in _VALIDATORS


def validates(name: str, value: str) -> bool:
    check = _VALIDATORS.get(normalize(name))
    return True if check is None else check(value)
