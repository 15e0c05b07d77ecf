"""``pods/exec`` and ``pods/attach`` sessions over the channel protocol.

exec runs its ``command`` (the repeated query parameter) in :mod:`sim.streams.shell` and ends with the command's
status on the error channel: ``Success``, or ``NonZeroExitCode`` with the exit code, which kubectl exits with.

attach joins the container's main process. The simulated main process writes its log (:mod:`sim.streams.logs`)
and, given stdin, echoes every line it reads, which is written to its log too: the attached client's stdout
gets every line added to the log from the moment it attached (through the admin endpoint, or typed into any
attached stdin) until the container stops running, when the session ends with ``Success``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from starlette.datastructures import QueryParams

from apimachinery.errors import bad_request
from apiserver.api.params import query_bool
from sim.streams.channels import ChannelSession, StreamOptions, exit_status, success_status
from sim.streams.container import ContainerView
from sim.streams.logs import ContainerLog
from sim.streams.shell import Exit, Process, run
from sim.streams.socket import Feed, Socket


@dataclass(frozen=True)
class ExecRequest:
    container: str
    command: list[str]
    options: StreamOptions

    @classmethod
    def parse(cls, query: QueryParams, attach: bool = False) -> ExecRequest:
        options = StreamOptions(stdin=query_bool(query, "stdin"), stdout=query_bool(query, "stdout"),
                                stderr=query_bool(query, "stderr"), tty=query_bool(query, "tty"))
        if not (options.stdin or options.stdout or options.stderr):
            raise bad_request("you must specify at least one of stdin, stdout, stderr")
        if options.tty and options.stderr:
            options = StreamOptions(stdin=options.stdin, stdout=options.stdout, stderr=False, tty=True)
        command = query.getlist("command")
        if not attach and not command:
            raise bad_request("you must specify at least 1 command")
        return cls(query.get("container") or "", command, options)


def _feeder(session: ChannelSession) -> Feed:
    async def feed(message: bytes) -> None:
        session.feed(message)
    return feed


async def run_exec(socket: Socket, request: ExecRequest, view: ContainerView) -> None:
    session = ChannelSession(socket.send, request.options)
    await session.open()
    env = {**view.env, "TERM": "xterm"} if request.options.tty else view.env
    view = ContainerView(view.cluster, view.pod, view.container, env, view.files)
    proc = Process(view, session.stdin, session.stdout, session.stderr, tty=request.options.tty)
    finished, code = await socket.run(_feeder(session), run(request.command, proc))
    if not finished:
        return
    await session.status(success_status() if code == 0 else exit_status(code or 0))
    await socket.close()


async def _main_process(session: ChannelSession, proc: Process, log: ContainerLog) -> None:
    """Copy the log's new lines to stdout while echoing stdin into the log, until the log ends."""
    async def echo() -> None:
        try:
            while (line := await proc.read_line()) is not None:
                log.append([line])
        except Exit:  # Ctrl-C on a TTY: the simulated process ignores it
            pass

    echoing = asyncio.create_task(echo(), name="attach-stdin") if session.options.stdin else None
    position = log.added
    try:
        while await log.wait(position):
            fresh = log.after(position)
            position = log.added
            await proc.out("".join(f"{line.text}\n" for line in fresh))
    finally:
        if echoing is not None:
            echoing.cancel()
            await asyncio.gather(echoing, return_exceptions=True)


async def run_attach(socket: Socket, request: ExecRequest, view: ContainerView, log: ContainerLog) -> None:
    session = ChannelSession(socket.send, request.options)
    await session.open()
    proc = Process(view, session.stdin, session.stdout, session.stderr, tty=request.options.tty)
    finished, _ = await socket.run(_feeder(session), _main_process(session, proc, log))
    if finished:
        await session.status(success_status())
        await socket.close()
