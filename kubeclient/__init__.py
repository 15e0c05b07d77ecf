"""kubeclient: what a spacehub process needs to talk to Kubernetes API servers and to the hub, and nothing more.

The client core every reader and writer of an API server uses (``session.py``: one aiohttp pool per server and
its credentials, kr8s's or a kubeconfig in memory; ``client.py``: requests, lists, watches, applies, discovery;
``reflector.py``: list then watch forever), backoff (one formula) and the work queue of every controller,
kubeconfig files, the pod tunnel's wire format that the hub and the syncer share (``tunnel/``), and the basics
every process has (logs, version, command output, private files). It is, with ``apimachinery``, all the syncer
imports: it must never import the API server, CEL or anything above them.
"""
