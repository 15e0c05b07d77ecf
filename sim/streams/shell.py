"""The commands a simulated container runs for ``kubectl exec``: a very small shell.

``sh -c SCRIPT`` (also ``bash``, ``ash`` and their ``/bin/`` paths) runs a script of simple commands joined by
``;``, ``&&`` or ``||``, with single and double quotes, backslashes and ``$VAR``, ``${VAR}`` and ``$?``
expanded outside single quotes. ``sh`` alone reads such lines from stdin (with a ``/ # `` prompt on a TTY) until
``exit`` or the end of the input. Commands: ``echo [-n]``, ``env``, ``printenv [NAME]``, ``hostname``, ``cat
[FILE|-]...`` (no file: stdin to stdout until stdin ends), ``ls [DIR]``, ``pwd``, ``whoami``, ``id``, ``true``,
``false``, ``sleep SECONDS`` and ``exit [N]``. Anything else is ``sh: NAME: not found`` on stderr with exit status
127, as a shell says it.

On a TTY the line discipline is a terminal's: input is echoed, a carriage return ends a line, Ctrl-D on an
empty line ends the input, Ctrl-C interrupts (status 130), and output newlines become CR LF.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from sim.streams.container import ContainerView

Write = Callable[[bytes], Awaitable[None]]
SHELLS = frozenset({"sh", "bash", "ash", "/bin/sh", "/bin/bash", "/bin/ash", "/usr/bin/bash"})
INTERRUPTED = 130


class Exit(Exception):  # the shell's own exit, not an error
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class Process:
    """The standard streams of one command, and the container it runs in."""

    def __init__(self, view: ContainerView, stdin: asyncio.Queue[bytes | None], stdout: Write, stderr: Write,
                 tty: bool = False) -> None:
        self.view = view
        self._stdin = stdin
        self._stdout = stdout
        self._stderr = stderr
        self.tty = tty
        self._pending = b""  # TTY: the line being typed
        self._ahead = b""  # input read but not yet used
        self._eof = False

    async def out(self, text: str | bytes) -> None:
        data = text.encode() if isinstance(text, str) else text
        await self._stdout(data.replace(b"\n", b"\r\n") if self.tty else data)

    async def err(self, text: str) -> None:
        data = text.encode()
        await self._stderr(data.replace(b"\n", b"\r\n") if self.tty else data)

    async def _next(self) -> bytes | None:
        if self._ahead:
            chunk, self._ahead = self._ahead, b""
            return chunk
        return await self._stdin.get()

    async def read(self) -> bytes | None:
        """The next chunk of input (on a TTY: the next line, newline included); None at its end."""
        if self._eof:
            return None
        if not self.tty:
            chunk = await self._next()
            self._eof = chunk is None
            return chunk
        while True:
            chunk = await self._next()
            if chunk is None:
                self._eof = True
                line, self._pending = self._pending, b""
                return line or None
            for i, byte in enumerate(chunk):
                line = await self._type(byte)
                if line is not None:
                    self._ahead = chunk[i + 1:]
                    if not line:
                        self._eof = True
                        return None
                    return line

    async def _type(self, byte: int) -> bytes | None:
        """One keystroke through the terminal's line discipline: a completed line (b"" for the end of the
        input), else None."""
        if byte in (0x0D, 0x0A):
            await self._stdout(b"\r\n")
            line, self._pending = self._pending + b"\n", b""
            return line
        if byte == 0x03:
            await self._stdout(b"^C\r\n")
            raise Exit(INTERRUPTED)
        if byte == 0x04:
            line, self._pending = self._pending, b""
            return line
        if byte in (0x7F, 0x08):
            if self._pending:
                self._pending = self._pending[:-1]
                await self._stdout(b"\b \b")
            return None
        self._pending += bytes((byte,))
        await self._stdout(bytes((byte,)))
        return None

    async def read_line(self) -> str | None:
        buffered = b""
        while b"\n" not in buffered:
            chunk = await self.read()
            if chunk is None:
                return buffered.decode(errors="replace") if buffered else None
            buffered += chunk
        line, _, rest = buffered.partition(b"\n")
        self._ahead = rest + self._ahead  # not on a TTY: the rest of a chunk is the next input
        return line.decode(errors="replace")


# --- parsing ----------------------------------------------------------------------------------------


def parse_command(script: str, start: int, env: dict[str, str], status: int) -> tuple[list[str], str, int]:
    """The words of the simple command at ``start`` (quotes removed, variables expanded but inside single quotes),
    the operator ending it ("" at the end of the script) and where the next command starts."""
    words: list[str] = []
    word: list[str] = []
    in_word = False
    i = start

    def variable(at: int) -> tuple[str, int]:
        if script.startswith("${", at):
            end = script.find("}", at)
            if end < 0:
                return "$", at + 1
            return env.get(script[at + 2:end], ""), end + 1
        if script.startswith("$?", at):
            return str(status), at + 2
        end = at + 1
        while end < len(script) and (script[end].isalnum() or script[end] == "_"):
            end += 1
        return (env.get(script[at + 1:end], ""), end) if end > at + 1 else ("$", at + 1)

    while i < len(script):
        char = script[i]
        if char in " \t\n":
            if in_word:
                words.append("".join(word))
                word, in_word = [], False
            i += 1
        elif script.startswith(("&&", "||"), i) or char == ";":
            if in_word:
                words.append("".join(word))
            op = ";" if char == ";" else script[i:i + 2]
            return words, op, i + len(op)
        elif char == "'":
            end = script.find("'", i + 1)
            end = len(script) if end < 0 else end
            word.append(script[i + 1:end])
            in_word, i = True, end + 1
        elif char == '"':
            i += 1
            while i < len(script) and script[i] != '"':
                if script[i] == "\\" and i + 1 < len(script) and script[i + 1] in '"\\$':
                    word.append(script[i + 1])
                    i += 2
                elif script[i] == "$":
                    value, i = variable(i)
                    word.append(value)
                else:
                    word.append(script[i])
                    i += 1
            in_word, i = True, i + 1
        elif char == "\\" and i + 1 < len(script):
            word.append(script[i + 1])
            in_word, i = True, i + 2
        elif char == "$":
            value, i = variable(i)
            word.append(value)
            in_word = True
        else:
            word.append(char)
            in_word, i = True, i + 1
    if in_word:
        words.append("".join(word))
    return words, "", i


def tokenize(script: str, env: dict[str, str], status: int) -> list[str]:
    """Every word and operator of a script (``$?`` taken as ``status`` throughout)."""
    out: list[str] = []
    position = 0
    while position < len(script):
        words, op, position = parse_command(script, position, env, status)
        out += [*words, *([op] if op else [])]
    return out


# --- running ----------------------------------------------------------------------------------------


async def run(argv: list[str], proc: Process) -> int:
    """Run a command as the container's runtime would exec it; its exit status."""
    try:
        return await _command(argv, proc, 0)
    except Exit as done:
        return done.code


