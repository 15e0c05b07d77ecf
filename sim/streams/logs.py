"""Container logs of simulated pods: an in-memory store and ``pods/log`` with kubelet's options.

Every container that has started has a log. It opens with three deterministic lines, stamped with the
container's ``startedAt``::

    <cluster>/<pod>/<container> started
    image: <image>
    node: <node>

and then holds what a test added through ``POST /sim/v1/clusters/<c>/namespaces/<ns>/pods/<pod>/log`` (one
line each, stamped when added) and what was typed into ``kubectl attach -i`` (the main process echoes it). A
container whose status has ``lastState.terminated`` (it restarted) also has a previous log, opening with the
same lines stamped with that instance's start.

Logs live in the memory of the process serving the cluster, at most :data:`MAX_LINES` lines per container
(the oldest are dropped), and are lost when the pod goes away or the simulator restarts. A log ends when its
container stops running (the pod finished, is being deleted or is gone): followers get what is left, then the
end of the stream, as from kubelet.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
from collections import deque
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass

from starlette.datastructures import QueryParams

from apimachinery.durations import parse_time
from apimachinery.errors import Cause, bad_request, invalid
from apiserver.api.params import query_bool
from sim.streams.targets import Obj, container_spec, container_status, pod_name, pod_uid

MAX_LINES = 10_000
UTC = dt.UTC


@dataclass(frozen=True)
class LogLine:
    time: dt.datetime
    text: str


def kubelet_time(when: dt.datetime) -> str:
    """kubelet's ``RFC3339NanoFixed``: nine fractional digits, UTC."""
    when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond:06d}000Z"


class ContainerLog:
    """One container instance's log: bounded lines, a count of every line ever added, and who waits."""

    def __init__(self, lines: Iterable[LogLine], ended: bool) -> None:
        self.lines: deque[LogLine] = deque(lines, maxlen=MAX_LINES)
        self.added = len(self.lines)
        self.ended = ended
        self._changed = asyncio.Event()

    def append(self, texts: Iterable[str], when: dt.datetime | None = None) -> int:
        stamp = when or dt.datetime.now(UTC)
        count = 0
        for text in texts:
            for line in text.removesuffix("\n").split("\n"):
                self.lines.append(LogLine(stamp, line))
                count += 1
        self.added += count
        self._wake()
        return count

    def end(self) -> None:
        if not self.ended:
            self.ended = True
            self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def after(self, position: int) -> list[LogLine]:
        """The lines added after the first ``position`` ones (those still kept), read from the newest end."""
        count = min(max(self.added - position, 0), len(self.lines))
        return list(itertools.islice(reversed(self.lines), count))[::-1]

    async def wait(self, position: int) -> bool:
        """Until a line beyond ``position`` exists (True) or the log has ended (False)."""
        while self.added <= position:
            if self.ended:
                return False
            await self._changed.wait()
        return True


def _opening(cluster: str, pod: Obj, container: str, started: dt.datetime) -> list[LogLine]:
    image = str(container_spec(pod, container).get("image", ""))
    node = str((pod.get("spec") or {}).get("nodeName") or "")
    return [LogLine(started, f"{cluster}/{pod_name(pod)}/{container} started"), LogLine(started, f"image: {image}"),
            LogLine(started, f"node: {node}")]


class LogStore:
    """Every container log of the clusters of this process, by (pod uid, container, previous)."""

    def __init__(self) -> None:
        self._logs: dict[tuple[str, str, bool], ContainerLog] = {}
        self._by_pod: dict[str, set[tuple[str, str, bool]]] = {}

    def __len__(self) -> int:
        return len(self._logs)

    def log(self, cluster: str, pod: Obj, container: str, previous: bool = False) -> ContainerLog:
        """The log, made on first use from the pod's status (call after ``targets.check_logs``)."""
        key = (pod_uid(pod), container, previous)
        found = self._logs.get(key)
        if found is not None:
            return found
        status = container_status(pod, container) or {}
        state = (status.get("lastState") if previous else status.get("state")) or {}
        instance = state.get("running") or state.get("terminated") or {}
        started = parse_time(instance.get("startedAt")) or dt.datetime.now(UTC)
        deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
        made = ContainerLog(_opening(cluster, pod, container, started),
                            ended=previous or "running" not in state or deleting)
        self._logs[key] = made
        self._by_pod.setdefault(key[0], set()).add(key)
        return made

    def end(self, uid: str) -> None:
        """The pod's containers stopped: its current logs end (followers finish)."""
        for key in self._by_pod.get(uid, ()):
            if not key[2]:
                self._logs[key].end()

    def forget(self, uid: str) -> None:
        """The pod is gone: its logs end and are dropped."""
        for key in self._by_pod.pop(uid, ()):
            self._logs.pop(key).end()

    def end_all(self) -> None:
        """The server is stopping: every follower finishes."""
        for log in self._logs.values():
            log.end()


