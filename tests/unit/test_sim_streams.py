"""The simulator's pod streams without a server: channel framing, the small shell, logs and their options,
the container's view and upstream's refusals."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Sequence
from typing import Any

import orjson
import pytest
from starlette.datastructures import QueryParams

from apimachinery.errors import StatusError
from sim.streams import channels, logs, targets
from sim.streams.container import ContainerView, container_view
from sim.streams.shell import Process, run, tokenize

# --- channel framing --------------------------------------------------------------------------------


def _session(**options: bool) -> tuple[channels.ChannelSession, list[bytes]]:
    sent: list[bytes] = []

    async def send(data: bytes) -> None:
        sent.append(data)
    return channels.ChannelSession(send, channels.StreamOptions(**options)), sent


def test_channel_frames_and_the_opening_message() -> None:
    assert channels.frame(channels.STDOUT, b"hi") == b"\x01hi"
    assert channels.parse(b"\x00abc") == (0, b"abc") and channels.parse(b"") is None
    for options, first in (({"stdout": True, "stderr": True}, b"\x01"), ({"stderr": True}, b"\x02"),
                           ({"stdin": True}, b"\x03"), ({"stdout": True, "tty": True}, b"\x01")):
        session, sent = _session(**options)
        asyncio.run(session.open())
        assert sent == [first]


def test_channel_session_routes_input_and_output() -> None:
    session, sent = _session(stdin=True, stdout=True, stderr=True)
    session.feed(b"\x00abc")
    session.feed(b'\x04{"Width": 80, "Height": 24}')
    session.feed(b"\x04junk")
    session.feed(b"\xff\x00")  # v5 close of stdin
    session.feed(b"\x00late")  # after the close: dropped
    assert session.size == (80, 24)
    assert session.stdin.get_nowait() == b"abc" and session.stdin.get_nowait() is None and session.stdin.empty()

    async def write() -> None:
        await session.stdout(b"out")
        await session.stderr(b"err")
        await session.stdout(b"")
        await session.status(channels.exit_status(3))
    asyncio.run(write())
    assert sent[:2] == [b"\x01out", b"\x02err"]
    status = orjson.loads(sent[2][1:])
    assert sent[2][0] == channels.ERROR
    assert (status["status"], status["reason"]) == ("Failure", "NonZeroExitCode")
    assert status["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]


def test_channel_session_with_tty_merges_stderr_and_ignores_unrequested_channels() -> None:
    session, sent = _session(stdout=True, tty=True)
    session.feed(b"\x00typed")  # stdin not requested: it is at its end from the start
    assert session.stdin.get_nowait() is None and session.stdin.empty()

    async def write() -> None:
        await session.stderr(b"err")
    asyncio.run(write())
    assert sent == [b"\x01err"]
    assert channels.success_status() == {"metadata": {}, "status": "Success"}


# --- the shell --------------------------------------------------------------------------------------

VIEW = ContainerView("wec1", {"metadata": {"name": "web-1"}}, "main",
                     env={"PATH": "/bin", "HOSTNAME": "web-1", "GREETING": "hello world"},
                     files={"/etc/spacehub-cluster": b"wec1\n", "/etc/hostname": b"web-1\n", "/config/a": b"A"})


def _run(argv: list[str], stdin: Sequence[bytes] = (), tty: bool = False) -> tuple[int, bytes, bytes]:
    async def go() -> tuple[int, bytes, bytes]:
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        for chunk in [*stdin, None]:
            queue.put_nowait(chunk)
        out, err = bytearray(), bytearray()

        async def write_out(data: bytes) -> None:
            out.extend(data)

        async def write_err(data: bytes) -> None:
            err.extend(data)
        code = await run(argv, Process(VIEW, queue, write_out, write_err, tty=tty))
        return code, bytes(out), bytes(err)
    return asyncio.run(go())


def test_tokenize_quotes_and_variables() -> None:
    env = {"A": "x y", "B": "b"}
    assert tokenize("echo 'a $A' \"b $A\" $B${B}c \\$B;exit 2&&x||y", env, 7) == [
        "echo", "a $A", "b x y", "bbc", "$B", ";", "exit", "2", "&&", "x", "||", "y"]
    assert tokenize("echo $? $ ${", env, 7) == ["echo", "7", "$", "${"]


@pytest.mark.parametrize(("argv", "code", "out", "err"), [
    (["hostname"], 0, b"web-1\n", b""),
    (["sh", "-c", "echo hi"], 0, b"hi\n", b""),
    (["sh", "-c", "exit 3"], 3, b"", b""),
    (["/bin/bash", "-c", "echo $GREETING; echo -n x"], 0, b"hello world\nx", b""),
    (["sh", "-c", "false && echo no || echo yes; echo $?"], 0, b"yes\n0\n", b""),
    (["sh", "-c", "nope; echo $?"], 0, b"127\n", b"sh: nope: not found\n"),
    (["nope", "x"], 127, b"", b"sh: nope: not found\n"),
    (["cat", "/etc/spacehub-cluster", "/missing"], 1, b"wec1\n", b"cat: /missing: No such file or directory\n"),
    (["printenv", "GREETING"], 0, b"hello world\n", b""),
    (["printenv", "NOPE"], 1, b"", b""),
    (["env"], 0, b"PATH=/bin\nHOSTNAME=web-1\nGREETING=hello world\n", b""),
    (["ls", "/config"], 0, b"a\n", b""),
    (["sh", "-c", "exit nope"], 2, b"", b"sh: exit: nope: numeric argument required\n"),
    (["sh", "-c", "exit 300"], 44, b"", b""),
])
def test_commands(argv: list[str], code: int, out: bytes, err: bytes) -> None:
    assert _run(argv) == (code, out, err)


def test_cat_copies_stdin_until_it_ends() -> None:
    assert _run(["cat"], [b"one\ntw", b"o\n"]) == (0, b"one\ntwo\n", b"")
    assert _run(["sh", "-c", "cat -"], [b"x"]) == (0, b"x", b"")


def test_interactive_shell_reads_lines() -> None:
    assert _run(["sh"], [b"echo a\nhostname\n", b"exit 5\necho never\n"]) == (5, b"a\nweb-1\n", b"")
    assert _run(["sh"], [b"false\n"]) == (1, b"", b"")


def test_a_tty_echoes_translates_and_interrupts() -> None:
    code, out, _ = _run(["sh"], [b"echo hi\r", b"exit 4\r"], tty=True)
    assert code == 4
    assert out == b"/ # echo hi\r\nhi\r\n/ # exit 4\r\n"
    code, out, _ = _run(["cat"], [b"ab\x7fc\r\x04"], tty=True)
    assert (code, out) == (0, b"ab\b \bc\r\nac\r\n")
    code, out, _ = _run(["cat"], [b"x\x03"], tty=True)
    assert (code, out) == (130, b"x^C\r\n")


# --- container view ---------------------------------------------------------------------------------


def test_container_view_resolves_env_and_volumes() -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns", "labels": {"app": "x"}},
           "spec": {"nodeName": "n1", "volumes": [{"name": "cfg", "configMap": {"name": "cm"}},
                                                  {"name": "sec", "secret": {"secretName": "s",
                                                                             "items": [{"key": "k", "path": "kk"}]}}],
                    "containers": [{"name": "c", "env": [
                        {"name": "LIT", "value": "v"}, {"name": "NODE", "valueFrom": {"fieldRef": {
                            "fieldPath": "spec.nodeName"}}},
                        {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                        {"name": "FROMCM", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "a"}}},
                        {"name": "MISSING", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "a"}}}],
                        "envFrom": [{"secretRef": {"name": "s"}, "prefix": "S_"}],
                        "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg"}, {"name": "sec", "mountPath": "/s"},
                                         {"name": "cfg", "mountPath": "/one", "subPath": "b"}]}]},
           "status": {"podIP": "10.0.0.5"}}
    objects = {("configmaps", "ns", "cm"): {"data": {"a": "1", "b": "2"}},
               ("secrets", "ns", "s"): {"data": {"k": "c2VjcmV0"}}}

    async def lookup(resource: str, namespace: str, name: str) -> dict[str, Any] | None:
        return objects.get((resource, namespace, name))
    view = asyncio.run(container_view("wec9", pod, "c", lookup))
    assert {k: view.env[k] for k in ("HOSTNAME", "LIT", "NODE", "APP", "FROMCM", "S_k")} == {
        "HOSTNAME": "p", "LIT": "v", "NODE": "n1", "APP": "x", "FROMCM": "1", "S_k": "secret"}
    assert "MISSING" not in view.env and next(iter(view.env)) == "PATH" and list(view.env)[-1] == "HOME"
    assert view.files["/etc/spacehub-cluster"] == b"wec9\n" and view.files["/etc/hostname"] == b"p\n"
    assert view.files["/etc/cfg/a"] == b"1" and view.files["/etc/cfg/b"] == b"2" and view.files["/s/kk"] == b"secret"
    assert view.files["/one"] == b"2" and b"10.0.0.5\tp" in view.files["/etc/hosts"]
    assert view.files["/var/run/secrets/kubernetes.io/serviceaccount/namespace"] == b"ns"


# --- targets ----------------------------------------------------------------------------------------


def _pod(**status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "uid": "u"},
            "spec": {"nodeName": "n", "containers": [{"name": "a", "image": "img:1"}, {"name": "b"}],
                     "initContainers": [{"name": "i"}]},
            "status": status}


def _refusal(fn: Any, *args: Any) -> str:
    with pytest.raises(StatusError) as info:
        fn(*args)
    return info.value.message


def test_upstreams_refusals() -> None:
    pod = _pod()
    assert _refusal(targets.choose_container, pod, "") == \
        "a container name must be specified for pod p, choose one of: [a b] or one of the init containers: [i]"
    assert _refusal(targets.choose_container, pod, "x") == "container x is not valid for pod p"
    assert targets.choose_container(pod, "i") == "i"
    assert _refusal(targets.check_logs, pod, "a", False) == \
        'container "a" in pod "p" is waiting to start: ContainerCreating'
    pulling = _pod(containerStatuses=[{"name": "a", "state": {"waiting": {"reason": "ImagePullBackOff"}}}])
    assert _refusal(targets.check_logs, pulling, "a", False).endswith("trying and failing to pull image")
    running = _pod(containerStatuses=[{"name": "a", "state": {"running": {}}}])
    targets.check_logs(running, "a", False)
    assert _refusal(targets.check_logs, running, "a", True) == 'previous terminated container "a" in pod "p" not found'
    assert _refusal(targets.check_running, pod, "a") == 'Internal error occurred: container not found ("a")'
    unscheduled = {"metadata": {"name": "q"}, "spec": {"containers": [{"name": "a"}]}}
    assert _refusal(targets.check_running, unscheduled, "a") == "pod q does not have a host assigned"
    assert targets.declared_ports(pod) == {80}
    assert targets.declared_ports({"spec": {"containers": [{"ports": [{"containerPort": 53}, {"x": 1}]}]}}) == {53}


# --- logs -------------------------------------------------------------------------------------------

T0 = dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
RUNNING = _pod(containerStatuses=[
    {"name": "a", "state": {"running": {"startedAt": "2030-01-02T03:04:05Z"}},
     "lastState": {"terminated": {"startedAt": "2030-01-01T00:00:00Z", "exitCode": 1}}}], phase="Running")


def _read(log: logs.ContainerLog, **query: str) -> bytes:
    async def go() -> bytes:
        options = logs.LogOptions.parse(QueryParams(query), "p")
        return b"".join([chunk async for chunk in logs.stream(log, options)])
    return asyncio.run(go())


def test_log_opening_lines_and_options() -> None:
    store = logs.LogStore()
    log = store.log("wec1", RUNNING, "a")
    assert store.log("wec1", RUNNING, "a") is log
    assert _read(log) == b"wec1/p/a started\nimage: img:1\nnode: n\n"
    log.append(["later", "two\nlines\n"], T0 + dt.timedelta(hours=1))
    assert _read(log, tailLines="2") == b"two\nlines\n"
    assert _read(log, tailLines="0") == b""
    assert _read(log, sinceTime="2030-01-02T03:30:00Z") == b"later\ntwo\nlines\n"
    assert _read(log, limitBytes="20") == b"wec1/p/a started\nima"
    assert _read(log, timestamps="true", tailLines="1") == b"2030-01-02T04:04:05.000000000Z lines\n"
    previous = store.log("wec1", RUNNING, "a", previous=True)
    assert previous is not log and previous.ended
    assert _read(previous, timestamps="1").startswith(b"2030-01-01T00:00:00.000000000Z wec1/p/a started\n")


@pytest.mark.parametrize(("query", "message"), [
    ({"tailLines": "-1"}, 'PodLogOptions "p" is invalid: tailLines: Invalid value: -1: must be greater than or '
                          "equal to 0"),
    ({"limitBytes": "0"}, "limitBytes: Invalid value: 0: must be greater than 0"),
    ({"sinceSeconds": "5", "sinceTime": "2030-01-01T00:00:00Z"}, "at most one of `sinceTime` or `sinceSeconds`"),
    ({"sinceSeconds": "0"}, "sinceSeconds: Invalid value: 0: must be greater than 0"),
    ({"tailLines": "x"}, 'tailLines: invalid value "x"'),
    ({"sinceTime": "yesterday"}, 'sinceTime: invalid value "yesterday"'),
])
def test_log_options_are_validated(query: dict[str, str], message: str) -> None:
    with pytest.raises(StatusError) as info:
        logs.LogOptions.parse(QueryParams(query), "p")
    assert message in info.value.message


def test_follow_gets_new_lines_and_ends_with_the_container() -> None:
    async def go() -> list[bytes]:
        store = logs.LogStore()
        log = store.log("wec1", RUNNING, "a")
        options = logs.LogOptions.parse(QueryParams({"follow": "true", "tailLines": "1"}), "p")
        chunks: list[bytes] = []

        async def follow() -> None:
            async for chunk in logs.stream(log, options):
                chunks.append(chunk)
        task = asyncio.create_task(follow())
        await asyncio.sleep(0)
        log.append(["first"])
        await asyncio.sleep(0)
        log.append(["second", "third"])
        await asyncio.sleep(0)
        store.end("u")
        await asyncio.wait_for(task, 1)
        return chunks
    assert asyncio.run(go()) == [b"node: n\n", b"first\n", b"second\nthird\n"]


def test_logs_are_bounded_and_forgotten_with_their_pod() -> None:
    store = logs.LogStore()
    log = store.log("wec1", RUNNING, "a")
    log.append([f"line {i}" for i in range(logs.MAX_LINES + 5)])
    assert len(log.lines) == logs.MAX_LINES and log.lines[0].text == "line 5"
    assert log.after(log.added - 2) == list(log.lines)[-2:] and log.after(0) == list(log.lines)
    store.forget("u")
    assert len(store) == 0 and log.ended


def test_admin_body_is_checked() -> None:
    assert logs.ensure_lines({"lines": ["a"]}) == ("", ["a"], False)
    for bad in ([], {"lines": "a"}, {"lines": [1]}, {"lines": [], "container": 3}, {"lines": [], "previous": "x"},
                {"lines": [], "extra": 1}):
        with pytest.raises(StatusError):
            logs.ensure_lines(bad)
