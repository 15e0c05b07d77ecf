"""Run real proxy programs in front of (or between clients and) the hub, for tests of proxied setups.

* :class:`ForwardProxy` is Debian's ``tinyproxy`` as an HTTP ``CONNECT`` proxy, the kind a client reaches
  through ``HTTPS_PROXY``; its log tells which ``CONNECT`` requests went through it.
* :class:`ReverseProxy` is ``nginx`` terminating TLS and proxying (unbuffered, so watches stream) to an
  HTTPS upstream that it verifies; its access log tells which requests it served.

Each keeps its configuration, logs and state inside its own ``workdir`` and listens on 127.0.0.1 on a
port chosen once, so ``stop()`` then ``start()`` brings it back at the same address. Neither is mocked:
install them with ``apt-get install tinyproxy nginx-light``; tests skip (:func:`require`) without them.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import shutil
import socket
import ssl
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Self
from urllib.parse import urlsplit

import pytest

from tests.harness import free_port
from tests.processes import ChildProcess

INSTALL_HINT = "apt-get install tinyproxy nginx-light"
# Daemons such as nginx live in sbin directories, which are not on every user's PATH.
_SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin", "/sbin"])
_LOG_TAIL = 3000


def require(binary: str) -> str:
    """The full path of ``binary``, or skip the calling test when it is not installed."""
    path = shutil.which(binary, path=_SEARCH_PATH)
    if path is None:
        pytest.skip(f"{binary} not installed ({INSTALL_HINT})")
    return path


def _accepts(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True
    return False


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-_LOG_TAIL:]
    except FileNotFoundError:
        return "(no file)"


@dataclass
class _Daemon(ChildProcess):
    """A proxy program run in the foreground in its own process group, with its files in ``workdir``."""

    workdir: Path
    program: ClassVar[str]
    own_session: ClassVar[bool] = True  # stop() ends the program together with the workers it forks
    port: int = field(default_factory=free_port, kw_only=True)
    start_timeout: float = field(default=20.0, kw_only=True)
    proc: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)

    @property
    def label(self) -> str:
        return self.program

    @property
    def output_path(self) -> Path:
        """Where the program's stdout and stderr go (early start-up errors land here, not in its log)."""
        return self.workdir / f"{self.program}.out"

    def output_file(self) -> Path:
        return self.output_path

    @property
    def log_path(self) -> Path:  # type: ignore[override]
        raise NotImplementedError

    def _command(self, binary: str) -> list[str]:
        """Write the configuration and return the command line that runs the program in the foreground."""
        raise NotImplementedError

    def start(self) -> None:
        """Start the program and wait until its port accepts connections; no-op when already running."""
        if self.running():
            return
        binary = require(self.program)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.launch(self._command(binary))
        try:
            self.wait_ready(lambda: _accepts(self.port), timeout=self.start_timeout)
        except BaseException:
            self.stop()
            raise

    def close(self) -> None:
        self.stop()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def diagnostics(self) -> str:
        """The last lines of the program's output and log, for failure messages."""
        return (f"output {self.output_path}:\n{_tail(self.output_path)}\n"
                f"log {self.log_path}:\n{_tail(self.log_path)}")


