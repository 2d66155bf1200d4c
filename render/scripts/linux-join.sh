# `kubeadm join` on a new node from the join line on stdin; a node with kubelet.conf is left alone.
# Steps: wait for cloud-init's node preparation, read and check the join line, fill the JoinConfiguration,
# (control plane) write the files its API server reads, which linux-join-credentials.sh sends after the join line,
# run `kubeadm join --config FILE` with its output in a root-only log, then (control plane) kube-vip.
# No secret from the join line reaches a command line: bash parameter expansion puts it into the
# JoinConfiguration, written 0600 into a fresh 0700 directory under /run (tmpfs) that an EXIT trap removes.
## kubeadm join --config: https://kubernetes.io/docs/reference/setup-tools/kubeadm/kubeadm-join/.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs CONTROL_PLANE JOIN_CONFIG_TEXT KUBE_VIP_TEXT TOKEN_PLACEHOLDER API_ENDPOINT_PLACEHOLDER CA_CERT_HASH_PLACEHOLDER CERTIFICATE_KEY_PLACEHOLDER CLOUD_INIT_TIMEOUT PREPARE_SCRIPT
KUBELET_CONF="$ROOT/etc/kubernetes/kubelet.conf"
LOG="$ROOT/var/log/kubeadm-join.log"
STAGING_DIR="$ROOT/etc/kubernetes/kubeadm"
KUBE_VIP_MANIFEST="$ROOT/etc/kubernetes/manifests/kube-vip.yaml"
#@ include lib/log-helpers.sh
#@ include lib/put-file.sh
#@ include lib/wait-for-cloud-init.sh
#@ include lib/refuse-control-plane-state.sh
#@ include lib/encryption.sh
#@ include lib/control-plane-files.sh
# read_join_line: one line from stdin, `kubeadm join HOST:PORT --token T
# --discovery-token-ca-cert-hash sha256:H [...] [--control-plane --certificate-key K]`, the form
# `kubeadm token create --print-join-command` prints. `read -a` splits it without a here-string, a
# temporary file or a child process. Messages never repeat what was read.
read_join_line() {
  local -a words=()
  local word value count i=2
  local endpoint_re='^([A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]):([0-9]{1,5})$'
  local token_re='^[a-z0-9]{6}\.[a-z0-9]{16}$'
  local hash_re='^sha256:[0-9a-f]{64}$'
  local key_re='^[0-9a-f]{64}$'
  # read fails at end of input without a newline, yet has filled the array.
  IFS=$' \t' read -r -a words || true
  count=${#words[@]}
  ((count > 0)) || die "no join line on standard input (expected the output of kubeadm token create --print-join-command)"
  words[count - 1]=${words[count - 1]%$'\r'}
  if ((count < 2)) || [[ ${words[0]} != kubeadm || ${words[1]} != join ]]; then
    die "the join line does not start with 'kubeadm join'"
  fi
  JOIN_ENDPOINT="" JOIN_TOKEN="" JOIN_KEY="" JOIN_CONTROL_PLANE=0
  JOIN_CA_HASHES=()
  while ((i < count)); do
    word=${words[i]}
    case "$word" in
      --control-plane)
        JOIN_CONTROL_PLANE=1
        i=$((i + 1))
        continue
        ;;
      --token | --discovery-token-ca-cert-hash | --certificate-key)
        ((i + 1 < count)) || die "the join line ends after $word without its value"
        value=${words[i + 1]}
        i=$((i + 2))
        ;;
      --token=* | --discovery-token-ca-cert-hash=* | --certificate-key=*)
        value=${word#*=}
        word=${word%%=*}
        i=$((i + 1))
        ;;
      -*)
        die "the join line has an unexpected option (word $((i + 1)))"
        ;;
      *)
        [[ -z $JOIN_ENDPOINT ]] || die "the join line has more than one API server endpoint (word $((i + 1)))"
        if ! [[ $word =~ $endpoint_re ]] || ((10#${BASH_REMATCH[3]} < 1 || 10#${BASH_REMATCH[3]} > 65535)); then
          die "the API server endpoint in the join line is not HOST:PORT (word $((i + 1)))"
        fi
        JOIN_ENDPOINT=$word
        i=$((i + 1))
        continue
        ;;
    esac
    case "$word" in
      --token)
        [[ -z $JOIN_TOKEN ]] || die "the join line has more than one --token"
        [[ $value =~ $token_re ]] || die "the --token value is not a bootstrap token ([a-z0-9]{6}.[a-z0-9]{16})"
        JOIN_TOKEN=$value
        ;;
      --discovery-token-ca-cert-hash)
        [[ $value =~ $hash_re ]] || die "a --discovery-token-ca-cert-hash value is not sha256:<64 hex digits>"
        JOIN_CA_HASHES+=("$value")
        ;;
      --certificate-key)
        [[ -z $JOIN_KEY ]] || die "the join line has more than one --certificate-key"
        [[ $value =~ $key_re ]] || die "the --certificate-key value is not 64 hex digits"
        JOIN_KEY=$value
        ;;
    esac
  done
  [[ -n $JOIN_ENDPOINT ]] || die "the join line has no API server endpoint"
  [[ -n $JOIN_TOKEN ]] || die "the join line has no --token"
  ((${#JOIN_CA_HASHES[@]} > 0)) || die "the join line has no --discovery-token-ca-cert-hash"
}

# write_join_config PATH: the JoinConfiguration with the join line's values in place. Several CA hashes
# repeat the template line that holds the hash placeholder, which must then be a list item.
write_join_config() {
  local line hash rendered=""
  local item_re='^[[:space:]]*-[[:space:]]'
  while IFS= read -r line || [[ -n $line ]]; do
    line=${line//"$TOKEN_PLACEHOLDER"/"$JOIN_TOKEN"}
    line=${line//"$API_ENDPOINT_PLACEHOLDER"/"$JOIN_ENDPOINT"}
    line=${line//"$CERTIFICATE_KEY_PLACEHOLDER"/"$JOIN_KEY"}
    if [[ $line == *"$CA_CERT_HASH_PLACEHOLDER"* ]]; then
      ((${#JOIN_CA_HASHES[@]} == 1)) || [[ $line =~ $item_re ]] \
        || die "the JoinConfiguration cannot take several CA hashes: its hash placeholder is not a list item"
      for hash in "${JOIN_CA_HASHES[@]}"; do
        rendered+="${line//"$CA_CERT_HASH_PLACEHOLDER"/"$hash"}"$'\n'
      done
    else
      rendered+="$line"$'\n'
    fi
  done <<<"$JOIN_CONFIG_TEXT"
  for placeholder in "$TOKEN_PLACEHOLDER" "$API_ENDPOINT_PLACEHOLDER" "$CA_CERT_HASH_PLACEHOLDER" "$CERTIFICATE_KEY_PLACEHOLDER"; do
    [[ $rendered != *"$placeholder"* ]] || die "the JoinConfiguration still has a placeholder the join line did not fill"
  done
  printf '%s' "$rendered" >"$1"
}

# read_control_plane_files: after the join line, the Secrets encryption key ring (`writer`, `target`, `read` lines,
# lib/encryption.sh) and the first control-plane node's hardening files as one `files BASE64` line (a gzipped tar of
# its hardening directory, or `files -` when it has none yet). This node gets the same files, and an encryption
# configuration that writes with the key every Secret is written with and reads the target one; the control-plane
# steps that follow the joins bring it to the target like every other control-plane node.
read_control_plane_files() {
  local lines role="" payload=""
  lines="$(cat)"
  read_key_ring < <(grep -E '^(writer|target|read) ' <<<"$lines")
  write_encryption_config read
  IFS=' ' read -r role payload < <(grep -E '^files ' <<<"$lines") || true
  [[ $role == files ]] || die "the join's standard input lacks the control-plane files line"
  mkdir -p "$HARDENING_DIR"
  chmod 0700 "$HARDENING_DIR"
  if [[ $payload != - ]]; then
    base64 -d <<<"$payload" | tar -xz -C "$HARDENING_DIR" --no-same-owner --wildcards '*.yaml' \
      || die "the control-plane files sent after the join line could not be unpacked"
    chmod 0600 "$HARDENING_DIR"/*.yaml
  fi
}

# kube-vip (control-plane joins) goes in after the join: join's preflight requires an empty
# /etc/kubernetes/manifests (DirAvailableCheck in RunJoinNodeChecks, kubernetes
# cmd/kubeadm/app/preflight/checks.go).
ensure_kube_vip() {
  if [[ -n $KUBE_VIP_TEXT ]]; then
    printf '%s\n' "$KUBE_VIP_TEXT" | put_file "$KUBE_VIP_MANIFEST" 0600
  fi
}

if [[ -f $KUBELET_CONF ]]; then
  echo "kubeadm join: already joined ($KUBELET_CONF exists), nothing to do"
  ensure_kube_vip
  exit 0
fi

refuse_if_control_plane_state "$KUBELET_CONF"
wait_for_cloud_init
read_join_line
if [[ $CONTROL_PLANE == true ]]; then
  if ((JOIN_CONTROL_PLANE == 0)) || [[ -z $JOIN_KEY ]]; then
    die "this is a control-plane join but the join line lacks --control-plane --certificate-key"
  fi
  read_control_plane_files
elif ((JOIN_CONTROL_PLANE == 1)) || [[ -n $JOIN_KEY ]]; then
  die "this is a worker join but the join line is for a control-plane node"
fi
mkdir -p "$ROOT/run"
JOIN_DIR="$(mktemp -d "$ROOT/run/kubeadm-join.XXXXXX")"
trap 'rm -rf -- "$JOIN_DIR"' EXIT
# A signal ends the script through `exit`, so the EXIT trap removes the config then too.
trap 'exit 1' HUP INT TERM
write_join_config "$JOIN_DIR/join.yaml"
chmod 0600 "$JOIN_DIR/join.yaml"

fresh_log "$LOG"
## A failed join is reset so that the next run retries from a clean node: a half-joined node may already
## have kubelet.conf, which the guard above would take for a finished join.
echo "kubeadm join: running (output in $LOG, readable by root only)"
if ! kubeadm join --config "$JOIN_DIR/join.yaml" >>"$LOG" 2>&1; then
  echo "error: kubeadm join failed" >&2
  show_log_tail "$LOG"
  echo "resetting the node so that the next run starts from a clean state" >&2
  kubeadm reset -f >>"$LOG" 2>&1 || echo "warning: kubeadm reset failed as well" >&2
  exit 1
fi
ensure_kube_vip
if [[ $CONTROL_PLANE == true ]]; then
  record_running_files
  own_etcd_data
fi
echo "kubeadm join: done"
