/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Every counter struct of the ABI as one table each, from which the struct
 * (hence the field names bpftool prints), the keys of `rowgatectl --json
 * stats` and the /metrics series (name, HELP, TYPE) are all expanded, so
 * the three views cannot drift apart.  Field order is the layout of pinned
 * maps that survive restarts: append only.
 *
 * X(field, json, series, kind, help): the struct field (__u64), its key in
 * the stats JSON, its Prometheus name after "rowgate_", COUNTER or GAUGE,
 * and the HELP text.
 */
#ifndef ROWGATE_COUNTERS_H
#define ROWGATE_COUNTERS_H

#include "types.h"

/* db_stats: database -> counters since the map was created (atomic adds).
 * The four gauges are the bucket as of the last charge in the map; every
 * view shows them live (limits map, bucket refilled to now) instead. */
#define RG_DB_STATS_FIELDS(X)                                                              \
	X(admitted_requests, "admitted_requests", "admitted_requests_total", COUNTER,     \
	  "Write requests admitted.")                                                    \
	X(admitted_rows, "admitted_rows", "admitted_rows_total", COUNTER,                 \
	  "Rows of admitted writes, charged to the bucket.")                             \
	X(rejected_requests, "rejected_requests", "rejected_requests_total", COUNTER,     \
	  "Write requests answered 429 by the kernel.")                                  \
	X(rejected_rows, "rejected_rows", "rejected_rows_total", COUNTER,                 \
	  "Rows of rejected writes.")                                                    \
	X(unenforced_requests, "unenforced_requests", "unenforced_requests_total",        \
	  COUNTER,                                                                        \
	  "Writes that should have been rejected but could not be answered in order: "   \
	  "passed.")                                                                     \
	X(unenforced_rows, "unenforced_rows", "unenforced_rows_total", COUNTER,           \
	  "Rows of unenforced writes.")                                                  \
	X(debt_rows, "debt_rows", "debt_rows", GAUGE,                                     \
	  "Rows admitted beyond the tokens there were, not yet repaid.")                 \
	X(tokens, "tokens", "tokens", GAUGE, "Whole tokens available now.")               \
	X(quota_rows_per_s, "quota", "quota_rows_per_second", GAUGE,                      \
	  "Effective quota of this host.")                                               \
	X(limit_rows_per_s, "limit", "limit_rows_per_second", GAUGE,                      \
	  "Configured limit (0 = disabled).")                                            \
	X(refunded_requests, "refunded_requests", "refunded_requests_total", COUNTER,     \
	  "Charged writes the server refused before storing (401, 403, 404, 413, 431): " \
	  "rows given back.")                                                            \
	X(refunded_rows, "refunded_rows", "refunded_rows_total", COUNTER,                 \
	  "Rows of refunded writes, also taken off admitted_rows/unenforced_rows.")

/* unlimited: database -> writes to it while it has no limit (an LRU map the
 * kernel fills as databases appear), so an operator can pick a limit from
 * data.  Line protocol's rows are counted exactly in the kernel; a body
 * rowgated would decode (compressed, protobuf, JSON) is estimated from its
 * size, and gRPC rows are the messages' own. */
#define RG_UNLIMITED_STATS_FIELDS(X)                                                      \
	X(requests, "requests", "unlimited_requests_total", COUNTER,                      \
	  "Writes to a database without a limit (gRPC: messages).")                      \
	X(rows, "rows", "unlimited_rows_total", COUNTER,                                  \
	  "Rows of those writes (see unlimited_estimated_requests_total).")              \
	X(estimated_requests, "estimated_requests", "unlimited_estimated_requests_total", \
	  COUNTER, "Of those writes, the ones whose rows are an estimate from the body size.") \
	X(body_bytes, "body_bytes", "unlimited_body_bytes_total", COUNTER,                \
	  "Body bytes of those writes.")

/* proto_stats: (database, protocol) -> counters of that protocol; series
 * carry a protocol label besides db. */
