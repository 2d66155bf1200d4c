# On the first control-plane node, before Velero starts: the password of Velero's Kopia repositories (stdin line 1,
# the stack's veleroRepositoryPassword) in the Secret Velero reads it from. Velero makes that Secret itself, with its
# published default, only when it is absent, and never changes one that exists; every repository is made with, and
# opened with, what the Secret holds at the time, and no Velero command changes a repository's password
# (vmware-tanzu/velero v1.18.1 pkg/repository/keys/keys.go EnsureCommonRepositoryKey and RepoKeySelector;
# site/content/docs/v1.18/file-system-backup.md: "If you update the secret password after the first backup which
# created the backup repository, then Velero will not be able to connect with the older backups"). So:
# - no Secret: it is made with the stack's password;
# - the stack's password already: nothing to do;
# - Velero's default and no BackupRepository (no repository was made with it here): replaced;
# - anything else is left alone and the step fails (Velero's default with repositories: unless the stack keeps it,
#   KEEP_DEFAULT, backup.keepVeleroDefaultRepositoryPassword). docs/backup.md, "Repository password", says what to do.
# Every read of the cluster stops the step when it fails: an answer it could not get never counts as "none".
## The password reaches kubectl on a pipe (--from-file=KEY=/dev/stdin), never on a command line or in a file.
#@ include lib/strict.sh
#@ include lib/test-root.sh
#@ inputs NAMESPACE SECRET KEY VELERO_DEFAULT KEEP_DEFAULT MIN_LENGTH
#@ include lib/admin-kubeconfig.sh

IFS= read -r password || true
[[ $password == "${password//[[:space:]]/}" ]] || die "veleroRepositoryPassword holds white space, which Velero trims"
if [[ $password == "$VELERO_DEFAULT" ]]; then
  ((KEEP_DEFAULT)) || die "veleroRepositoryPassword is Velero's published default: choose another (or, to read" \
    "repositories a cluster made with it, say backup.keepVeleroDefaultRepositoryPassword: true)"
elif ((${#password} < MIN_LENGTH)); then
  die "veleroRepositoryPassword has fewer than $MIN_LENGTH characters"
fi

# write_secret VERB: the Secret with the stack's password, made (create) or put in place of the one there (replace).
write_secret() {
  printf '%s' "$password" \
    | kubectl -n "$NAMESPACE" create secret generic "$SECRET" --from-file="$KEY=/dev/stdin" --dry-run=client -o yaml \
    | kubectl "$1" -f - --request-timeout=60s >/dev/null
}

## Plain assignments: under set -e a failed command substitution in one stops the script (inside [[ ]] it would not).
found="$(kubectl -n "$NAMESPACE" get secret "$SECRET" --ignore-not-found -o name --request-timeout=30s)"
if [[ -z $found ]]; then
  write_secret create
  echo "$SECRET: made with veleroRepositoryPassword"
  exit 0
fi
encoded="$(kubectl -n "$NAMESPACE" get secret "$SECRET" --request-timeout=30s \
  -o "go-template={{ with index .data \"$KEY\" }}{{ . }}{{ end }}")"
current="$(printf '%s' "$encoded" | base64 -d)" || die "$SECRET's $KEY is not base64"
## Velero trims the value before it uses it (pkg/repository/provider/unified_repo.go getRepoPassword: TrimSpace).
current="${current#"${current%%[![:space:]]*}"}"
current="${current%"${current##*[![:space:]]}"}"
if [[ $current == "$password" ]]; then
  echo "$SECRET: holds veleroRepositoryPassword already"
  exit 0
fi
crd="$(kubectl get crd backuprepositories.velero.io --ignore-not-found -o name --request-timeout=30s)"
listed=""
if [[ -n $crd ]]; then
  listed="$(kubectl -n "$NAMESPACE" get backuprepositories.velero.io -o name --request-timeout=30s)"
fi
repositories="$(grep -c . <<<"$listed" || true)"
if [[ $current == "$VELERO_DEFAULT" ]] && ((repositories == 0)); then
  write_secret replace
  echo "$SECRET: Velero's default replaced with veleroRepositoryPassword (no repository here was made with it)"
  exit 0
fi
if [[ $current == "$VELERO_DEFAULT" ]]; then
  if ((KEEP_DEFAULT)); then
    echo "warning: $SECRET keeps Velero's published default password, which $repositories repositories were made" \
      "with (backup.keepVeleroDefaultRepositoryPassword); docs/backup.md, \"Repository password\", says how to leave it"
    exit 0
  fi
  die "$repositories backup repositories were made with Velero's published default password, which Velero cannot" \
    "change: $SECRET is left as it is. Either keep it for now (backup.keepVeleroDefaultRepositoryPassword: true, a" \
    "relaxation) or start new repositories (docs/backup.md, \"Repository password\")"
fi
die "$SECRET holds a password that is neither veleroRepositoryPassword nor Velero's default ($repositories backup" \
  "repositories known here), and Velero cannot change a repository's password: $SECRET is left as it is. Set" \
  "veleroRepositoryPassword to the password it holds (docs/backup.md, \"Repository password\")"
