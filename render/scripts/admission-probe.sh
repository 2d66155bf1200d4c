# On the first control-plane node (render/policy.py render_dry_run_probe): submit each object as a
# server-side dry run until the API server admits it (the admission webhooks that judge it in force), or
# fail after $TIMEOUT_SECONDS with the last refusal. Creates nothing, so it has no delete; running it
# twice checks twice.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs TIMEOUT_SECONDS WHAT OBJECTS[]
ADMIN_CONF="$ROOT/etc/kubernetes/admin.conf"

[[ -s $ADMIN_CONF ]] || die "$ADMIN_CONF is missing: kubeadm init has not completed on this node"
deadline=$((SECONDS + TIMEOUT_SECONDS))
for object in "${OBJECTS[@]}"; do
  until answer="$(printf '%s\n' "$object" | kubectl --kubeconfig "$ADMIN_CONF" create --dry-run=server -o name -f - 2>&1)"; do
    if (( SECONDS >= deadline )); then
      echo "$answer" >&2
      die "$WHAT is still refused after ${TIMEOUT_SECONDS}s"
    fi
    sleep 10
  done
  echo "admitted (dry run): $answer"
done
