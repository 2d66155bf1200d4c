# install_timer WHAT: the program and its systemd service and timer in place (each rewritten only when it differs,
# put_file), the timer enabled and the service run once now, so that a program that cannot work fails the deployment
# instead of its first scheduled run; WHAT names it in the error. Needs put_file and the unit inputs.
install_timer() {
  printf '%s\n' "$PROGRAM_TEXT" | put_file "$ROOT$PROGRAM" 0700
  printf '%s\n' "$SERVICE_TEXT" | put_file "$ROOT$SYSTEMD_DIR/$SERVICE" 0644
  printf '%s\n' "$TIMER_TEXT" | put_file "$ROOT$SYSTEMD_DIR/$TIMER" 0644
  systemctl daemon-reload
  systemctl enable --now "$TIMER"
  if ! systemctl start "$SERVICE"; then
    journalctl -u "$SERVICE" -n 30 --no-pager >&2 || true
    die "$1 failed (see above)"
  fi
}
