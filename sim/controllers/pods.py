"""The pod lifecycle: scheduling of unbound pods, a kubelet's status stages, and pod clean-up.

* A pod without ``spec.nodeName`` (created by a client, or while no node had room) is bound by the
  :class:`~sim.controllers.scheduler.Scheduler` (as ``kube-scheduler``); while no node fits it
  stays Pending with ``PodScheduled=False``/``Unschedulable`` and is retried whenever a node or pod of
  its cluster changes.
* A bound Pending pod becomes Running and Ready ``ready_delay`` seconds after it was first seen bound:
  pod IP from its node's CIDR, host IP, container statuses, the five pod conditions (as ``kubelet``).
* A run-to-completion pod (``restartPolicy`` not ``Always``, e.g. a Job's) finishes ``ready_delay``
  seconds after it started running (``sim.spacehub.io/run-seconds`` overrides that per pod), with
  exit code 0 (Succeeded) or the one in ``sim.spacehub.io/exit-code`` (Failed).
* A pod whose container image the cluster's ``imagePullFailures`` fault names stays Pending instead, its
  containers waiting in ``ErrImagePull`` and then ``ImagePullBackOff`` with kubelet's messages and Events
  (``Failed``, ``BackOff``), retried every ``PULL_RETRY_SECONDS`` until the fault is cleared.
* A pod bound to a node that no longer exists is deleted (the pod garbage collector's rule).
"""

from __future__ import annotations

import copy
import hashlib
import time
from typing import Any

from apiserver.events import Involved
from apiserver.store import Key
from apiserver.writeoptions import now_rfc3339
from sim.controllers.base import Context, Controller
from sim.controllers.cache import NODES, PODS
from sim.controllers.nodes import node_internal_ip
from sim.controllers.util import Obj, condition, deleting, dicts, get, meta, phase

EXIT_CODE_ANNOTATION = "sim.spacehub.io/exit-code"
PULL_RETRY_SECONDS = 2.0  # how often a kubelet tries a failing image again (kubelet backs off up to 5 minutes)
RUN_SECONDS_ANNOTATION = "sim.spacehub.io/run-seconds"


def runs_to_completion(pod: Obj) -> bool:
    return get(pod, "spec", "restartPolicy") in ("Never", "OnFailure")


def _annotation_number(pod: Obj, name: str) -> float | None:
    value = get(pod, "metadata", "annotations", name)
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _pod_condition(pod: Obj, kind: str, status: str, reason: str = "", message: str = "") -> Obj:
    old = condition(pod, kind)
    since = old.get("lastTransitionTime") if old and old.get("status") == status else None
    out: Obj = {"type": kind, "status": status, "lastTransitionTime": since or now_rfc3339()}
    if reason:
        out["reason"] = reason
    if message:
        out["message"] = message
    return out


def _container_id(pod: Obj, name: str) -> str:
    return "sim://" + hashlib.sha256(f"{meta(pod).get('uid')}/{name}".encode()).hexdigest()


def _image_id(image: Any) -> str:
    return f"sim://{image}"


def running_status(pod: Obj, node: Obj, pod_ip: str) -> Obj:
    now = now_rfc3339()
    status = copy.deepcopy(pod.get("status")) if isinstance(pod.get("status"), dict) else {}
    started = status.get("startTime") or now
    host_ip = node_internal_ip(node)
    ip = host_ip if get(pod, "spec", "hostNetwork") is True else pod_ip
    status.update(
        phase="Running",
        conditions=[_pod_condition(pod, "PodReadyToStartContainers", "True"),
                    _pod_condition(pod, "Initialized", "True"), _pod_condition(pod, "Ready", "True"),
                    _pod_condition(pod, "ContainersReady", "True"), _pod_condition(pod, "PodScheduled", "True")],
        hostIP=host_ip, hostIPs=[{"ip": host_ip}], podIP=ip, podIPs=[{"ip": ip}], startTime=started,
        containerStatuses=[{
            "name": c.get("name", ""), "state": {"running": {"startedAt": now}}, "lastState": {}, "ready": True,
            "restartCount": 0, "image": c.get("image", ""), "imageID": _image_id(c.get("image")),
            "containerID": _container_id(pod, str(c.get("name"))), "started": True,
        } for c in dicts(get(pod, "spec", "containers"))],
    )
    init = dicts(get(pod, "spec", "initContainers"))
    if init:
        status["initContainerStatuses"] = [{
            "name": c.get("name", ""), "ready": True, "restartCount": 0, "image": c.get("image", ""),
            "imageID": _image_id(c.get("image")), "containerID": _container_id(pod, str(c.get("name"))),
            "started": False, "lastState": {},
            "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": now,
                                     "containerID": _container_id(pod, str(c.get("name")))}},
        } for c in init]
    status.pop("reason", None)
    status.pop("message", None)
    return status


