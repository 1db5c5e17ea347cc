#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# (a) Every admitted write is stored and no rejected write is: the rows
# victoria-metrics stores equal the rows rowgate admitted, exactly, under
# concurrent load from several keep-alive clients.
RG_PROFILE=greptimedb # rowgate reads requests as GreptimeDB does (victoria-metrics stores them)
source "$(dirname "$0")/lib.sh"
rg_setup
rg_ctl limit set exact 400 >/dev/null || rg_fail "limit set"

"$RG_PY" "$RG_CLIENT" load --port "$RG_PORT" --db exact --seconds 4 --threads 4 \
	--max-rows 40 --series rg_exact >"$RG_TMP/load.json" || rg_fail "load client failed"
read -r adm_req adm_rows rej_req rej_rows errors < <("$RG_PY" -c '
import json,sys; s=json.load(open(sys.argv[1]))
print(s["admitted_requests"], s["admitted_rows"], s["rejected_requests"], s["rejected_rows"], len(s["errors"]))' \
	"$RG_TMP/load.json")
rg_log "client: admitted $adm_req requests / $adm_rows rows, rejected $rej_req / $rej_rows, errors $errors"

rg_check "no protocol errors" [ "$errors" -eq 0 ]
rg_check "both outcomes happened" [ "$adm_req" -gt 0 -a "$rej_req" -gt 0 ]
stored=$(rg_vm_rows_wait '{__name__="rg_exact_v",db="exact"}' "$adm_rows")
rg_log "victoria-metrics stores $stored rows"
rg_check "stored rows ($stored) == admitted rows ($adm_rows)" [ "$stored" -eq "$adm_rows" ]
k_rows=$(rg_stat exact admitted_rows)
k_rej=$(rg_stat exact rejected_rows)
rg_check "rowgate admitted_rows ($k_rows) == client's ($adm_rows)" [ "$k_rows" -eq "$adm_rows" ]
rg_check "rowgate rejected_rows ($k_rej) == client's ($rej_rows)" [ "$k_rej" -eq "$rej_rows" ]
# no rejected request left a trace
one_rejected=$("$RG_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["rejected_ids"][0])' "$RG_TMP/load.json")
leaked=$(rg_vm_rows "{__name__=\"rg_exact_v\",req=\"$one_rejected\"}")
rg_check "a rejected request ($one_rejected) stored nothing" [ "$leaked" -eq 0 ]
rg_pass
