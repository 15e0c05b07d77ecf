"""Names, label keys and values, and the field-error vocabulary, worded exactly as apimachinery words them.

Clients (kubectl, client-go, CI scripts grepping output) see these strings verbatim in ``422 Invalid``
responses, so each rule keeps apimachinery's regular expression, message and examples
(``k8s.io/apimachinery/pkg/util/validation`` and ``pkg/api/validate/content``).

The field-error constructors at the bottom render a :class:`~apimachinery.errors.Cause` whose message is
apimachinery's ``field.Error.ErrorBody()`` (``Invalid value: -1: must be …``) and whose field is the
path (``spec.replicas``), which is what ``StatusCause`` carries on the wire.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from apimachinery.errors import Cause

NameRule = Literal["dns1123-subdomain", "dns1123-label", "dns1035-label", "path-segment"]

# --- field errors ---------------------------------------------------------------------------------


def go_value(value: Any) -> str:
    """Render a bad value the way ``field.Error.ErrorBody`` does (``%v`` for scalars, ``%q``, JSON)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    # Go's json.Marshal sorts map keys and writes compact separators.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def required(path: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", _body("Required value", detail), path)


def invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause("FieldValueInvalid", _body(f"Invalid value: {go_value(value)}", detail), path)


def not_supported(path: str, value: Any, supported: Iterable[str]) -> Cause:
    quoted = ", ".join(json.dumps(s) for s in supported)
    detail = f"supported values: {quoted}" if quoted else ""
    return Cause("FieldValueNotSupported", _body(f"Unsupported value: {go_value(value)}", detail), path)


def duplicate(path: str, value: Any) -> Cause:
    return Cause("FieldValueDuplicate", f"Duplicate value: {go_value(value)}", path)


def forbidden(path: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", _body("Forbidden", detail), path)


def not_found(path: str, value: Any) -> Cause:
    return Cause("FieldValueNotFound", f"Not found: {go_value(value)}", path)


def too_long(path: str, max_bytes: int) -> Cause:
    unit = "byte" if max_bytes == 1 else "bytes"
    return Cause("FieldValueTooLong", f"Too long: may not be more than {max_bytes} {unit}", path)


def _body(prefix: str, detail: str) -> str:
    return f"{prefix}: {detail}" if detail else prefix


# --- message helpers (apimachinery's RegexError / MaxLenError) ------------------------------------


def regex_error(msg: str, regex: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{regex}')"
    # Built piece by piece like upstream, which leaves two spaces before each " or ".
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{regex}')"


def _max_len_chars(n: int) -> str:
    # util/validation words DNS names in characters …
    return f"must be no more than {n} characters"


def _max_len_bytes(n: int) -> str:
    # … while api/validate/content (label keys and values) words them in bytes.
    return f"must be no more than {n} bytes"


def inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


# --- DNS names ------------------------------------------------------------------------------------

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                      "and must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                          "characters, '-' or '.', and must start and end with an alphanumeric character")
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                      "with an alphabetic character, and end with an alphanumeric character")

_DNS1123_LABEL_RE = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL_RE = re.compile(_DNS1035_LABEL_FMT)

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(_max_len_chars(DNS1123_LABEL_MAX))
    if not _DNS1123_LABEL_RE.fullmatch(value):
        if _DNS1123_SUBDOMAIN_RE.fullmatch(value):
            # A valid subdomain but not a label: length was checked above, so it must be the dots.
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(_max_len_chars(DNS1123_SUBDOMAIN_MAX))
    if not _DNS1123_SUBDOMAIN_RE.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(_max_len_chars(DNS1123_LABEL_MAX))
    if not _DNS1035_LABEL_RE.fullmatch(value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_path_segment_name(value: str) -> list[str]:
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def validate_object_name(name: str, rule: NameRule) -> list[str]:
    """The messages apimachinery's ``NameIs…`` functions give for ``metadata.name`` (empty: valid)."""
    if rule == "dns1123-label":
        return is_dns1123_label(name)
    if rule == "dns1035-label":
        return is_dns1035_label(name)
    if rule == "path-segment":
        return is_path_segment_name(name)
    return is_dns1123_subdomain(name)


# --- label keys and values, annotations -----------------------------------------------------------

_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                       "with an alphanumeric character")
_QUALIFIED_NAME_RE = re.compile(_QUALIFIED_NAME_FMT)
_LABEL_VALUE_FMT = f"({_QUALIFIED_NAME_FMT})?"
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
                    "or '.', and must start and end with an alphanumeric character")
