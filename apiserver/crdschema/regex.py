"""CRD ``pattern`` values: Go (RE2) regular expressions checked and matched as the apiserver does.

Upstream compiles ``pattern`` with Go's ``regexp`` package, so two things must match Go exactly:

* which patterns are rejected, and the error text (``error parsing regexp: missing argument to
  repetition operator: `*```), which CRD validation embeds in its message;
* what a valid pattern matches: RE2 syntax differs from Python's (``$`` is end of text, ``\\d`` is
  ASCII, ``{,3}`` is a literal, there are no look-arounds or back-references).

:func:`check` is a small re-implementation of Go's parser that decides validity and the error. :func:`compile`
matches with google-re2 (linear time, the same engine family as Go: patterns come from CRD authors and values
from anyone, so nothing may backtrack). The few valid Go patterns RE2 itself refuses (a ``\\p`` name its tables
lack under that spelling) are translated by the same parser into RE2 syntax with the class spelled out as
ranges; a pattern neither can express is refused when the CRD is written (:func:`check`), never matched by a
backtracking engine and never waved through.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

import re2

# RE2 logs every pattern it refuses to stderr; a refusal here is an answer, not an incident.
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False

MAX_REPEAT = 1000
_MAX_RUNE = 0x10FFFF

# Go regexp error codes.
_MISSING_BRACKET = "missing closing ]"
_MISSING_PAREN = "missing closing )"
_UNEXPECTED_PAREN = "unexpected )"
_MISSING_REPEAT_ARG = "missing argument to repetition operator"
_INVALID_REPEAT_OP = "invalid nested repetition operator"
_INVALID_REPEAT_SIZE = "invalid repeat count"
_INVALID_ESCAPE = "invalid escape sequence"
_INVALID_CHAR_RANGE = "invalid character class range"
_INVALID_PERL_OP = "invalid or unsupported Perl syntax"
_INVALID_NAMED_CAPTURE = "invalid named capture"
_TRAILING_BACKSLASH = "trailing backslash at end of expression"
_INVALID_UTF8 = "invalid UTF-8"


class RegexError(ValueError):
    """A pattern Go's regexp.Compile rejects; ``str()`` is Go's error text."""


def _error(code: str, expr: str) -> RegexError:
    return RegexError(f"error parsing regexp: {code}: `{expr}`")


class _Untranslatable(Exception):
    """A valid Go pattern whose class cannot be spelled out as ranges here (a Unicode script)."""


# --- character data ------------------------------------------------------------------------------

_WORD = "0-9A-Za-z_"
_PERL_CLASSES = {"d": ([(0x30, 0x39)], False), "D": ([(0x30, 0x39)], True),
                 "s": ([(0x09, 0x0A), (0x0C, 0x0D), (0x20, 0x20)], False),
                 "S": ([(0x09, 0x0A), (0x0C, 0x0D), (0x20, 0x20)], True),
                 "w": ([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)], False),
                 "W": ([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)], True)}
_POSIX_CLASSES = {
    "alnum": [(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)], "alpha": [(0x41, 0x5A), (0x61, 0x7A)],
    "ascii": [(0x00, 0x7F)], "blank": [(0x09, 0x09), (0x20, 0x20)], "cntrl": [(0x00, 0x1F), (0x7F, 0x7F)],
    "digit": [(0x30, 0x39)], "graph": [(0x21, 0x7E)], "lower": [(0x61, 0x7A)], "print": [(0x20, 0x7E)],
    "punct": [(0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)],
    "space": [(0x09, 0x0D), (0x20, 0x20)], "upper": [(0x41, 0x5A)],
    "word": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)], "xdigit": [(0x30, 0x39), (0x41, 0x46),
                                                                               (0x61, 0x66)],
}
_CATEGORIES = {"C", "Cc", "Cf", "Co", "Cs", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn",
               "N", "Nd", "Nl", "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk", "Sm",
               "So", "Z", "Zl", "Zp", "Zs"}
# Go's unicode.CategoryAliases, keyed by canonical name (see _canonical).
_CATEGORY_ALIASES = {
    "Casedletter": "LC", "Closepunctuation": "Pe", "Connectorpunctuation": "Pc", "Control": "Cc",
    "Currencysymbol": "Sc", "Dashpunctuation": "Pd", "Decimalnumber": "Nd", "Enclosingmark": "Me",
    "Finalpunctuation": "Pf", "Format": "Cf", "Initialpunctuation": "Pi", "Letter": "L", "Letternumber": "Nl",
    "Lineseparator": "Zl", "Lowercaseletter": "Ll", "Mark": "M", "Mathsymbol": "Sm", "Modifierletter": "Lm",
    "Modifiersymbol": "Sk", "Nonspacingmark": "Mn", "Number": "N", "Openpunctuation": "Ps", "Other": "C",
    "Otherletter": "Lo", "Othernumber": "No", "Otherpunctuation": "Po", "Othersymbol": "So",
    "Paragraphseparator": "Zp", "Privateuse": "Co", "Punctuation": "P", "Separator": "Z",
    "Spaceseparator": "Zs", "Spacingmark": "Mc", "Surrogate": "Cs", "Symbol": "S", "Titlecaseletter": "Lt",
    "Unassigned": "Cn", "Uppercaseletter": "Lu", "Combiningmark": "M", "Digit": "Nd", "Punct": "P",
    "Cntrl": "Cc",
}
_SCRIPT_NAMES = """Adlam Ahom Anatolian_Hieroglyphs Arabic Armenian Avestan Balinese Bamum Bassa_Vah Batak
Bengali Bhaiksuki Bopomofo Brahmi Braille Buginese Buhid Canadian_Aboriginal Carian Caucasian_Albanian Chakma
Cham Cherokee Chorasmian Common Coptic Cuneiform Cypriot Cypro_Minoan Cyrillic Deseret Devanagari Dives_Akuru
Dogra Duployan Egyptian_Hieroglyphs Elbasan Elymaic Ethiopic Garay Georgian Glagolitic Gothic Grantha Greek
Gujarati Gunjala_Gondi Gurmukhi Gurung_Khema Han Hangul Hanifi_Rohingya Hanunoo Hatran Hebrew Hiragana
Imperial_Aramaic Inherited Inscriptional_Pahlavi Inscriptional_Parthian Javanese Kaithi Kannada Katakana Kawi
Kayah_Li Kharoshthi Khitan_Small_Script Khmer Khojki Khudawadi Kirat_Rai Lao Latin Lepcha Limbu Linear_A
Linear_B Lisu Lycian Lydian Mahajani Makasar Malayalam Mandaic Manichaean Marchen Masaram_Gondi Medefaidrin
Meetei_Mayek Mende_Kikakui Meroitic_Cursive Meroitic_Hieroglyphs Miao Modi Mongolian Mro Multani Myanmar
Nabataean Nag_Mundari Nandinagari New_Tai_Lue Newa Nko Nushu Nyiakeng_Puachue_Hmong Ogham Ol_Chiki Ol_Onal
Old_Hungarian Old_Italic Old_North_Arabian Old_Permic Old_Persian Old_Sogdian Old_South_Arabian Old_Turkic
Old_Uyghur Oriya Osage Osmanya Pahawh_Hmong Palmyrene Pau_Cin_Hau Phags_Pa Phoenician Psalter_Pahlavi Rejang
Runic Samaritan Saurashtra Sharada Shavian Siddham SignWriting Sinhala Sogdian Sora_Sompeng Soyombo Sundanese
Sunuwar Syloti_Nagri Syriac Tagalog Tagbanwa Tai_Le Tai_Tham Tai_Viet Takri Tamil Tangsa Tangut Telugu Thaana
Thai Tibetan Tifinagh Tirhuta Todhri Toto Tulu_Tigalari Ugaritic Vai Vithkuqi Wancho Warang_Citi Yezidi Yi
Zanabazar_Square"""
_SCRIPTS = frozenset(_SCRIPT_NAMES.split())


def _canonical(name: str) -> str:
    """Go's canonicalName: first letter upper, the rest lower, without '_', '-' and spaces."""
    out = []
    first = True
    for c in name:
        if c in "_- ":
            continue
        out.append(c.upper() if first else c.lower())
        first = False
    return "".join(out)


