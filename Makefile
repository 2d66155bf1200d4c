# The two commands a new user runs:  make synth  (render hk-prod offline)  and  make test.
# make test: the maintainer loop (every check but the slow tier, in parallel; about two minutes on two cores).
# make check: what CI runs: the linters, make test, and the slow tier (fuzz, 300 and 1000 nodes).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STACK ?= hk-prod

.PHONY: known-hosts preflight venv test test-slow test-all check lint synth tools clean lint-scripts

$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

# cloud-init, nft and Perl's Net::DNS are not on PyPI: the tests validate user-data and the nodes' nftables rules with
# Debian's packages, and the preflight's DNS probe runs with the Net::DNS a Proxmox node has (libnet-dns-perl).
tools:
	@command -v cloud-init >/dev/null && command -v nft >/dev/null && perl -MNet::DNS -e 1 2>/dev/null || { \
	  echo "installing Debian's cloud-init, nftables and libnet-dns-perl (for 'cloud-init schema', 'nft --check', the DNS probe)"; \
	  SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq cloud-init nftables libnet-dns-perl >/dev/null; }

test: $(VENV)/.installed tools
	$(PY) -m pytest -q -n auto -m "not slow"

# The slow tier alone (the random-stack fuzz, the 60-, 300- and 1000-node runs): make test and this are every test.
test-slow: $(VENV)/.installed tools
	$(PY) -m pytest -q -n auto -m slow

test-all: $(VENV)/.installed tools
	$(PY) -m pytest -q -n auto

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

check: lint test test-slow

# Only the script files (render/scripts/): shellcheck and the PowerShell parser, as written.
lint-scripts: $(VENV)/.installed
	$(PY) -m pytest -q tests/render/test_script_files.py

# STACK=<name>: Pulumi.<name>.yaml at the root, or examples/<name>/Pulumi.<name>.yaml.
synth: $(VENV)/.installed
	$(PY) -m tools.synth --stack $(STACK) --out build/$(STACK)

# The Proxmox nodes' pinned host keys in ~/.ssh/known_hosts, where the Proxmox provider's own SSH client looks
# (tools/known_hosts.py): checked, and the lines to add printed when they are missing.
known-hosts: $(VENV)/.installed
	$(PY) -m tools.known_hosts --stack $(STACK) --check ~/.ssh/known_hosts || { \
	  echo "add them with: $(PY) -m tools.known_hosts --stack $(STACK) >> ~/.ssh/known_hosts" >&2; exit 1; }

# The site checked against the stack before the first `pulumi up`, read-only (tools/preflight/, docs/preflight.md).
preflight: $(VENV)/.installed
	$(PY) -m tools.preflight --stack $(STACK)

clean:
	rm -rf build $(VENV)
