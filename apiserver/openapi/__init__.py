"""OpenAPI documents of a space: v3 per group-version (``v3``), the v2 document derived from them (``v2``), and
v2 as gnostic's protobuf message (``gnostic``), which kubectl asks for."""