#define RG_PROTO_STATS_FIELDS(X)                                                          \
	X(admitted_requests, "admitted_requests", "protocol_admitted_requests_total",    \
	  COUNTER, "Write requests admitted, by protocol.")                              \
	X(admitted_rows, "admitted_rows", "protocol_admitted_rows_total", COUNTER,        \
	  "Rows charged for admitted writes: exact once reconciled.")                    \
	X(rejected_requests, "rejected_requests", "protocol_rejected_requests_total",    \
	  COUNTER, "Write requests answered 429, by protocol.")                          \
	X(rejected_rows, "rejected_rows", "protocol_rejected_rows_total", COUNTER,        \
	  "Rows of rejected writes: exact once reconciled.")                             \
	X(estimated_rows, "estimated_rows", "protocol_estimated_rows_total", COUNTER,     \
	  "Rows charged from the body size at admission.")                               \
	X(reconciled_requests, "reconciled_requests",                                     \
	  "protocol_reconciled_requests_total", COUNTER,                                  \
	  "Requests counted by rowgated, bucket corrected.")                             \
	X(reconciled_rows, "reconciled_rows", "protocol_reconciled_rows_total", COUNTER,  \
	  "The exact rows of reconciled requests.")                                      \
	X(unreconciled_requests, "unreconciled_requests",                                 \
	  "protocol_unreconciled_requests_total", COUNTER,                                \
	  "Body copies lost (ring full, rowgated down or slow): the estimate stands.")   \
	X(unreconciled_bytes, "unreconciled_bytes", "protocol_unreconciled_bytes_total",  \
	  COUNTER, "Body bytes of unreconciled requests.")                               \
	X(undecodable_requests, "undecodable_requests",                                   \
	  "protocol_undecodable_requests_total", COUNTER,                                 \
	  "Bodies rowgated could not decode: the estimate stands.")                      \
	X(body_bytes, "body_bytes", "protocol_body_bytes_total", COUNTER,                 \
	  "Body bytes of requests on routes of this protocol.")                          \
	X(lag_ns_total, "lag_ns_total", "protocol_reconcile_lag_ns_total", COUNTER,       \
	  "Request end to bucket correction, summed over reconciled requests.")

