"""The Agent Substrate CRDs and admission policy from ../shared/corpus apply and enforce their own rules.

The corpus is read in place (never copied); these tests skip cleanly where ../shared is absent.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml

from tests.agent_substrate import CORPUS, CRDS, DIGEST, crd_files, instances, load, needs_corpus
from tests.harness import Hub

pytestmark = needs_corpus


@pytest.fixture
def substrate(hub: Hub, space: str) -> str:
    for crd in crd_files():
        hub.kubectl("apply", "-f", str(crd), space=space)
    for crd in CRDS:
        hub.kubectl("wait", "--for=condition=Established", f"crd/{crd}.ate.dev", "--timeout=10s", space=space)
    hub.kubectl("apply", "-f", str(CORPUS / "crds" / "sandboxconfig-validation-vap.yaml"), space=space)
    hub.kubectl("create", "-f", "-", space=space, input=yaml.safe_dump(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ate-system"}}))
    return space


def apply(hub: Hub, space: str, obj: dict[str, Any], check: bool = True) -> Any:
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    if obj["kind"] in ("ActorTemplate", "WorkerPool"):
        namespace = meta.setdefault("namespace", "default")
        # The demos live in their own namespaces, which upstream creates separately.
        hub.kubectl("create", "namespace", namespace, space=space, check=False)
    return hub.kubectl("apply", "-f", "-", space=space, input=yaml.safe_dump(obj), check=check)


def assert_kept(applied: Any, stored: Any, path: str = "") -> None:
    """Every value ``applied`` holds is in ``stored`` unchanged (which may add defaults and status)."""
    if isinstance(applied, dict):
        assert isinstance(stored, dict), f"{path}: {stored!r} is not an object"
        for key, value in applied.items():
            assert key in stored, f"{path}.{key} was dropped"
            assert_kept(value, stored[key], f"{path}.{key}")
    else:
        assert applied == stored, f"{path}: applied {applied!r}, stored {stored!r}"


def test_valid_instances_are_accepted_and_stored_as_written(hub: Hub, substrate: str) -> None:
    objects = [*instances("ActorTemplate"), *instances("WorkerPool"), *instances("SandboxConfig")]
    assert instances("ActorTemplate"), "the corpus should contain ActorTemplates"
    for obj in objects:
        apply(hub, substrate, obj)
    for obj in objects:
        meta = obj["metadata"]
        where = ["-n", meta.get("namespace", "default")] if obj["kind"] in ("ActorTemplate", "WorkerPool") else []
        stored = yaml.safe_load(hub.kubectl("get", f"{obj['kind'].lower()}.ate.dev", meta["name"], *where, "-o",
                                            "yaml", space=substrate).stdout)
        assert_kept(obj["spec"], stored["spec"], f"{obj['kind']} {meta['name']}: spec")


def test_an_image_without_a_digest_is_rejected(hub: Hub, substrate: str) -> None:
    template = copy.deepcopy(instances("ActorTemplate")[0])
    template["metadata"]["name"] = "unpinned"
    containers = template["spec"].get("containers") or []
    assert containers
    containers[0]["image"] = "registry.example/app:latest"
    out = apply(hub, substrate, template, check=False)
    assert "All images must be pinned (changing the image invalidates snapshots)" in out.stderr


def test_an_actor_template_spec_cannot_change(hub: Hub, substrate: str) -> None:
    template = copy.deepcopy(instances("ActorTemplate")[0])
    template["metadata"]["name"] = "frozen"
    apply(hub, substrate, template)
    changed = copy.deepcopy(template)
    changed["spec"]["containers"][0]["image"] = "registry.example/other" + DIGEST
    out = apply(hub, substrate, changed, check=False)
    assert out.returncode != 0
    crd = load(CORPUS / "crds" / "ate.dev_actortemplates.yaml")[0]
    rules = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"].get(
        "x-kubernetes-validations") or []
    messages = [r.get("message", "") for r in rules if "oldSelf" in r.get("rule", "")]
    assert messages and any(m in out.stderr for m in messages)


def test_a_microvm_template_with_a_durable_dir_is_rejected(hub: Hub, substrate: str) -> None:
    micro = [t for t in instances("ActorTemplate") if (t.get("spec") or {}).get("sandboxClass") == "microvm"]
    template = copy.deepcopy(micro[0] if micro else instances("ActorTemplate")[0])
    template["metadata"]["name"] = "micro-durable"
    template["spec"]["sandboxClass"] = "microvm"
    container = template["spec"]["containers"][0]
    container["volumeMounts"] = [{"name": "state", "mountPath": "/state"}]
    template["spec"]["volumes"] = [{"name": "state", "durableDir": {}}]
    out = apply(hub, substrate, template, check=False)
    assert out.returncode != 0, out.stdout
    crd_text = (CORPUS / "crds" / "ate.dev_actortemplates.yaml").read_text()
    durable_messages = [m for m in re.findall(r"message: (.+)", crd_text) if "durable" in m.lower()]
    assert any(m.strip().strip("'\"")[:40] in out.stderr for m in durable_messages), out.stderr


def test_a_gvisor_sandbox_config_missing_runsc_is_rejected_by_the_policy(hub: Hub, substrate: str) -> None:
    config = copy.deepcopy(instances("SandboxConfig")[0])
    config["metadata"]["name"] = "gvisor-incomplete"
    config["spec"]["sandboxClass"] = "gvisor"
    assets = config["spec"].setdefault("assets", {})
    first_arch = next(iter(assets), "amd64")
    assets[first_arch] = {k: v for k, v in (assets.get(first_arch) or {}).items() if k != "runsc"} or {
        "other": {"url": "https://example.com/x", "sha256": "a" * 64}}
    out = apply(hub, substrate, config, check=False)
    assert "a gvisor SandboxConfig must define a 'runsc' asset for every architecture under spec.assets" in out.stderr


def test_a_sha256_that_is_not_64_hex_digits_is_rejected(hub: Hub, substrate: str) -> None:
    config = copy.deepcopy(instances("SandboxConfig")[0])
    config["metadata"]["name"] = "bad-digest"
    arch = next(iter(config["spec"]["assets"]))
    name = next(iter(config["spec"]["assets"][arch]))
    config["spec"]["assets"][arch][name]["sha256"] = "abc123"
    out = apply(hub, substrate, config, check=False)
    assert out.returncode != 0
    assert "^[a-f0-9]{64}$" in out.stderr
