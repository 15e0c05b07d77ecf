"""Label selectors: grammar, matching and the 400 wording of apimachinery."""

from __future__ import annotations

import pytest

from apimachinery.errors import StatusError
from apimachinery.names import validate_labels
from apimachinery.selectors import LabelSelector, label_selector_from_object, parse_label_selector
from apiserver.builtin.strategies import selector_matches

LABELS = {"app": "web", "tier": "front", "example.com/team": "a", "n": "5"}


def sel(text: str) -> LabelSelector:
    return parse_label_selector(text)


def bad_label(text: str) -> str:
    with pytest.raises(StatusError) as err:
        parse_label_selector(text)
    assert err.value.code == 400
    assert err.value.reason == "BadRequest"
    return err.value.message


@pytest.mark.parametrize(("text", "expected"), [
    ("app=web", True), ("app=api", False),
    ("app==web", True), ("app==api", False),
    ("app!=web", False), ("app!=api", True), ("missing!=x", True),
    ("app in (api,web)", True), ("app in (api)", False), ("missing in (x)", False),
    ("app notin (api)", True), ("app notin (web,api)", False), ("missing notin (x)", True),
    ("app", True), ("missing", False),
    ("!app", False), ("!missing", True),
    ("n>4", True), ("n>5", False), ("n<6", True), ("n<5", False), ("missing>1", False), ("app>1", False),
    ("example.com/team=a", True),
    ("app=web,tier=front", True), ("app=web,tier=back", False),
    ("  app = web ,  tier in ( front , back )  ", True),
    ("app in (web,,api)", True),
])
def test_operators(text: str, expected: bool) -> None:
    assert sel(text).matches(LABELS) is expected


def test_empty_value_and_empty_set() -> None:
    assert sel("x=").matches({"x": ""})
    assert not sel("x=").matches({})
    assert sel("x in ()").matches({"x": ""})
    assert sel("x in (,a)").matches({"x": ""})
    # Each is a real requirement, not one parsed as "match everything".
    assert not sel("x=").matches({"x": "a"})
    assert not sel("x in ()").matches({"x": "a"}) and not sel("x in ()").matches({})
    assert not sel("x in (,a)").matches({"x": "b"})


def test_keywords_are_values_in_value_position() -> None:
    assert sel("in in (in)").matches({"in": "in"})
    assert sel("notin=notin").matches({"notin": "notin"})
    assert not sel("in in (in)").matches({"in": "out"}) and not sel("in in (in)").matches({})
    assert not sel("notin=notin").matches({"notin": "in"})


def test_empty_selects_everything() -> None:
    for text in ("", "   "):
        s = sel(text)
        assert s.empty
        assert s.matches({}) and s.matches(None) and s.matches(LABELS)
    assert not sel("a").empty


def test_matches_none_labels() -> None:
    assert sel("!a").matches(None)
    assert not sel("a").matches(None)


def test_immutable_hashable_and_canonical() -> None:
    a, b = sel("b=1,a in (y,x)"), sel("a in (x,y),b=1")
    assert a == b and hash(a) == hash(b)
    assert len({a, b}) == 1
    assert str(a) == "a in (x,y),b=1"
    with pytest.raises(AttributeError):
        a.requirements = ()  # type: ignore[misc]


def test_requires_exact_match() -> None:
    assert sel("app=web,x!=y").requires_exact_match("app") == "web"
    assert sel("app in (web)").requires_exact_match("app") == "web"
    assert sel("app in (web,api)").requires_exact_match("app") is None
    assert sel("x!=y").requires_exact_match("x") is None


@pytest.mark.parametrize(("text", "message"), [
    ("a in", "unable to parse requirement: found '' expected: '('"),
    ("a in b", "unable to parse requirement: found 'b' expected: '('"),
    ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
    ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
    ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
    ("a=(", "unable to parse requirement: found '(', expected: identifier"),
    ("!", "unable to parse requirement: found '', expected: identifier"),
    ("a=b=c", "found '=', expected: ',' or 'end of string'"),
    ("!a=b", "found '=', expected: ',' or 'end of string'"),
    ("a,", "found '', expected: identifier after ','"),
    (",a", "found ',', expected: !, identifier, or 'end of string'"),
    ("a>x", "unable to parse requirement: values[0]: Invalid value: \"x\": "
            "for 'Gt', 'Lt' operators, the value must be an integer"),
])
def test_parse_errors(text: str, message: str) -> None:
    assert bad_label(text) == message


