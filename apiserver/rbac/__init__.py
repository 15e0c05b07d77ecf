"""Kubernetes RBAC inside every space: the rules, the policy index, the authorizer, default roles and the
escalation checks on writes of roles and bindings (kube-apiserver's ``plugin/pkg/auth/authorizer/rbac`` and
``pkg/registry/rbac``)."""
