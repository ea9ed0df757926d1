/*
 * The upstream kinds the translator writes or reads, and its typed work-queue
 * keys (kind + namespace/name). Pure.
 */
#ifndef GALACTIC_TRANSLATOR_KINDS_H
#define GALACTIC_TRANSLATOR_KINDS_H

#include "common/kube_client.h"

#include <stdbool.h>
#include <stddef.h>

/* TK_ESC: the egress binder's key (the attachment's namespace/name, which is the
 * claim's); TK_ES: a shard whose finalizer may be released; TK_NC: read only. */
enum tkind { TK_VPCATT, TK_NI, TK_NIC, TK_ESC, TK_ES, TK_NC, TK_N };

struct tkind_info {
	const char *kind;        /* "VPCAttachment" */
	const char *lower;       /* "vpcattachment" (contract row names) */
	const char *api_version; /* "cloud.datumapis.com/v1alpha1" */
	const char *crd;         /* "vpcattachments.cloud.datumapis.com" */
	struct kube_resource res;
};

extern const struct tkind_info TKINDS[TK_N];

/*
 * The reconnect backoff of every translator informer (informer_opts): 0.5 s
 * doubling to at most 5 s, as the agent's. The informer's default (0.8 s to
 * 30 s, client-go's) kept the statuses stale for up to 30 s after an API
 * server outage ended, while the agents' reports were back within 3 s
 * (test_fault_cluster, docs/reliability.md "Faults").
 */
#define TK_INFORMER_BACKOFF_INITIAL_S 0.5
#define TK_INFORMER_BACKOFF_MAX_S 5.0

/* A work-queue key: which reconciler, which object. */
struct qkey {
	enum tkind kind;
	char ns[254];
	char name[254];
};

/* "<Kind>/<ns>/<name>"; -1 when ns or name is not a name (empty, '/', > 253). */
int qkey_format(enum tkind k, const char *ns, const char *name, char *buf, size_t n);
/* Parses what qkey_format wrote; -1 otherwise. */
int qkey_parse(const char *s, struct qkey *out);
/* "ns/name" (the informer store key) of a parsed key. */
void qkey_nskey(const struct qkey *k, char *buf, size_t n);

#endif
