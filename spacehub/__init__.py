"""The ``spacehub`` command: one tree assembled from every package's commands, and ``spacehub up``.

The top of the layering: it may import every package, and a package must never import it.
"""
