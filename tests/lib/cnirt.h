/*
 * A container runtime on the nodes of a topology (tests/lib/topo.h), through
 * the containernetworking project's own client: libcni's cnitool, cnigc and
 * cnirt (tests/controlplane/build-cni.sh, cached outside the repo). Each
 * node has its conflists in <topo dir>/n<node>/net.d; CNI_PATH holds our
 * binaries under the upstream plugin names first, then the reference
 * plugins; the agent socket (/run/galactic/<prefix>-n<node>.sock) comes from
 * the runtime's environment (GALACTIC_AGENT_SOCKET), so the conflists stay
 * exactly as the VPC operator renders them.
 */
#ifndef GALACTIC_TESTS_CNIRT_H
#define GALACTIC_TESTS_CNIRT_H

#include <jansson.h>
#include <stddef.h>

#include "tests/lib/topo.h"

/* The repository's top (GT_TOP, else "."). */
const char *cnirt_top(void);
/*
 * Builds (or finds cached) the tools and checks build/san/bin holds our
 * plugin under the upstream names. 0, or -1 with why. The tools' directory
 * is kept for cnirt_tool.
 */
int cnirt_init(char *why, size_t n);
const char *cnirt_tools(void);
/* "/run/galactic/<prefix>-n<node>.sock" (the directory is created by cnirt_node). */
const char *cnirt_sock(const struct topo *t, int node, char *buf, size_t n);
const char *cnirt_netdir(const struct topo *t, int node, char *buf, size_t n);
/* Creates the node's net.d and /run/galactic. */
int cnirt_node(const struct topo *t, int node);
/* Waits until the node's agent accepts connections on its socket. 0 or -1. */
int cnirt_wait_socket(const struct topo *t, int node, double timeout_s);

/* One attachment definition as the VPC operator renders it (UPSTREAM.md §6). */
struct cnirt_att {
	const char *net;       /* the conflist's name (the attachment's name) */
	const char *type;      /* "galactic-veth" (Netns) or "galactic-tap" (Hypervisor) */
	const char *vpc, *att; /* base62 ids */
	int mtu;               /* 0: omitted, as the operator omits 0 */
	size_t n_addrs;        /* 0: no ipam (the guest addresses itself) */
	struct { const char *address, *gateway; } addrs[2];
};
/* The conflist (cniVersion ver): the attach stanza, then galactic-bgp. */
json_t *cnirt_operator_conflist(const struct cnirt_att *a, const char *ver);
/* Writes doc (stolen) as <netdir>/<file>.conflist. 0 or -1. */
int cnirt_write_conflist(const struct topo *t, int node, const char *file, json_t *doc);

/*
 * Runs `TOOL ARGS` (cnitool, cnigc, cnirt) as the runtime on node does, with
 * extra environment env (may be NULL, e.g. "CNI_ARGS=..."); sock NULL: the
 * node's socket. out gets stdout + stderr and a final "rc=N" line. Returns
 * the exit status.
 */
int cnirt_tool(const struct topo *t, int node, const char *sock, const char *env, char *out, size_t n,
	       const char *fmt, ...) __attribute__((format(printf, 7, 8)));
/*
 * Calls a CNI plugin as a runtime does: fork, (hostns >= 0: setns into it),
 * exec bin with CNI_COMMAND=cmd, CNI_CONTAINERID=cid, CNI_NETNS=netns,
 * CNI_IFNAME=eth0, CNI_ARGS=args, CNI_PATH=cni_path and a plain PATH, conf
 * on stdin, stdout to /dev/null; reaps it. Returns its exit code (128: it
 * did not exit), or -1 when it could not be started or fed.
 */
struct cnirt_call {
	const char *bin, *cmd, *cid, *netns, *args, *cni_path;
	int hostns;
};
int cnirt_exec(const struct cnirt_call *c, const char *conf);
/* The JSON document a tool printed (before the "rc=" line), or NULL. */
json_t *cnirt_json(const char *out);

/* Pod namespaces: "<prefix>-<pod>", created with lo up. */
const char *cnirt_ns_path(const struct topo *t, const char *pod, char *buf, size_t n);
int cnirt_mkns(const struct topo *t, const char *pod);
/* Echo replies received from count pings from pod to dst (-1: ping failed to run). */
long cnirt_ping(const struct topo *t, const char *pod, const char *dst, int count);
/* Until one ping gets its reply: 0, or -1 after timeout_s. */
int cnirt_wait_ping(const struct topo *t, const char *pod, const char *dst, double timeout_s);
/*
 * Isolation by echo counters: cnirt_ping from pod to dst, and into *seen
 * the echo requests pod `bystander` (another VPC's, often with the same
 * address) received meanwhile (its Icmp6InEchos or Icmp:InEchos, by dst's
 * family). Returns the replies.
 */
long cnirt_ping_isolated(const struct topo *t, const char *pod, const char *dst, int count, const char *bystander,
			 long *seen);
double cnirt_now(void);

#endif
