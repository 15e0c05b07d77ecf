"""``events.k8s.io/v1`` Events: the same objects as core/v1 Events, in the newer API's shape.

kube-apiserver serves both APIs from one storage (``pkg/apis/events/v1/conversion.go``), so an Event a
controller records through one is read, watched and deleted through the other. Only field names differ:
``regarding``/``involvedObject``, ``note``/``message``, ``reportingController``/``reportingComponent`` and
the ``deprecated*`` fields that keep core's old-style ones. Writes through ``events.k8s.io/v1`` are
validated as upstream validates them: core's rules, then the strict rules of the new API (``eventTime``
set, the old-style fields unset, a ``series`` of at least 2), with upstream's core field paths.
"""

from __future__ import annotations

from typing import Any

from apimachinery.errors import Cause
from apimachinery.fieldselectors import NAME_NAMESPACE_FIELDS, SelectableFields, field_at
from apimachinery.names import invalid, required
from apiserver.builtin.strategies import EventStrategy
from apiserver.builtin.strategies.base import BuiltinStrategy
from apiserver.builtin.strategies.core import (
    INVOLVED_OBJECT_FIELDS,
    event_reporting_component,
    involved_object_field,
)
from apiserver.resourcetypes import Conversion

API_VERSION = "events.k8s.io/v1"
# core/v1 name -> events.k8s.io/v1 name; every other field has the same name in both.
_CORE_TO_V1 = {
    "involvedObject": "regarding",
    "message": "note",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
    "reportingComponent": "reportingController",
}
_V1_TO_CORE = {v1: core for core, v1 in _CORE_TO_V1.items()}
# Immutable once recorded (upstream's ValidateEventUpdate for the new API), by core name.
_IMMUTABLE = ("involvedObject", "reason", "type", "source", "eventTime", "action", "related", "reportingComponent",
              "reportingInstance")


def to_core(obj: dict[str, Any]) -> dict[str, Any]:
    """An ``events.k8s.io/v1`` Event as the core/v1 Event it is stored as."""
    out = {_V1_TO_CORE.get(k, k): v for k, v in obj.items()}
    out["apiVersion"] = "v1"
    return out


def to_events_v1(obj: dict[str, Any]) -> dict[str, Any]:
    """A stored core/v1 Event as ``events.k8s.io/v1`` shows it."""
    out = {_CORE_TO_V1.get(k, k): v for k, v in obj.items()}
    out["apiVersion"] = API_VERSION
    return out


class EventsV1Conversion(Conversion):
    stored_as = "events"

    def to_stored(self, obj: dict[str, Any]) -> dict[str, Any]:
        return to_core(obj)

    def to_served(self, obj: dict[str, Any]) -> dict[str, Any]:
        return to_events_v1(obj)


class EventsV1Strategy(BuiltinStrategy):
    """Validation of Events written through ``events.k8s.io/v1`` (upstream ``ValidateEventCreate`` and
    ``ValidateEventUpdate`` for that request version)."""

    # Upstream's field-label conversion maps these onto core's fields of the same Events.
    selectable_fields = SelectableFields({
        **NAME_NAMESPACE_FIELDS,
        **{f"regarding.{name}": involved_object_field(name) for name in INVOLVED_OBJECT_FIELDS},
        "reason": field_at("reason"),
        "reportingController": event_reporting_component,
        "type": field_at("type"),
    })

    def __init__(self) -> None:
        self.core = EventStrategy()

    def validate(self, obj: dict[str, Any]) -> list[Cause]:
        event = to_core(obj)
        causes = self.core.validate(event)
        if not event.get("eventTime"):
            causes.append(required("eventTime"))
        if event.get("type") not in ("Normal", "Warning"):
            causes.append(invalid("type", "", f"has invalid value: {event.get('type') or ''}"))
        for name in ("firstTimestamp", "lastTimestamp"):
            if event.get(name):
                causes.append(invalid(name, "", "needs to be unset"))
        if event.get("count"):
            causes.append(invalid("count", "", "needs to be unset"))
        source = event.get("source") or {}
        if isinstance(source, dict) and (source.get("component") or source.get("host")):
            causes.append(invalid("source", "", "needs to be unset"))
        return causes + _series(event)

    def validate_update(self, new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
        event, before = to_core(new), to_core(old)
        causes = self.core.validate(event)
        if event.get("series") != before.get("series"):
            causes += _series(event)
        for name in _IMMUTABLE:
            if event.get(name) != before.get(name):
                causes.append(invalid(name, event.get(name), "field is immutable"))
        return causes


def _series(event: dict[str, Any]) -> list[Cause]:
    series = event.get("series")
    if not isinstance(series, dict):
        return []
    causes = []
    count = series.get("count")
    if not isinstance(count, int) or count < 2:
        causes.append(invalid("series.count", "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        causes.append(required("series.lastObservedTime"))
    return causes
