# Sourced by guest.sh and two_nodes.sh: prints the first of two free
# neighbouring UDP ports on 127.0.0.1 (qemu binds both for a guests' link).
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 30000))
    ss -Huln "sport = :$p" 2>/dev/null | grep -q . || ss -Huln "sport = :$((p + 1))" | grep -q . ||
      { echo "$p"; return; }
  done
}
