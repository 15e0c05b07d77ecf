"""The web UI in a real browser: Debian's Chromium driven by Playwright for Python, for the UI's tests, its
benchmark and the screenshots in docs/.

Chromium is found on the PATH; where it is missing it is installed with ``apt-get install chromium`` when
running as root (as ``.ci/run`` installs the proxies), else :class:`BrowserUnavailable` says why and
callers skip. The hub's certificate comes from its generated CA, which Chromium has no flag to trust, so
pages ignore certificate errors; everything else is the page as a user gets it.

Browser test modules import the fixtures ``browser`` (one Chromium per module, or a skip saying why) and ``page``
(a fresh page on the module's ``world`` fixture, failing the test on a JavaScript error) as ``browser_fixture`` and
``page_fixture``, so that the names do not shadow the tests' arguments.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness import Hub, wait_for
from tests.syncer_harness import World, configmap, deployment, namespace, placement

CHROMIUM_NAMES = ("chromium", "chromium-browser")
INSTALL_TIMEOUT = 900.0
SPACE, PLACEMENT = "shop", "web"
# The scheduling demo: 4 clusters in 2 zones; 2 chosen with zone spread, Capacity and Label scores, wec3 tainted.
SCHEDULING_SPACE = "edge"
ZONES = {"wec1": "za", "wec2": "za", "wec3": "zb", "wec4": "zb"}
CHOSEN = ["wec1", "wec4"]  # za's largest (twice the CPU); in zb, wec3 is tainted
SCHEDULED = {"apiVersion": "edge.kubestellar.io/v2alpha1", "kind": "EdgePlacement", "metadata": {"name": PLACEMENT},
             "spec": {"locationSelectors": [{"matchLabels": {"env": "edge"}}],
                      "downsync": [{"apiGroup": "", "resources": ["configmaps"], "namespaces": ["app"]}],
                      "numberOfClusters": 2, "spreadConstraints": [{"topologyKey": "zone", "maxSkew": 1}],
                      "prioritizers": [{"type": "Capacity", "weight": 2},
                                       {"type": "Label", "labelKey": "zone", "values": {"za": 10}}]}}


class BrowserUnavailable(Exception):
    """No browser can be started here; the message says why and how to get one."""


def _installed() -> str | None:
    return next((path for name in CHROMIUM_NAMES if (path := shutil.which(name))), None)


def chromium_path() -> str:
    """Debian's Chromium, installed first if missing and this process may (root, with apt-get)."""
    found = _installed()
    if found:
        return found
    if os.geteuid() != 0:
        raise BrowserUnavailable("chromium is not installed and installing it needs root (apt-get install chromium)")
    if shutil.which("apt-get") is None:
        raise BrowserUnavailable("chromium is not installed and there is no apt-get to install it with")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-q", "chromium"]):
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=INSTALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise BrowserUnavailable(f"{' '.join(cmd)} did not finish within {INSTALL_TIMEOUT:.0f}s") from None
        if proc.returncode != 0:
            raise BrowserUnavailable(f"{' '.join(cmd)} failed: {(proc.stderr or proc.stdout)[-500:]}")
    found = _installed()
    if not found:
        raise BrowserUnavailable("apt-get installed chromium but no chromium program is on the PATH")
    return found


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium (a Playwright ``Browser``), closed at the end."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise BrowserUnavailable("Playwright for Python is not installed (pip install -e '.[dev]')") from None
    path = chromium_path()
    # As root Chromium refuses its sandbox; containers often have a tiny /dev/shm.
    args = ["--disable-dev-shm-usage", *(["--no-sandbox"] if os.geteuid() == 0 else [])]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=args, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def browser_or_skip() -> Iterator[Any]:
    """A Chromium for a test module's ``browser`` fixture (``yield from`` this); skips the module, saying why,
    where none can be started."""
    try:
        with chromium() as b:
            yield b
    except BrowserUnavailable as exc:
        pytest.skip(f"no browser for the UI tests: {exc}")


@pytest.fixture(scope="module", name="browser")
def browser_fixture() -> Iterator[Any]:
    yield from browser_or_skip()


