"""The hub's web UI at ``/ui``: the fleet, the spaces, placements drawn as pictures, objects and explain.

A single page of plain ES modules, SVG and CSS (``static/``, shipped as package data: no CDN, no build
step). The browser calls the hub's existing APIs with the user's own bearer token — each space's Kubernetes
API (lists and watches), the placement REST API — so every access check applies unchanged; ``routes`` adds
only the page, its files and one summary read the existing APIs cannot answer in one request (``fleet``).
Imported only by ``hub.app``; it never imports ``hub``, ``sim`` or ``syncer`` and never reads the store.
"""
