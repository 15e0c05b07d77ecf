"""A namespace being deleted when the hub stops is still Terminating when it starts again (the start-up read finds
it by its ``deletionTimestamp``; the other namespaces are read by name only): nothing new may be created in it,
and it goes once what holds it is gone."""

from __future__ import annotations

import json

from tests.harness import Hub, wait_for


def test_a_terminating_namespace_stays_terminating_across_a_restart(fresh_hub: Hub) -> None:
    hub = fresh_hub
    hub.create_space("ending")
    hub.kubectl("create", "namespace", "old", space="ending")
    hub.kubectl("create", "namespace", "kept", space="ending")
    hub.kubectl("apply", "-f", "-", space="ending", input=json.dumps({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "held", "namespace": "old", "finalizers": ["example.spacehub.io/hold"]}}))
    hub.kubectl("delete", "namespace", "old", "--wait=false", space="ending")

    def phase(name: str) -> str:
        got = hub.kubectl("get", "namespace", name, "-o", "json", space="ending", check=False)
        return json.loads(got.stdout)["status"]["phase"] if got.returncode == 0 else "gone"

    wait_for(lambda: phase("old") == "Terminating", timeout=30)
    hub.stop()
    hub.start()
    assert phase("old") == "Terminating"
    refused = hub.kubectl("create", "configmap", "new", "-n", "old", space="ending", check=False)
    assert refused.returncode != 0 and "being terminated" in refused.stderr
    hub.kubectl("create", "configmap", "new", "-n", "kept", space="ending")  # the others are Active
    hub.kubectl("patch", "configmap", "held", "-n", "old", "--type=merge", "-p", '{"metadata":{"finalizers":null}}',
                space="ending")
    wait_for(lambda: phase("old") == "gone", timeout=30, message="the namespace to go")