def pull_error(image: str) -> str:
    """What containerd says about an image it cannot find, as kubelet passes it on."""
    return (f'rpc error: code = NotFound desc = failed to pull and unpack image "{image}": failed to resolve '
            f'reference "{image}": {image}: not found')


def pull_failed_status(pod: Obj, failing: set[str], reason: str) -> Obj:
    """Pending with the failing containers waiting in ``reason`` (ErrImagePull, then ImagePullBackOff)."""
    status = copy.deepcopy(pod.get("status")) if isinstance(pod.get("status"), dict) else {}
    containers = dicts(get(pod, "spec", "containers"))
    names = [str(c.get("name", "")) for c in containers]
    unready = f"containers with unready status: [{' '.join(names)}]"
    status["phase"] = "Pending"
    status["conditions"] = [_pod_condition(pod, "PodReadyToStartContainers", "True"),
                            _pod_condition(pod, "Initialized", "True"),
                            _pod_condition(pod, "Ready", "False", "ContainersNotReady", unready),
                            _pod_condition(pod, "ContainersReady", "False", "ContainersNotReady", unready),
                            _pod_condition(pod, "PodScheduled", "True")]
    status.setdefault("startTime", now_rfc3339())
    statuses = []
    for c in containers:
        image = str(c.get("image", ""))
        if image in failing:
            message = pull_error(image) if reason == "ErrImagePull" else f'Back-off pulling image "{image}"'
            waiting = {"reason": reason, "message": message}
        else:
            waiting = {"reason": "ContainerCreating"}
        statuses.append({"name": c.get("name", ""), "state": {"waiting": waiting}, "lastState": {}, "ready": False,
                         "restartCount": 0, "image": image, "imageID": "", "started": False})
    status["containerStatuses"] = statuses
    return status


def finished_status(pod: Obj, exit_code: int) -> Obj:
    now = now_rfc3339()
    status = copy.deepcopy(pod.get("status")) if isinstance(pod.get("status"), dict) else {}
    succeeded = exit_code == 0
    status["phase"] = "Succeeded" if succeeded else "Failed"
    reason = "PodCompleted" if succeeded else "PodFailed"
    status["conditions"] = [_pod_condition(pod, "PodReadyToStartContainers", "False"),
                            _pod_condition(pod, "Initialized", "True"),
                            _pod_condition(pod, "Ready", "False", reason),
                            _pod_condition(pod, "ContainersReady", "False", reason),
                            _pod_condition(pod, "PodScheduled", "True")]
    statuses = []
    for cs in dicts(status.get("containerStatuses")):
        started = get(cs, "state", "running", "startedAt") or status.get("startTime") or now
        statuses.append({**cs, "ready": False, "started": False, "state": {"terminated": {
            "exitCode": exit_code, "reason": "Completed" if succeeded else "Error", "startedAt": started,
            "finishedAt": now, "containerID": cs.get("containerID", "")}}})
    status["containerStatuses"] = statuses
    return status


