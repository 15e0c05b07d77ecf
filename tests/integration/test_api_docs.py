"""The placement API's documentation page works without the Internet and without a token to open it; the
API behind it still needs one."""

from __future__ import annotations

import re

import httpx

from tests.harness import Hub

API = "/placement/v1"


def test_the_docs_page_and_its_assets_come_from_the_hub_and_calls_still_need_a_token(hub: Hub) -> None:
    with httpx.Client(base_url=hub.base_url, verify=hub.ssl_context(), timeout=30) as anonymous:
        page = anonymous.get(f"{API}/docs")
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert sources and all(s.startswith(f"{API}/docs-assets/") for s in sources), sources
        for source in sources:
            asset = anonymous.get(source)
            assert asset.status_code == 200 and asset.content, source
        assert f"url: '{API}/openapi.json'" in page.text or f'"url": "{API}/openapi.json"' in page.text
        document = anonymous.get(f"{API}/openapi.json")
        assert document.status_code == 200
        assert document.json()["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"  # Authorize
        assert anonymous.get(f"{API}/clusters").status_code == 401
    with hub.client() as c:
        assert c.get(f"{API}/clusters").status_code == 200