_LABEL_VALUE_RE = re.compile(_LABEL_VALUE_FMT)
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024


def is_qualified_name(value: str) -> list[str]:
    """Label-key syntax: an optional DNS-subdomain prefix, '/', and a name of at most 63 bytes."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return ["a valid label key " + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName",
                                                   "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode()) > QUALIFIED_NAME_MAX:
        errs.append("name part " + _max_len_bytes(QUALIFIED_NAME_MAX))
    if not _QUALIFIED_NAME_RE.fullmatch(name):
        errs.append("name part " + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name",
                                               "123-abc"))
    return errs


def is_label_value(value: str) -> list[str]:
    errs = []
    if len(value.encode()) > LABEL_VALUE_MAX:
        errs.append(_max_len_bytes(LABEL_VALUE_MAX))
    if not _LABEL_VALUE_RE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def validate_labels(labels: Any, path: str = "metadata.labels") -> list[Cause]:
    """Upstream reports every bad key or value against the map's path, not the key's."""
    if not isinstance(labels, Mapping):
        return []
    causes = []
    for key, value in labels.items():
        causes.extend(invalid(path, key, m) for m in is_qualified_name(str(key)))
        if not isinstance(value, str):
            causes.append(invalid(path, value, "label values must be strings"))
            continue
        causes.extend(invalid(path, value, m) for m in is_label_value(value))
    return causes


def validate_annotations(annotations: Any, path: str = "metadata.annotations") -> list[Cause]:
    if not isinstance(annotations, Mapping):
        return []
    causes = []
    for key in annotations:
        # Annotation keys are qualified names, except that case does not matter.
        causes.extend(invalid(path, key, m) for m in is_qualified_name(str(key).lower()))
    size = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return causes


# --- other upstream formats used by the strategies ------------------------------------------------

_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
_CONFIG_KEY_RE = re.compile(_CONFIG_KEY_FMT)


def is_config_map_key(value: str) -> list[str]:
    """Keys of ConfigMap and Secret data: they become file names in volumes, hence the '..' rules."""
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(_max_len_chars(DNS1123_SUBDOMAIN_MAX))
    if not _CONFIG_KEY_RE.fullmatch(value):
        errs.append(regex_error(_CONFIG_KEY_MSG, _CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    if value in (".", ".."):
        errs.append(f"must not be '{value}'")
    elif value.startswith(".."):
        errs.append("must not start with '..'")
    return errs


_PORT_NAME_CHARSET = re.compile("[-a-z0-9]+")
_PORT_NAME_ONE_LETTER = re.compile("[a-z]")


def is_valid_port_name(value: str) -> list[str]:
    """IANA_SVC_NAME, the syntax of named ports."""
    errs = []
    if len(value) > 15:
        errs.append(_max_len_chars(15))
    if not _PORT_NAME_CHARSET.fullmatch(value):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_ONE_LETTER.search(value):
        errs.append("must contain at least one letter (a-z)")
    if "--" in value:
        errs.append("must not contain consecutive hyphens")
    if value and (value[0] == "-" or value[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_valid_port_num(value: Any) -> list[str]:
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535:
        return []
    return [inclusive_range_error(1, 65535)]


_PERCENT_FMT = "[0-9]+%"
_PERCENT_RE = re.compile(_PERCENT_FMT)


def is_valid_percent(value: str) -> list[str]:
    if _PERCENT_RE.fullmatch(value):
        return []
    return [regex_error("a valid percent string must be a numeric string followed by an ending '%'",
                        _PERCENT_FMT, "1%", "93%")]


def is_env_var_name(value: str) -> list[str]:
    """Relaxed environment variable names (GA upstream): printable ASCII other than '='."""
    if not value:
        return ["environment variable name must be non-empty"]
    if any(ord(c) > 126 or ord(c) < 32 or c == "=" for c in value):
        return ["a valid environment variable name must consist only of printable ASCII characters other "
                "than '='"]
    return []
