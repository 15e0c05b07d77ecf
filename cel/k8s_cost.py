"""Static costs Kubernetes gives its own CEL functions (``apiserver/pkg/cel/library/cost.go``).

Kubernetes' ``CostEstimator.EstimateCallCost`` is consulted before cel-go's built-in estimates, by
function name, for its libraries (lists, regex, URL, IP/CIDR, Quantity, format) and for the cel-go
``strings`` extension functions it costs itself (``lowerAscii``, ``replace``, ``split`` …; the
extension's own estimators only exist from version 5, Kubernetes uses version 2). Upstream warns that
any change here changes which CRDs are accepted, so every formula is upstream's, quirks included:
most costs have no base unit, and ``_==_`` on URLs reads the right-hand size twice.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from cel.estimates import (
    REGEX_STRING_LENGTH_COST_FACTOR,
    STRING_TRAVERSAL_COST_FACTOR,
    UINT64_MAX,
    CallEstimate,
    CallSite,
    Estimate,
    FunctionEstimator,
    fixed,
    set_estimate,
)

# cel.MaxFormatSize and cel.MaxNameFormatRegexSize (apiserver/pkg/cel/limits.go).
MAX_FORMAT_SIZE = 64
MAX_NAME_FORMAT_REGEX_SIZE = 128
_NOMINAL = CallEstimate(fixed(1))


def _traversal(site: CallSite) -> CallEstimate | None:
    """isSorted, sum, min, max, indexOf, lastIndexOf: one comparison per element, strings also traversed."""
    if site.target is None:
        return None
    elem = site.element(site.target)
    if elem is None:
        # A string target (indexOf, lastIndexOf) is one traversal of the string.
        return CallEstimate(site.size(site.target).by_factor(STRING_TRAVERSAL_COST_FACTOR))
    per_element = fixed(1)
    if elem.type.kind in ("string", "bytes"):
        per_element = per_element.add(site.size(elem).by_factor(STRING_TRAVERSAL_COST_FACTOR))
    return CallEstimate(site.size(site.target).mul(per_element))


def _arg_scan(factor: float = STRING_TRAVERSAL_COST_FACTOR) -> FunctionEstimator:
    """One traversal of the first argument (parsers: url, cidr, isIP, quantity …)."""
    def estimate(site: CallSite) -> CallEstimate | None:
        if not site.args:
            return None
        return CallEstimate(site.size(site.args[0]).by_factor(factor))
    return estimate


def _url(site: CallSite) -> CallEstimate | None:
    if len(site.args) != 1:
        return None
    size = site.size(site.args[0])
    return CallEstimate(size.by_factor(STRING_TRAVERSAL_COST_FACTOR), size)


def _target_scan(site: CallSite) -> CallEstimate | None:
    """lowerAscii, upperAscii, substring, trim: one traversal; the result is at most as long."""
    if site.target is None:
        return None
    size = site.size(site.target)
    return CallEstimate(size.by_factor(STRING_TRAVERSAL_COST_FACTOR), size)


def _replace(site: CallSite) -> CallEstimate | None:
    if site.target is None or len(site.args) < 2:
        return None
    size = site.size(site.target)
    old = site.size(site.args[0])
    new = site.size(site.args[1])
    # The longest result: the most replacements of the shortest old string by the longest new one.
    if old.lo == 0:
        count_hi = size.hi + 1 if size.hi < UINT64_MAX else size.hi
        kept_hi = size.hi
    elif new.hi <= old.lo:
        count_hi, kept_hi = 0, size.hi
    else:
        count_hi, kept_hi = _ceil_div(size.hi, old.lo), 0
    # The shortest result, symmetrically.
    if old.hi == 0:
        count_lo = size.lo + 1 if size.lo < UINT64_MAX else size.lo
        kept_lo = size.lo
    elif old.hi <= new.lo:
        count_lo, kept_lo = 0, size.lo
    else:
        count_lo, kept_lo = _ceil_div(size.lo, old.hi), 0
    result = Estimate(count_lo, count_hi).mul(new).add(Estimate(kept_lo, kept_hi))
    return CallEstimate(size.by_factor(2 * STRING_TRAVERSAL_COST_FACTOR), result)


def _ceil_div(n: int, d: int) -> int:
    # Upstream divides in float64 and rounds up; kept so huge sizes round the same way.
    return math.ceil(float(n) / float(d))


def _split(site: CallSite) -> CallEstimate | None:
    if site.target is None:
        return None
    size = site.size(site.target)
    most = size.hi   # worst case: an empty separator returns every character
    if len(site.args) > 1 and site.args[1].is_literal and isinstance(site.args[1].literal, int) \
            and not isinstance(site.args[1].literal, bool):
        most = site.args[1].literal % 2**64   # Go converts the int64 limit to uint64
    return CallEstimate(size.by_factor(2 * STRING_TRAVERSAL_COST_FACTOR), Estimate(0, most))


def _join(site: CallSite) -> CallEstimate | None:
    if site.target is None:
        return None
    count = site.size(site.target)
    size = Estimate(0, 0)
    elem = site.element(site.target)
    if elem is not None:
        size = count.mul(site.size(elem))
    if site.args:
        separators = Estimate(max(count.lo - 1, 0), max(count.hi - 1, 0))
        size = size.add(site.size(site.args[0]).mul(separators))
    return CallEstimate(size.by_factor(STRING_TRAVERSAL_COST_FACTOR), size)


def _find(site: CallSite) -> CallEstimate | None:
    if site.target is None or not site.args:
        return None
    size = site.size(site.target)
    # As cel-go's matches: (length + 1) * 0.1 times a quarter of the regex length.
    text = size.add(fixed(1)).by_factor(STRING_TRAVERSAL_COST_FACTOR)
    regex = site.size(site.args[0]).by_factor(REGEX_STRING_LENGTH_COST_FACTOR)
    return CallEstimate(text.mul(regex), Estimate(0, size.hi))


def _ip(site: CallSite) -> CallEstimate | None:
    if site.target is not None:
        return _NOMINAL   # CIDR.ip() reads a field
    return _arg_scan()(site)


# Comparing two IP byte slices (4 or 16 bytes long).
_IP_BYTES = Estimate(4, 16)


def _contains(site: CallSite, extra: Estimate) -> CallEstimate | None:
    """``containsIP``/``containsCIDR``: two addresses compared, ``extra`` on top, and parsing the argument
    when it is given as a string."""
    if not site.args:
        return None
    cost = _IP_BYTES.add(_IP_BYTES).by_factor(STRING_TRAVERSAL_COST_FACTOR).add(extra)
    if site.args[0].type.kind == "string":
        cost = cost.add(site.size(site.args[0]).by_factor(STRING_TRAVERSAL_COST_FACTOR))
    return CallEstimate(cost)


def _contains_ip(site: CallSite) -> CallEstimate | None:
    return _contains(site, fixed(0))


def _contains_cidr(site: CallSite) -> CallEstimate | None:
    # Masking the other CIDR traverses its address once more, plus comparing the prefix lengths.
    return _contains(site, _IP_BYTES.by_factor(STRING_TRAVERSAL_COST_FACTOR).add(fixed(1)))


def _validate(site: CallSite) -> CallEstimate | None:
    if not site.args:
        return None
    # The format's regex is not visible here, so the longest one is assumed.
    text = site.size(site.args[0]).by_factor(STRING_TRAVERSAL_COST_FACTOR)
    return CallEstimate(text.by_factor(MAX_NAME_FORMAT_REGEX_SIZE * REGEX_STRING_LENGTH_COST_FACTOR))


def _equals(site: CallSite) -> CallEstimate | None:
    """Equality of Kubernetes' object types; None hands every other type to cel-go's estimate."""
    if len(site.args) != 2:
        return None
    lhs, rhs = site.args
    if not lhs.type.same(rhs.type):
        return None
    kind = lhs.type.kind
    if kind in ("IP", "CIDR", "Quantity"):
        return _NOMINAL
    if kind == "Format":
        return CallEstimate(Estimate(1, MAX_FORMAT_SIZE).by_factor(STRING_TRAVERSAL_COST_FACTOR))
    if kind == "URL":
        size = fixed(1) if rhs.size is None else rhs.size   # upstream unions the right-hand size with itself
        return CallEstimate(Estimate(1, size.hi).by_factor(STRING_TRAVERSAL_COST_FACTOR))
    return None


def _nominal(site: CallSite) -> CallEstimate | None:
    return _NOMINAL


_ESTIMATES: dict[str, Callable[[CallSite], CallEstimate | None]] = {
    **dict.fromkeys(("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"), _traversal),
    "url": _url,
    **dict.fromkeys(("lowerAscii", "upperAscii", "substring", "trim"), _target_scan),
    "replace": _replace,
    "split": _split,
    "join": _join,
    "find": _find,
    "findAll": _find,
    **dict.fromkeys(("cidr", "isIP", "isCIDR", "quantity", "isQuantity"), _arg_scan()),
    "ip": _ip,
    "ip.isCanonical": _arg_scan(2 * STRING_TRAVERSAL_COST_FACTOR),
    **dict.fromkeys(("masked", "prefixLength", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
                     "isLinkLocalUnicast", "isGlobalUnicast"), _nominal),
    "containsIP": _contains_ip,
    "containsCIDR": _contains_cidr,
    "validate": _validate,
    "format.named": _nominal,
    **dict.fromkeys(("sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan",
                     "compareTo", "add", "sub"), _nominal),
    **dict.fromkeys(("getScheme", "getHostname", "getHost", "getPort", "getEscapedPath", "getQuery"), _nominal),
    "_==_": _equals,
}

for _name, _estimate in _ESTIMATES.items():
    set_estimate(_name, _estimate)