@pytest.fixture(name="page")
def page_fixture(browser: Any, world: World) -> Iterator[Any]:
    p = open_ui(browser, world.hub)
    yield p
    assert p.errors == [], f"JavaScript errors in the page: {p.errors}"
    p.context.close()


def open_ui(browser: Any, hub: Hub, width: int = 1400, height: int = 900) -> Any:
    """A new page (in a context of its own: its own session) at the hub's /ui/; JavaScript errors are kept in
    ``page.errors``."""
    context = browser.new_context(ignore_https_errors=True, viewport={"width": width, "height": height})
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.goto(f"{hub.base_url}/ui/")
    return page


def sign_in(page: Any, token: str, space: str = "root") -> None:
    page.fill("#token", token)
    page.fill("#space", space)
    page.click("#signin-form button[type=submit]")
    page.wait_for_selector('#view[data-rendered="fleet"]', timeout=15_000)


def rendered(page: Any, view: str, hash_: str, timeout: float = 15_000) -> None:
    """Go to ``hash_`` and wait until view ``view`` has drawn its data."""
    page.evaluate("h => { delete document.getElementById('view').dataset.rendered; location.hash = h; }", hash_)
    page.wait_for_selector(f'#view[data-rendered="{view}"]', timeout=timeout)


def demo(world: World) -> None:
    """Two clusters (florin, guilder: env=prod, regions eu and us), space ``shop`` with a ConfigMap and a
    Deployment, and EdgePlacement ``web`` sending both to every env=prod cluster with multi-cluster status."""
    world.join("florin", "wec1", {"env": "prod", "region": "eu"})
    world.join("guilder", "wec2", {"env": "prod", "region": "us"})
    world.hub.create_space(SPACE)
    web = placement(PLACEMENT, {"env": "prod"}, [
        {"apiGroup": "", "resources": ["configmaps"], "namespaces": [SPACE]},
        {"apiGroup": "apps", "resources": ["deployments"], "namespaces": [SPACE]}])
    web["spec"]["wantMultiWECReportedState"] = True
    world.apply(SPACE, namespace(SPACE), configmap("settings", SPACE, color="blue"),
                deployment("storefront", SPACE, replicas=2), web)


def scheduling_world(base: Path) -> World:
    """``spacehub sim serve --with-syncers``: clusters wec1-4 (env=edge, zones za and zb; wec1 with twice the
    CPU), each with its syncer talking to the hub over HTTP; not started."""
    world = World(base, clusters=len(ZONES))
    labels = [arg for name, zone in ZONES.items() for arg in ("--cluster-label", f"{name}:zone={zone}")]
    world.sim.extra_args = ("--hub", world.hub.base_url, "--hub-kubeconfig", str(world.hub.kubeconfig),
                            "--with-syncers", "--cluster-label", "env=edge", *labels, "--node-cpu", "wec1=16",
                            "--ready-delay", "1", "--processes", "1")
    return world


def scheduling(world: World) -> dict[str, Any]:
    """The placement REST API's explanation of the demo placement's choice."""
    with world.hub.client() as c:
        r = c.get(f"/placement/v1/spaces/{SCHEDULING_SPACE}/placements/{PLACEMENT}/scheduling")
    assert r.status_code == 200, r.text
    return dict(r.json())


def scheduling_demo(world: World) -> None:
    """wec3 tainted ``maintenance=soon:NoSchedule``; space ``edge`` with a ConfigMap and :data:`SCHEDULED`, once
    every cluster's capacity has come with its syncer's heartbeats; returns when :data:`CHOSEN` is chosen."""
    targets = "/apis/edge.kubestellar.io/v2alpha1/synctargets"
    wait_for(lambda: all(((world.hub_get("inventory", f"{targets}/{c}") or {}).get("status") or {})
                         .get("allocatable") for c in ZONES), timeout=60, message="every cluster's capacity")
    world.hub.spacehub("cluster", "taint", "wec3", "maintenance=soon:NoSchedule")
    world.hub.create_space(SCHEDULING_SPACE)
    world.apply(SCHEDULING_SPACE, namespace("app"), configmap("settings", "app", color="blue"), SCHEDULED)
    wait_for(lambda: scheduling(world)["chosen"] == CHOSEN, timeout=60, message=f"{CHOSEN} chosen")
