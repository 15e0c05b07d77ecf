"""The request and response bodies of the placement REST API (``/placement/v1``).

Owns the wire shape only: pydantic models whose JSON Schema is what ``/placement/v1/openapi.json``
publishes, and the few conversions from plain stored objects into them. Never computes placement
(that is ``placement.engine``) and never reads the store.

Request models are strict (unknown fields are refused, label keys and values are checked with the
Kubernetes rules) so that a typo in a placement being explained is reported instead of silently
selecting everything; response models accept whatever the stored objects hold.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Discriminator, Field, Tag, WithJsonSchema
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from apimachinery.dottedpaths import PATH_PATTERN
from placement.downsync import DEPENDENCY, FOLLOWED
from placement.model import Destination, Mismatch, ObjectRef

# --- Kubernetes name and label rules (apimachinery ``validation``) ------------------------------

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN = rf"{_DNS_LABEL}(\.{_DNS_LABEL})*"
_LABEL_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
CLUSTER_NAME_PATTERN = rf"^{_DNS_SUBDOMAIN}$"
CLUSTER_NAME_MAX = 63  # the name is also the value of the SyncTarget's ``id`` label
# The prefix's 253-character bound is in the pattern (a lookahead), so that the schema accepts exactly what the
# server does: a key within the total length with a longer prefix is invalid.
LABEL_KEY_PATTERN = rf"^((?=[^/]{{1,253}}/){_DNS_SUBDOMAIN}/)?{_LABEL_NAME}$"
LABEL_KEY_MAX = 253 + 1 + 63
LABEL_PREFIX_MAX = 253
LABEL_VALUE_PATTERN = rf"^({_LABEL_NAME})?$"
LABEL_VALUE_MAX = 63
_LABEL_KEY_RE = re.compile(LABEL_KEY_PATTERN)
_LABEL_VALUE_RE = re.compile(LABEL_VALUE_PATTERN)
_LABEL_KEY_RULE = ("an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most "
                   "63 alphanumeric characters, '-', '_' or '.' that starts and ends with an alphanumeric character")
_LABEL_VALUE_RULE = ("empty, or at most 63 alphanumeric characters, '-', '_' or '.' that start and end with an "
                     "alphanumeric character")


def _check_label_key(key: str) -> str:
    prefix, slash, _ = key.rpartition("/")
    if len(key) > LABEL_KEY_MAX or not _LABEL_KEY_RE.fullmatch(key) or (slash and len(prefix) > LABEL_PREFIX_MAX):
        raise PydanticCustomError("label_key", 'invalid label key "{key}": must be {rule}',
                                  {"key": key, "rule": _LABEL_KEY_RULE})
    return key


def _check_label_value(value: str) -> str:
    if len(value) > LABEL_VALUE_MAX or not _LABEL_VALUE_RE.fullmatch(value):
        raise PydanticCustomError("label_value", 'invalid label value "{value}": must be {rule}',
                                  {"value": value, "rule": _LABEL_VALUE_RULE})
    return value


_CLUSTER_NAME_RE = re.compile(CLUSTER_NAME_PATTERN)
_CLUSTER_NAME_RULE = ("a lowercase RFC 1123 subdomain of at most 63 characters: lower case alphanumeric characters, "
                      "'-' or '.', starting and ending with an alphanumeric character")


def _check_cluster_name(name: str) -> str:
    if not 0 < len(name) <= CLUSTER_NAME_MAX or not _CLUSTER_NAME_RE.fullmatch(name):
        raise PydanticCustomError("cluster_name", 'invalid name "{name}": must be {rule}',
                                  {"name": name, "rule": _CLUSTER_NAME_RULE})
    return name


def _check_label_map(labels: dict[str, str]) -> dict[str, str]:
    for key, value in labels.items():
        _check_label_key(key)
        _check_label_value(value)
    return labels


_LABEL_KEY_SCHEMA: dict[str, Any] = {"type": "string", "pattern": LABEL_KEY_PATTERN, "maxLength": LABEL_KEY_MAX,
                                     "description": f"A label key: {_LABEL_KEY_RULE}."}
_LABEL_VALUE_SCHEMA: dict[str, Any] = {"type": "string", "pattern": LABEL_VALUE_PATTERN,
                                       "maxLength": LABEL_VALUE_MAX,
                                       "description": f"A label value: {_LABEL_VALUE_RULE}."}

LabelKey = Annotated[str, AfterValidator(_check_label_key), WithJsonSchema(_LABEL_KEY_SCHEMA)]
LabelValue = Annotated[str, AfterValidator(_check_label_value), WithJsonSchema(_LABEL_VALUE_SCHEMA)]
LabelMap = Annotated[dict[str, str], AfterValidator(_check_label_map), WithJsonSchema({
    "type": "object",
    "propertyNames": {"pattern": LABEL_KEY_PATTERN, "maxLength": LABEL_KEY_MAX},
    "additionalProperties": {"type": "string", "pattern": LABEL_VALUE_PATTERN, "maxLength": LABEL_VALUE_MAX},
    "description": f"Labels. Keys: {_LABEL_KEY_RULE}. Values: {_LABEL_VALUE_RULE}.",
})]

_PATH_RE = re.compile(PATH_PATTERN)


def _check_field_path(path: str) -> str:
    # Python's reading of the pattern, as clients generating from the schema read it: its ``$`` also takes a
    # final newline, which the path parser strips (a pydantic ``pattern`` is matched by another engine, which
    # differs there and on a few control characters).
    if not _PATH_RE.search(path):
        raise PydanticCustomError("field_path", 'invalid field path "{path}": names joined by ".", list items as '
                                  '[i], e.g. spec.replicas', {"path": path})
    return path


FieldPath = Annotated[str, AfterValidator(_check_field_path), WithJsonSchema({
    "type": "string", "pattern": PATH_PATTERN, "description": "A field path as kubectl prints it."})]

ClusterName = Annotated[str, AfterValidator(_check_cluster_name), WithJsonSchema({
    "type": "string", "pattern": CLUSTER_NAME_PATTERN, "minLength": 1, "maxLength": CLUSTER_NAME_MAX,
    "description": f"The name of the SyncTarget and the Location: {_CLUSTER_NAME_RULE}. It is also the "
                   "SyncTarget's `id` label, which the Location selects.",
})]


class ApiModel(BaseModel):
    """camelCase on the wire, snake_case in Python."""

    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True)


class StrictModel(ApiModel):
    """A request body: only the camelCase wire names, and no unknown fields."""

    model_config = ConfigDict(extra="forbid", validate_by_name=False)


# --- Status --------------------------------------------------------------------------------------

class StatusCause(BaseModel):
    reason: str = Field(description="Why the field is wrong (FieldValueRequired, FieldValueInvalid, ...).")
    message: str
    field: str | None = Field(default=None, description="The offending field, e.g. spec.downsync[0].apiGroup.")


class StatusDetails(ApiModel):
    name: str | None = None
    group: str | None = None
    kind: str | None = None
    uid: str | None = None
    causes: list[StatusCause] | None = None
    retry_after_seconds: int | None = None


class Status(ApiModel):
    """A Kubernetes ``meta/v1 Status``: every error of this API, and the result of a deletion."""

    kind: Literal["Status"] = "Status"
    api_version: Literal["v1"] = "v1"
    metadata: dict[str, Any] = Field(default_factory=dict)
    status: Literal["Success", "Failure"]
    message: str | None = None
    reason: str | None = Field(default=None, description="NotFound, AlreadyExists, Invalid, BadRequest, ...")
    code: int = Field(description="The HTTP status code, repeated.")
    details: StatusDetails | None = None


# --- Clusters ------------------------------------------------------------------------------------

class Condition(ApiModel):
    type: str
    status: str = Field(description='"True", "False" or "Unknown".')
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None


class Cluster(ApiModel):
    """A SyncTarget of the inventory space, as a placement destination."""

    name: str
    uid: str
    labels: dict[str, str]
    ready: bool = Field(description="True when the SyncTarget's Ready condition has status True.")
    ready_condition: Condition | None = Field(description="The Ready condition, if the syncer has reported one.")
    last_heartbeat: str | None = Field(description="status.lastSyncerHeartbeatTime (RFC 3339), if any.")
    unschedulable: bool = Field(description="spec.unschedulable: no new placements reach this cluster.")
    evict_after: str | None = Field(default=None, description="spec.evictAfter (RFC 3339): from then on the "
                                    "cluster is drained (everything leaves it once its replacements are ready).")
    capacity: dict[str, str] = Field(description="Resource name to quantity.")
    allocatable: dict[str, str] = Field(description="Resource name to quantity.")
    locations: list[str] = Field(description="The Locations whose instanceSelector selects this SyncTarget.")


class ClusterList(ApiModel):
    items: list[Cluster]


class RegisterClusterRequest(StrictModel):
    """Creates SyncTarget and Location NAME in the inventory space and a syncer credential."""

    name: ClusterName
    labels: LabelMap = Field(default_factory=dict, description="Labels of both the SyncTarget and the Location.")

    model_config = ConfigDict(json_schema_extra={"examples": [{"name": "florin", "labels": {"env": "prod"}}]})


class RotateCredentialsRequest(StrictModel):
    """How long the cluster's earlier credentials keep working."""

    grace_seconds: float = Field(default=600.0, ge=0, description="Seconds the earlier credentials keep working "
                                                                  "(default 600).")

    model_config = ConfigDict(json_schema_extra={"examples": [{"graceSeconds": 600}]})


