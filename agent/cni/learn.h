/*
 * The addresses of a guest that addresses itself (an attachment without
 * `ipam`, docs/cni.md "Without ipam").
 *
 * The node is told no address for such a guest, so it cannot route toward
 * it. The guest's first packets leave neighbour entries on the host end of
 * its veth: its ARP request for the gateway (169.254.1.1) carries its IPv4
 * address as sender, and Linux takes the source of a Neighbour Solicitation
 * from the packet that triggered it, so the NS for fe80::1 carries the
 * global IPv6 address the guest is sending from. This module reads those
 * entries (kernel notifications, and a dump at start and after lost
 * events) and, for an entry on the host end of a guest-addressed
 * attachment whose link-layer address is the guest's own MAC, records the
 * address on the attachment (record_add_addr). From there it is an address
 * like any other: the apply pass routes it to the host end (with the guest's
 * MAC as a permanent neighbour), the attachment's report lists it, other
 * nodes route it here, and it goes with the attachment on DEL.
 *
 * Accepted: unicast host addresses (IPv4 /32, IPv6 /128) inside the VPC's
 * prefixes when the record has them (none known: any), not used or covered
 * by another attachment of the VPC on this node nor by a remote prefix of
 * the VPC, at most GDP_ADDRS_MAX per attachment. Link-local, multicast,
 * loopback and unspecified addresses are ignored (every guest has an fe80::
 * address); any other address is refused, logged once per attachment and
 * address, and counted (galactic_agent_guest_addresses_total{result=
 * "learned"|"refused"}, with --metrics-addr).
 *
 * One writer of the record among others (inputs -> record -> apply); it
 * touches nothing in the kernel.
 */
#ifndef GALACTIC_AGENT_CNI_LEARN_H
#define GALACTIC_AGENT_CNI_LEARN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/dp/model.h"
#include "agent/nl/objects.h"
#include "agent/record.h"
#include "common/metrics.h"

enum glearn_verdict {
	GLEARN_REFUSED = -1, /* why says which rule */
	GLEARN_NOTHING = 0,  /* not a guest's address to learn (or known already) */
	GLEARN_NEW = 1,      /* recorded: *gen is the record's new generation */
};

/*
 * The policy, under the record's lock: may p (a host prefix seen from a's
 * guest) be learned for a? GLEARN_NEW records it.
 */
enum glearn_verdict glearn_offer_locked(struct record *r, struct rec_att *a, const struct gdp_prefix *p,
					unsigned long *gen, char *why, size_t whylen);

struct glearn;

struct glearn_opts {
	struct record *rec;
	const char *netns;     /* the node's namespace (NULL: the current one) */
	uint8_t proto;         /* the agent's own neighbour protocol: its entries are not evidence */
	struct metric *counter; /* galactic_agent_guest_addresses_total{result} (NULL: none) */
};

int glearn_new(struct glearn **out, const struct glearn_opts *o, char *err, size_t errlen);
void glearn_free(struct glearn *l);
/* A neighbour message (RTM_NEWNEIGH, or one of a dump): true when the record changed. */
bool glearn_neigh(struct glearn *l, const struct gnl_neigh *n);
/* Dumps both neighbour tables through glearn_neigh. The number learned, or -errno. */
int glearn_scan(struct glearn *l);

#endif
