/* SPDX-License-Identifier: GPL-2.0 */
/* Protocol numbers of the packet headers rowgate reads (tcp_hdr.h, xdp.h):
 * macros in the kernel's uapi headers, which vmlinux.h does not carry. */
#ifndef ROWGATE_BPF_NET_H
#define ROWGATE_BPF_NET_H

#define RG_ETH_P_IP	0x0800
#define RG_ETH_P_IPV6	0x86DD
#define RG_ETH_P_8021Q	0x8100
#define RG_ETH_P_8021AD 0x88A8
#define RG_IPPROTO_TCP	6
#define RG_IPPROTO_UDP	17

#endif /* ROWGATE_BPF_NET_H */
