"""Checks a site against its stack before the first `pulumi up`, changing nothing: `python -m tools.preflight --stack
NAME` (or `make preflight STACK=NAME`); docs/preflight.md says what each check guards against.

proxmox_api.py reads the Proxmox VE API with the stack's token; hosts.py signs in over SSH to each Proxmox node and
Hyper-V host as the program does; network.py reads the site's network from one host of each kind; results.py shows what
they found; __main__.py reads the stack and its secrets and runs them all in parallel.
"""