def test_invalid_key_and_value_wording() -> None:
    msg = bad_label("a/b/c")
    assert msg.startswith('unable to parse requirement: <nil>: Invalid value: "a/b/c": '
                          "a valid label key must consist of alphanumeric characters")
    msg = bad_label("Bad_Prefix/x=y")
    assert msg.startswith('unable to parse requirement: <nil>: Invalid value: "Bad_Prefix/x": prefix part a '
                          "lowercase RFC 1123 subdomain")
    msg = bad_label("a=-x")
    assert msg.startswith('unable to parse requirement: values[0][a]: Invalid value: "-x": '
                          "a valid label must be an empty string")
    assert "must be no more than 63 bytes" in bad_label("a=" + "v" * 64)
    assert "name part must be no more than 63 bytes" in bad_label("k" * 64)


def test_from_object() -> None:
    assert label_selector_from_object(None).matches(LABELS) is False
    assert not label_selector_from_object(None).empty
    assert label_selector_from_object({}).empty
    assert label_selector_from_object({"matchLabels": {}, "matchExpressions": []}).matches(LABELS)
    s = label_selector_from_object({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["front", "back"]},
            {"key": "env", "operator": "NotIn", "values": ["prod"]},
            {"key": "n", "operator": "Exists"},
            {"key": "gone", "operator": "DoesNotExist"},
        ],
    })
    assert s.matches(LABELS)
    assert not s.matches({**LABELS, "env": "prod"})
    assert not s.matches({k: v for k, v in LABELS.items() if k != "n"})
    assert s == parse_label_selector("app=web,tier in (front,back),env notin (prod),n,!gone")


@pytest.mark.parametrize(("obj", "message"), [
    ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
     '"Gt" is not a valid label selector operator'),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
     "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"),
    ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
     'values: Invalid value: ["x"]: values set must be empty for exists and does not exist'),
    ({"matchLabels": {"a/b/c": "x"}}, 'key: Invalid value: "a/b/c": a valid label key must consist'),
])
def test_from_object_errors(obj: dict, message: str) -> None:
    with pytest.raises(StatusError) as err:
        label_selector_from_object(obj)
    assert err.value.code == 400
    assert err.value.message.startswith(message)


def test_strategies_match_label_selector_objects_with_the_one_matcher() -> None:
    web = {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]}
    assert selector_matches(web, LABELS) and selector_matches(web, {"app": "web"})
    assert not selector_matches(web, {**LABELS, "env": "prod"})
    assert not selector_matches(web, {"app": "api"}) and not selector_matches(web, None)
    assert selector_matches({}, None) and selector_matches({"matchExpressions": []}, LABELS)
    assert selector_matches({"matchExpressions": [{"key": "gone", "operator": "DoesNotExist"}]}, LABELS)
    assert not selector_matches({"matchExpressions": [{"key": "n", "operator": "DoesNotExist"}]}, LABELS)
    for malformed in (None, "app=web", [], {"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]},
                      {"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["web"]}]},
                      {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": []}]},
                      {"matchExpressions": [None]}, {"matchLabels": {"a/b/c": "web"}}):
        # validate_label_selector reports these; the strategies' checks then select nothing.
        assert not selector_matches(malformed, LABELS), malformed


def test_null_items_decode_as_go_zero_values() -> None:
    with pytest.raises(StatusError) as err:
        label_selector_from_object({"matchExpressions": [None]})
    assert err.value.message == '"" is not a valid label selector operator'
    assert label_selector_from_object({"matchLabels": {"a": None}}).matches({"a": ""})


def test_selector_keys_are_worded_as_label_validation_words_them() -> None:
    # One copy of the key rule: a 400 for a bad selector key says what a 422 for the same metadata label says,
    # with upstream RegexError's joining of the examples.
    rule = ("a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix "
            "and '/' (e.g. 'example.com/MyName')")
    assert bad_label("a/b/c") == f'unable to parse requirement: <nil>: Invalid value: "a/b/c": {rule}'
    assert [c.message for c in validate_labels({"a/b/c": "x"})] == [f'Invalid value: "a/b/c": {rule}']


@pytest.mark.parametrize("selector", [{"matchLabels": {"a\n": "x"}}, {"matchLabels": {"a": "x\n"}},
                                      {"matchExpressions": [{"key": "a\n", "operator": "Exists"}]}])
def test_a_trailing_newline_is_not_part_of_a_valid_key_or_value(selector: dict) -> None:
    # Go's ^…$ ends at the end of the text; Python's $ also matches before a final newline.
    with pytest.raises(StatusError):
        label_selector_from_object(selector)
    labels = selector.get("matchLabels") or {"a\n": ""}
    assert validate_labels(labels)
