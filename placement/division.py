"""Replica division: one object's ``spec.replicas`` split across its clusters, so the fleet runs what was asked.

An object opts in with ``spacehub.io/replica-division``:

- ``even`` — equal shares;
- ``weighted`` — proportional to a number in a SyncTarget label (``spacehub.io/weight``, or the label that
  ``spacehub.io/replica-weight-label`` names); a cluster without a valid weight gets none, and if no
  cluster has one the shares are even;
- ``capacity`` — proportional to how many replicas each cluster can hold: its allocatable CPU and memory (as
  its syncer reports them) over what one replica requests (the pod template's containers), which is also
  the most it is given; without requests, proportional to allocatable CPU.

Shares are the exact apportionment of the total (largest remainders, ties by cluster name) with each
cluster's maximum respected: a capped cluster's surplus goes to the others in proportion. The shares always
add up to the total; if the clusters cannot hold it all, each gets its maximum and the rest is spread by
weight anyway (``over_capacity`` says so). Pure: callers pass the object and the SyncTargets.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from apimachinery.quantity import parse_quantity

DIVISION_ANNOTATION = "spacehub.io/replica-division"
WEIGHT_LABEL_ANNOTATION = "spacehub.io/replica-weight-label"
DEFAULT_WEIGHT_LABEL = "spacehub.io/weight"
MODES = ("even", "weighted", "capacity")


class DivisionError(ValueError):
    """An annotation that asks for a division spacehub cannot make (an unknown mode)."""


@dataclass(frozen=True)
class Division:
    mode: str
    weight_label: str
    per_replica: tuple[tuple[str, Decimal], ...]  # (cpu|memory, request of one replica), capacity mode

    def weights(self, targets: Sequence[str], sync_target: Any) -> tuple[dict[str, float], dict[str, int | None]]:
        """Each cluster's weight and maximum; ``sync_target(name)`` gives the SyncTarget object."""
        weights: dict[str, float] = {}
        maxima: dict[str, int | None] = {}
        for name in targets:
            obj = sync_target(name) or {}
            maxima[name] = None
            if self.mode == "even":
                weights[name] = 1.0
            elif self.mode == "weighted":
                weights[name] = _number(((obj.get("metadata") or {}).get("labels") or {}).get(self.weight_label))
            else:
                allocatable = (obj.get("status") or {}).get("allocatable") or {}
                fits = _fits(allocatable, self.per_replica)
                weights[name] = float(fits) if fits is not None else float(_quantity(allocatable.get("cpu")))
                maxima[name] = fits
        if not any(weights.values()):
            weights = dict.fromkeys(targets, 1.0)
        return weights, maxima


def division_of(obj: Mapping[str, Any]) -> Division | None:
    """What the object asks; raises DivisionError for an unknown mode."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    mode = str(annotations.get(DIVISION_ANNOTATION) or "").strip().lower()
    if not mode:
        return None
    if mode not in MODES:
        raise DivisionError(f"annotation {DIVISION_ANNOTATION}: {mode!r} is not one of {', '.join(MODES)}")
    label = str(annotations.get(WEIGHT_LABEL_ANNOTATION) or DEFAULT_WEIGHT_LABEL)
    return Division(mode, label, tuple(sorted(per_replica_requests(obj).items())))


def divide(total: int, weights: Mapping[str, float], maxima: Mapping[str, int | None] | None = None) \
        -> tuple[dict[str, int], bool]:
    """``total`` split by ``weights`` (largest remainders), each share at most its maximum while the others
    can take the rest; returns the shares and whether the clusters could not hold the total."""
    names = sorted(weights)
    if not names:
        return {}, False
    caps = {n: (maxima or {}).get(n) for n in names}
    shares = dict.fromkeys(names, 0)
    room = sum(c for c in caps.values() if c is not None) if all(c is not None for c in caps.values()) else None
    over = room is not None and room < total
    if over:  # everyone gets their maximum; what is left is spread by weight, ignoring maxima
        shares = {n: int(caps[n] or 0) for n in names}
        extra, _ = divide(total - sum(shares.values()), weights)
        return {n: shares[n] + extra.get(n, 0) for n in names}, True
    open_ = [n for n in names if weights[n] > 0] or names
    left = total
    while left > 0 and open_:
        part = _apportion(left, {n: weights[n] or 1.0 for n in open_})
        capped = [n for n in open_ if caps[n] is not None and shares[n] + part[n] > caps[n]]  # type: ignore[operator]
        if not capped:
            for n in open_:
                shares[n] += part[n]
            break
        for n in capped:  # give the capped their maximum, then share the rest among the others
            left -= caps[n] - shares[n]  # type: ignore[operator]
            shares[n] = caps[n]  # type: ignore[assignment]
        open_ = [n for n in open_ if n not in capped]
    return shares, False


def _apportion(total: int, weights: Mapping[str, float]) -> dict[str, int]:
    whole = sum(weights.values())
    exact = {n: total * w / whole for n, w in weights.items()}
    shares = {n: math.floor(x) for n, x in exact.items()}
    remainder = total - sum(shares.values())
    for n in sorted(weights, key=lambda n: (-(exact[n] - shares[n]), n))[:remainder]:
        shares[n] += 1
    return shares


def per_replica_requests(obj: Mapping[str, Any]) -> dict[str, Decimal]:
    """What one replica requests: the pod template's containers' requests, summed."""
    spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
    total: dict[str, Decimal] = {}
    for container in spec.get("containers") or []:
        requests = ((container or {}).get("resources") or {}).get("requests") or {}
        for resource in ("cpu", "memory"):
            if resource in requests:
                total[resource] = total.get(resource, Decimal(0)) + _quantity(requests[resource])
    return {k: v for k, v in total.items() if v > 0}


def _fits(allocatable: Mapping[str, Any], per_replica: tuple[tuple[str, Decimal], ...]) -> int | None:
    if not per_replica:
        return None
    return min(int(_quantity(allocatable.get(resource)) // amount) for resource, amount in per_replica)


def _quantity(value: Any) -> Decimal:
    quantity = parse_quantity(value)
    return quantity if quantity is not None else Decimal(0)


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) and number > 0 else 0.0
