"""Admission: ValidatingAdmissionPolicy(Binding) and Validating/MutatingWebhookConfiguration, per space.

``policy`` validates and compiles the policy objects themselves (their CEL is type-checked when they
are written); ``engine`` matches requests to bound policies and evaluates them with the same CEL
engine as CRD rules, off the event loop. ``webhooks`` validates webhook configurations and keeps them
compiled per space; ``webhookcall`` calls one webhook over HTTPS and reads its AdmissionReview. It never
imports the object service, the catalogue or the built-in kinds (they use it); ``apiserver.server.admission``
and ``apiserver.server.webhooks`` wire it to the object service.
"""
