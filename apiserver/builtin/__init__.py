"""Built-in Kubernetes kinds served in every space: names, schemas, defaults, validation, tables."""
