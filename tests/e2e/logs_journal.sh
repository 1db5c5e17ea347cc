#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rowgated's log as journald reads it (docs/logging.md).  journald does
# not run here, so its part is played as systemd sets it up: stderr goes
# to a stream whose device:inode JOURNAL_STREAM names (a wrapper sets it
# from rowgated's own fd 2), and a reader parses each line as journald's
# stream parser does: "<N>" (1 to 3 digits) is the syslog priority,
# stripped, the rest is the message; a line without it would be stored at
# the default priority, so every line must have one.  Checked:
# - every line has a valid prefix and no program name (journald adds it);
# - priorities: info 6, warning 4 (the full connection table), error 3 (a
#   bad option), and events at notice 5: cgroup_attach at start,
#   limit_set/limit_unset with previous value and source (rowgatectl limit
#   and rowgatectl sql), fail_open when the connection table is full
#   (victoria-metrics behind it, --conns-full fail-open);
# - --log-level warning hides notice and info: a limit change logs
#   nothing, a detach its warning only;
# - without JOURNAL_STREAM the format is the human one as before;
# - rowgate-meta: leader_elected, limit_set by its API and by
#   rowgatectl --meta sql; rowgated --meta: the cluster's limit as
#   limit_set source=meta, its quota as quota_set.
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd victoria-metrics curl stat "$RG_PY"
MAX=4
OPT=ingest_rows_rate_limit

# As systemd does for StandardError=journal: JOURNAL_STREAM is the
# device:inode of the stream the service's stderr is connected to.
cat >"$RG_TMP/journal-wrap.sh" <<'SH'
#!/bin/sh
JOURNAL_STREAM=$(stat -L -c %d:%i /proc/self/fd/2) exec "$@"
SH
chmod +x "$RG_TMP/journal-wrap.sh"

# journald's reading of a stream: "PRIORITY MESSAGE" per line, or exit 1
# naming the first line it would have stored without a priority of ours.
cat >"$RG_TMP/journal_reader.py" <<'PY'
import re, sys
ok = True
for n, raw in enumerate(open(sys.argv[1], encoding="utf-8", errors="replace"), 1):
    line = raw.rstrip("\n")
    m = re.match(r"<([0-9]{1,3})>(.*)\Z", line, re.S)
    if not m:
        print("line %d has no priority prefix: %r" % (n, line), file=sys.stderr)
        ok = False
        continue
    value, msg = int(m.group(1)), m.group(2)
    if value > 7:  # a facility: not one rowgate sets
        print("line %d: facility in %r" % (n, line), file=sys.stderr)
        ok = False
    if value < 3:
        print("line %d: priority %d is above err" % (n, value), file=sys.stderr)
        ok = False
    if msg.startswith(("rowgated:", "rowgate-meta:")):
        print("line %d names the program (journald does): %r" % (n, line), file=sys.stderr)
        ok = False
    print("%d %s" % (value & 7, msg))
sys.exit(0 if ok else 1)
PY
read_journal() { "$RG_PY" "$RG_TMP/journal_reader.py" "$1" >"$2"; }
# rg_check with the reader's view of a line (a regex over "PRIORITY MESSAGE")
has() { grep -Eq "$2" "$1" || { rg_log "  no line matches: $2"; return 1; }; }

# Holds MAX+1 connections to the guarded port until killed: the last one
# finds the table full and passes unguarded (fail-open).
hold_conns() {
	PYTHONPATH="$RG_ROOT/tests/e2e" "$RG_PY" - "$RG_PORT" "$((MAX + 1))" <<'PY' &
import sys, time
from rgclient import Conn
held = [Conn(int(sys.argv[1])) for _ in range(int(sys.argv[2]))]
time.sleep(60)
PY
	HOLD_PID=$!
	rg_on_exit "kill $HOLD_PID"
}

# --- journal format, default-ish level (the harness passes info) ---
rg_mount_bpffs
rg_start_vm
RG_WRAP="$RG_TMP/journal-wrap.sh" rg_start_rowgated --max-conns $MAX --conns-full fail-open
rg_ctl limit set logs 5000 >/dev/null || rg_fail "limit set"
rg_ctl limit set logs 10000 >/dev/null || rg_fail "limit set"
rg_ctl sql "ALTER DATABASE logs SET '$OPT' = '20000'" >/dev/null || rg_fail "sql set"
rg_ctl sql "ALTER DATABASE logs UNSET '$OPT'" >/dev/null || rg_fail "sql unset"
rg_ctl limit set metrics 300 >/dev/null || rg_fail "limit set"
rg_ctl limit unset metrics >/dev/null || rg_fail "limit unset"
hold_conns
rg_wait_for 10 grep -q "event=fail_open reason=conns_full" "$RG_TMP/rowgated.log" ||
	rg_fail "no fail_open event for the full connection table"
