# Sourcing the script (tests do) defines the functions without running anything.
# Run the entry point (main, or upgrade_node) when executed, as a file (cloud-init) or as `bash -c`
# (the steps over SSH, where BASH_SOURCE is empty: hence the default); not when sourced.
if [[ "${BASH_SOURCE[0]:-$0}" == "$0" ]]; then
  "${ENTRY_POINT}" "$@"
fi
