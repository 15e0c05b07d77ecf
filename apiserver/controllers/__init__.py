"""In-process controllers that give spaces their Kubernetes lifecycle behaviour.

Each reacts to committed changes (via the watch bus) and acts only through the object service, so
its writes are validated, versioned and watched like any client's. Work is keyed and de-duplicated;
a failed item is retried with backoff and never stops the loop (``kubeclient.workqueue``, the queue the
simulator's controllers use too).
"""