class RegisteredCluster(ApiModel):
    name: str
    bootstrap: dict[str, Any] = Field(description="What the cluster's syncer needs to dial in: the hub URL, its CA, "
                                                  "the inventory space, the sync target and a credential.")


# --- Desired sets --------------------------------------------------------------------------------

class PlacementRef(ApiModel):
    space: str
    name: str


class DesiredSetEntry(ApiModel):
    space: str
    group: str = Field(description='The API group; "" for the core group.')
    resource: str = Field(description="The lowercase plural resource name.")
    namespace: str = Field(description='"" for cluster-scoped objects.')
    name: str
    kind: str
    entry_kind: Literal["namespace", "crd", "object"]
    implicit: bool = Field(description="A namespace present only because placed objects live in it.")
    placements: list[PlacementRef] = Field(description="The EdgePlacements that put this entry here.")
    revision: int | None = Field(default=None, description="The object's revision this cluster gets (counting from "
                                 "1 per object; recorded for objects a placement with spec.rollout selects).")
    content_revision: str | None = Field(default=None, alias="contentRevision", description="The content revision "
                                         "of this cluster's copy: the object's resourceVersion (rev<N> for a kept "
                                         "revision), with a suffix when the copy is customized for it.")
    copy_error: str | None = Field(default=None, alias="copyError", description="Why this cluster's customized "
                                   "copy cannot be made; the cluster keeps its previous copy meanwhile.")


