#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Who may change a limit: the admin socket of rowgated --admin-group is
# mode 0660 in that group; an unprivileged user outside it is refused with a
# clear message, a member may; with the socket's mode opened to everyone,
# the peer credentials still refuse the outsider; the pin directory, found
# world-writable, is made writable by root only.
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_require_root
rg_require_cmd setpriv getent stat
group=adm
gid=$(getent group "$group" | cut -d: -f3)
[ -n "$gid" ] || rg_skip "no group '$group' to use as the admin group"
id -u nobody >/dev/null 2>&1 || rg_skip "no user nobody"
chmod 0711 "$RG_TMP" # nobody reaches the socket; its mode decides
rg_mount_bpffs
mkdir -m 0777 "$RG_BPFFS" || rg_fail "cannot pre-create $RG_BPFFS"
rg_start_vm
rg_start_rowgated --admin-group "$group"

as_nobody() { setpriv --reuid=nobody --regid=nogroup "$@"; }
ctl_as() { # ctl_as SETPRIV-ARGS -- ROWGATECTL-ARGS
	local opts=()
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	as_nobody "${opts[@]}" "$RG_ROWGATECTL" --socket "$RG_SOCK" "$@"
}

rg_check "socket mode 660 in group $group" \
	test "$(stat -c '%a %g' "$RG_SOCK")" = "660 $gid"
rg_check "pin directory no longer writable by others" \
	test "$(stat -c '%a' "$RG_BPFFS")" = 755
as_nobody --clear-groups mkdir "$RG_BPFFS/planted" 2>/dev/null &&
	rg_fail "nobody could create a directory among the pins"

out=$(ctl_as --clear-groups -- limit set guarded 5 2>&1) &&
	rg_fail "nobody set a limit: $out"
rg_log "outsider: $out"
case $out in
*"Permission denied"*"the admin socket is for root and the group of rowgated --admin-group"*) ;;
*) rg_fail "unclear refusal: $out" ;;
esac
rg_ctl --json limit show | grep -q guarded && rg_fail "the refused limit was set"

out=$(ctl_as --groups="$gid" -- limit set guarded 5 2>&1) ||
	rg_fail "a member of $group was refused: $out"
rg_ctl --json limit show guarded | grep -q '"limit": *5' ||
	rg_fail "the member's limit is not there: $(rg_ctl --json limit show)"

chmod 0666 "$RG_SOCK"
out=$(ctl_as --clear-groups -- limit unset guarded 2>&1) &&
	rg_fail "nobody unset a limit through an open socket: $out"
rg_log "outsider, open socket: $out"
case $out in
*"permission denied: uid $(id -u nobody)"*"nor in the admin group"*) ;;
*) rg_fail "unclear refusal: $out" ;;
esac
rg_ctl --json limit show guarded | grep -q '"limit": *5' ||
	rg_fail "the refused unset took effect"
grep -q "admin socket: permission denied" "$RG_TMP/rowgated.log" ||
	rg_fail "rowgated did not log the refusal"
rg_pass "outsiders refused, the admin group allowed, pins locked"
