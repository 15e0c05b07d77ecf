"""Crash safety and compaction: acknowledged writes survive SIGKILL; old revisions expire with 410."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tests.harness import Hub, wait_for

CM = "/clusters/root/api/v1/namespaces/default/configmaps"


def _create(hub: Hub, names: list[str]) -> list[str]:
    acknowledged = []
    with hub.client() as c:
        for name in names:
            try:
                r = c.post(CM, json={"metadata": {"name": name}, "data": {"n": name}})
            except Exception:  # the hub was killed mid-request: not acknowledged
                break
            if r.status_code == 201:
                acknowledged.append(name)
    return acknowledged


def test_sigkill_loses_no_acknowledged_write_and_watches_resume(fresh_hub: Hub) -> None:
    hub = fresh_hub
    with hub.client() as c:
        start = c.get(CM).json()["metadata"]["resourceVersion"]
    with ThreadPoolExecutor(8) as pool:
        batches = [[f"crash-{w}-{i}" for i in range(40)] for w in range(8)]
        futures = [pool.submit(_create, hub, b) for b in batches]
        acknowledged = [n for f in futures for n in f.result()]
    hub.kill()
    hub.start()
    with hub.client() as c:
        live = {i["metadata"]["name"] for i in c.get(CM).json()["items"]}
        assert set(acknowledged) <= live
        # A client resumes its watch from the last resourceVersion it saw before the crash.
        events: list[dict[str, Any]] = []
        with c.stream("GET", CM, params={"watch": "true", "resourceVersion": start}) as r:
            for line in r.iter_lines():
                if line:
                    events.append(json.loads(line))
                if len(events) == len(acknowledged):
                    break
        assert {e["object"]["metadata"]["name"] for e in events} == set(acknowledged)
        assert all(e["type"] == "ADDED" for e in events)


def test_sigkill_mid_write_storm_keeps_every_acknowledged_write(fresh_hub: Hub) -> None:
    hub = fresh_hub
    acknowledged: list[str] = []
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(_create, hub, [f"storm-{w}-{i}" for i in range(2000)]) for w in range(4)]
        wait_for(lambda: hub.kubectl("get", "cm", "-n", "default", "-o", "name", space="root")
                 .stdout.count("storm-") >= 50, message="writes to be flowing")
        hub.kill()
        acknowledged = [n for f in futures for n in f.result()]
    assert acknowledged
    hub.start()
    with hub.client() as c:
        live = {i["metadata"]["name"] for i in c.get(CM).json()["items"]}
    missing = set(acknowledged) - live
    assert not missing, f"{len(missing)} acknowledged writes lost"


def test_compaction_expires_old_watches_and_continue_tokens(compacting_hub: Hub) -> None:
    hub = compacting_hub  # compaction every 0.5 s keeping 20 revisions
    with hub.client() as c:
        start = c.get(CM).json()["metadata"]["resourceVersion"]
        for i in range(30):
            c.post(CM, json={"metadata": {"name": f"old-{i:02d}"}}).raise_for_status()
        token = c.get(CM, params={"limit": 5}).json()["metadata"]["continue"]
        for i in range(60):
            c.patch(f"{CM}/old-00", json={"data": {"i": str(i)}},
                    headers={"Content-Type": "application/merge-patch+json"}).raise_for_status()

        def expired_event() -> dict[str, Any] | None:
            with c.stream("GET", CM, params={"watch": "true", "resourceVersion": start}) as r:
                for line in r.iter_lines():
                    if line:
                        event = json.loads(line)
                        return event if event["type"] == "ERROR" else None
            return None

        event = wait_for(expired_event, timeout=20, message="watch from a compacted revision to expire")
        assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"

        def expired_page() -> Any:
            page = c.get(CM, params={"limit": 5, "continue": token})
            return page if page.status_code != 200 else None

        # Compaction runs every 0.5 s: the token's revision, newer than ``start``, may go in a later pass.
        r = wait_for(expired_page, timeout=20, message="a continue token from a compacted revision to expire")
        assert r.status_code == 410 and r.json()["reason"] == "Expired"
        # Compaction never loses current state (kube-root-ca.crt, every namespace's, aside).
        assert len([i for i in c.get(CM).json()["items"] if i["metadata"]["name"] != "kube-root-ca.crt"]) == 30