class DesiredSet(ApiModel):
    cluster: str
    seq: int = Field(description="The cluster's change sequence number this set corresponds to.")
    items: list[DesiredSetEntry] = Field(description="In apply order: namespaces, CRDs, then other objects.")


# --- Placements (responses) ----------------------------------------------------------------------

class LabelSelectorRequirement(ApiModel):
    key: str
    operator: str
    values: list[str] = Field(default_factory=list)


class LabelSelector(ApiModel):
    match_labels: dict[str, str] = Field(default_factory=dict)
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list)


class DownsyncTest(ApiModel):
    api_group: str | None = Field(default=None, description='Absent: any group; "": the core group.')
    resources: list[str] = Field(default_factory=list)
    namespaces: list[str] = Field(default_factory=list)
    namespace_selectors: list[LabelSelector] = Field(default_factory=list)
    object_names: list[str] = Field(default_factory=list)
    label_selectors: list[LabelSelector] = Field(default_factory=list)


class PlacementDestination(ApiModel):
    location: str
    sync_target: str
    sync_target_uid: str = Field(alias="syncTargetUID")


class PlacementSummary(ApiModel):
    name: str
    location_selectors: list[LabelSelector]
    want_singleton_reported_state: bool
    destinations: list[PlacementDestination]
    matching_location_count: int
    selected_object_count: int
    missing_crds: list[str] = Field(alias="missingCRDs",
                                    description="plural.group of selected custom resources whose CRD is not selected.")
    unserved_resources: list[str] = Field(
        description="What the downsync tests name (plural.group, or a group) that the space does not serve.")


class PlacementList(ApiModel):
    space: str
    items: list[PlacementSummary]


class MatchedDestination(PlacementDestination):
    selector_indexes: list[int] = Field(description="Indexes of the locationSelectors the Location matched.")


class SelectedObject(ApiModel):
    group: str
    resource: str
    namespace: str
    name: str
    tests: list[int] = Field(description="Indexes of the downsync tests the object matched.")
    followed: bool = Field(default=False, description="A CRD sent because the placement has crdFollow and "
                                                      "selects custom resources it defines.")
    dependency: bool = Field(default=False, description="Sent because the placement has dependencies: Follow "
                                                        "and objects it selects reference it.")
    because: list[str] = Field(default_factory=list, description="Why a dependency is sent (what uses it).")