rg_wait_for 15 grep -q "passed UNLIMITED" "$RG_TMP/rowgated.log" ||
	rg_fail "no warning for the full connection table"
kill "$HOLD_PID"
rg_stop_rowgated
# an error: a bad option, from the same kind of stream
"$RG_TMP/journal-wrap.sh" "$RG_ROWGATED" --log-level bogus 2>"$RG_TMP/bad-option.log" &&
	rg_fail "--log-level bogus was accepted"

read_journal "$RG_TMP/rowgated.log" "$RG_TMP/journal.txt"
rc=$?
sed 's/^/  | /' "$RG_TMP/journal.txt"
rg_check "every line has a journald priority prefix and no program name" [ "$rc" -eq 0 ]
rg_check "info at 6 (an existing sentence, unchanged)" \
	has "$RG_TMP/journal.txt" "^6 guarding 1 port\(s\) in $RG_CGROUP; admin socket $RG_SOCK\$"
rg_check "attach at start: notice event" has "$RG_TMP/journal.txt" \
	"^5 event=cgroup_attach cgroup=$RG_CGROUP cgroup_id=[0-9]+ links=new conns_full=fail-open reason=start\$"
rg_check "limit set: notice event, no previous limit" has "$RG_TMP/journal.txt" \
	'^5 event=limit_set db=logs rows_per_s=5000 previous=none source=admin$'
rg_check "limit changed: the previous value" has "$RG_TMP/journal.txt" \
	'^5 event=limit_set db=logs rows_per_s=10000 previous=5000 source=admin$'
rg_check "rowgatectl sql: source=sql" has "$RG_TMP/journal.txt" \
	'^5 event=limit_set db=logs rows_per_s=20000 previous=10000 source=sql$'
rg_check "unset through sql" has "$RG_TMP/journal.txt" \
	'^5 event=limit_unset db=logs previous=20000 source=sql$'
rg_check "unset through the admin socket" has "$RG_TMP/journal.txt" \
	'^5 event=limit_unset db=metrics previous=300 source=admin$'
rg_check "fail-open: notice event with the count" has "$RG_TMP/journal.txt" \
	'^5 event=fail_open reason=conns_full count=[1-9][0-9]* total=[1-9][0-9]*$'
rg_check "the full table's warning at 4" has "$RG_TMP/journal.txt" \
	'^4 connection table full \(--max-conns 4\): [0-9]+ connection\(s\) passed UNLIMITED'
events=$(grep -c ' event=fail_open reason=conns_full ' "$RG_TMP/journal.txt")
rg_check "fail-open logged once for one burst ($events lines)" [ "$events" -eq 1 ]
read_journal "$RG_TMP/bad-option.log" "$RG_TMP/bad-option.txt"
rc=$?
cat "$RG_TMP/bad-option.txt"
rg_check "an error at 3" [ "$rc" -eq 0 ]
rg_check "... the option's error" has "$RG_TMP/bad-option.txt" \
	"^3 --log-level 'bogus': expected err\|warning\|notice\|info\|debug\$"

# --- --log-level warning: notice and info hidden ---
mv "$RG_TMP/rowgated.log" "$RG_TMP/journal-info.log"
RG_WRAP="$RG_TMP/journal-wrap.sh" rg_start_rowgated --max-conns $MAX --conns-full fail-open \
	--log-level warning
rg_ctl limit set logs 7000 >/dev/null || rg_fail "limit set"
rg_ctl detach >/dev/null || rg_fail "detach"
rg_wait_for 5 grep -q "detached on request" "$RG_TMP/rowgated.log" || rg_fail "no detach warning"
rg_stop_rowgated
read_journal "$RG_TMP/rowgated.log" "$RG_TMP/journal-warning.txt"
rc=$?
sed 's/^/  | /' "$RG_TMP/journal-warning.txt"
rg_check "--log-level warning: still journald's format" [ "$rc" -eq 0 ]
rg_check "--log-level warning: the detach warning at 4" has "$RG_TMP/journal-warning.txt" \
	'^4 detached on request: nothing is enforced until rowgated restarts$'
rg_check "--log-level warning: no notice, info or debug line" \
	sh -c "! grep -Ev '^[34] ' '$RG_TMP/journal-warning.txt'"

