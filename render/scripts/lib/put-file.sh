# put_file PATH MODE < content: replaces PATH atomically (a rename within $STAGING_DIR's file system) and
# only when the content differs, so a re-run leaves a running static Pod or service alone.
put_file() {
  local path=$1 mode=$2 staged dir
  dir="$(dirname "$path")"
  mkdir -p "$STAGING_DIR"
  staged="$(mktemp "$STAGING_DIR/.staged.XXXXXX")"
  cat >"$staged"
  chmod "$mode" "$staged"
  if [[ -f $path ]] && cmp -s "$staged" "$path"; then
    rm -f "$staged"
    return 0
  fi
  if [[ ! -d $dir ]]; then
    mkdir -p "$(dirname "$dir")"
    mkdir -m 0700 "$dir"
  fi
  mv -f "$staged" "$path"
}