@dataclass
class ForwardProxy(_Daemon):
    """``tinyproxy`` as an HTTP ``CONNECT`` proxy on 127.0.0.1 allowing tunnels to any port.

    Point clients at :attr:`url` (``proxy=`` or ``HTTPS_PROXY``); :meth:`connects_to` counts the tunnels
    it was asked for. The log is appended to across restarts.
    """

    program: ClassVar[str] = "tinyproxy"
    max_clients: int = field(default=200, kw_only=True)
    idle_timeout: int = field(default=600, kw_only=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def config_path(self) -> Path:
        return self.workdir / "tinyproxy.conf"

    @property
    def log_path(self) -> Path:
        return self.workdir / "tinyproxy.log"

    def _command(self, binary: str) -> list[str]:
        # No User/Group: as root, tinyproxy would switch to that user *before* opening its log file (and
        # pytest's 0700 temp dirs are closed to it), so it keeps running as the current user instead,
        # logging only a warning. No ConnectPort lines: without any, CONNECT to every port is allowed.
        self.config_path.write_text(
            f"Port {self.port}\n"
            "Listen 127.0.0.1\n"
            f"Timeout {self.idle_timeout}\n"
            f"MaxClients {self.max_clients}\n"
            "Allow 127.0.0.1\n"
            f'LogFile "{self.log_path}"\n'
            "LogLevel Info\n"
            f'PidFile "{self.workdir / "tinyproxy.pid"}"\n'
            "DisableViaHeader Yes\n"
        )
        return [binary, "-d", "-c", str(self.config_path)]  # -d: stay in the foreground

    def connect_log(self) -> str:
        """The proxy's log so far (empty before the first start)."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def connects_to(self, host_port: str) -> int:
        """How many ``CONNECT host:port`` requests the proxy received (logged as they arrive)."""
        # e.g. "CONNECT   Nov 22 04:28:59.011 [6093]: Request (file descriptor 5): CONNECT 127.0.0.1:18999 HTTP/1.1"
        needle = f": CONNECT {host_port} HTTP/"
        return sum(needle in line for line in self.connect_log().splitlines())


_REQUEST_LINE = re.compile(r'"[A-Z]+ (\S+) HTTP/[0-9.]+"')


@dataclass
class ReverseProxy(_Daemon):
    """``nginx`` terminating TLS on 127.0.0.1 with ``cert_file``/``key_file`` and proxying to ``upstream``.

    ``upstream`` is an ``https://host:port`` URL whose certificate nginx verifies against ``upstream_ca``
    (the system trust store when None) for ``upstream_name``, which is also sent as SNI. nginx checks
    only DNS names (``X509_check_host``), never IP SANs, so when ``host`` is an IP address the name
    defaults to ``localhost`` (the hub's serving certificate always carries it); pass another name when
    the upstream's certificate has none. Responses and request bodies are not buffered, so watches
    stream through, and WebSocket upgrades are passed on (a syncer's tunnel). Requests show up in
    :meth:`access_log` once they have finished.
    """

    upstream: str
    cert_file: Path
    key_file: Path
    upstream_ca: Path | None = None
    upstream_name: str | None = field(default=None, kw_only=True)
    program: ClassVar[str] = "nginx"

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def config_path(self) -> Path:
        return self.workdir / "nginx.conf"

    @property
    def log_path(self) -> Path:
        return self.workdir / "error.log"

    @property
    def access_log_path(self) -> Path:
        return self.workdir / "access.log"

    def _trusted(self) -> Path:
        if self.upstream_ca is not None:
            return self.upstream_ca
        paths = ssl.get_default_verify_paths()
        return Path(paths.cafile or paths.openssl_cafile)

    def _command(self, binary: str) -> list[str]:
        up = urlsplit(self.upstream)
        if up.scheme != "https" or not up.hostname:
            raise ValueError(f"upstream must be an https:// URL, not {self.upstream!r}")
        host = f"[{up.hostname}]" if ":" in up.hostname else up.hostname
        name = self.upstream_name or ("localhost" if _is_ip(up.hostname) else up.hostname)
        w = self.workdir
        temp = {name: w / "temp" / name for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")}
        for path in temp.values():
            path.mkdir(parents=True, exist_ok=True)
        # As root, nginx's workers would otherwise run as nobody, who cannot enter pytest's 0700 temp dirs.
        user = "user root;\n" if os.geteuid() == 0 else ""
        self.config_path.write_text(f"""\
{user}daemon off;
master_process on;
worker_processes 1;
pid {w / "nginx.pid"};
lock_file {w / "nginx.lock"};
error_log {self.log_path} info;
events {{ worker_connections 1024; }}
http {{
    log_format spacehub '$remote_addr [$time_local] "$request" $status $body_bytes_sent '
                        '$request_time upstream=$upstream_addr upstream_status=$upstream_status';
    access_log {self.access_log_path} spacehub;
    client_body_temp_path {temp["client_body"]};
    proxy_temp_path {temp["proxy"]};
    fastcgi_temp_path {temp["fastcgi"]};
    uwsgi_temp_path {temp["uwsgi"]};
    scgi_temp_path {temp["scgi"]};
    default_type application/octet-stream;
    client_max_body_size 0;
    # A WebSocket handshake passes its Upgrade on; other requests keep the upstream connection alive.
    map $http_upgrade $connection_upgrade {{ default upgrade; '' ''; }}

    upstream spacehub_upstream {{
        server {host}:{up.port or 443};
        keepalive 16;
    }}

    server {{
        listen 127.0.0.1:{self.port} ssl;
        server_name _;
        ssl_certificate {self.cert_file};
        ssl_certificate_key {self.key_file};
        ssl_protocols TLSv1.2 TLSv1.3;

        location / {{
            proxy_pass https://spacehub_upstream;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $host;
            proxy_set_header Authorization $http_authorization;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 3600s;
            proxy_send_timeout 3600s;
            proxy_ssl_protocols TLSv1.2 TLSv1.3;
            proxy_ssl_verify on;
            proxy_ssl_verify_depth 4;
            proxy_ssl_trusted_certificate {self._trusted()};
            proxy_ssl_name {name};
            proxy_ssl_server_name on;
        }}
    }}
}}
""")
        return [binary, "-c", str(self.config_path), "-p", f"{w}/", "-e", str(self.log_path)]

    def access_log(self) -> str:
        """The access log so far: one line per finished request (a watch appears when it ends)."""
        try:
            return self.access_log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def requests_to(self, path_prefix: str) -> int:
        """How many finished requests had a path (with query) starting with ``path_prefix``."""
        return sum(1 for m in _REQUEST_LINE.finditer(self.access_log()) if m.group(1).startswith(path_prefix))