class PlacementDetail(ApiModel):
    space: str
    name: str
    location_selectors: list[LabelSelector]
    downsync: list[DownsyncTest]
    want_singleton_reported_state: bool
    destinations: list[MatchedDestination]
    matching_location_count: int
    objects: list[SelectedObject]
    missing_crds: list[str] = Field(alias="missingCRDs")
    unserved_resources: list[str] = Field(
        description="What the downsync tests name (plural.group, or a group) that the space does not serve.")


class ReportedState(ApiModel):
    """The latest state a cluster's syncer reported for the object (kept in memory by the hub)."""

    cluster: str
    status: dict[str, Any] | None = Field(description="The object's .status in the cluster (null: none).")
    error: str | None = Field(description="Why the cluster could not apply the object (null: it did).")
    generation: int | None = Field(description="The cluster object's metadata.generation when reported.")
    reported_at: str = Field(description="When the hub received the report (RFC 3339).")
    drift_corrections: int = Field(0, description="How often the syncer re-applied the object after a change "
                                                  "made directly in the cluster.")
    last_drift_correction: str | None = Field(None, description="When the syncer last did so (RFC 3339).")
    applied_revision: str | None = Field(None, description="The revision of the object's content the cluster "
                                                           "runs (current when it is the object's).")
    associated: dict[str, Any] | None = Field(None, description="What the workload owns in the cluster: pods "
                                                                "and ReplicaSets by state (docs/sync-protocol.md).")
    drift: list[dict[str, Any]] = Field(default_factory=list, description="Changes made in the cluster to fields the "
                                        "syncer applies, the latest per field: path, manager (from managedFields), "
                                        "time and whether it was put back.")
    retained: dict[str, Any] | None = Field(None, description="The cluster's values of the fields it owns "
                                                              "(retainFields, spec.replicas under an HPA), by path.")


class ConflictItem(ApiModel):
    cluster: str
    group: str = Field(description='The API group; "" for the core group.')
    resource: str
    namespace: str = Field(description='The cluster\'s namespace (after the spaces\' namespaceMapping); "" for '
                                       'cluster-scoped objects.')
    name: str = Field(description="The cluster object's name (a Namespace's after namespaceMapping).")
    winner: str = Field(description="The space whose copy the cluster gets (its object was created first).")
    loser: str = Field(description="A space whose different copy the cluster does not get.")
    fields: list[str] = Field(description="Where the copies differ (dotted paths).")


class ConflictList(ApiModel):
    items: list[ConflictItem]


class ObjectPlacement(ApiModel):
    """Where one workload object goes."""

    space: str
    group: str
    resource: str
    namespace: str
    name: str
    kind: str
    api_version: str
    resource_version: str
    labels: dict[str, str]
    destinations: list[str] = Field(description="Names of the SyncTargets the object is placed on.")
    leaving: list[str] = Field(default_factory=list,
                               description="SyncTargets no longer destinations that keep their copy until the "
                                           "destinations run it Ready (a make-before-break move).")
    placements: list[PlacementRef] = Field(description="The EdgePlacements selecting the object.")
    want_singleton_reported_state: bool = Field(description="Any selecting placement asks for singleton status.")
    singleton_status: bool = Field(description="Reported state is returned: wanted and exactly one destination.")
    reported: list[ReportedState] = Field(default_factory=list,
                                          description="Per cluster that reported it, the latest reported state.")
    summary: dict[str, Any] | None = Field(None, description="The object's PlacementStatus: counts of clusters "
                                                             "by state, the worst state and each cluster's state.")
    division: dict[str, int] | None = Field(default=None, description="When the object's replicas are divided "
                                            "(spacehub.io/replica-division): the replicas each cluster runs.")


# --- Explain (request) ---------------------------------------------------------------------------

class SetRequirement(StrictModel):
    key: LabelKey
    operator: Literal["In", "NotIn"]
    values: list[LabelValue] = Field(min_length=1)


class ExistenceRequirement(StrictModel):
    key: LabelKey
    operator: Literal["Exists", "DoesNotExist"]
    values: list[LabelValue] = Field(default_factory=list, max_length=0)


class LabelSelectorInput(StrictModel):
    """A ``metav1.LabelSelector``; ``{}`` selects everything."""

    match_labels: LabelMap = Field(default_factory=dict)
    match_expressions: list[Annotated[SetRequirement | ExistenceRequirement, Field(discriminator="operator")]] = \
        Field(default_factory=list)


