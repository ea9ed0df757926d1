/*
 * The pod side of an attachment, done with agent/nl (libgnl) inside the
 * container's namespace: the veth pair (guest end created directly in the
 * namespace under CNI_IFNAME), MTU, addresses, the gateway as a permanent
 * neighbour toward the host end, and the pod's routes. host_netns is the
 * node's namespace (NULL: the agent's own), as the backend's --netns.
 */
#ifndef GALACTIC_CNI_POD_H
#define GALACTIC_CNI_POD_H

#include <stddef.h>
#include <stdint.h>

#include "agent/cni/config.h"

struct pod_link {
	char host_ifname[CNI_IFNAME_MAX + 1];
	char ifname[CNI_IFNAME_MAX + 1];
	int mtu;
	uint8_t host_mac[6];
	uint8_t mac[6];
};

/*
 * Creates and configures everything; on failure removes what it made and
 * returns -errno with err naming the step and object. -EEXIST with
 * *clash set means CNI_IFNAME already exists in the namespace.
 */
int pod_setup(const char *host_netns, int nsfd, const struct cni_conf *c, struct pod_link *l,
	      int *clash, char *err, size_t errlen);
/*
 * Re-applies addresses, routes and neighbours on an existing pair (idempotent
 * ADD after drift) without replacing it, so the MACs stay. Returns -ENODEV
 * when the pair is gone or replaced: the caller sets it up anew.
 */
int pod_repair(const char *host_netns, int nsfd, const struct cni_conf *c, struct pod_link *l,
	       char *err, size_t errlen);
/* Deletes the host end (the kernel removes the peer). Missing is fine. */
int pod_teardown(const char *host_netns, const char *host_ifname, char *err, size_t errlen);
/* Verifies the pod side; returns 0 or -1 with err saying what differs. */
int pod_check(const char *host_netns, int nsfd, const struct cni_conf *c,
	      const struct pod_link *l, char *err, size_t errlen);
/*
 * Deletes host ends galactic-cni made ("gc" + 13 hex digits, kind veth)
 * that are not in keep (n names, sorted by strcmp: each link is looked up
 * by bsearch): leftovers of ADDs that died before their commit and were
 * never retried. *removed gets how many went.
 */
int pod_sweep(const char *host_netns, char (*keep)[CNI_IFNAME_MAX + 1], size_t n,
	      unsigned *removed, char *err, size_t errlen);
/* The uplink's MTU (0 if unknown). */
int pod_link_mtu(const char *host_netns, const char *name);

#endif
