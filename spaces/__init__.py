"""spaces: logical clusters — what makes a space a space on top of the API server.

The Space kind and its lifecycle (children, cascade delete), spaces served by a Kubernetes API server
(``providers/``), API export and binding between spaces (``apibinding/``), the runtime every process that
serves spaces runs (``runtime.py``), the hub's client for Spaces and the ``kubectl space`` plugin. It must never
import placement, inventory, the sync server, the syncer, the hub or the simulator.
"""