class DownsyncObjectTest(StrictModel):
    """Fields are ANDed; an absent or empty list matches everything; "*" matches everything."""

    api_group: str | None = Field(default=None, description='Absent or null: any group; "": the core group.')
    resources: list[str] = Field(default_factory=list, description="Lowercase plural resource names.")
    namespaces: list[str] = Field(default_factory=list,
                                  description='"*" is the only way to match cluster-scoped objects.')
    namespace_selectors: list[LabelSelectorInput] = Field(default_factory=list)
    object_names: list[str] = Field(default_factory=list)
    label_selectors: list[LabelSelectorInput] = Field(default_factory=list)
    status_collectors: list[str] = Field(default_factory=list,
                                         description="StatusCollectors whose CombinedStatus the selected objects get.")
    retain_fields: list[FieldPath] = Field(
        default_factory=list, description="Fields the clusters own once the object is created there (dotted paths, "
                                          "[i] for list items, e.g. spec.replicas).")
    drift_mode: Literal["Correct", "ReportOnly"] | None = Field(None, description=(
        "Correct (absent): a change made in a cluster is put back; ReportOnly: it is reported, never put back."))


class Failover(StrictModel):
    after: Annotated[str, Field(pattern=r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$", description=(
        "A Go duration: a cluster silent this long has its divided replicas run by the other clusters."))]


class UpsyncSet(StrictModel):
    api_group: str = ""
    resources: list[str] = Field(default_factory=list)
    namespaces: list[str] = Field(default_factory=list)
    names: list[str] = Field(default_factory=list)


class EdgePlacementSpec(StrictModel):
    """The ``spec`` of an EdgePlacement (edge.kubestellar.io/v2alpha1)."""

    location_selectors: list[LabelSelectorInput] = Field(
        default_factory=list, description="Locations matching any of these selectors are destinations.")
    downsync: list[DownsyncObjectTest] = Field(
        default_factory=list, description="Objects matching any of these tests are placed.")
    want_singleton_reported_state: bool = False
    want_multi_wec_reported_state: bool = Field(
        default=True, alias="wantMultiWECReportedState",
        description="The selected objects' status aggregates every cluster's status (the default).")
    upsync: list[UpsyncSet] = Field(default_factory=list)
    crd_follow: bool = Field(default=False, description="Selected custom resources take their CRD along.")
    dependencies: Literal["Follow", "None"] = Field(
        default="None", description="Follow: what the selected objects reference (ConfigMaps, Secrets, their "
                                    "ServiceAccount, PVCs, the Services selecting their pods) goes with them.")
    failover: Failover | None = None
    move_strategy: Literal["MakeBeforeBreak", "BreakBeforeMake"] = Field(
        default="MakeBeforeBreak", description="Whether a cluster losing an object keeps it until the clusters "
                                               "gaining it run it Ready (MakeBeforeBreak) or not.")
    move_timeout_seconds: int = Field(
        default=600, ge=0, description="The longest a losing cluster keeps its copy waiting for the others.")
    number_of_clusters: int | None = Field(default=None, ge=0, description="Choose this many of the clusters the "
                                           "Locations select (absent: all of them).")
    spread_constraints: list[dict[str, Any]] | None = Field(
        default=None, description="[{topologyKey, maxSkew, minDomains, whenUnsatisfiable}]: spread the choice.")
    prioritizers: list[dict[str, Any]] | None = Field(
        default=None, description="[{type: Capacity|Label|CEL, weight, labelKey, values, expression}]: scores.")
    tolerations: list[dict[str, Any]] | None = Field(
        default=None, description="[{key, operator, value, effect, tolerationSeconds}]: taints tolerated.")

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "locationSelectors": [{"matchLabels": {"env": "prod"}}],
        "downsync": [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["commonstuff"]}],
    }]})


class EdgePlacement(StrictModel):
    """A whole EdgePlacement object, as in a YAML file; only ``spec`` is explained."""

    api_version: Literal["edge.kubestellar.io/v2alpha1"] | None = None
    kind: Literal["EdgePlacement"] | None = None
    metadata: dict[str, Any] | None = None
    spec: EdgePlacementSpec
    status: dict[str, Any] | None = Field(default=None, description="Ignored.")


_OBJECT_KEYS = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})


