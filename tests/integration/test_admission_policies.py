"""ValidatingAdmissionPolicies in a space: matching, Deny/Warn, messages, variables and params."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.harness import Hub, wait_for

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crds"
SUM = "c" * 64


def gadget(name: str, runtime: str, assets: dict | None = None) -> str:
    spec: dict = {"runtime": runtime}
    if assets is not None:
        spec["assets"] = assets
    return yaml.safe_dump({"apiVersion": "example.spacehub.io/v1", "kind": "GadgetClass", "metadata": {"name": name},
                           "spec": spec})


def asset(name: str) -> dict:
    return {name: {"url": f"https://example.com/{name}", "sha256": SUM}}


def install(hub: Hub, space: str) -> None:
    hub.kubectl("apply", "-f", str(FIXTURES / "gadgetclasses.yaml"), space=space)
    hub.kubectl("wait", "--for=condition=Established", "crd/gadgetclasses.example.spacehub.io", "--timeout=10s",
                space=space)
    hub.kubectl("apply", "-f", str(FIXTURES / "gadgetclass-policy.yaml"), space=space)


def test_a_policy_denies_with_its_own_message(hub: Hub, space: str) -> None:
    install(hub, space)
    good = gadget("sandboxed", "sandboxed", {"amd64": asset("shim"), "arm64": asset("shim")})
    hub.kubectl("apply", "-f", "-", space=space, input=good)
    bad = gadget("missing-shim", "sandboxed", {"amd64": asset("shim"), "arm64": asset("kernel")})
    out = hub.kubectl("apply", "-f", "-", space=space, input=bad, check=False)
    assert out.returncode != 0
    assert "a sandboxed GadgetClass must define a 'shim' asset for every architecture" in out.stderr
    assert "ValidatingAdmissionPolicy 'gadgetclass-assets' with binding 'gadgetclass-assets' denied" in out.stderr
    named = hub.kubectl("apply", "-f", "-", space=space, input=gadget("test-x", "sandboxed",
                                                                       {"amd64": asset("shim")}), check=False)
    assert "test class test-x must be native" in named.stderr
    hub.kubectl("apply", "-f", "-", space=space, input=gadget("native", "native"))
    # Updates are checked too.
    broken = gadget("sandboxed", "sandboxed", {"amd64": asset("kernel")})
    assert hub.kubectl("apply", "-f", "-", space=space, input=broken, check=False).returncode != 0


def test_warn_action_lets_the_request_through_with_a_warning(hub: Hub, space: str) -> None:
    install(hub, space)
    binding = yaml.safe_load_all((FIXTURES / "gadgetclass-policy.yaml").read_text())
    b = next(d for d in binding if d["kind"] == "ValidatingAdmissionPolicyBinding")
    b["spec"]["validationActions"] = ["Warn"]
    hub.kubectl("apply", "-f", "-", space=space, input=yaml.safe_dump(b))
    out = hub.kubectl("apply", "-f", "-", space=space, input=gadget("warned", "sandboxed", {}))
    assert "Warning:" in out.stderr and "must define a 'shim' asset" in out.stderr
    assert "gadgetclass.example.spacehub.io/warned created" in out.stdout


def test_policy_expressions_are_compiled_when_the_policy_is_written(hub: Hub, space: str) -> None:
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": "broken"},
              "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                               "operations": ["CREATE"], "resources": ["configmaps"]}]},
                       "validations": [{"expression": "object.metadata.name.startsWith("}]}}
    out = hub.kubectl("apply", "-f", "-", space=space, input=yaml.safe_dump(policy), check=False)
    assert out.returncode != 0 and "spec.validations[0].expression" in out.stderr
    assert "compilation failed" in out.stderr


def test_params_namespace_selector_and_match_conditions(hub: Hub, space: str) -> None:
    docs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "guarded", "labels": {"guard": "on"}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "limits", "namespace": "default"},
         "data": {"maxKeys": "2"}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": "max-keys"},
         "spec": {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                  "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                                                          "operations": ["CREATE", "UPDATE"],
                                                          "resources": ["configmaps"]}]},
                  "matchConditions": [{"name": "not-exempt",
                                       "expression": "!has(object.metadata.labels) || "
                                                     "!('exempt' in object.metadata.labels)"}],
                  "validations": [{"expression": "!has(object.data) || size(object.data) <= int(params.data.maxKeys)",
                                   "messageExpression": "'at most ' + params.data.maxKeys + ' keys, got ' + "
                                                        "string(size(object.data))",
                                   "reason": "Forbidden"}]}},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": "max-keys"},
         "spec": {"policyName": "max-keys", "validationActions": ["Deny"],
                  "paramRef": {"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"},
                  "matchResources": {"namespaceSelector": {"matchLabels": {"guard": "on"}}}}},
    ]
    hub.kubectl("apply", "-f", "-", space=space, input=yaml.safe_dump_all(docs))

    def cm(name: str, namespace: str, keys: int, labels: dict | None = None) -> str:
        meta: dict = {"name": name, "namespace": namespace}
        if labels:
            meta["labels"] = labels
        return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                               "data": {f"k{i}": "v" for i in range(keys)}})

    denied = wait_for(lambda: (r := hub.kubectl("apply", "-f", "-", space=space, input=cm("big", "guarded", 3),
                                                check=False)).returncode != 0 and r, timeout=10,
                      message="the policy to take effect")
    assert "at most 2 keys, got 3" in denied.stderr and "Forbidden" in denied.stderr
    hub.kubectl("apply", "-f", "-", space=space, input=cm("small", "guarded", 2))
    hub.kubectl("apply", "-f", "-", space=space, input=cm("big", "default", 3))  # namespace not selected
    hub.kubectl("apply", "-f", "-", space=space, input=cm("exempt", "guarded", 5, {"exempt": "yes"}))
