"""API export and binding: one space's CustomResourceDefinitions served in other spaces (kcp's APIExport and
APIBinding).

``kinds`` defines the two kinds, ``resolve`` decides what each binding serves (pure), ``index`` keeps that
current from the watch bus and publishes it in the catalogue, ``admission`` holds the checks that need a space's
bindings. The status writer is ``spaces.apibinding.conditions``; the provider's endpoint ``spaces.apibinding.endpoint``.
Nothing here imports the HTTP API or the controllers.
"""