/* global_stats: one entry of host-wide counters. */
#define RG_GLOBAL_STATS_FIELDS(X)                                                       \
	X(conns_tracked, "conns_tracked", "connections_tracked_total", COUNTER,         \
	  "Ingest connections guarded.")                                                \
	X(conns_untracked, "conns_untracked", "connections_untracked_total", COUNTER,   \
	  "Connections passed unguarded: state map full.")                              \
	X(non_http_conns, "non_http_conns", "non_http_connections_total", COUNTER,      \
	  "Connections whose first bytes were not HTTP.")                               \
	X(bad_requests, "bad_requests", "bad_requests_total", COUNTER,                  \
	  "Requests answered 400 (ambiguous or malformed framing).")                    \
	X(heads_split, "heads_split", "heads_split_total", COUNTER,                     \
	  "Request heads held back across segments.")                                   \
	X(pipelined_unenforced, "pipelined_unenforced", "pipelined_unenforced_total",   \
	  COUNTER, "Rejections passed to keep responses in order.")                     \
	X(pipelined_voided, "pipelined_voided", "pipelined_voided_total", COUNTER,      \
	  "Rejections behind an unanswered request: voided, the server answers 400.")   \
	X(recvmsg_failopen, "recvmsg_failopen", "recvmsg_failopen_total", COUNTER,      \
	  "Verdicts run inside recvmsg: passed.")                                       \
	X(responses_close, "responses_close", "responses_close_total", COUNTER,         \
	  "429s that had to close the connection.")                                     \
	X(responses_close_deadline, "responses_close_deadline",                         \
	  "responses_close_deadline_total", COUNTER,                                    \
	  "429s that closed ahead of the server's own timeout.")                        \
	X(internal_errors, "internal_errors", "internal_errors_total", COUNTER,         \
	  "Helper failures: passed unenforced.")                                        \
	X(body_ring_full, "body_ring_full", "body_ring_full_total", COUNTER,            \
	  "Body copies lost to a full ring: estimates stand.")                          \
	X(failclosed_not_http, "failclosed_not_http", "failclosed_not_http_total",      \
	  COUNTER,                                                                      \
	  "Guarded connections whose first bytes were not HTTP, port not "              \
	  "--allow-unparsed: 400.")                                                     \
	X(failclosed_malformed, "failclosed_malformed", "failclosed_malformed_total",   \
	  COUNTER, "Requests answered 400: request line or header syntax.")             \
	X(failclosed_framing, "failclosed_framing", "failclosed_framing_total", COUNTER, \
	  "Requests answered 400: ambiguous or invalid body framing.")                  \
	X(failclosed_too_large, "failclosed_too_large", "failclosed_too_large_total",   \
	  COUNTER, "Requests answered 400: head over the limit.")                       \
	X(failclosed_unmodeled, "failclosed_unmodeled", "failclosed_unmodeled_total",   \
	  COUNTER,                                                                      \
	  "Requests answered 400: a construct rowgate does not read as the server "     \
	  "would (target form, db ambiguity).")                                         \
	X(egress_responses, "egress_responses", "egress_responses_total", COUNTER,      \
	  "Final server responses followed on guarded connections.")                    \
	X(egress_lost, "egress_lost", "egress_lost_total", COUNTER,                     \
	  "Connections whose responses egress could not frame: no refunds there.")      \
	X(pipelined_answered_429, "pipelined_answered_429", "pipelined_answered_429_total", \
	  COUNTER, "Voided requests whose server 400 egress replaced with rowgate's 429.") \
	X(pipelined_answered_400, "pipelined_answered_400", "pipelined_answered_400_total", \
	  COUNTER, "Voided requests left with the server's 400: egress could not answer.") \
	X(body_db_refused, "body_db_refused", "body_db_refused_total", COUNTER,         \
	  "Writes refused at a line whose db tag names an indebted database.")          \
	X(body_db_unenforced, "body_db_unenforced", "body_db_unenforced_total", COUNTER, \
	  "Lines naming an indebted database passed: no answer could go out in order.") \
	X(closed_unseen, "closed_unseen", "closed_unseen_total", COUNTER,               \
	  "Connections closed before the server accepted them, with bytes no verdict "  \
	  "saw: the server may still read them, unenforced (docs/threat-model.md).")    \
	X(resets_held, "resets_held", "resets_held_total", COUNTER,                     \
	  "Resets dropped because no verdict had seen the connection's data yet (not "  \
	  "accepted): the verdict runs at accept, the next reset closes it.")           \
	X(tcp_old_segments, "tcp_old_segments", "tcp_old_segments_total", COUNTER,      \
	  "Segments the kernel handed the verdict starting with bytes it had handed "   \
	  "over already (a retransmission over received data): those were cut off, so " \
	  "the verdict and the server read each byte once.")                            \
	X(tcp_old_bytes, "tcp_old_bytes", "tcp_old_bytes_total", COUNTER,               \
	  "Bytes cut off those segments.")                                              \
	X(tcp_seq_gaps, "tcp_seq_gaps", "tcp_seq_gaps_total", COUNTER,                  \
	  "Segments whose start the verdict could not place in the client's stream "    \
	  "(read without it, or a retransmission it could not see coming): nothing cut.")

/* h2_stats: [0] -> host-wide counters of the HTTP/2 (gRPC) path: the
 * verdict's (bpf/h2/), egress's and the kernel answers'.  Their JSON keys
 * and series are those they had in global_stats, so the stats' "global"
 * object and /metrics are unchanged. */
