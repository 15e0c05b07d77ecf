"""Spaces served by a Kubernetes API server instead of the hub's store (``Space.spec.provider: kube``).

``upstream`` turns the kubeconfig held in a Secret of the parent space into an HTTP client for that server;
``registry`` (``KubeSpaces``) knows which spaces are kube spaces and hands out their clients; ``proxy`` serves
``/clusters/<kube space>/…`` by forwarding each authorized request with the kubeconfig's credentials;
``probe`` keeps each kube Space's ``ProviderReachable`` condition current. The hub's store never holds a kube
space's objects. How placement reads them is ``placement.mirror``'s. See docs/spaces.md, "Kube spaces".
"""
