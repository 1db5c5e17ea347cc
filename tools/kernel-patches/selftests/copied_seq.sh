#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Bug 3 of the series: tools/repro/copied_seq (`make repro`) as a pass/fail
# test.  It drops 1000 bytes sent before accept() and counts the server's
# empty wake-ups; the tool exits 0 either way, so read its verdict line.
# exit 0 pass (not reproduced), 1 fail (reproduced), 2 setup error.
cd "$(dirname "$0")/../../.." || exit 2
out=$(build/repro/copied_seq --check 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" = 0 ] || exit 2
case $out in
*"BUG REPRODUCED"*) echo "FAIL: the verdict's copied_seq charges are lost in recvmsg"; exit 1 ;;
*"not reproduced"*) echo "PASS: copied_seq keeps the verdict's charges"; exit 0 ;;
esac
exit 2
