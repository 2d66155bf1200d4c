"""The platform tier: what runs on the cluster, one module per subsystem (network, scheduling, storage, observability,
policy, load balancing, TLS, tracing, backup, progressive delivery, samples), each taking its slice of plan/platform.py."""
