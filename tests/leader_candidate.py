"""A leader-election candidate, run as its own process by tests: the official Python client's
``kubernetes.leaderelection`` with a Lease lock, unchanged, against one space of a hub.

Usage: ``python -m tests.leader_candidate SERVER CA_FILE TOKEN IDENTITY``. Prints ``leading IDENTITY`` (flushed)
when it becomes the leader, then keeps leading until it is killed.
"""

from __future__ import annotations

import sys
import threading

from kubernetes import client
from kubernetes.leaderelection import electionconfig, leaderelection
from kubernetes.leaderelection.resourcelock.leaselock import LeaseLock

LEASE = "candidates"
NAMESPACE = "kube-system"  # where kube's own components keep their leases


def main(server: str, ca_file: str, token: str, identity: str) -> None:
    cfg = client.Configuration()
    cfg.host = server
    cfg.ssl_ca_cert = ca_file
    cfg.api_key = {"authorization": token}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    client.Configuration.set_default(cfg)

    def lead() -> None:
        print(f"leading {identity}", flush=True)
        threading.Event().wait()  # lead until killed

    config = electionconfig.Config(LeaseLock(LEASE, NAMESPACE, identity), lease_duration=4, renew_deadline=3,
                                   retry_period=1, onstarted_leading=lead,
                                   onstopped_leading=lambda: print(f"stopped {identity}", flush=True))
    leaderelection.LeaderElection(config).run()


if __name__ == "__main__":
    main(*sys.argv[1:5])