#define RG_H2_STATS_FIELDS(X)                                                           \
	X(h2_conns, "h2_conns", "h2_conns_total", COUNTER,                              \
	  "Connections on --grpc ports opened with the HTTP/2 preface: followed.")      \
	X(h2_failclosed, "h2_failclosed", "h2_failclosed_total", COUNTER,               \
	  "HTTP/2 connections the kernel could not follow: GOAWAY, nothing more passed.") \
	X(h2_reject_closed, "h2_reject_closed", "h2_reject_closed_total", COUNTER,      \
	  "gRPC writes rejected by closing their connection with GOAWAY.")              \
	X(h2_unenforced, "h2_unenforced", "h2_unenforced_total", COUNTER,               \
	  "gRPC writes that should have been rejected inside the server's read: passed.") \
	X(h2_out_frames, "h2_out_frames", "h2_out_frames_total", COUNTER,               \
	  "HTTP/2 frames the servers wrote on followed connections, framed by egress.") \
	X(h2_out_settings_acks, "h2_out_settings_acks", "h2_out_settings_acks_total",   \
	  COUNTER, "SETTINGS ACKs among them.")                                         \
	X(h2_out_lost, "h2_out_lost", "h2_out_lost_total", COUNTER,                     \
	  "HTTP/2 connections whose server frames egress could not follow.")            \
	X(h2_reject_kept, "h2_reject_kept", "h2_reject_kept_total", COUNTER,            \
	  "gRPC writes rejected by resetting their stream, the connection kept.")       \
	X(h2_stashed, "h2_stashed", "h2_stashed_total", COUNTER,                        \
	  "HTTP/2 skbs whose last frame bytes were held back for the next (--grpc-reject keep).") \
	X(h2_reject_early, "h2_reject_early", "h2_reject_early_total", COUNTER,         \
	  "Of h2_reject_kept: refused at the header of a DATA frame too large to hold back.") \
	X(h2_reject_short_tail, "h2_reject_short_tail", "h2_reject_short_tail_total", COUNTER, \
	  "Of h2_reject_kept: refused at the DATA frame before a tail too short to rewrite.") \
	X(h2_reject_fallback, "h2_reject_fallback", "h2_reject_fallback_total", COUNTER, \
	  "Of h2_reject_closed, those --grpc-reject keep could not keep (counted once).") \
	X(h2_fallback_head_split, "h2_fallback_head_split", "h2_fallback_head_split_total", \
	  COUNTER, "Of h2_reject_fallback: the completing DATA frame's header was in an earlier skb.") \
	X(h2_fallback_short, "h2_fallback_short", "h2_fallback_short_total",            \
	  COUNTER, "Of h2_reject_fallback: the completing DATA frame's payload is under 22 bytes.") \
	X(h2_fallback_later_split, "h2_fallback_later_split", "h2_fallback_later_split_total", \
	  COUNTER, "Of h2_reject_fallback: a refused stream's later frame began in an earlier skb.") \
	X(h2_fallback_full, "h2_fallback_full", "h2_fallback_full_total",               \
	  COUNTER, "Of h2_reject_fallback: the answer or SETTINGS queue full.")         \
	X(h2_fallback_per_skb, "h2_fallback_per_skb", "h2_fallback_per_skb_total",      \
	  COUNTER, "Of h2_reject_fallback: over 16 resets or 32 rewrites in one skb.")  \
	X(h2_fallback_name, "h2_fallback_name", "h2_fallback_name_total",               \
	  COUNTER, "Of h2_reject_fallback: a database name that needs percent-encoding.") \
	X(h2_fallback_egress, "h2_fallback_egress", "h2_fallback_egress_total",         \
	  COUNTER, "Of h2_reject_fallback: egress lost the connection's framing.")      \
	X(h2_recvmsg_skbs, "h2_recvmsg_skbs", "h2_recvmsg_skbs_total", COUNTER,         \
	  "HTTP/2 skbs the verdict saw inside the server's recvmsg: passed, nothing held back.") \
	X(h2_out_answers, "h2_out_answers", "h2_out_answers_total", COUNTER,            \
	  "RESOURCE_EXHAUSTED answers egress wrote in place of a kernel SETTINGS ACK.") \
	X(h2_out_answer_failed, "h2_out_answer_failed", "h2_out_answer_failed_total",   \
	  COUNTER, "Kernel SETTINGS ACKs egress could not replace (the client sees them).") \
	X(h2_streams_unrouted, "h2_streams_unrouted", "h2_streams_unrouted_total",      \
	  COUNTER, "HTTP/2 streams whose :path no gRPC route names: DATA passed uncharged.") \
	X(h2_goaway_queued, "h2_goaway_queued", "h2_goaway_queued_total", COUNTER,      \
	  "HTTP/2 connections closed by a kernel GOAWAY, queued for rowgated to reset.") \
	X(h2_goaway_unqueued, "h2_goaway_unqueued", "h2_goaway_unqueued_total", COUNTER, \
	  "Of them, not queued (queue full): left to the client to close.")             \
	X(h2_out_streams_capped, "h2_out_streams_capped", "h2_out_streams_capped_total", \
	  COUNTER, "Servers' first SETTINGS whose MAX_CONCURRENT_STREAMS egress lowered " \
	  "to --grpc-max-streams.")                                                     \
	X(h2_out_frame_size_capped, "h2_out_frame_size_capped",                         \
	  "h2_out_frame_size_capped_total", COUNTER,                                    \
	  "Servers' first SETTINGS whose MAX_FRAME_SIZE egress lowered to 16,384, the " \
	  "largest frame the verdict reads.")                                           \
	X(h2_out_streams_uncapped, "h2_out_streams_uncapped",                           \
	  "h2_out_streams_uncapped_total", COUNTER,                                     \
	  "Servers' first SETTINGS egress could not rewrite (split across writes, too " \
	  "many parameters, no room): the client keeps the server's stream limit and "  \
	  "frame size.")                                                                \
	X(h2_streams_uncounted, "h2_streams_uncounted", "h2_streams_uncounted_total",   \
	  COUNTER, "HTTP/2 streams of a gRPC method whose rows rowgate cannot count "   \
	  "(--grpc-uncounted): their connection failed closed, also in h2_failclosed.") \
	X(h2_compressed_copied, "h2_compressed_copied", "h2_compressed_copied_total",   \
	  COUNTER, "Compressed GreptimeDatabase gRPC messages (--grpc-compressed debt) " \
	  "whose copy went to rowgated, to be charged or counted as rejected.")         \
	X(h2_compressed_lost, "h2_compressed_lost", "h2_compressed_lost_total", COUNTER, \
	  "Compressed gRPC messages passed whose copy was lost (body ring full): "      \
	  "their rows are not charged.")                                                \
	X(h2_compressed_dbs_full, "h2_compressed_dbs_full",                             \
	  "h2_compressed_dbs_full_total", COUNTER,                                      \
	  "Compressed gRPC messages failed closed: their connection's compressed "      \
	  "messages named more databases than are followed per connection (8).")        \
	X(h2_give_backs, "h2_give_backs", "h2_give_backs_total", COUNTER,               \
	  "Refused streams' later DATA frames rewritten into a kernel SETTINGS whose "  \
	  "ACK egress replaces with the connection window of the DATA hidden since the " \
	  "last answer.")                                                               \
	X(h2_early_head_split, "h2_early_head_split", "h2_early_head_split_total", COUNTER, \
	  "Refusals decided at a DATA frame's header whose rewritten head was split "   \
	  "across two skbs (the first one too long to hold back).")                     \
	X(h2_failclosed_err, "h2_failclosed_err", "h2_failclosed_err", GAUGE,           \
	  "Why the last HTTP/2 connection that failed closed did: minus its enum "      \
	  "rg_h2_result (include/rowgate/h2/result.h; 3 protocol, 4 streams, 6 protobuf).") \
	X(h2_streams_parked, "h2_streams_parked", "h2_streams_parked_total", COUNTER,   \
	  "Streams whose half-read message waited in h2_parked while every parser slot " \
	  "held one (docs/grpc.md#framing).")