async def run_script(script: str, proc: Process, status: int = 0) -> int:
    """A line of simple commands joined by ``;``, ``&&`` and ``||``; raises :class:`Exit` on ``exit``."""
    position, skip = 0, False
    while position < len(script):
        command, op, position = parse_command(script, position, proc.view.env, status)
        if command and not skip:
            status = await _command(command, proc, status)
        skip = (op == "&&" and status != 0) or (op == "||" and status == 0)
    return status


async def _interactive(proc: Process) -> int:
    status = 0
    while True:
        if proc.tty:
            await proc.out("/ # ")
        line = await proc.read_line()
        if line is None:
            return status
        status = await run_script(line, proc, status)


async def _cat(args: list[str], proc: Process) -> int:
    status = 0
    for name in args or ["-"]:
        if name == "-":
            while (chunk := await proc.read()) is not None:
                await proc.out(chunk)
            continue
        data = proc.view.files.get(name)
        if data is None:
            await proc.err(f"cat: {name}: No such file or directory\n")
            status = 1
        else:
            await proc.out(data)
    return status


async def _ls(args: list[str], proc: Process) -> int:
    base = (args[0] if args else "/").rstrip("/") + "/"
    names = sorted({path[len(base):].split("/")[0] for path in proc.view.files if path.startswith(base)})
    if not names:
        await proc.err(f"ls: cannot access '{base.rstrip('/') or '/'}': No such file or directory\n")
        return 2
    await proc.out("".join(f"{n}\n" for n in names))
    return 0


async def _command(argv: list[str], proc: Process, status: int) -> int:
    name, args = argv[0], argv[1:]
    env = proc.view.env
    if name in SHELLS:
        if args[:1] == ["-c"]:
            return await run_script(args[1] if len(args) > 1 else "", proc, status)
        return await _interactive(proc)
    if name == "exit":
        try:
            raise Exit(int(args[0]) & 0xFF if args else status)
        except ValueError:
            await proc.err(f"sh: exit: {args[0]}: numeric argument required\n")
            raise Exit(2) from None
    if name == "echo":
        newline = not args or args[0] != "-n"
        await proc.out(" ".join(args if newline else args[1:]) + ("\n" if newline else ""))
        return 0
    if name in ("env", "printenv") and not args:
        await proc.out("".join(f"{k}={v}\n" for k, v in env.items()))
        return 0
    if name == "printenv":
        values = [env[a] for a in args if a in env]
        await proc.out("".join(f"{v}\n" for v in values))
        return 0 if len(values) == len(args) else 1
    if name == "cat":
        return await _cat(args, proc)
    if name == "sleep":
        try:
            await asyncio.sleep(float(args[0]) if args else 0)
        except ValueError:
            await proc.err(f"sleep: invalid time interval '{args[0]}'\n")
            return 1
        return 0
    fixed = {"hostname": proc.view.hostname, "pwd": "/", "whoami": "root",
             "id": "uid=0(root) gid=0(root) groups=0(root)"}
    if name in fixed:
        await proc.out(fixed[name] + "\n")
        return 0
    if name in ("true", "false", ":"):
        return 1 if name == "false" else 0
    if name == "ls":
        return await _ls(args, proc)
    await proc.err(f"sh: {name}: not found\n")
    return 127
