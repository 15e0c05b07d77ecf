"""The hub process and its CLI.

Owns what turns the ``spaces`` API into a running service people use: the HTTPS server and its
PKI and admin credentials, the ``spacehub`` command line, the ``kubectl space`` plugin and the small
HTTP client both of them share.
"""
