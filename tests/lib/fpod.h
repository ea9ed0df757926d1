/*
 * Pods of the fault suites (tests/fault/, docs/reliability.md "Faults") on a
 * two-node topology (tests/lib/topo.h) with real agents: a pod's name,
 * node, attachment id and addresses; attaching it through libcni as a
 * runtime does (tests/lib/cnirt.h); and the node state the faults check
 * after each fault: every node's record, reports (NodeAttachments) and
 * veths match the desired pods, every desired pod pings across nodes, a
 * continuous ping between two pods loses nothing.
 *
 * Pod i gets fd00:a::(20+i)/128 and 10.1.(20+i)/250.((20+i)%250+1)/32, and
 * the attachment id att_base + i in base62 (a 16-bit id, as the VPC
 * operator's).
 */
#ifndef GALACTIC_TESTS_FPOD_H
#define GALACTIC_TESTS_FPOD_H

#include <stddef.h>

#include "tests/lib/cp.h"
#include "tests/lib/topo.h"

struct fpod {
	char name[16], att[16];
	int node, host;
	int up; /* desired: attached */
};

#define FP_MAXP 512
struct fpods {
	struct topo *t;
	struct cp *cp;
	const char *tns;       /* the pods' namespace (CNI_ARGS K8S_POD_NAMESPACE) */
	const char *vpc;       /* base62 VPC id of every pod */
	const char *natt_path; /* the NodeAttachments' list path (the agents' report namespace) */
	unsigned att_base;
	struct fpod p[FP_MAXP];
	int n;
};

void fp_init(struct fpods *f, struct topo *t, struct cp *cp, const char *tns, const char *vpc, const char *natt_path,
	     unsigned att_base);
/* A new pod "<prefix><index>" on node (fails the test when full). */
struct fpod *fp_new(struct fpods *f, const char *prefix, int node);
const char *fp_a6(const struct fpod *p, char *b, size_t n);
const char *fp_a4(const struct fpod *p, char *b, size_t n);
/*
 * libcni's AddNetworkList / DelNetworkList (verb "add", "del", "check") or
 * GCNetworkList ("gc", naming no valid attachment) as a runtime calls them;
 * out gets the tool's output. Returns its exit status.
 */
int fp_rt(const struct fpods *f, const struct fpod *p, const char *verb, char *out, size_t n);
/* The pod's netns and its conflist as the VPC operator renders it. 0 or -1. */
int fp_prepare(const struct fpods *f, const struct fpod *p);
/* ADD that must succeed; the pod is desired from then on. */
void fp_add_ok(const struct fpods *f, struct fpod *p);
/* DEL that must succeed; the pod is no longer desired. */
void fp_del_ok(const struct fpods *f, struct fpod *p);

/* "F01,F03": the desired attachments of node, sorted. */
void fp_desired(const struct fpods *f, int node, char *buf, size_t n);
/* The node's record lists exactly the desired attachments (got: what it lists). */
int fp_record_matches(const struct fpods *f, int node, char *got, size_t n);
/* Exactly one NodeAttachment per desired pod of n1 and n2 (no duplicates, none left over), each Programmed=True. */
int fp_reports_match(const struct fpods *f, char *why, size_t n);
/* The node's veths are the uplink and the desired pods' host ends. */
int fp_kernel_matches(const struct fpods *f, int node, char *why, size_t n);
/* Record, kernel (both nodes) and reports all match; else 0 and why. */
int fp_state_matches(const struct fpods *f, char *why, size_t n);
/*
 * Waits until record, reports and kernel match on both nodes (fails the test
 * after limit seconds, naming what differs); then every desired pod pings a
 * desired pod of the other node (IPv6 and IPv4). Returns the seconds until
 * the state matched.
 */
double fp_converge_within(const struct fpods *f, const char *tag, double limit);
double fp_converge(const struct fpods *f, const char *tag); /* 45 s */

/* Whether node's record of remote routes holds prefix; ... pod p's IPv6 /128. */
int fp_learned(const struct fpods *f, int node, const char *prefix);
int fp_learned_pod(const struct fpods *f, int node, const struct fpod *p);

/* from -> to's IPv6 address, 10 pps, in the background (<topo dir>/ping.{pid,out}). */
void fp_ping_start(const struct fpods *f, const struct fpod *from, const struct fpod *to);
/* Stops it (SIGINT: ping prints its totals); echoes sent and received. */
void fp_ping_stop(const struct fpods *f, long *tx, long *rx);

/* Lines of log holding msg (and, when given, "informer=<informer>" on the same line); -1 when unreadable. */
long fp_log_count(const char *log, const char *msg, const char *informer);

#endif
