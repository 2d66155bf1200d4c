"""The components: ComponentResources that wire the plans' rendered text into resources, by tier in the order the
cluster is built (machines, then the cluster kubeadm makes of them, then the platform on it; each tier imports only
those below it: an import-linter contract). guards.py and version_pin.py, the preview guards, stay at this level: a
dynamic provider is stored in the state with its module's path, which must not move."""
