"""The Kubernetes HTTP API of a space: request routing, codecs, discovery, OpenAPI, watch, tables.

A thin layer over :mod:`apiserver.service`: it decodes what kubectl sends, calls the generic object
service and encodes answers the way kube-apiserver does. It never touches SQL directly.
"""
