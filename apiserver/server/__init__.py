"""Running a space server: the runtime every serving process shares, its endpoint and its TLS.

Used by the hub and the simulator; must never import anything outside ``spaces``.
"""