_CANONICAL_CATEGORIES = {_canonical(c): c for c in _CATEGORIES} | {"Lc": "LC"}
_CANONICAL_SCRIPTS = {_canonical(s): s for s in _SCRIPTS}


def _unicode_table(name: str) -> tuple[str, str, bool] | None:
    """(kind, resolved name, negate) for a \\p name Go accepts, or None."""
    canon = _canonical(name)
    if canon == "Any":
        return "any", "Any", False
    if canon == "Assigned":
        return "category", "Cn", True
    if canon == "Ascii":
        return "ascii", "ASCII", False
    if canon in _CANONICAL_CATEGORIES:
        return "category", _CANONICAL_CATEGORIES[canon], False
    if canon in _CANONICAL_SCRIPTS:
        return "script", _CANONICAL_SCRIPTS[canon], False
    if canon in _CATEGORY_ALIASES:
        return "category", _CATEGORY_ALIASES[canon], False
    return None


@functools.cache
def _category_ranges(category: str) -> tuple[tuple[int, int], ...]:
    """Code point ranges of a general category (one or two letters, or LC) from unicodedata."""
    wanted: Callable[[str], bool]
    if category == "LC":
        def wanted(cat: str) -> bool:
            return cat in ("Lu", "Ll", "Lt")
    elif len(category) == 1:
        def wanted(cat: str) -> bool:
            return cat[0] == category
    else:
        def wanted(cat: str) -> bool:
            return cat == category
    ranges: list[tuple[int, int]] = []
    start = -1
    for cp in range(_MAX_RUNE + 1):
        if wanted(unicodedata.category(chr(cp))):
            if start < 0:
                start = cp
        elif start >= 0:
            ranges.append((start, cp - 1))
            start = -1
    if start >= 0:
        ranges.append((start, _MAX_RUNE))
    return tuple(ranges)


