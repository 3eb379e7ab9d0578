"""Install and upgrade rehearsed on a real Kubernetes API server, as app-service does it."""
