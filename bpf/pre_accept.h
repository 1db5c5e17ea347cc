/* SPDX-License-Identifier: GPL-2.0 */
/* Data that arrived before accept() (docs/design.md#pre-accept-data): the
 * getpeername hooks make the verdict run on it while the server accepts.
 */
#ifndef ROWGATE_BPF_PRE_ACCEPT_H
#define ROWGATE_BPF_PRE_ACCEPT_H

#include "base.h"
#include "conn.h"

#define SOL_SOCKET  1
#define SO_RCVLOWAT 18

/*
 * accept4() with an address buffer calls getpeername on the grafted socket
 * under its lock: re-setting SO_RCVLOWAT there runs tcp_data_ready(), so the
 * verdict sees data that arrived before accept() outside recvmsg, where its
 * drops and redirects are charged (docs/design.md#pre-accept-data).
 */
static __always_inline void rg_kick_verdict(struct bpf_sock_addr *ctx)
{
	struct bpf_sock *sk = ctx->sk;
	struct rg_conn *c;
	__u64 cookie;
	__u32 port;
	int lowat = 1;

	if (!sk)
		return;
	port = sk->src_port;
	if (!bpf_map_lookup_elem(&RG_MAP_PORTS, &port))
		return;
	cookie = bpf_get_socket_cookie(ctx);
	c = bpf_map_lookup_elem(&RG_MAP_CONNS, &cookie);
	if (!c)
		return;
	if (bpf_getsockopt(ctx, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat)))
		lowat = 1;
	c->draining = 1;
	bpf_setsockopt(ctx, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat));
	c->draining = 0;
}

#endif /* ROWGATE_BPF_PRE_ACCEPT_H */