# --- parse tree summary for the repeat-count rule ------------------------------------------------


@dataclass
class _Rep:
    """A counted repetition in the parse tree: its effective count and the repetitions inside."""

    count: int
    inner: list[_Rep] = field(default_factory=list)


def _repeat_ok(reps: list[_Rep], n: int) -> bool:
    """Go's repeatIsValid: nested repetition counts must not multiply beyond ``n``."""
    for r in reps:
        if r.count == 0:
            continue
        if r.count > n:
            return False
        if not _repeat_ok(r.inner, n // r.count):
            return False
    return True


@dataclass
class _Item:
    """One parsed atom: its Python translation and the counted repetitions it contains."""

    py: str
    reps: list[_Rep] = field(default_factory=list)


@dataclass
class _Frame:
    """An open group: finished alternatives and the concatenation being parsed."""

    flags: set[str]
    alternatives: list[list[_Item]] = field(default_factory=list)
    # The concatenation since the last '(' or '|': empty means a repetition has no argument.
    items: list[_Item] = field(default_factory=list)


def _esc(cp: int) -> str:
    if cp < 0x80 and (chr(cp).isalnum() or chr(cp) == "_"):
        return chr(cp)
    return f"\\x{{{cp:x}}}"


def _literal(c: str) -> str:
    """One character as RE2 reads it literally: ASCII punctuation escaped (RE2 and Go accept that for any)."""
    return f"\\{c}" if c < "\x80" and not c.isalnum() and c != "_" else c


def _class_py(ranges: list[tuple[int, int]], negate: bool) -> str:
    if not ranges:
        return "[^\\x00-\\x{10ffff}]" if not negate else "[\\x00-\\x{10ffff}]"
    body = "".join(_esc(lo) if lo == hi else f"{_esc(lo)}-{_esc(hi)}" for lo, hi in ranges)
    return f"[{'^' if negate else ''}{body}]"


def _negate(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out = []
    nxt = 0
    for lo, hi in sorted(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = max(nxt, hi + 1)
    if nxt <= _MAX_RUNE:
        out.append((nxt, _MAX_RUNE))
    return out


class _Parser:
    def __init__(self, pattern: str, translate: bool) -> None:
        self.whole = pattern
        self.translate = translate

    # -- helpers --

    def _fold(self, flags: set[str], py: str) -> str:
        return f"(?i:{py})" if "i" in flags and self.translate else py

    def _unicode_class(self, t: str) -> tuple[list[tuple[int, int]], str]:
        """Parse ``\\pX`` / ``\\p{Name}`` at the start of t: (ranges when translating, rest)."""
        negate = t[1] == "P"
        rest = t[2:]
        if not rest:
            # Go reads an empty one-letter name here, which names no table.
            raise _error(_INVALID_CHAR_RANGE, t[:2])
        if rest[0] != "{":
            seq, name, rest = t[:3], rest[0], rest[1:]
        else:
            end = t.find("}")
            if end < 0:
                raise _error(_INVALID_CHAR_RANGE, t)
            seq, name, rest = t[:end + 1], t[3:end], t[end + 1:]
        if name.startswith("^"):
            negate = not negate
            name = name[1:]
        table = _unicode_table(name)
        if table is None:
            raise _error(_INVALID_CHAR_RANGE, seq)
        kind, resolved, tneg = table
        if tneg:
            negate = not negate
        if not self.translate:
            return [], rest
        if kind == "any":
            ranges = [(0, _MAX_RUNE)]
        elif kind == "ascii":
            ranges = [(0, 0x7F)]
        elif kind == "category":
            ranges = list(_category_ranges(resolved))
        else:
            raise _Untranslatable(resolved)
        return (_negate(ranges) if negate else ranges), rest

    def _escape(self, t: str) -> tuple[int, str]:
        """Go's parseEscape: one escaped rune and the rest."""
        if len(t) < 2:
            raise _error(_TRAILING_BACKSLASH, "")
        c, rest = t[1], t[2:]
        if c < "\x80" and not c.isalnum():
            return ord(c), rest
        if c in "1234567":
            if rest and "0" <= rest[0] <= "7":
                return self._octal(c, rest)
        elif c == "0":
            return self._octal(c, rest)
        elif c == "x":
            if rest:
                if rest[0] == "{":
                    end = rest.find("}")
                    digits = rest[1:end] if end >= 0 else ""
                    if end > 1 and all(d in "0123456789abcdefABCDEF" for d in digits) and \
                            int(digits, 16) <= _MAX_RUNE:
                        return int(digits, 16), rest[end + 1:]
                    consumed = self._hex_brace_consumed(rest)
                    raise _error(_INVALID_ESCAPE, t[:2 + consumed])
                if len(rest) >= 2 and all(d in "0123456789abcdefABCDEF" for d in rest[:2]):
                    return int(rest[:2], 16), rest[2:]
                raise _error(_INVALID_ESCAPE, t[:2 + min(2, len(rest))])
        elif c in "afnrtv":
            return ord({"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}[c]), rest
        raise _error(_INVALID_ESCAPE, t[:2])

    @staticmethod
    def _hex_brace_consumed(rest: str) -> int:
        """How much of ``{...`` Go consumed before giving up on a \\x{...} escape."""
        value = 0
        for i, d in enumerate(rest[1:], start=1):
            if d == "}":
                return i + 1
            if d not in "0123456789abcdefABCDEF":
                return i + 1
            value = value * 16 + int(d, 16)
            if value > _MAX_RUNE:
                return i + 1
        return len(rest)

    @staticmethod
    def _octal(c: str, rest: str) -> tuple[int, str]:
        value = int(c)
        for _ in range(2):
            if rest and "0" <= rest[0] <= "7":
                value = value * 8 + int(rest[0])
                rest = rest[1:]
            else:
                break
        return value, rest

    def _class(self, s: str, flags: set[str]) -> tuple[_Item, str]:
        """Go's parseClass: ``[...]`` at the start of s."""
        t = s[1:]
        negate = False
        if t.startswith("^"):
            negate = True
            t = t[1:]
        ranges: list[tuple[int, int]] = []
        first = True
        while not t or t[0] != "]" or first:
            if not t:
                raise _error(_MISSING_BRACKET, s)
            first = False
            if len(t) > 2 and t[0] == "[" and t[1] == ":":
                end = t.find(":]", 2)
                if end >= 0:
                    name = t[:end + 2]
                    inner = name[2:-2]
                    neg = inner.startswith("^")
                    group = _POSIX_CLASSES.get(inner[1:] if neg else inner)
                    if group is None:
                        raise _error(_INVALID_CHAR_RANGE, name)
                    ranges.extend(_negate(group) if neg else group)
                    t = t[end + 2:]
                    continue
            if len(t) >= 2 and t[0] == "\\" and t[1] in "pP":
                got, t = self._unicode_class(t)
                ranges.extend(got)
                continue
            if len(t) >= 2 and t[0] == "\\" and t[1] in _PERL_CLASSES:
                group, neg = _PERL_CLASSES[t[1]]
                ranges.extend(_negate(group) if neg else group)
                t = t[2:]
                continue
            rng = t
            lo, t = self._class_char(t, s)
            hi = lo
            if len(t) >= 2 and t[0] == "-" and t[1] != "]":
                hi, t = self._class_char(t[1:], s)
                if hi < lo:
                    raise _error(_INVALID_CHAR_RANGE, rng[:len(rng) - len(t)])
            ranges.append((lo, hi))
        t = t[1:]
        py = self._fold(flags, _class_py(sorted(ranges), negate)) if self.translate else ""
        return _Item(py), t

    def _class_char(self, t: str, whole_class: str) -> tuple[int, str]:
        if not t:
            raise _error(_MISSING_BRACKET, whole_class)
        if t[0] == "\\":
            return self._escape(t)
        self._check_rune(t)
        return ord(t[0]), t[1:]

    @staticmethod
    def _check_rune(t: str) -> None:
        if 0xD800 <= ord(t[0]) <= 0xDFFF:
            raise _error(_INVALID_UTF8, t)

    def _perl_flags(self, s: str, stack: list[_Frame]) -> str:
        """Go's parsePerlFlags for ``(?...``; returns the rest of the pattern."""
        top = stack[-1]
        if (len(s) > 4 and s[2] == "P" and s[3] == "<") or (len(s) > 3 and s[2] == "<"):
            start = 4 if s[2] == "P" else 3
            end = s.find(">")
            if end < 0:
                raise _error(_INVALID_NAMED_CAPTURE, s)
            name = s[start:end]
            if not name or not all(c == "_" or (c < "\x80" and c.isalnum()) for c in name):
                raise _error(_INVALID_NAMED_CAPTURE, s[:end + 1])
            stack.append(_Frame(set(top.flags)))
            return s[end + 1:]
        t = s[2:]
        flags = set(top.flags)
        sign = 1
        saw_flag = False
        while t:
            c, t = t[0], t[1:]
            if c in "imsU":
                if sign > 0:
                    flags.add(c)
                else:
                    flags.discard(c)
                saw_flag = True
            elif c == "-":
                if sign < 0:
                    break
                sign = -1
                saw_flag = False
            elif c in ":)":
                if sign < 0 and not saw_flag:
                    break
                if c == ":":
                    stack.append(_Frame(flags))
                else:
                    top.flags = flags
                return t
            else:
                break
        raise _error(_INVALID_PERL_OP, s[:len(s) - len(t)])

    def _repeat(self, frame: _Frame, op: str, lo: int, hi: int, before: str, after: str,
                last_repeat: str) -> str:
        """Apply a repetition to the last item; returns the rest after an optional '?'."""
        lazy = False
        if after.startswith("?"):
            after = after[1:]
            lazy = True
        if last_repeat:
            raise _error(_INVALID_REPEAT_OP, last_repeat[:len(last_repeat) - len(after)])
        if not frame.items:
            raise _error(_MISSING_REPEAT_ARG, before[:len(before) - len(after)])
        sub = frame.items[-1]
        reps = sub.reps
        if op == "{":
            count = hi if hi >= 0 else lo
            reps = [_Rep(count, sub.reps)]
            if (lo >= 2 or hi >= 2) and not _repeat_ok(reps, MAX_REPEAT):
                raise _error(_INVALID_REPEAT_SIZE, before[:len(before) - len(after)])
        py = ""
        if self.translate:
            if "U" in frame.flags:
                lazy = not lazy
            quant = op
            if op == "{":
                quant = f"{{{lo}}}" if lo == hi else f"{{{lo},}}" if hi < 0 else f"{{{lo},{hi}}}"
            py = f"(?:{sub.py}){quant}{'?' if lazy else ''}"
        frame.items[-1] = _Item(py, reps)
        return after

    @staticmethod
    def _repeat_bounds(t: str) -> tuple[int, int, str] | None:
        """Go's parseRepeat: ``{n}``, ``{n,}`` or ``{n,m}``; None when ``{`` is a literal."""
        m = re.match(r"\{(0|[1-9][0-9]*)(?:(,)(0|[1-9][0-9]*)?)?\}", t)
        if m is None:
            return None

        def num(text: str) -> int:
            return -1 if len(text) > 8 else int(text)

        lo = num(m.group(1))
        if m.group(2) is None:
            hi = lo
        elif m.group(3) is None:
            hi = -1
        else:
            hi = num(m.group(3))
            if hi < 0:
                lo = -1
        return lo, hi, t[m.end():]

    def _concat(self, frame: _Frame) -> None:
        frame.alternatives.append(frame.items)
        frame.items = []

    @staticmethod
    def _join(frame: _Frame) -> _Item:
        alts = ["".join(i.py for i in items) for items in frame.alternatives]
        reps = [r for items in frame.alternatives for i in items for r in i.reps]
        return _Item("|".join(alts), reps)

    def parse(self) -> str:
        stack = [_Frame(set())]
        t = self.whole
        last_repeat = ""
        while t:
            frame = stack[-1]
            flags = frame.flags
            repeat = ""
            c = t[0]
            if c == "(":
                if len(t) >= 2 and t[1] == "?":
                    t = self._perl_flags(t, stack)
                else:
                    stack.append(_Frame(set(flags)))
                    t = t[1:]
            elif c == "|":
                self._concat(frame)
                t = t[1:]
            elif c == ")":
                self._concat(frame)
                if len(stack) < 2:
                    raise _error(_UNEXPECTED_PAREN, self.whole)
                stack.pop()
                group = self._join(frame)
                parent = stack[-1]
                parent.items.append(_Item(f"(?:{group.py})", group.reps))
                t = t[1:]
            elif c == "^":
                self._push(frame, "(?m:^)" if "m" in flags else "\\A")
                t = t[1:]
            elif c == "$":
                self._push(frame, "(?m:$)" if "m" in flags else "\\z")
                t = t[1:]
            elif c == ".":
                self._push(frame, "(?s:.)" if "s" in flags else "[^\\n]")
                t = t[1:]
            elif c == "[":
                item, t = self._class(t, flags)
                frame.items.append(item)
            elif c in "*+?":
                before = t
                t = self._repeat(frame, c, 0, 0, before, t[1:], last_repeat)
                repeat = before
            elif c == "{":
                bounds = self._repeat_bounds(t)
                if bounds is None:
                    self._push(frame, self._fold(flags, "\\{"))
                    t = t[1:]
                else:
                    lo, hi, after = bounds
                    before = t
                    if lo < 0 or lo > MAX_REPEAT or hi > MAX_REPEAT or (hi >= 0 and lo > hi):
                        raise _error(_INVALID_REPEAT_SIZE, before[:len(before) - len(after)])
                    t = self._repeat(frame, "{", lo, hi, before, after, last_repeat)
                    repeat = before
            elif c == "\\":
                t = self._backslash(t, frame)
            else:
                self._check_rune(t)
                self._push(frame, self._fold(flags, _literal(c)))
                t = t[1:]
            last_repeat = repeat
        frame = stack[-1]
        self._concat(frame)
        if len(stack) != 1:
            raise _error(_MISSING_PAREN, self.whole)
        return self._join(frame).py

    @staticmethod
    def _push(frame: _Frame, py: str) -> None:
        frame.items.append(_Item(py))

    def _backslash(self, t: str, frame: _Frame) -> str:
        flags = frame.flags
        if len(t) >= 2:
            c = t[1]
            if c == "A":
                self._push(frame, "\\A")
                return t[2:]
            if c in "bB":
                self._push(frame, t[:2])  # RE2's ASCII word boundary is Go's
                return t[2:]
            if c == "C":
                raise _error(_INVALID_ESCAPE, t[:2])
            if c == "Q":
                lit, sep, rest = t[2:].partition("\\E")
                for ch in lit:
                    self._check_rune(ch)
                    self._push(frame, self._fold(flags, _literal(ch)))
                return rest if sep else ""
            if c == "z":
                self._push(frame, "\\z")
                return t[2:]
            if c in "pP":
                ranges, rest = self._unicode_class(t)
                self._push(frame, self._fold(flags, _class_py(ranges, False)) if self.translate else "")
                return rest
            if c in _PERL_CLASSES:
                group, neg = _PERL_CLASSES[c]
                self._push(frame, self._fold(flags, _class_py(group, neg)))
                return t[2:]
        cp, rest = self._escape(t)
        self._push(frame, self._fold(flags, _esc(cp) if cp > 0x7F or chr(cp).isalnum() else _literal(chr(cp))))
        return rest


def check(pattern: str) -> str | None:
    """Go's ``regexp.Compile`` error text for ``pattern``, or why this server cannot match a pattern Go accepts;
    None when it compiles."""
    try:
        _Parser(pattern, translate=False).parse()
        compile(pattern)
    except RegexError as exc:
        return str(exc)
    return None


def translate(pattern: str) -> str:
    """The Go pattern in RE2's syntax with every class spelled out as ranges (raises RegexError if invalid)."""
    return _Parser(pattern, translate=True).parse()


class Matcher:
    """A compiled pattern; :meth:`search` is Go's ``MatchString`` (unanchored)."""

    __slots__ = ("_search",)

    def __init__(self, search: Callable[[str], object]) -> None:
        self._search = search

    def search(self, text: str) -> bool:
        return self._search(text) is not None


@functools.lru_cache(maxsize=1024)
def compile(pattern: str) -> Matcher:
    """Compile a Go pattern (raises RegexError with Go's message when it is invalid, or when it names a class this
    server cannot match)."""
    _Parser(pattern, translate=False).parse()
    try:
        return Matcher(re2.compile(pattern, options=_RE2_OPTIONS).search)
    except re2.error:
        pass  # e.g. a \\p name RE2 spells differently: match the same class spelled out as ranges
    try:
        return Matcher(re2.compile(translate(pattern), options=_RE2_OPTIONS).search)
    except _Untranslatable as exc:
        raise RegexError(f"error parsing regexp: this server cannot match the character class {exc}: "
                         f"`{pattern}`") from None
