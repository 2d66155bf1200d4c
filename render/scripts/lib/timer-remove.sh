# remove_timer: the timer stopped and disabled, the program and both units removed.
remove_timer() {
  if systemctl cat "$TIMER" >/dev/null 2>&1; then
    systemctl disable --now "$TIMER"
  fi
  rm -f "$ROOT$SYSTEMD_DIR/$TIMER" "$ROOT$SYSTEMD_DIR/$SERVICE" "$ROOT$PROGRAM"
}