def _explain_form(body: Any) -> str:
    """A body with any object-level key is a whole EdgePlacement, otherwise just its spec."""
    if isinstance(body, dict) and _OBJECT_KEYS.intersection(body):
        return "EdgePlacement"
    if isinstance(body, EdgePlacement):
        return "EdgePlacement"
    return "EdgePlacementSpec"


ExplainRequest = Annotated[
    Annotated[EdgePlacement, Tag("EdgePlacement")] | Annotated[EdgePlacementSpec, Tag("EdgePlacementSpec")],
    Discriminator(_explain_form),
]
EXPLAIN_FORMS = ("EdgePlacement", "EdgePlacementSpec")


# --- Explain (response) --------------------------------------------------------------------------

class MatchedLocation(ApiModel):
    location: str
    selector_indexes: list[int]


class NotMatched(ApiModel):
    name: str
    reasons: list[str]


class PlacementExplanation(ApiModel):
    """What a placement spec selects in a space, and why everything else is not selected."""

    destinations: list[PlacementDestination]
    matched_locations: list[MatchedLocation]
    location_mismatches: list[NotMatched] = Field(description="Locations matching none of the locationSelectors.")
    target_mismatches: list[NotMatched] = Field(
        description="SyncTargets of matched Locations that the Location's instanceSelector does not select.")
    objects: list[SelectedObject]
    object_mismatches: list[NotMatched] = Field(description="Objects of the space matching no downsync test.")
    missing_crds: list[str] = Field(alias="missingCRDs")
    unserved_resources: list[str] = Field(
        description="What the downsync tests name (plural.group, or a group) that the space does not serve.")
    problems: list[str] = Field(description="Parts of the spec that are invalid or can never match.")


# --- conversions from plain objects and engine results -------------------------------------------

def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _string_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def label_selector(raw: Any) -> LabelSelector:
    raw = raw if isinstance(raw, dict) else {}
    expressions = [LabelSelectorRequirement(key=str(e.get("key", "")), operator=str(e.get("operator", "")),
                                            values=_strings(e.get("values")))
                   for e in raw.get("matchExpressions") or [] if isinstance(e, dict)]
    return LabelSelector(match_labels=_string_map(raw.get("matchLabels")), match_expressions=expressions)


def label_selectors(raw: Any) -> list[LabelSelector]:
    return [label_selector(s) for s in raw] if isinstance(raw, list) else []


def downsync_tests(raw: Any) -> list[DownsyncTest]:
    tests = []
    for t in raw if isinstance(raw, list) else []:
        if not isinstance(t, dict):
            continue
        group = t.get("apiGroup")
        tests.append(DownsyncTest(api_group=None if group is None else str(group),
                                  resources=_strings(t.get("resources")),
                                  namespaces=_strings(t.get("namespaces")),
                                  namespace_selectors=label_selectors(t.get("namespaceSelectors")),
                                  object_names=_strings(t.get("objectNames")),
                                  label_selectors=label_selectors(t.get("labelSelectors"))))
    return tests


def destination(d: Destination) -> PlacementDestination:
    return PlacementDestination(location=d.location_name, sync_target=d.sync_target_name,
                                sync_target_uid=d.sync_target_uid)


def selected_objects(objects: dict[ObjectRef, list[int]],
                     because: dict[ObjectRef, list[str]] | None = None) -> list[SelectedObject]:
    return [SelectedObject(group=ref.group, resource=ref.plural, namespace=ref.namespace, name=ref.name,
                           tests=sorted(i for i in tests if i >= 0), followed=FOLLOWED in tests,
                           dependency=DEPENDENCY in tests, because=(because or {}).get(ref, []))
            for ref, tests in sorted(objects.items())]


def not_matched(items: list[Mismatch]) -> list[NotMatched]:
    return [NotMatched(name=m.name, reasons=list(m.reasons)) for m in items]


def quantities(raw: Any) -> dict[str, str]:
    """A ResourceList (int-or-string quantities) as strings."""
    return _string_map(raw)


class UpsyncedCopy(ApiModel):
    cluster: str
    object: dict[str, Any] = Field(description="The object as the cluster has it (server fields removed).")


class UpsyncedObject(ApiModel):
    """An object clusters created and upsync brought into the space, with every cluster's copy."""

    group: str
    resource: str
    namespace: str
    name: str
    shown_from: str | None = Field(description="The cluster whose copy the space shows (the first by name).")
    clusters: list[UpsyncedCopy]


class UpsyncedList(ApiModel):
    space: str
    items: list[UpsyncedObject]