/* udp_stats: database -> UDP counters (per CPU: readers sum the CPUs).  A
 * datagram is a batch, admitted or dropped whole; the same datagrams also
 * count as requests in db_stats. */
#define RG_UDP_STATS_FIELDS(X)                                                            \
	X(admitted_datagrams, "admitted_datagrams", "udp_admitted_datagrams_total",      \
	  COUNTER, "UDP datagrams passed, all rows charged.")                            \
	X(admitted_rows, "admitted_rows", "udp_admitted_rows_total", COUNTER,             \
	  "Rows of admitted UDP datagrams.")                                             \
	X(dropped_datagrams, "dropped_datagrams", "udp_dropped_datagrams_total", COUNTER, \
	  "UDP datagrams dropped in XDP: no whole token.")                               \
	X(dropped_rows, "dropped_rows", "udp_dropped_rows_total", COUNTER,                \
	  "Rows of dropped UDP datagrams.")                                              \
	X(unlimited_datagrams, "unlimited_datagrams", "udp_unlimited_datagrams_total",    \
	  COUNTER, "UDP datagrams to a database without a limit: passed, not counted.")  \
	X(empty_datagrams, "empty_datagrams", "udp_empty_datagrams_total", COUNTER,       \
	  "UDP datagrams of 0 rows (empty, blanks, comments): passed uncharged.")        \
	X(unaccounted_datagrams, "unaccounted_datagrams",                                 \
	  "udp_unaccounted_datagrams_total", COUNTER,                                     \
	  "UDP datagrams that cannot be counted (first IP fragments, oversize): passed " \
	  "uncharged.")

