"""Admission: ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding, enforced per space.

``policy`` validates and compiles the policy objects themselves (their CEL is type-checked when they
are written); ``engine`` matches requests to bound policies and evaluates them with the same CEL
engine as CRD rules, off the event loop. It never imports the object service, the catalogue or the
built-in kinds (they use it); ``apiserver.server.admission`` wires it to the object service.
"""
