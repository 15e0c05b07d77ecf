"""Debugging simulated pods as on a real cluster: ``pods/log``, ``pods/exec``, ``pods/attach``, ``pods/portforward``.

The wire protocols are kube-apiserver's as kubectl 1.37 speaks them, so that a client (or the hub relaying one
byte for byte) cannot tell a simulated cluster from a real one: plain HTTP for logs (``logs``), the channel
protocol over WebSocket for exec and attach (``channels``, ``exec``, with the small shell of ``shell`` and the
container's view of ``container``), SPDY/3.1 tunnelled in a WebSocket for port-forward (``spdy``,
``portforward``, with the HTTP responder of ``httpd``). ``routes`` puts them in front of the space API;
``targets`` chooses the pod and container and refuses as upstream refuses.
"""
