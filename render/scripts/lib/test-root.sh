# Tests point every path at a scratch directory; on a node the variable is unset (sudo resets the
# environment), so the paths below are the real ones.
ROOT="${HYBRID_CLUSTER_TEST_ROOT:-}"