/* xdp_stats: [0] -> host-wide XDP counters (per CPU: readers sum). */
#define RG_XDP_STATS_FIELDS(X)                                                            \
	X(packets, "packets", "xdp_packets_total", COUNTER, "Frames the XDP program ran on.") \
	X(passed, "passed", "xdp_passed_total", COUNTER,                                  \
	  "Frames not IPv4/IPv6 UDP to a mapped port: passed untouched.")                \
	X(fragments, "fragments", "xdp_fragments_total", COUNTER,                         \
	  "UDP in IP fragments: cannot be counted, passed.")                             \
	X(malformed, "malformed", "xdp_malformed_total", COUNTER,                         \
	  "Truncated headers, lengths beyond the whole frame.")                          \
	X(oversize, "oversize", "xdp_oversize_total", COUNTER,                            \
	  "Mapped datagrams not all in the linear part, or ending past the verifier's "  \
	  "packet offset limit: passed uncounted.")                                      \
	X(ipv6_unparsed, "ipv6_unparsed", "xdp_ipv6_unparsed_total", COUNTER,             \
	  "IPv6 packets with more extension headers than parsed: passed.")               \
	X(udp6_zero_csum, "udp6_zero_csum", "xdp_udp6_zero_csum_total", COUNTER,          \
	  "IPv6 UDP with checksum 0 (the stack drops it): passed uncharged.")            \
	X(admitted, "admitted", "xdp_admitted_total", COUNTER,                            \
	  "UDP datagrams admitted (all databases).")                                     \
	X(dropped, "dropped", "xdp_dropped_total", COUNTER,                               \
	  "UDP datagrams dropped (all databases).")

/* guard_stats: [0] -> host-wide counters of the adoption of connections
 * that predate a start and of the connection-table policy (rowgate/guard.h). */
#define RG_GUARD_STATS_FIELDS(X)                                                          \
	X(adopt_synced, "adopt_synced", "adopt_synced_total", COUNTER,                    \
	  "Adopted connections enforced from a request boundary on.")                    \
	X(adopt_sync_ns_total, "adopt_sync_ns_total", "adopt_sync_ns_total", COUNTER,     \
	  "Adoption to the first enforced request, summed over synced connections.")     \
	X(adopt_sync_ns_max, "adopt_sync_ns_max", "adopt_sync_ns_max", GAUGE,             \
	  "Longest adoption to first enforced request.")                                 \
	X(adopt_passed_bytes, "adopt_passed_bytes", "adopt_passed_bytes_total", COUNTER,  \
	  "Bytes passed unparsed while adopted connections synchronised.")               \
	X(conns_refused, "conns_refused", "connections_refused_total", COUNTER,           \
	  "Connections without state whose data is dropped (--conns-full=fail-closed).") \
	X(refused_segments, "refused_segments", "refused_segments_total", COUNTER,        \
	  "Data segments dropped for connections without state (fail-closed).")