# --- no JOURNAL_STREAM: the human format of before ---
mv "$RG_TMP/rowgated.log" "$RG_TMP/journal-warning.log"
RG_WRAP="env -u JOURNAL_STREAM" rg_start_rowgated --max-conns $MAX --conns-full fail-open
rg_ctl limit set logs 8000 >/dev/null || rg_fail "limit set"
rg_ctl detach >/dev/null || rg_fail "detach"
rg_wait_for 5 grep -q "detached on request" "$RG_TMP/rowgated.log" || rg_fail "no detach warning"
rg_stop_rowgated
sed 's/^/  | /' "$RG_TMP/rowgated.log"
rg_check "no JOURNAL_STREAM: no priority prefix" sh -c "! grep -q '^<' '$RG_TMP/rowgated.log'"
rg_check "no JOURNAL_STREAM: info as before" \
	grep -qx "rowgated: guarding 1 port(s) in $RG_CGROUP; admin socket $RG_SOCK" "$RG_TMP/rowgated.log"
rg_check "no JOURNAL_STREAM: a warning as before" grep -qx \
	"rowgated: warning: detached on request: nothing is enforced until rowgated restarts" \
	"$RG_TMP/rowgated.log"
rg_check "no JOURNAL_STREAM: events after the program's name" grep -qx \
	"rowgated: event=limit_set db=logs rows_per_s=8000 previous=7000 source=admin" \
	"$RG_TMP/rowgated.log"
rg_check "no JOURNAL_STREAM: attach event (new links: the detach removed them)" grep -Eq \
	"^rowgated: event=cgroup_attach cgroup=$RG_CGROUP cgroup_id=[0-9]+ links=new " \
	"$RG_TMP/rowgated.log"

# --- distributed mode: rowgate-meta's events, and rowgated's from it ---
mv "$RG_TMP/rowgated.log" "$RG_TMP/human.log"
META_PORT=$(rg_free_port) || rg_fail "no free port"
META_URL=http://127.0.0.1:$META_PORT
"$RG_TMP/journal-wrap.sh" "$RG_BUILD/rowgate-meta" --listen "127.0.0.1:$META_PORT" \
	--state-file "$RG_TMP/meta-limits.json" 2>"$RG_TMP/meta.log" &
META_PID=$!
rg_on_exit "kill -9 $META_PID; wait $META_PID"
rg_wait_for 10 curl -sf "$META_URL/v1/health" || rg_fail "rowgate-meta did not come up"
RG_WRAP="$RG_TMP/journal-wrap.sh" rg_start_rowgated --meta "$META_URL" --node-id fe1
meta_ctl() { "$RG_ROWGATECTL" --meta "$META_URL" "$@"; }
meta_ctl limit set logs 9000 >/dev/null || rg_fail "meta limit set"
rg_wait_for 10 grep -q "rows_per_s=9000 .*source=meta" "$RG_TMP/rowgated.log" ||
	rg_fail "rowgated did not apply the cluster's limit"
meta_ctl sql "ALTER DATABASE logs SET '$OPT' = '12000'" >/dev/null || rg_fail "meta sql set"
rg_wait_for 10 grep -q "rows_per_s=12000 .*source=meta" "$RG_TMP/rowgated.log" ||
	rg_fail "rowgated did not apply the changed limit"
rg_stop_rowgated
kill -TERM "$META_PID"
wait "$META_PID"
read_journal "$RG_TMP/meta.log" "$RG_TMP/meta-journal.txt"
rc=$?
sed 's/^/  | /' "$RG_TMP/meta-journal.txt"
rg_check "rowgate-meta: journald's format" [ "$rc" -eq 0 ]
rg_check "rowgate-meta: leading, a notice event" has "$RG_TMP/meta-journal.txt" \
	'^5 event=leader_elected advertise=[^ ]+ limits=0 learning_ms=[0-9]+$'
rg_check "rowgate-meta: limit set through its API" has "$RG_TMP/meta-journal.txt" \
	'^5 event=limit_set db=logs rows_per_s=9000 previous=none source=admin$'
rg_check "rowgate-meta: rowgatectl --meta sql says sql" has "$RG_TMP/meta-journal.txt" \
	'^5 event=limit_set db=logs rows_per_s=12000 previous=9000 source=sql$'
read_journal "$RG_TMP/rowgated.log" "$RG_TMP/journal-meta.txt"
rc=$?
sed 's/^/  | /' "$RG_TMP/journal-meta.txt"
rg_check "rowgated --meta: journald's format" [ "$rc" -eq 0 ]
rg_check "rowgated --meta: the cluster's limit, source=meta" has "$RG_TMP/journal-meta.txt" \
	'^5 event=limit_set db=logs rows_per_s=12000 previous=9000 source=meta$'
rg_check "rowgated --meta: its quota from the allocator" has "$RG_TMP/journal-meta.txt" \
	'^5 event=quota_set db=logs quota_rows_per_s=[0-9]+ previous=[0-9]+ limit=(9000|12000)( suppressed=[0-9]+)?$'
rg_pass
