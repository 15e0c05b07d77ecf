"""kubectl's generator subcommands send protobuf bodies; the space stores what a real cluster would."""

from __future__ import annotations

from tests.harness import Hub, kubectl_yaml


def get(hub: Hub, space: str, *args: str) -> dict:
    return kubectl_yaml(hub.kubectl("get", *args, "-o", "yaml", space=space))


def test_generator_subcommands_create_the_expected_objects(hub: Hub, space: str) -> None:
    run = hub.kubectl
    run("create", "namespace", "gen", space=space)
    assert get(hub, space, "namespace", "gen")["status"]["phase"] == "Active"

    run("create", "configmap", "c", "-n", "gen", "--from-literal=a=b", space=space)
    assert get(hub, space, "cm", "c", "-n", "gen")["data"] == {"a": "b"}

    run("create", "secret", "generic", "s", "-n", "gen", "--from-literal=k=v", space=space)
    secret = get(hub, space, "secret", "s", "-n", "gen")
    assert secret["data"] == {"k": "dg=="} and secret["type"] == "Opaque"

    run("create", "deployment", "d", "-n", "gen", "--image=nginx", "--replicas=2", space=space)
    d = get(hub, space, "deploy", "d", "-n", "gen")
    assert d["spec"]["replicas"] == 2
    assert d["spec"]["selector"] == {"matchLabels": {"app": "d"}}
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx"

    run("create", "job", "j", "-n", "gen", "--image=busybox", "--", "echo", "hi", space=space)
    job = get(hub, space, "job", "j", "-n", "gen")
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"

    run("create", "role", "r", "-n", "gen", "--verb=get,list", "--resource=configmaps", space=space)
    role = get(hub, space, "role", "r", "-n", "gen")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]

    run("create", "rolebinding", "rb", "-n", "gen", "--role=r", "--user=alice", space=space)
    rb = get(hub, space, "rolebinding", "rb", "-n", "gen")
    assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}
    assert rb["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]

    run("create", "quota", "q", "-n", "gen", "--hard=cpu=2,pods=10", space=space)
    assert get(hub, space, "quota", "q", "-n", "gen")["spec"]["hard"] == {"cpu": "2", "pods": "10"}

    run("create", "priorityclass", "high", "--value=1000", "--description=important", space=space)
    pc = get(hub, space, "priorityclass", "high")
    assert pc["value"] == 1000 and pc["description"] == "important"

    run("create", "serviceaccount", "robot", "-n", "gen", space=space)
    run("create", "service", "clusterip", "web", "-n", "gen", "--tcp=80:8080", space=space)
    svc = get(hub, space, "svc", "web", "-n", "gen")
    assert svc["spec"]["ports"][0]["port"] == 80 and svc["spec"]["ports"][0]["targetPort"] == 8080
    assert svc["spec"]["clusterIP"]