/* verdict_stats: [0] -> counters of the entry attached to the sockhash
 * (rowgate/guard.h); a map of its own so the pinned counter structs keep
 * their layout. */
#define RG_VERDICT_STATS_FIELDS(X)                                                        \
	X(verdict_missing, "verdict_missing", "verdict_missing_total", COUNTER,           \
	  "Segments passed unparsed: the verdict slot was empty.")                      \
	X(egress_missing, "egress_missing", "egress_missing_total", COUNTER,              \
	  "Server sends not followed: the egress slot was empty.")

/* rowgated's resets of connections the kernel closed with GOAWAY, and of
 * those a full table refused (user/rowgated/h2_close.c): its own memory. */
#define RG_H2_CLOSE_STATS_FIELDS(X)                                                       \
	X(resets, "h2_goaway_resets", "h2_goaway_resets_total", COUNTER,                  \
	  "HTTP/2 connections reset by rowgated --grpc-close-grace after a kernel GOAWAY.") \
	X(gone, "h2_goaway_gone", "h2_goaway_gone_total", COUNTER,                        \
	  "Of the queued, already closed when their grace ended.")                      \
	X(failed, "h2_goaway_reset_failed", "h2_goaway_reset_failed_total", COUNTER,      \
	  "Of the queued, not reset: sock_diag refused (logged once).")                 \
	X(pending, "h2_goaway_pending", "h2_goaway_pending", GAUGE,                       \
	  "Queued connections waiting for their grace to end.")                         \
	X(refused_resets, "conns_refused_resets", "conns_refused_resets_total",           \
	  COUNTER, "Connections the full table refused, reset by rowgated.")             \
	X(refused_reset_failed, "conns_refused_reset_failed",                             \
	  "conns_refused_reset_failed_total", COUNTER,                                    \
	  "Of those, not reset: sock_diag refused (logged once).")                      \
	X(adopt_resets, "adopt_resets", "adopt_resets_total", COUNTER,                    \
	  "Adopted connections reset: --adopt-grace after adoption, bytes that start "   \
	  "no request after the server answered (HTTP/2).")                             \
	X(adopt_reset_failed, "adopt_reset_failed", "adopt_reset_failed_total", COUNTER,  \
	  "Of those, not reset: sock_diag refused (logged once); their bytes are "       \
	  "dropped.")

/* rowgated's reconciler (user/rowgated/reconcile.c): not a map, rowgated's own
 * memory; the body copies it holds are bounded by --copy-memory
 * (docs/guarantees.md#bounded-state). */
