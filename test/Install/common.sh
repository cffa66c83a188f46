# Sourced by the install checks: $name (the check's name) set, "$@" the
# script's arguments. Makes $work (WORK_DIR, emptied, or a temporary directory
# removed at exit) and $log, and defines fail (prints the log's tail and
# "FAIL: $name (why)", exits 1) and step (runs a command into the log).
if [ $# -gt 0 ]; then
  work=$1
  rm -rf "$work" && mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
log=$work/log
fail() { tail -n 40 "$log" 2>/dev/null; echo "FAIL: $name ($1)"; exit 1; }
step() { echo "-- $*" >>"$log"; "$@" >>"$log" 2>&1; }
