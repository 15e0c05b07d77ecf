"""Admission webhooks in a space, called over real HTTPS: mutation by JSON patch, refusal, dry run,
matchConditions, kube's errors for a webhook that times out or answers garbage (Fail and Ignore), and
the hub staying responsive while a webhook hangs."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import KUBECTL, Hub, kubectl_yaml
from tests.polling import wait_for
from tests.webhook_harness import MUTATED_LABEL, SLOW_SECONDS, WebhookServer, webhook_server

CONFIGMAPS = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
               "resources": ["configmaps"]}]


@pytest.fixture(scope="module")
def webhooks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookServer]:
    with webhook_server(tmp_path_factory.mktemp("webhook-pki")) as server:
        yield server


def configuration(kind: str, server: WebhookServer, name: str, endpoint: str, **hook: Any) -> str:
    webhook = {"name": name, "clientConfig": {"url": server.url(endpoint), "caBundle": server.ca_bundle},
               "rules": CONFIGMAPS, "sideEffects": "None", "admissionReviewVersions": ["v1"],
               # Only objects of the test that registered the webhook: the space's own writes are not slowed.
               "objectSelector": {"matchLabels": {"webhook-test": name}}, **hook}
    return yaml.safe_dump({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                           "metadata": {"name": name}, "webhooks": [webhook]})


def configmap(name: str, selector: str, data: dict[str, str] | None = None) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": name, "namespace": "default", "labels": {"webhook-test": selector}},
                           "data": data or {"a": "b"}})


def test_a_mutating_webhook_patches_and_a_validating_one_refuses(hub: Hub, space: str,
                                                                  webhooks: WebhookServer) -> None:
    hub.kubectl("apply", "-f", "-", space=space, input=configuration(
        "MutatingWebhookConfiguration", webhooks, "label.webhooks.test", "mutate",
        matchConditions=[{"name": "not-skipped", "expression": "object.metadata.name != 'skip-me'"}]))
    created = hub.kubectl("create", "-f", "-", "-o", "yaml", space=space,
                          input=configmap("patched", "label.webhooks.test"))
    assert "Warning: labelled by the test webhook" in created.stderr
    key, value = MUTATED_LABEL
    answered = kubectl_yaml(created)
    assert answered["metadata"]["labels"][key] == value and answered["metadata"]["resourceVersion"]
    got = kubectl_yaml(hub.kubectl("get", "configmap", "patched", "-o", "yaml", space=space))
    assert got["metadata"]["labels"][key] == value
    review = webhooks.seen("mutate")[-1]
    assert review["operation"] == "CREATE" and review["resource"] == {"group": "", "version": "v1",
                                                                       "resource": "configmaps"}
    assert review["namespace"] == "default" and review["dryRun"] is False
    # An update is patched too: the label a client removes is put back, and a change of data is kept.
    hub.kubectl("label", "configmap", "patched", f"{key}-", space=space)
    hub.kubectl("patch", "configmap", "patched", "-p", '{"data": {"a": "c"}}', space=space)
    stored = kubectl_yaml(hub.kubectl("get", "configmap", "patched", "-o", "yaml", space=space))
    assert stored["metadata"]["labels"][key] == value and stored["data"] == {"a": "c"}
    assert webhooks.seen("mutate")[-1]["operation"] == "UPDATE"
    # matchConditions: a false condition means the webhook is not called.
    calls = len(webhooks.seen("mutate"))
    hub.kubectl("create", "-f", "-", space=space, input=configmap("skip-me", "label.webhooks.test"))
    skipped = kubectl_yaml(hub.kubectl("get", "configmap", "skip-me", "-o", "yaml", space=space))
    assert key not in skipped["metadata"]["labels"] and len(webhooks.seen("mutate")) == calls

    hub.kubectl("apply", "-f", "-", space=space, input=configuration(
        "ValidatingWebhookConfiguration", webhooks, "deny.webhooks.test", "validate"))
    refused = hub.kubectl("create", "-f", "-", space=space, check=False,
                          input=configmap("refused", "deny.webhooks.test", {"forbidden": "x"}))
    assert refused.returncode != 0
    assert 'Error from server (Forbidden): error when creating "STDIN": admission webhook "deny.webhooks.test" ' \
           "denied the request: the key 'forbidden' is not allowed" in refused.stderr
    assert hub.kubectl("get", "configmap", "refused", space=space, check=False).returncode != 0
    # A dry run reaches the webhook marked as one (sideEffects: None allows it) and stores nothing.
    hub.kubectl("create", "--dry-run=server", "-f", "-", space=space, input=configmap("dry", "deny.webhooks.test"))
    assert webhooks.seen("validate")[-1]["dryRun"] is True
    assert hub.kubectl("get", "configmap", "dry", space=space, check=False).returncode != 0
    # Updates are reviewed too, with the old object.
    hub.kubectl("create", "-f", "-", space=space, input=configmap("kept", "deny.webhooks.test"))
    changed = hub.kubectl("apply", "-f", "-", space=space, check=False,
                          input=configmap("kept", "deny.webhooks.test", {"forbidden": "now"}))
    assert changed.returncode != 0 and "denied the request" in changed.stderr
    update = webhooks.seen("validate")[-1]
    assert update["operation"] == "UPDATE" and update["oldObject"]["data"] == {"a": "b"}


def test_the_validating_webhook_sees_the_mutated_object(hub: Hub, space: str, webhooks: WebhookServer) -> None:
    for kind, endpoint in (("MutatingWebhookConfiguration", "mutate"), ("ValidatingWebhookConfiguration", "validate")):
        hub.kubectl("apply", "-f", "-", space=space, input=configuration(kind, webhooks, "both.webhooks.test",
                                                                          endpoint))
    hub.kubectl("create", "-f", "-", space=space, input=configmap("ordered", "both.webhooks.test"))
    key, value = MUTATED_LABEL
    validated = [r for r in webhooks.seen("validate") if r["name"] == "ordered"]
    assert validated and validated[-1]["object"]["metadata"]["labels"][key] == value


def test_deletes_are_reviewed_with_the_old_object(hub: Hub, space: str, webhooks: WebhookServer) -> None:
    every_operation = [{**CONFIGMAPS[0], "operations": ["*"]}]
    hub.kubectl("apply", "-f", "-", space=space, input=configuration(
        "ValidatingWebhookConfiguration", webhooks, "delete.webhooks.test", "validate", rules=every_operation))
    hub.kubectl("create", "-f", "-", space=space, input=configmap("pinned", "delete.webhooks.test",
                                                                   {"undeletable": "yes"}))
    out = hub.kubectl("delete", "configmap", "pinned", space=space, check=False)
    assert out.returncode != 0
    assert 'admission webhook "delete.webhooks.test" denied the request: this object may not be deleted' in out.stderr
    review = webhooks.seen("validate")[-1]
    assert review["operation"] == "DELETE" and review["object"] is None and review["oldObject"]["metadata"][
        "name"] == "pinned"
    # The review names who asked, for a delete as for a create.
    created = next(r for r in webhooks.seen("validate") if r["name"] == "pinned" and r["operation"] == "CREATE")
    assert review["userInfo"] == created["userInfo"] and review["userInfo"]["username"] != "system:apiserver"
    hub.kubectl("get", "configmap", "pinned", space=space)
    hub.kubectl("create", "-f", "-", space=space, input=configmap("free", "delete.webhooks.test"))
    hub.kubectl("delete", "configmap", "free", space=space)


def test_if_needed_webhooks_are_called_again_after_a_later_change(hub: Hub, space: str,
                                                                   webhooks: WebhookServer) -> None:
    selector = "reinvoke.webhooks.test"
    # Called in the order of their configurations' names: the labeller first, then the annotator.
    for name, endpoint, policy in (("a.reinvoke.webhooks.test", "mutate", "IfNeeded"),
                                   ("b.reinvoke.webhooks.test", "annotate", "Never")):
        config = yaml.safe_load(configuration("MutatingWebhookConfiguration", webhooks, name, endpoint,
                                              reinvocationPolicy=policy))
        config["webhooks"][0]["objectSelector"] = {"matchLabels": {"webhook-test": selector}}
        hub.kubectl("apply", "-f", "-", space=space, input=yaml.safe_dump(config))
    hub.kubectl("create", "-f", "-", space=space, input=configmap("twice", selector))
    labelled = [r for r in webhooks.seen("mutate") if r["name"] == "twice"]
    assert len(labelled) == 2, "the IfNeeded webhook is called again after the annotator changed the object"
    assert labelled[1]["object"]["metadata"]["annotations"] == {"webhook.test/annotated": "yes"}
    got = kubectl_yaml(hub.kubectl("get", "configmap", "twice", "-o", "yaml", space=space))
    assert got["metadata"]["annotations"] == {"webhook.test/annotated": "yes"}
    assert got["metadata"]["labels"][MUTATED_LABEL[0]] == MUTATED_LABEL[1]


@pytest.mark.parametrize(("endpoint", "why"), [
    ("rename", "the patch changes metadata.name or metadata.namespace, which admission may not change"),
    ("mistype", 'the patched object cannot be decoded: ConfigMap in version "v1" cannot be handled as a ConfigMap'),
])
def test_a_patch_may_not_rename_or_break_the_object(hub: Hub, space: str, webhooks: WebhookServer, endpoint: str,
                                                    why: str) -> None:
    name = f"{endpoint}.webhooks.test"
    hub.kubectl("apply", "-f", "-", space=space, input=configuration(
        "MutatingWebhookConfiguration", webhooks, name, endpoint))
    out = hub.kubectl("create", "-f", "-", space=space, input=configmap("named", name), check=False)
    assert out.returncode != 0
    assert f'Internal error occurred: failed calling webhook "{name}": {why}' in out.stderr
    assert hub.kubectl("get", "configmap", "named", space=space, check=False).returncode != 0


def test_webhooks_never_review_admission_configuration(hub: Hub, space: str, webhooks: WebhookServer) -> None:
    """A dead webhook matching everything can still be removed."""
    everything = [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        hub.kubectl("apply", "-f", "-", space=space, input=configuration(
            kind, webhooks, "everything.webhooks.test", "garbage", rules=everything, objectSelector={}))
    refused = hub.kubectl("create", "configmap", "blocked", space=space, check=False)
    assert refused.returncode != 0 and 'failed calling webhook "everything.webhooks.test"' in refused.stderr
    hub.kubectl("delete", "mutatingwebhookconfiguration,validatingwebhookconfiguration",
                "everything.webhooks.test", space=space)
    hub.kubectl("create", "configmap", "allowed", space=space)


def test_namespace_selector_chooses_the_namespaces_reviewed(hub: Hub, space: str, webhooks: WebhookServer) -> None:
    name = "guard.webhooks.test"
    hub.kubectl("create", "namespace", "guarded", space=space)
    hub.kubectl("label", "namespace", "guarded", "guard=on", space=space)
    hub.kubectl("apply", "-f", "-", space=space, input=configuration(
        "ValidatingWebhookConfiguration", webhooks, name, "validate",
        namespaceSelector={"matchExpressions": [{"key": "guard", "operator": "In", "values": ["on"]}]}))
    bad = yaml.safe_load(configmap("bad", name, {"forbidden": "x"}))
    hub.kubectl("create", "-f", "-", space=space, input=yaml.safe_dump(bad))  # in default: not reviewed
    bad["metadata"]["namespace"] = "guarded"
    out = hub.kubectl("create", "-f", "-", space=space, input=yaml.safe_dump(bad), check=False)
    assert out.returncode != 0 and f'admission webhook "{name}" denied the request' in out.stderr
    assert webhooks.seen("validate")[-1]["namespace"] == "guarded"


def _max_get_latency(hub: Hub, space: str, until: subprocess.Popen[str]) -> float:
    """The slowest of the GETs made while ``until`` runs."""
    worst = 0.0
    with hub.client() as client:
        while until.poll() is None:
            start = time.monotonic()
            r = client.get(f"/clusters/{space}/api/v1/namespaces/default/configmaps")
            assert r.status_code == 200
            worst = max(worst, time.monotonic() - start)
    return worst


@pytest.mark.parametrize("endpoint", ["slow", "garbage"])
def test_a_failing_webhook_with_fail_gives_kubes_error(hub: Hub, space: str, webhooks: WebhookServer,
                                                        endpoint: str, tmp_path: Path) -> None:
    name = f"{endpoint}.webhooks.test"
    hub.kubectl("apply", "-f", "-", space=space, input=configuration(
        "ValidatingWebhookConfiguration", webhooks, name, endpoint, timeoutSeconds=2, failurePolicy="Fail"))
    calls = len(webhooks.seen(endpoint))
    started = time.monotonic()
    manifest = tmp_path / "failing.yaml"
    manifest.write_text(configmap("failing", name))
    create = subprocess.Popen([*_kubectl(hub, space), "create", "-f", str(manifest)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=hub.env)
    wait_for(lambda: len(webhooks.seen(endpoint)) > calls, timeout=30)
    worst = _max_get_latency(hub, space, create)
    out, err = create.communicate(timeout=30)
    elapsed = time.monotonic() - started
    assert create.returncode != 0, out
    why = f'Post "{webhooks.url(endpoint)}": context deadline exceeded' if endpoint == "slow" else \
        "received invalid webhook response"
    assert f'Error from server (InternalError): error when creating "{manifest}": Internal error occurred: failed ' \
           f'calling webhook "{name}": ' in err and why in err
    assert hub.kubectl("get", "configmap", "failing", space=space, check=False).returncode != 0
    # The hub answered other requests while the webhook hung, and held this one about its 2 s timeout, far
    # less than the webhook takes to answer (kubectl's own start-up is in the elapsed time too).
    assert worst < 1.0, f"a GET took {worst:.2f}s while the webhook was called"
    if endpoint == "slow":
        assert elapsed < SLOW_SECONDS / 2


def test_a_failing_webhook_with_ignore_lets_the_request_through_with_a_warning(hub: Hub, space: str,
                                                                              webhooks: WebhookServer) -> None:
    name = "ignored.webhooks.test"
    hub.kubectl("apply", "-f", "-", space=space, input=configuration(
        "MutatingWebhookConfiguration", webhooks, name, "garbage", failurePolicy="Ignore"))
    created = hub.kubectl("create", "-f", "-", space=space, input=configmap("through", name))
    assert f'Warning: failed calling webhook "{name}": received invalid webhook response' in created.stderr
    assert "configmap/through created" in created.stdout


def test_configurations_are_validated_like_kubes(hub: Hub, space: str, webhooks: WebhookServer) -> None:
    doc = yaml.safe_load(configuration("ValidatingWebhookConfiguration", webhooks, "svc.webhooks.test", "validate"))
    doc["webhooks"][0]["clientConfig"] = {"service": {"namespace": "default", "name": "hooks"}}
    out = hub.kubectl("apply", "-f", "-", space=space, input=yaml.safe_dump(doc), check=False)
    assert out.returncode != 0 and "webhooks[0].clientConfig.service: Forbidden: a space has no Services with " \
                                   "endpoints to call; give the webhook's address in clientConfig.url" in out.stderr
    doc["webhooks"][0]["clientConfig"] = {"url": "http://127.0.0.1/validate"}
    doc["webhooks"][0]["timeoutSeconds"] = 31
    del doc["webhooks"][0]["sideEffects"]
    out = hub.kubectl("apply", "-f", "-", space=space, input=yaml.safe_dump(doc), check=False)
    assert "webhooks[0].clientConfig.url: Invalid value: 'http://127.0.0.1/validate': 'https' is the only " \
           "allowed URL scheme" in out.stderr
    assert "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 " \
           "seconds" in out.stderr
    assert "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun" in out.stderr
    # Defaults are written as kube writes them, and the table shows how many webhooks there are.
    hub.kubectl("apply", "-f", "-", space=space, input=configuration(
        "MutatingWebhookConfiguration", webhooks, "defaults.webhooks.test", "mutate"))
    stored = kubectl_yaml(hub.kubectl("get", "mutatingwebhookconfiguration", "defaults.webhooks.test", "-o", "yaml",
                                      space=space))["webhooks"][0]
    assert (stored["failurePolicy"], stored["matchPolicy"], stored["timeoutSeconds"],
            stored["reinvocationPolicy"], stored["namespaceSelector"]) == ("Fail", "Equivalent", 10, "Never", {})
    table = hub.kubectl("get", "mutatingwebhookconfigurations", space=space).stdout
    assert table.split("\n")[0].split()[:2] == ["NAME", "WEBHOOKS"] and "defaults.webhooks.test   1" in table



def _kubectl(hub: Hub, space: str) -> list[str]:
    return [str(KUBECTL), "--server", f"{hub.base_url}/clusters/{space}"]