@dataclass(frozen=True)
class LogOptions:
    """``PodLogOptions`` from the query string, validated as kube-apiserver validates them."""

    container: str = ""
    follow: bool = False
    previous: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    since_seconds: int | None = None
    since_time: dt.datetime | None = None
    limit_bytes: int | None = None

    @classmethod
    def parse(cls, query: QueryParams, name: str) -> LogOptions:
        def integer(key: str) -> int | None:
            raw = query.get(key)
            if raw is None or raw == "":
                return None
            try:
                return int(raw)
            except ValueError:
                raise bad_request(f'{key}: invalid value "{raw}": not an integer') from None

        since_time = None
        if query.get("sinceTime"):
            since_time = parse_time(query["sinceTime"])
            if since_time is None:
                raise bad_request(f'sinceTime: invalid value "{query["sinceTime"]}": not an RFC 3339 time')
        options = cls(container=query.get("container") or "", follow=query_bool(query, "follow"),
                      previous=query_bool(query, "previous"), timestamps=query_bool(query, "timestamps"),
                      tail_lines=integer("tailLines"), since_seconds=integer("sinceSeconds"), since_time=since_time,
                      limit_bytes=integer("limitBytes"))
        options.validate(name)
        return options

    def validate(self, name: str) -> None:
        causes = []
        if self.tail_lines is not None and self.tail_lines < 0:
            causes.append(Cause("FieldValueInvalid", f"Invalid value: {self.tail_lines}: must be greater than or "
                                "equal to 0", "tailLines"))
        if self.limit_bytes is not None and self.limit_bytes < 1:
            causes.append(Cause("FieldValueInvalid", f"Invalid value: {self.limit_bytes}: must be greater than 0",
                                "limitBytes"))
        if self.since_seconds is not None and self.since_time is not None:
            causes.append(Cause("FieldValueForbidden", "Forbidden: at most one of `sinceTime` or `sinceSeconds` "
                                "may be specified", ""))
        elif self.since_seconds is not None and self.since_seconds < 1:
            causes.append(Cause("FieldValueInvalid", f"Invalid value: {self.since_seconds}: must be greater than 0",
                                "sinceSeconds"))
        if causes:
            raise invalid("PodLogOptions", "", name, causes)

    def since(self, now: dt.datetime) -> dt.datetime | None:
        if self.since_seconds is not None:
            return now - dt.timedelta(seconds=self.since_seconds)
        return self.since_time


def _render(lines: Iterable[LogLine], timestamps: bool) -> bytes:
    if timestamps:
        return "".join(f"{kubelet_time(line.time)} {line.text}\n" for line in lines).encode()
    return "".join(f"{line.text}\n" for line in lines).encode()


async def stream(log: ContainerLog, options: LogOptions) -> AsyncIterator[bytes]:
    """The log as kubelet serves it: since, then tail; with follow, every later line until the log ends."""
    budget = options.limit_bytes
    since = options.since(dt.datetime.now(UTC))
    position = log.added
    lines = [line for line in log.lines if since is None or line.time >= since]
    if options.tail_lines is not None:
        lines = lines[len(lines) - options.tail_lines:] if options.tail_lines else []
    chunk = _render(lines, options.timestamps)
    while True:
        if budget is not None:
            chunk = chunk[:budget]
            budget -= len(chunk)
        if chunk:
            yield chunk
        if not options.follow or budget == 0 or not await log.wait(position):
            return
        fresh = log.after(position)
        position = log.added
        chunk = _render(fresh, options.timestamps)


def ensure_lines(doc: object) -> tuple[str, list[str], bool]:
    """The admin endpoint's body ``{"container": "...", "lines": ["..."], "previous": false}``."""
    if not isinstance(doc, dict):
        raise bad_request("the body must be a JSON object with container, lines and previous")
    lines = doc.get("lines")
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        raise bad_request("lines must be a list of strings")
    container = doc.get("container") or ""
    if not isinstance(container, str):
        raise bad_request("container must be a string")
    previous = doc.get("previous", False)
    if not isinstance(previous, bool):
        raise bad_request("previous must be a boolean")
    unknown = set(doc) - {"container", "lines", "previous"}
    if unknown:
        raise bad_request(f"unknown fields: {', '.join(sorted(unknown))}")
    return container, lines, previous

