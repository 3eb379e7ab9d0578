"""A chart as files: its source and walker, rendered objects, Helm, Kubernetes schemas, reproducible archives."""
