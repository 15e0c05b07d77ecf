"""kubeclient: what a spacehub process needs to talk to Kubernetes API servers and to the hub, and nothing more.

Kubeconfig files, backoff (one formula), the work queue of every controller, the pod tunnel's wire format that
the hub and the syncer share (``tunnel/``), and the basics every process has (logs, version, command output,
private files). It is, with ``apimachinery``, all the syncer imports: it must never import the API server, CEL
or anything above them.
"""