#define RG_RECONCILE_STATS_FIELDS(X)                                                      \
	X(reconciled, "reconciled_requests", "reconciled_requests_total", COUNTER,        \
	  "Body copies counted exactly by rowgated, bucket corrected.")                 \
	X(undecodable, "undecodable_requests", "undecodable_requests_total", COUNTER,     \
	  "Body copies rowgated could not decode: worst case charged.")                 \
	X(incomplete, "incomplete_copies", "incomplete_copies_total", COUNTER,            \
	  "Body copies with records lost or over a cap: worst case charged.")           \
	X(expired, "expired_copies", "expired_copies_total", COUNTER,                     \
	  "Body copies freed without their end, their connection open: estimate "      \
	  "stands.")                                                                    \
	X(aborted, "aborted_copies", "aborted_copies_total", COUNTER,                     \
	  "Body copies whose connection closed inside the body: line protocol "        \
	  "charged as far as it arrived and decodes.")                                  \
	X(aborted_estimated, "aborted_copies_estimated", "aborted_copies_estimated_total",\
	  COUNTER,                                                                      \
	  "Body copies whose connection closed inside the body, not line protocol or " \
	  "chunked: estimate of what arrived stands.")                                  \
	X(corrections, "corrections", "corrections_total", COUNTER,                       \
	  "Bucket corrections run (one per database of a counted body).")               \
	X(late_refunds, "late_refunds", "late_refunds_total", COUNTER,                    \
	  "Corrections down to fewer rows than the estimate that came too late to "     \
	  "credit the bucket (docs/design.md#late-refunds): estimate stands there.")    \
	X(late_refund_rows, "late_refund_rows", "late_refund_rows_total", COUNTER,        \
	  "Rows of late_refunds left charged in the bucket.")                           \
	X(orphans, "orphan_records", "orphan_records_total", COUNTER,                     \
	  "Body records whose start was lost (ring full or memory cap): estimate "      \
	  "stands.")                                                                    \
	X(over_memory, "copies_over_memory", "copies_over_memory_total", COUNTER,         \
	  "Body copies dropped at the --copy-memory cap: worst case charged.")          \
	X(held_copies, "copies_held", "copies_held", GAUGE,                               \
	  "Body copies held, waiting for their end.")                                   \
	X(held_bytes, "copy_bytes_held", "copy_bytes_held", GAUGE,                        \
	  "Bytes held for body copies (buffers, records, free buffers kept).")          \
	X(held_bytes_max, "copy_bytes_held_max", "copy_bytes_held_max", GAUGE,            \
	  "Most bytes ever held for body copies at once.")                              \
	X(memory_limit, "copy_memory_bytes", "copy_memory_bytes", GAUGE,                  \
	  "The cap on bytes held for body copies (--copy-memory).")

/* rowgated's side of distributed mode (user/rowgated/meta_agent.c): its own
 * memory.  The JSON keys are those of the "meta" object of the stats. */
#define RG_AGENT_STATS_FIELDS(X)                                                          \
	X(heartbeats_ok, "heartbeats_ok", "meta_agent_heartbeats_ok_total", COUNTER,      \
	  "Heartbeats rowgate-meta answered.")                                          \
	X(heartbeats_failed, "heartbeats_failed", "meta_agent_heartbeats_failed_total",   \
	  COUNTER, "Heartbeats that got no usable answer (every replica tried).")       \
	X(lease_expiries, "lease_expiries", "meta_agent_lease_expiries_total", COUNTER,   \
	  "Quota leases that ended without an answer: fell back to the full limits.")   \
	X(quota_updates, "quota_updates", "meta_agent_quota_updates_total", COUNTER,      \
	  "Limits or quotas changed in the limits map by a reply.")                     \
	X(learning_replies, "learning_replies", "meta_agent_learning_replies_total",      \
	  COUNTER, "Replies of a leader in its learning phase.")                        \
	X(apply_errors, "apply_errors", "meta_agent_apply_errors_total", COUNTER,         \
	  "Limits or quotas of a reply that could not be written to the maps.")         \
	X(unreachable, "unreachable", "meta_agent_unreachable", GAUGE,                    \
	  "1 while the last heartbeat failed (quotas kept until their lease ends).")    \
	X(fallback, "fallback", "meta_agent_fallback", GAUGE,                             \
	  "1 while running on the full limits: the lease ended without an answer.")     \
	X(last_ok_ms_ago, "last_ok_ms_ago", "meta_agent_last_ok_age_ms", GAUGE,           \
	  "Milliseconds since the last answered heartbeat (0: none yet).")              \
	X(lease_ms_left, "lease_ms_left", "meta_agent_lease_left_ms", GAUGE,              \
	  "Milliseconds until the quotas held fall back to the full limits.")

#define RG_COUNTER_FIELD_(field, json, series, kind, help) __u64 field;

#endif /* ROWGATE_COUNTERS_H */
