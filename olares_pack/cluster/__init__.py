"""A real Kubernetes control plane (kube-apiserver, etcd) and the Helm CLI, built and started here."""