class PodController(Controller):
    watches = (PODS, NODES)
    manager = "kubelet"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx, "pods")
        self._since: dict[tuple[Key, str], float] = {}
        self._unscheduled: dict[str, set[Key]] = {}

    def observe(self, key: Key, old: Obj | None, new: Obj | None) -> None:
        if key.resource == NODES:
            if new is None:
                for pod_key, pod in self.cache.all(key.space, PODS):
                    if get(pod, "spec", "nodeName") == key.name:
                        self.add(pod_key)
            self._retry_unscheduled(key.space)
            return
        if new is None:
            self.ctx.ips.release(key)
            self._since.pop((key, "Pending"), None)
            self._since.pop((key, "Running"), None)
            self._forget_unscheduled(key)
            self._retry_unscheduled(key.space)
            return
        if deleting(new):
            return
        if not get(new, "spec", "nodeName"):
            self._unscheduled.setdefault(key.space, set()).add(key)
            self.add(key)
            return
        self._forget_unscheduled(key)
        if self.cache.node(key.space, str(get(new, "spec", "nodeName"))) is None:
            self.add(key)  # bound to a node that is gone: to be deleted
            return
        stage = phase(new)
        if stage == "Pending" or (stage == "Running" and runs_to_completion(new)):
            self._since.setdefault((key, stage), time.monotonic())
            self.add(key)
        elif stage in ("Succeeded", "Failed"):
            self._retry_unscheduled(key.space)  # its requests no longer count on the node

    def _forget_unscheduled(self, key: Key) -> None:
        waiting = self._unscheduled.get(key.space)
        if waiting is not None:
            waiting.discard(key)
            if not waiting:
                del self._unscheduled[key.space]

    def _retry_unscheduled(self, space: str) -> None:
        for pod in list(self._unscheduled.get(space, ())):
            self.add(pod)

    def _wait(self, key: Key, stage: str, seconds: float) -> float:
        started = self._since.setdefault((key, stage), time.monotonic())
        return started + seconds - time.monotonic()

    async def handle(self, key: Any) -> bool:
        pod = self.cache.get(key)
        if pod is None or deleting(pod):
            return False
        node_name = get(pod, "spec", "nodeName")
        if not node_name:
            await self._bind(key, pod)
            return False
        node = self.cache.node(key.space, str(node_name))
        if node is None:
            await self.delete(key)
            return False
        stage = phase(pod)
        if stage == "Pending":
            wait = self._wait(key, stage, self.ctx.ready_delay)
            if wait > 0:
                self.add_after(key, wait)
                return False
            failing = {str(c.get("image", "")) for c in dicts(get(pod, "spec", "containers"))
                       if self.ctx.pull_fails(key.space, str(c.get("image", "")))}
            if failing:
                await self._pull_failed(key, pod, str(node_name), failing)
                self.add_after(key, PULL_RETRY_SECONDS)
                return False
            ip = self.ctx.ips.assign(key, node)
            if ip is None:
                return True  # the node has no pod CIDR yet
            await self.set_status(key, lambda current: running_status(current, node, ip))
        elif stage == "Running" and runs_to_completion(pod):
            run = _annotation_number(pod, RUN_SECONDS_ANNOTATION)
            wait = self._wait(key, stage, self.ctx.ready_delay if run is None else run)
            if wait > 0:
                self.add_after(key, wait)
                return False
            exit_code = int(_annotation_number(pod, EXIT_CODE_ANNOTATION) or 0)
            await self.set_status(key, lambda current: finished_status(current, exit_code))
        return False

    async def _pull_failed(self, key: Key, pod: Obj, node: str, failing: set[str]) -> None:
        """kubelet's pull failure: ErrImagePull the first time, ImagePullBackOff after, with its Events."""
        waiting = {get(cs, "state", "waiting", "reason") for cs in dicts(get(pod, "status", "containerStatuses"))}
        reason = "ImagePullBackOff" if waiting & {"ErrImagePull", "ImagePullBackOff"} else "ErrImagePull"
        status = pull_failed_status(pod, failing, reason)
        if status != pod.get("status"):
            await self.write_status(key, pod, status)
        involved = Involved(key.space, "Pod", "v1", key.namespace, key.name, str(meta(pod).get("uid", "")))
        events = self.ctx.events
        for image in sorted(failing):
            await events.record(involved, "Normal", "Pulling", f'Pulling image "{image}"', host=node)
            await events.record(involved, "Warning", "Failed", f'Failed to pull image "{image}": {pull_error(image)}',
                                host=node)
            await events.record(involved, "Warning", "Failed", f"Error: {reason}", host=node)
            if reason == "ImagePullBackOff":
                await events.record(involved, "Normal", "BackOff", f'Back-off pulling image "{image}"', host=node)

    async def _bind(self, key: Key, pod: Obj) -> None:
        with self.ctx.scheduler.reserve(key.space, pod.get("spec")) as (node, why):
            if node is None:
                unschedulable = _pod_condition(pod, "PodScheduled", "False", "Unschedulable", why)
                current = condition(pod, "PodScheduled")
                if current is None or current.get("message") != why or current.get("status") != "False":
                    status = copy.deepcopy(pod.get("status")) if isinstance(pod.get("status"), dict) else {}
                    status["phase"] = "Pending"
                    status["conditions"] = [c for c in dicts(status.get("conditions"))
                                            if c.get("type") != "PodScheduled"] + [unschedulable]
                    await self.write_status(key, pod, status)
                return

            def bind(obj: Obj) -> Obj:
                spec = obj.setdefault("spec", {})
                if not spec.get("nodeName"):
                    spec["nodeName"] = node
                return obj

            await self.update(key, bind, manager="kube-scheduler")
