/*
 * Stand-in writers for tests/bench/bench_burst.c: the upstream components
 * as they write today, and the contract-following NSO of our pattern. Test
 * tool only (build/rel/bench-tools/burst-standin); each behaviour, with the
 * upstream source it follows, is in docs/performance.md ("bench_burst").
 *
 * Controllers run the way controller-runtime runs them: an informer cache
 * per kind (reads never reach the API server), one workqueue per controller
 * with its default rate limiter (per-key exponential backoff from 5 ms
 * doubling to 1000 s, overall 10 qps / burst 100: common/workqueue.h's
 * defaults), one worker each (MaxConcurrentReconciles 1), every add/update
 * event enqueued (no predicate), an error requeued rate-limited, success
 * forgotten, RequeueAfter as a delayed add. Writes are whole-object PUTs of
 * the cached copy carrying its resourceVersion (Status().Update), except
 * where said.
 *
 *   burst-standin nso KUBECONFIG NS COUNTS
 *       network-services-operator's claim reconciler: For(claim),
 *       Watches(interface -> spec.claimRef); every pass PUTs the whole
 *       status of the interface (phase, networkContextRef, Allocated,
 *       Programmed seeded if absent) and of the claim (refs, addresses,
 *       Bound, Allocated, Programmed seeded if absent, Ready derived).
 *   burst-standin cloud KUBECONFIG NS COUNTS RNS
 *       datum-cloud/cloud's manager: the NetworkInterfaceReconciler (For
 *       interface, Owns attachment, Watches NAD; VPC missing or without id:
 *       Prepared False and RequeueAfter 10 s; else create-or-update of the
 *       attachment and NAD, status PUTs of the attachment, the interface
 *       (attachmentRef, vpc, Prepared) and the claim (Prepared)) and the
 *       BGPAdvertisementReconciler (For advertisement in RNS; status PUTs
 *       of the attachment (node, interfaces, podSubnet, Programmed) and the
 *       interface (Programmed), and of the claim (Programmed): see the doc
 *       for why the claim).
 *   burst-standin router KUBECONFIG RNS COUNTS
 *       galactic-router's advertisement status: Advertised=True once it
 *       sees an advertisement (no BGP latency modeled).
 *   burst-standin nso-contract KUBECONFIG NS COUNTS
 *       our pattern's NSO: only its own claim condition (Ready), by a JSON
 *       Patch of that entry guarded by test operations on what it read.
 *   burst-standin cni-veth | cni-bgp  (as a CNI plugin: CNI_* environment,
 *       config on stdin; BURST_KUBECONFIG, BURST_NODE, BURST_PLUGIN,
 *       BURST_COUNTS)
 *       today's CNI ADD: galactic-veth's NAD get (chain check), the kernel
 *       work (BURST_PLUGIN: our plugin, the same in both patterns), the NAD
 *       merge patch; galactic-bgp's list BGPRouters, list BGPVRFInstances,
 *       create-or-update BGPVRFInstance, list BGPVRFInstances (collision),
 *       create-or-update BGPAdvertisement (10 s timeout, 2 retries at 100
 *       and 200 ms on transient errors), then get Pod and create-or-update
 *       the EndpointSlice.
 *
 * COUNTS: on SIGTERM the controllers append one line per writer and
 * resource, "writer resource requests ok conflicts other"; COUNTS.ready is
 * created once every cache has synced; SIGUSR1 writes the counts so far to
 * COUNTS.pre (then COUNTS.pre.done). The CNI modes append their lines at
 * exit (O_APPEND, one write).
 */
#include "common/informer.h"
#include "common/json.h"
#include "common/kube_client.h"
#include "common/log.h"
#include "common/workqueue.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const struct kube_resource NIC = { "networking.datumapis.com", "v1alpha", "networkinterfaceclaims", true };
static const struct kube_resource NI = { "networking.datumapis.com", "v1alpha", "networkinterfaces", true };
static const struct kube_resource VA = { "cloud.datumapis.com", "v1alpha1", "vpcattachments", true };
static const struct kube_resource VPC = { "cloud.datumapis.com", "v1alpha1", "vpcs", true };
static const struct kube_resource NAD = { "k8s.cni.cncf.io", "v1", "network-attachment-definitions", true };
static const struct kube_resource ADV = { "network.datumapis.com", "v1alpha1", "bgpadvertisements", true };
static const struct kube_resource RTR = { "network.datumapis.com", "v1alpha1", "bgprouters", true };
static const struct kube_resource VRF = { "network.datumapis.com", "v1alpha1", "bgpvrfinstances", true };
static const struct kube_resource POD = { "", "v1", "pods", true };
static const struct kube_resource ES = { "discovery.k8s.io", "v1", "endpointslices", true };

#define LBL_VPC "cloud.datumapis.com/vpc"
#define LBL_ATT "cloud.datumapis.com/vpc-attachment"
#define ANN_HOSTIF "k8s.v1.cni.cncf.io/host-interface"
/* Per-container annotations galactic-bgp keeps on the advertisement (the
 * cloud side reads the subnets back); container id shortened to fit the
 * 63-character annotation name. */
#define ANN_NETNS "bgp.galactic.datumapis.com/netns."
#define ANN_SUB6 "bgp.galactic.datumapis.com/allocated-subnet-ipv6."
#define ANN_SUB4 "bgp.galactic.datumapis.com/allocated-subnet-ipv4."
#define LBL_TENANT "galactic.datumapis.com/tenant-id"

static const char *NS = "", *RNS = "galactic-system", *COUNTS = NULL;
static struct kube_client *KC;
static atomic_bool stopping;

/* ---- counts per writer and resource ---- */

struct wcount {
	char writer[32], res[48];
	long req, ok, conflict, other;
};
static struct wcount counts[64];
static int n_counts;
static pthread_mutex_t counts_mu = PTHREAD_MUTEX_INITIALIZER;

static void count(const char *writer, const struct kube_resource *r, int rc, const struct kube_error *e)
{
	pthread_mutex_lock(&counts_mu);
	int i;
	for (i = 0; i < n_counts; i++)
		if (!strcmp(counts[i].writer, writer) && !strcmp(counts[i].res, r->resource))
			break;
	if (i == n_counts && n_counts < 64) {
		snprintf(counts[i].writer, sizeof(counts[i].writer), "%s", writer);
		snprintf(counts[i].res, sizeof(counts[i].res), "%s", r->resource);
		n_counts++;
	}
	if (i < 64) {
		counts[i].req++;
		if (!rc)
			counts[i].ok++;
		else if (e->http_status == 409)
			counts[i].conflict++;
		else
			counts[i].other++;
	}
	pthread_mutex_unlock(&counts_mu);
}

static void counts_dump_to(const char *path, int flags)
{
	char buf[8192];
	size_t n = 0;
	int fd;

	if (!path)
		return;
	pthread_mutex_lock(&counts_mu);
	for (int i = 0; i < n_counts && n < sizeof(buf) - 200; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s %s %ld %ld %ld %ld\n", counts[i].writer,
				      counts[i].res, counts[i].req, counts[i].ok, counts[i].conflict, counts[i].other);
	pthread_mutex_unlock(&counts_mu);
	fd = open(path, O_WRONLY | O_CREAT | flags, 0644);
	if (fd >= 0) {
		if (n && write(fd, buf, n) != (ssize_t)n)
			fprintf(stderr, "burst-standin: short write to %s\n", path);
		close(fd);
	}
}

static void counts_dump(void) { counts_dump_to(COUNTS, O_APPEND); }

/* ---- conditions as apimeta.SetStatusCondition treats them ---- */

static json_t *cond_find(json_t *conds, const char *type)
{
	size_t i;
	json_t *c;

	json_array_foreach(conds, i, c)
		if (!strcmp(gj_str(c, "type") ?: "", type))
			return c;
	return NULL;
}

static bool cond_true(json_t *conds, const char *type)
{
	json_t *c = cond_find(conds, type);

	return c && !strcmp(gj_str(c, "status") ?: "", "True");
}

/* The status.conditions array of o (created when absent), borrowed. */
static json_t *conds_of(json_t *o)
{
	json_t *st = json_object_get(o, "status"), *c;

	if (!json_is_object(st)) {
		st = json_object();
		json_object_set_new(o, "status", st);
	}
	c = json_object_get(st, "conditions");
	if (!json_is_array(c)) {
		c = json_array();
		json_object_set_new(st, "conditions", c);
	}
	return c;
}

/* Sets (or adds) a condition: lastTransitionTime moves only when status changes. */
static void cond_set(json_t *conds, const char *type, const char *status, const char *reason,
		     const char *message, json_int_t gen)
{
	char now[32];
	json_t *c = cond_find(conds, type);

	gj_time_now(now, sizeof(now));
	if (!c) {
		c = json_object();
		json_object_set_new(c, "type", json_string(type));
		json_object_set_new(c, "lastTransitionTime", json_string(now));
		json_array_append_new(conds, c);
	} else if (strcmp(gj_str(c, "status") ?: "", status)) {
		json_object_set_new(c, "lastTransitionTime", json_string(now));
	}
	json_object_set_new(c, "status", json_string(status));
	json_object_set_new(c, "reason", json_string(reason));
	json_object_set_new(c, "message", json_string(message));
	json_object_set_new(c, "observedGeneration", json_integer(gen));
}

/* metadata.labels / metadata.annotations by key (keys hold dots: no gj_ path). */
static const char *meta_get(const json_t *o, const char *map, const char *key)
{
	return json_string_value(json_object_get(json_object_get(json_object_get(o, "metadata"), map), key));
}

static void meta_set(json_t *o, const char *map, const char *key, const char *value)
{
	json_t *md = json_object_get(o, "metadata"), *m;

	if (!json_is_object(md))
		return;
	if (!json_is_object(m = json_object_get(md, map))) {
		m = json_object();
		json_object_set_new(md, map, m);
	}
	json_object_set_new(m, key, json_string(value));
}

static json_int_t gen_of(const json_t *o) { return gj_int(o, "metadata.generation", 0); }

/* Status().Update: PUT of the whole object (with its resourceVersion) to /status. */
static int put_status(const char *writer, const struct kube_resource *r, const char *ns, json_t *o)
{
	struct kube_error e;
	int rc = kube_update(KC, r, ns, gj_str(o, "metadata.name"), "status", o, NULL, &e);

	count(writer, r, rc, &e);
	if (rc && e.http_status != 409)
		glogf(GLOG_WARN, writer, "%s", e.message);
	return rc;
}

/* ---- a controller: cache(s) + workqueue + one worker ---- */

struct ctl {
	const char *name;
	struct wq *q;
	/* 0 done, -1 error (rate-limited requeue); *after > 0: RequeueAfter */
	int (*reconcile)(const char *key, double *after);
	pthread_t th;
};

static void *worker(void *arg)
{
	struct ctl *c = arg;
	char *key;

	while ((key = wq_get(c->q, -1))) {
		double after = 0;
		int rc = c->reconcile(key, &after);

		if (rc < 0) {
			wq_add_rate_limited(c->q, key);
		} else {
			wq_forget(c->q, key);
			if (after > 0)
				wq_add_after(c->q, key, after);
		}
		wq_done(c->q, key);
		free(key);
	}
	return NULL;
}

static struct informer *cache_of(const struct kube_resource *r, const char *ns, void (*add)(json_t *, void *),
				 void (*upd)(json_t *, json_t *, void *), void *ud)
{
	struct informer *inf = informer_new(KC, &(struct informer_opts){ .res = *r, .ns = ns, .drop_managed_fields = true });

	if (!inf)
		return NULL;
	if (add || upd)
		informer_add_handlers(inf, &(struct informer_handlers){ add, upd, NULL, ud });
	return inf;
}

static json_t *cached(struct informer *inf, const char *ns, const char *name)
{
	return name ? kube_store_get_nn(informer_store(inf), ns, name) : NULL;
}

/* Enqueue helpers: the object's own name, or a mapped one. */
static void enq_name(json_t *o, void *ud)
{
	const char *n = gj_str(o, "metadata.name");

	if (n)
		wq_add(((struct ctl *)ud)->q, n);
}
static void enq_name_u(json_t *old, json_t *o, void *ud) { (void)old; enq_name(o, ud); }
static void enq_claimref(json_t *o, void *ud)
{
	const char *n = gj_str(o, "spec.claimRef.name");

	if (n)
		wq_add(((struct ctl *)ud)->q, n);
}
static void enq_claimref_u(json_t *old, json_t *o, void *ud) { (void)old; enq_claimref(o, ud); }
/* Owns(VPCAttachment): the controller ownerReference's name (the interface). */
static void enq_owner(json_t *o, void *ud)
{
	size_t i;
	json_t *r;

	json_array_foreach(gj_get(o, "metadata.ownerReferences"), i, r)
		if (json_is_true(json_object_get(r, "controller")) &&
		    !strcmp(gj_str(r, "kind") ?: "", "NetworkInterface") && gj_str(r, "name"))
			wq_add(((struct ctl *)ud)->q, gj_str(r, "name"));
}
static void enq_owner_u(json_t *old, json_t *o, void *ud) { (void)old; enq_owner(o, ud); }

/* ---- NSO (today): the claim reconciler ---- */

static struct informer *i_nic, *i_ni, *i_va, *i_vpc, *i_nad, *i_adv, *i_rtr;
static struct ctl c_nso = { .name = "nso" }, c_nir = { .name = "vpc-operator" },
		  c_bgp = { .name = "data-plane-status" }, c_router = { .name = "router" },
		  c_contract = { .name = "nso-contract" };

static void seed_programmed(json_t *conds, json_int_t gen)
{
	if (!cond_find(conds, "Programmed"))
		cond_set(conds, "Programmed", "Unknown", "Pending", "Waiting for the data plane to report the attachment", gen);
}

/* setReady over Bound, Allocated, Prepared, Programmed (UPSTREAM.md's NSO revision). */
static void set_ready(json_t *conds, json_int_t gen)
{
	static const char *const deps[] = { "Bound", "Allocated", "Prepared", "Programmed" };
	const char *unmet = NULL;
	char reason[64], msg[96];

	for (size_t i = 0; i < 4 && !unmet; i++)
		if (!cond_true(conds, deps[i]))
			unmet = deps[i];
	if (!unmet) {
		cond_set(conds, "Ready", "True", "Ready", "The interface is bound, addressed, and programmed", gen);
		return;
	}
	json_t *u = cond_find(conds, unmet);
	snprintf(reason, sizeof(reason), "Not%s", unmet);
	snprintf(msg, sizeof(msg), "Waiting for %s", unmet);
	cond_set(conds, "Ready", u && !strcmp(gj_str(u, "status") ?: "", "Unknown") ? "Unknown" : "False", reason, msg,
		 gen);
}

static int nso_reconcile(const char *name, double *after)
{
	json_t *claim = cached(i_nic, NS, name), *iface = NULL, *o = NULL;
	const char *ifname;
	int rc = 0;
	char msg[300];

	(void)after;
	if (!claim)
		return 0;
	ifname = gj_str(claim, "spec.networkInterfaceName") ?: name;
	iface = cached(i_ni, NS, ifname);
	if (!iface || strcmp(gj_str(iface, "spec.claimRef.name") ?: "", name))
		goto out; /* binding a new interface is before the burst: not modeled */
	/* publishInterfaceStatus */
	o = json_deep_copy(iface);
	json_t *conds = conds_of(o), *st = json_object_get(o, "status");
	json_object_set_new(st, "phase", json_string("Bound"));
	json_object_set_new(st, "networkContextRef", json_pack("{s:s}", "name", gj_str(claim, "spec.network.name") ?: ""));
	cond_set(conds, "Allocated", "True", "Allocated", "Every requested address is held", gen_of(o));
	if (!cond_find(conds, "Programmed"))
		cond_set(conds, "Programmed", "Unknown", "Pending", "Waiting for the data plane to report the attachment",
			 gen_of(o));
	if (put_status("nso", &NI, NS, o)) {
		rc = -1;
		goto out;
	}
	json_decref(o);
	/* publishClaimStatus */
	o = json_deep_copy(claim);
	conds = conds_of(o);
	st = json_object_get(o, "status");
	json_object_set(st, "addresses", gj_get(iface, "spec.addresses") ?: json_array());
	json_object_set_new(st, "networkInterfaceRef", json_pack("{s:s}", "name", ifname));
	if (json_array_size(gj_get(iface, "spec.externalAddresses")))
		json_object_set(st, "externalAddresses", gj_get(iface, "spec.externalAddresses"));
	snprintf(msg, sizeof(msg), "Bound to network interface \"%s\"", ifname);
	cond_set(conds, "Bound", "True", "Bound", msg, gen_of(o));
	cond_set(conds, "Allocated", "True", "Allocated", "Every requested address is held", gen_of(o));
	seed_programmed(conds, gen_of(o));
	set_ready(conds, gen_of(o));
	if (put_status("nso", &NIC, NS, o))
		rc = -1;
out:
	json_decref(o);
	json_decref(iface);
	json_decref(claim);
	return rc;
}

/* ---- the VPC operator (today): NetworkInterfaceReconciler ---- */

static bool str_eq(const char *a, const char *b) { return !strcmp(a ?: "", b ?: ""); }

static int mark_prepared(json_t *ni, const char *status, const char *reason, const char *message)
{
	json_t *claim;
	int rc;

	cond_set(conds_of(ni), "Prepared", status, reason, message, gen_of(ni));
	if (put_status("vpc-operator", &NI, NS, ni))
		return -1;
	if (!gj_str(ni, "spec.claimRef.name"))
		return 0;
	if (!(claim = cached(i_nic, NS, gj_str(ni, "spec.claimRef.name"))))
		return 0;
	json_t *c = json_deep_copy(claim);
	cond_set(conds_of(c), "Prepared", status, reason, message, gen_of(c));
	rc = put_status("vpc-operator", &NIC, NS, c);
	json_decref(c);
	json_decref(claim);
	return rc ? -1 : 0;
}

/* The attachment spec NIR derives from the interface, compared field by field
 * (controllerutil.CreateOrUpdate writes only when the mutation changed it). */
static int nir_attachment(json_t *ni, json_t *vpc, json_t **out)
{
	const char *name = gj_str(ni, "metadata.name");
	json_t *va = cached(i_va, NS, name), *addrs = json_array(), *a;
	size_t i;
	struct kube_error e;
	int rc = 0;

	json_array_foreach(gj_get(ni, "spec.addresses"), i, a)
		json_array_append(addrs, json_object_get(a, "address"));
	const char *mode = gj_str(ni, "spec.attachmentMode") ?: "Netns";
	json_t *spec = json_pack("{s:{s:s}, s:{s:s}, s:{s:s, s:s, s:o}}", "vpc", "name", gj_str(vpc, "metadata.name"),
				 "interfaceRef", "name", name, "interface", "name",
				 gj_str(ni, "spec.interfaceName") ?: "eth0", "mode", mode, "addresses", addrs);
	json_t *owner = json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion", "networking.datumapis.com/v1alpha",
				  "kind", "NetworkInterface", "name", name, "uid", gj_str(ni, "metadata.uid") ?: "",
				  "controller", 1, "blockOwnerDeletion", 1);
	if (!va) {
		json_t *o = json_pack("{s:s, s:s, s:{s:s, s:s, s:O}, s:O}", "apiVersion", "cloud.datumapis.com/v1alpha1",
				      "kind", "VPCAttachment", "metadata", "name", name, "namespace", NS,
				      "ownerReferences", owner, "spec", spec);
		rc = kube_create(KC, &VA, NS, o, out, &e);
		count("vpc-operator", &VA, rc, &e);
		json_decref(o);
	} else {
		json_t *want = json_deep_copy(va), *ws = json_object_get(want, "spec");
		json_object_set(json_object_get(ws, "vpc"), "name", gj_get(spec, "vpc.name"));
		json_object_set(ws, "interfaceRef", json_object_get(spec, "interfaceRef"));
		json_t *wi = json_object_get(ws, "interface");
		json_object_set(wi, "name", gj_get(spec, "interface.name"));
		json_object_set(wi, "mode", gj_get(spec, "interface.mode"));
		json_object_set(wi, "addresses", gj_get(spec, "interface.addresses"));
		if (!json_object_get(gj_get(want, "metadata"), "ownerReferences"))
			json_object_set(json_object_get(want, "metadata"), "ownerReferences", owner);
		if (!json_equal(want, va)) {
			rc = kube_update(KC, &VA, NS, name, NULL, want, out, &e);
			count("vpc-operator", &VA, rc, &e);
			json_decref(want);
		} else {
			*out = want;
		}
	}
	json_decref(va);
	json_decref(spec);
	json_decref(owner);
	return rc ? -1 : 0;
}

static int nir_nad(json_t *va, json_t *vpc, json_t **out)
{
	const char *name = gj_str(va, "metadata.name");
	json_t *nad = cached(i_nad, NS, name);
	struct kube_error e;
	int rc = 0;

	if (!nad || !meta_get(nad, "labels", LBL_ATT)) {
		/* Allocating an attachment id and rendering the conflist happen
		 * before the burst (the setup writes both); a pass that would need
		 * them here is an error of the setup. */
		glogf(GLOG_WARN, "vpc-operator", "NAD %s/%s missing or without id (not modeled)", NS, name);
		json_decref(nad);
		return -1;
	}
	json_t *want = json_deep_copy(nad);
	meta_set(want, "labels", LBL_VPC, gj_str(vpc, "status.vpc") ?: "");
	if (!json_equal(want, nad)) {
		rc = kube_update(KC, &NAD, NS, name, NULL, want, NULL, &e);
		count("vpc-operator", &NAD, rc, &e);
	}
	*out = want;
	json_decref(nad);
	return rc ? -1 : 0;
}

static int nir_reconcile(const char *name, double *after)
{
	json_t *ni = cached(i_ni, NS, name), *vpc = NULL, *va = NULL, *nad = NULL, *o = NULL;
	char msg[300];
	int rc = 0;

	if (!ni || gj_get(ni, "metadata.deletionTimestamp"))
		goto out;
	/* claimFulfilled */
	if (!str_eq(gj_str(ni, "status.phase"), "Bound") || !gj_str(ni, "status.networkContextRef.name") ||
	    !cond_true(gj_get(ni, "status.conditions"), "Allocated"))
		goto out;
	o = json_deep_copy(ni);
	vpc = cached(i_vpc, NS, gj_str(ni, "status.networkContextRef.name"));
	if (!vpc || !gj_str(vpc, "status.vpc") || !*gj_str(vpc, "status.vpc")) {
		if (!vpc)
			snprintf(msg, sizeof(msg), "VPC %s does not exist yet", gj_str(ni, "status.networkContextRef.name"));
		else
			snprintf(msg, sizeof(msg), "VPC %s has no identifier yet", gj_str(vpc, "metadata.name"));
		*after = 10;
		rc = mark_prepared(o, "False", vpc ? "AwaitingVPCIdentifier" : "AwaitingVPC", msg);
		goto out;
	}
	if (nir_attachment(ni, vpc, &va) || nir_nad(va, vpc, &nad)) {
		rc = -1;
		goto out;
	}
	/* publishAttachmentStatus */
	json_t *vs = json_deep_copy(va), *st;
	conds_of(vs);
	st = json_object_get(vs, "status");
	json_object_set_new(st, "vpc", json_string(gj_str(vpc, "status.vpc")));
	json_object_set_new(st, "vpcAttachment", json_string(meta_get(nad, "labels", LBL_ATT) ?: ""));
	json_object_set_new(st, "networkAttachmentDefinition", json_string(gj_str(nad, "metadata.name")));
	json_object_set_new(st, "observedGeneration", json_integer(gen_of(vs)));
	snprintf(msg, sizeof(msg), "NetworkAttachmentDefinition %s is ready for use", gj_str(nad, "metadata.name"));
	cond_set(conds_of(vs), "Ready", "True", "AttachmentDefinitionReady", msg, gen_of(vs));
	rc = put_status("vpc-operator", &VA, NS, vs);
	json_decref(vs);
	if (rc) {
		rc = -1;
		goto out;
	}
	/* publishToInterface */
	st = json_object_get(o, "status");
	json_object_set_new(st, "attachmentRef", json_pack("{s:s, s:s, s:s}", "apiGroup", "cloud.datumapis.com", "kind",
							   "VPCAttachment", "name", name));
	json_object_set_new(st, "vpc", json_string(gj_str(vpc, "status.vpc")));
	snprintf(msg, sizeof(msg), "VPCAttachment %s and its attachment definition exist", name);
	rc = mark_prepared(o, "True", "AttachmentReady", msg);
out:
	json_decref(o);
	json_decref(ni);
	json_decref(vpc);
	json_decref(va);
	json_decref(nad);
	return rc;
}

/* ---- the data-plane status writer (today): BGPAdvertisementReconciler ---- */

/* Index of attachments by "<status.vpc>-<status.vpcAttachment>" (the advertisement's name). */
static void va_identity(const json_t *o, struct kube_index_values *out, void *ud)
{
	char k[128];

	(void)ud;
	if (gj_str(o, "status.vpc") && gj_str(o, "status.vpcAttachment")) {
		snprintf(k, sizeof(k), "%s-%s", gj_str(o, "status.vpc"), gj_str(o, "status.vpcAttachment"));
		kube_index_values_add(out, k);
	}
}

static int bgp_reconcile(const char *name, double *after)
{
	json_t *adv = kube_store_get_nn(informer_store(i_adv), RNS, name), *vas = NULL, *rtr = NULL, *a;
	char vpc[64], att[64], host[32], vrf[32];
	const char *dash, *k;
	json_t *v;
	size_t i;
	int rc = 0, nsub = 0;
	const char *sub = NULL;

	(void)after;
	if (!adv)
		return 0;
	if (!(dash = strchr(name, '-')))
		goto out;
	snprintf(vpc, sizeof(vpc), "%.*s", (int)(dash - name), name);
	snprintf(att, sizeof(att), "%s", dash + 1);
	vas = kube_store_by_index(informer_store(i_va), "identity", name);
	if (!json_array_size(vas))
		goto out;
	rtr = kube_store_get_nn(informer_store(i_rtr), RNS, gj_str(adv, "spec.routerRef.name"));
	/* programmedCondition: Advertised as it is, else Unknown/AwaitingDataPlane */
	json_t *advd = cond_find(gj_get(adv, "status.conditions"), "Advertised");
	const char *ps = advd ? gj_str(advd, "status") : "Unknown";
	const char *pr = advd ? gj_str(advd, "reason") : "AwaitingDataPlane";
	const char *pm = advd ? gj_str(advd, "message") : "the data plane has not reported on this attachment yet";
	json_object_foreach(gj_get(adv, "metadata.annotations"), k, v)
		if (!strncmp(k, ANN_SUB6, strlen(ANN_SUB6)) || !strncmp(k, ANN_SUB4, strlen(ANN_SUB4)))
			nsub++, sub = json_string_value(v);
	/* GAL's G%09s%03sH / G%09sV (Go pads strings with zeros) */
	char pv[16], pa[8];
	snprintf(pv, sizeof(pv), "%.9s", vpc);
	snprintf(pa, sizeof(pa), "%.3s", att);
	snprintf(host, sizeof(host), "G%.*s%s%.*s%sH", (int)(9 - strlen(pv)), "000000000", pv, (int)(3 - strlen(pa)), "000",
		 pa);
	snprintf(vrf, sizeof(vrf), "G%.*s%sV", (int)(9 - strlen(pv)), "000000000", pv);
	json_array_foreach(vas, i, a) {
		json_t *o = json_deep_copy(a), *st, *ni, *claim;

		conds_of(o);
		st = json_object_get(o, "status");
		json_object_set_new(st, "node", json_string(rtr ? gj_str(rtr, "spec.targetRef.name") ?: "" : ""));
		json_object_set_new(st, "hostInterface", json_string(host));
		json_object_set_new(st, "vrfInterface", json_string(vrf));
		if (nsub == 1 && sub)
			json_object_set_new(st, "podSubnet", json_string(sub));
		cond_set(conds_of(o), "Programmed", ps, pr, pm, 0);
		rc = put_status("data-plane-status", &VA, NS, o);
		if (!rc && (ni = cached(i_ni, NS, gj_str(o, "spec.interfaceRef.name")))) {
			/* projectOntoInterface */
			json_t *n = json_deep_copy(ni);
			cond_set(conds_of(n), "Programmed", ps, pr, pm, gen_of(n));
			rc = put_status("data-plane-status", &NI, NS, n);
			/* ... and onto the claim, the same way (no upstream writer of the
			 * claim's Programmed exists: docs/performance.md) */
			if (!rc && (claim = cached(i_nic, NS, gj_str(ni, "spec.claimRef.name")))) {
				json_t *c = json_deep_copy(claim);
				cond_set(conds_of(c), "Programmed", ps, pr, pm, gen_of(c));
				rc = put_status("data-plane-status", &NIC, NS, c);
				json_decref(c);
				json_decref(claim);
			}
			json_decref(n);
			json_decref(ni);
		}
		json_decref(o);
		if (rc) {
			rc = -1;
			break;
		}
	}
out:
	json_decref(adv);
	json_decref(vas);
	json_decref(rtr);
	return rc;
}

/* ---- galactic-router (today): Advertised on the advertisement ---- */

static int router_reconcile(const char *name, double *after)
{
	json_t *adv = kube_store_get_nn(informer_store(i_adv), RNS, name);
	int rc = 0;

	(void)after;
	if (!adv)
		return 0;
	if (!cond_true(gj_get(adv, "status.conditions"), "Advertised")) {
		json_t *o = json_deep_copy(adv);
		cond_set(conds_of(o), "Advertised", "True", "Advertised", "the routes are originated", gen_of(o));
		json_object_set_new(json_object_get(o, "status"), "advertisedPrefixes",
				    json_integer((json_int_t)json_array_size(gj_get(o, "spec.prefixes"))));
		rc = put_status("router", &ADV, RNS, o) ? -1 : 0;
		json_decref(o);
	}
	json_decref(adv);
	return rc;
}

/* ---- our NSO: only its own condition (Ready), by a guarded JSON Patch ---- */

static int contract_reconcile(const char *name, double *after)
{
	json_t *claim = cached(i_nic, NS, name), *want, *conds, *cur, *ops;
	size_t idx = 0, i;
	json_t *c;
	struct kube_error e;
	int rc = 0;
	char path[64];

	(void)after;
	if (!claim)
		return 0;
	want = json_deep_copy(claim);
	set_ready(conds_of(want), gen_of(want));
	conds = gj_get(claim, "status.conditions");
	cur = cond_find(conds, "Ready");
	json_array_foreach(conds, i, c)
		if (c == cur)
			idx = i;
	json_t *nr = cond_find(gj_get(want, "status.conditions"), "Ready");
	if (cur && str_eq(gj_str(cur, "status"), gj_str(nr, "status")) &&
	    str_eq(gj_str(cur, "reason"), gj_str(nr, "reason")) && str_eq(gj_str(cur, "message"), gj_str(nr, "message")))
		goto out; /* nothing of its own changed: no write */
	if (!cur) {
		glogf(GLOG_WARN, "nso-contract", "%s has no Ready entry (schema seed missing)", name);
		goto out;
	}
	snprintf(path, sizeof(path), "/status/conditions/%zu", idx);
	ops = json_pack("[{s:s, s:s, s:s}, {s:s, s:s, s:O}, {s:s, s:s, s:O}]", "op", "test", "path", "", "value", "Ready",
			"op", "test", "path", "", "value", json_object_get(cur, "status"), "op", "replace", "path", path,
			"value", nr);
	char p0[80], p1[80];
	snprintf(p0, sizeof(p0), "%s/type", path);
	snprintf(p1, sizeof(p1), "%s/status", path);
	json_object_set_new(json_array_get(ops, 0), "path", json_string(p0));
	json_object_set_new(json_array_get(ops, 1), "path", json_string(p1));
	rc = kube_json_patch(KC, &NIC, NS, name, "status", ops, "network-services-operator", NULL, &e);
	count("nso-contract", &NIC, rc, &e);
	json_decref(ops);
	rc = rc ? -1 : 0;
out:
	json_decref(want);
	json_decref(claim);
	return rc;
}

/* ---- today's CNI ADD round trips ---- */

struct cni_env {
	json_t *conf;
	const char *ns, *pod, *cid, *netns, *node;
};

static const char *cni_arg(const char *args, const char *key, char *buf, size_t n)
{
	size_t kl = strlen(key);

	for (const char *p = args; p && *p;) {
		const char *e = strchr(p, ';');
		size_t l = e ? (size_t)(e - p) : strlen(p);

		if (l > kl && !strncmp(p, key, kl) && p[kl] == '=') {
			snprintf(buf, n, "%.*s", (int)(l - kl - 1), p + kl + 1);
			return buf;
		}
		p = e ? e + 1 : NULL;
	}
	return NULL;
}

/* Runs the plugin at BURST_PLUGIN as argv0 with stdin in; its stdout into *out. Exit status. */
static int run_plugin(const char *argv0, const char *in, size_t in_len, char **out)
{
	int ip[2], op[2], st;
	pid_t p;
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);
	const char *bin = getenv("BURST_PLUGIN");

	*out = NULL;
	if (!buf || !bin || pipe(ip) || pipe(op)) {
		free(buf);
		return 127;
	}
	if ((p = fork()) == 0) {
		dup2(ip[0], 0);
		dup2(op[1], 1);
		close(ip[0]), close(ip[1]), close(op[0]), close(op[1]);
		execl(bin, argv0, (char *)NULL);
		_exit(127);
	}
	close(ip[0]);
	close(op[1]);
	if (write(ip[1], in, in_len) != (ssize_t)in_len)
		fprintf(stderr, "burst-standin: short write to the plugin\n");
	close(ip[1]);
	for (ssize_t r; (r = read(op[0], buf + n, cap - n - 1)) > 0;) {
		n += (size_t)r;
		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb)
				break;
			buf = nb;
		}
	}
	buf[n] = 0;
	close(op[0]);
	waitpid(p, &st, 0);
	*out = buf;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int req_get(const char *w, const struct kube_resource *r, const char *ns, const char *name, json_t **out,
		   struct kube_error *e)
{
	int rc = kube_get(KC, r, ns, name, out, e);

	count(w, r, rc, e);
	return rc;
}

static int req_list(const char *w, const struct kube_resource *r, const char *ns, json_t **out, struct kube_error *e)
{
	int rc = kube_list_all(KC, r, ns, &(struct kube_list_opts){ 0 }, out, e);

	count(w, r, rc, e);
	return rc;
}

/* controllerutil.CreateOrUpdate: GET; 404: POST the mutated object; else PUT
 * only if the mutation changed it. mutate(obj, ud) edits in place. */
static int create_or_update(const struct kube_resource *r, const char *ns, const char *name, json_t *skeleton,
			    void (*mutate)(json_t *, void *), void *ud, struct kube_error *e)
{
	json_t *cur = NULL;
	int rc = req_get("cni", r, ns, name, &cur, e);

	if (rc && e->code != KUBE_ERR_NOT_FOUND)
		return -1;
	if (rc) {
		json_t *o = json_deep_copy(skeleton);
		mutate(o, ud);
		rc = kube_create(KC, r, ns, o, NULL, e);
		count("cni", r, rc, e);
		json_decref(o);
		return rc;
	}
	json_t *o = json_deep_copy(cur);
	mutate(o, ud);
	if (!json_equal(o, cur)) {
		rc = kube_update(KC, r, ns, name, NULL, o, NULL, e);
		count("cni", r, rc, e);
	}
	json_decref(o);
	json_decref(cur);
	return rc;
}

static bool transient(const struct kube_error *e)
{
	return e->code == KUBE_ERR_TRANSPORT || e->code == KUBE_ERR_SERVER || e->code == KUBE_ERR_TOO_MANY;
}

struct bgp_state {
	const char *router, *rt, *cid, *netns, *a6, *a4;
	json_int_t vrf_id;
};

static void mut_vrf(json_t *o, void *ud)
{
	struct bgp_state *s = ud;

	json_object_set_new(o, "spec", json_pack("{s:{s:s}, s:I, s:[{s:s}], s:[{s:s}]}", "routerRef", "name", s->router,
						 "vrfID", s->vrf_id, "importRouteTargets", "value", s->rt,
						 "exportRouteTargets", "value", s->rt));
}

static void mut_adv(json_t *o, void *ud)
{
	struct bgp_state *s = ud;
	char k[160], cid12[16];
	json_t *ann = gj_get(o, "metadata.annotations"), *pfx = json_array(), *v;
	const char *key;

	snprintf(cid12, sizeof(cid12), "%.12s", s->cid);
	if (!json_is_object(ann)) {
		ann = json_object();
		json_object_set_new(json_object_get(o, "metadata"), "annotations", ann);
	}
	snprintf(k, sizeof(k), ANN_NETNS "%s", cid12);
	json_object_set_new(ann, k, json_string(s->netns));
	if (s->a6) {
		snprintf(k, sizeof(k), ANN_SUB6 "%s", cid12);
		json_object_set_new(ann, k, json_string(s->a6));
	}
	if (s->a4) {
		snprintf(k, sizeof(k), ANN_SUB4 "%s", cid12);
		json_object_set_new(ann, k, json_string(s->a4));
	}
	json_object_foreach(ann, key, v) {
		if (!strncmp(key, ANN_SUB6, strlen(ANN_SUB6)))
			json_array_append(pfx, v);
		else if (!strncmp(key, ANN_SUB4, strlen(ANN_SUB4))) {
			char p[64];
			snprintf(p, sizeof(p), "%s/32", json_string_value(v));
			json_array_append_new(pfx, json_string(p));
		}
	}
	json_object_set_new(o, "spec", json_pack("{s:{s:s}, s:{s:s, s:s}, s:o, s:[s], s:I, s:s}", "routerRef", "name",
						 s->router, "addressFamily", "afi", "l2vpn", "safi", "evpn", "prefixes",
						 pfx, "communities", s->rt, "vrfID", s->vrf_id, "function", "End.DT46"));
}

/* publishBGPState, one attempt. */
static int bgp_publish(struct cni_env *ce, struct bgp_state *s, struct kube_error *e)
{
	json_t *l = NULL, *x;
	size_t i;
	int matches = 0;
	char router[128] = "", vrfname[128], advname[128], rt[64];
	json_int_t asn = 0;
	const char *vpc = gj_str(ce->conf, "vpc") ?: "", *att = gj_str(ce->conf, "vpcattachment") ?: "";

	if (req_list("cni", &RTR, RNS, &l, e))
		return -1;
	json_array_foreach(json_object_get(l, "items"), i, x)
		if (str_eq(gj_str(x, "spec.targetRef.name"), ce->node)) {
			matches++;
			snprintf(router, sizeof(router), "%s", gj_str(x, "metadata.name"));
			asn = gj_int(x, "spec.localASN", 0);
		}
	json_decref(l);
	if (matches != 1) {
		snprintf(e->message, sizeof(e->message), "%d BGPRouters target node %s", matches, ce->node);
		e->code = KUBE_ERR_OTHER;
		return -1;
	}
	snprintf(vrfname, sizeof(vrfname), "%s-%s", vpc, ce->node);
	/* allocateArgument: the existing one by name, else the lowest unused */
	if (req_list("cni", &VRF, RNS, &l, e))
		return -1;
	bool used[4096] = { false };
	json_int_t id = 0;
	json_array_foreach(json_object_get(l, "items"), i, x) {
		if (!str_eq(gj_str(x, "spec.routerRef.name"), router))
			continue;
		json_int_t v = gj_int(x, "spec.vrfID", 0);
		if (str_eq(gj_str(x, "metadata.name"), vrfname))
			id = v;
		else if (v > 0 && v < 4096)
			used[v] = true;
	}
	json_decref(l);
	for (json_int_t a = 1; !id && a < 4096; a++)
		if (!used[a])
			id = a;
	unsigned long long vh = 0;
	for (const char *p = vpc; *p; p++)
		vh = vh * 62 + (unsigned)(isdigit((unsigned char)*p) ? *p - '0' : islower((unsigned char)*p) ? *p - 'a' + 10 : *p - 'A' + 36);
	snprintf(rt, sizeof(rt), "%lld:%u", (long long)asn, (unsigned)(vh & 0xffffffffu));
	s->router = router, s->rt = rt, s->vrf_id = id;
	json_t *sk = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "network.datumapis.com/v1alpha1", "kind",
			       "BGPVRFInstance", "metadata", "name", vrfname, "namespace", RNS);
	int rc = create_or_update(&VRF, RNS, vrfname, sk, mut_vrf, s, e);
	json_decref(sk);
	if (rc)
		return -1;
	/* checkArgumentCollision */
	if (req_list("cni", &VRF, RNS, &l, e))
		return -1;
	json_array_foreach(json_object_get(l, "items"), i, x)
		if (str_eq(gj_str(x, "spec.routerRef.name"), router) && !str_eq(gj_str(x, "metadata.name"), vrfname) &&
		    gj_int(x, "spec.vrfID", 0) == id) {
			json_decref(l);
			snprintf(e->message, sizeof(e->message), "argument collision on %lld", (long long)id);
			e->code = KUBE_ERR_OTHER;
			return -1;
		}
	json_decref(l);
	snprintf(advname, sizeof(advname), "%s-%s", vpc, att);
	sk = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "network.datumapis.com/v1alpha1", "kind",
		       "BGPAdvertisement", "metadata", "name", advname, "namespace", RNS);
	rc = create_or_update(&ADV, RNS, advname, sk, mut_adv, s, e);
	json_decref(sk);
	return rc;
}

struct es_state {
	json_t *pod;
	const char *a6, *tenant;
};

static void mut_es(json_t *o, void *ud)
{
	struct es_state *s = ud;
	const char *pn = gj_str(s->pod, "metadata.name"), *uid = gj_str(s->pod, "metadata.uid") ?: "";

	meta_set(o, "labels", LBL_TENANT, s->tenant);
	meta_set(o, "annotations", LBL_TENANT, s->tenant);
	json_object_set_new(o, "addressType", json_string("IPv6"));
	json_object_set_new(o, "endpoints", json_pack("[{s:[s], s:{s:b}, s:{s:s, s:s, s:s, s:s}}]", "addresses", s->a6,
						      "conditions", "ready", 1, "targetRef", "kind", "Pod", "name", pn,
						      "namespace", NS, "uid", uid));
	if (!json_array_size(gj_get(o, "metadata.ownerReferences")))
		gj_set(o, "metadata.ownerReferences",
		       json_pack("[{s:s, s:s, s:s, s:s}]", "apiVersion", "v1", "kind", "Pod", "name", pn, "uid", uid));
}

static int publish_endpoint_slice(struct cni_env *ce, const char *a6, struct kube_error *e)
{
	json_t *pod = NULL, *es = NULL;
	char tenant[128];
	int rc;

	if (req_get("cni", &POD, NS, ce->pod, &pod, e))
		return -1;
	rc = req_get("cni", &ES, NS, ce->pod, &es, e);
	if (!rc && !meta_get(es, "labels", LBL_TENANT)) {
		snprintf(e->message, sizeof(e->message), "EndpointSlice %s exists without the tenant label", ce->pod);
		json_decref(es);
		json_decref(pod);
		return -1;
	}
	json_decref(es);
	if (rc && e->code != KUBE_ERR_NOT_FOUND) {
		json_decref(pod);
		return -1;
	}
	snprintf(tenant, sizeof(tenant), "%s-%s", gj_str(ce->conf, "vpc") ?: "", gj_str(ce->conf, "vpcattachment") ?: "");
	struct es_state s = { pod, a6, tenant };
	json_t *sk = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "discovery.k8s.io/v1", "kind", "EndpointSlice",
			       "metadata", "name", ce->pod, "namespace", NS);
	rc = create_or_update(&ES, NS, ce->pod, sk, mut_es, &s, e);
	json_decref(sk);
	json_decref(pod);
	return rc;
}

static int cni_main(const char *mode)
{
	char *in = NULL, *out = NULL, err[256], nsb[128], podb[256], host[64] = "";
	size_t cap = 0, n = 0;
	struct kube_config *cfg;
	struct kube_error e = { 0 };
	struct cni_env ce = { 0 };
	int rc = 1;

	COUNTS = getenv("BURST_COUNTS");
	for (ssize_t r;; n += (size_t)r) {
		if (n + 4096 > cap) {
			char *ni = realloc(in, cap = cap ? cap * 2 : 65536);
			if (!ni) {
				free(in);
				return 1;
			}
			in = ni;
		}
		if ((r = read(0, in + n, cap - n - 1)) <= 0)
			break;
	}
	in[n] = 0;
	if (!(ce.conf = json_loads(in, 0, NULL)) ||
	    !(cfg = kube_config_from_kubeconfig(getenv("BURST_KUBECONFIG") ?: "", NULL, err, sizeof(err))) ||
	    !(KC = kube_client_new(cfg, err, sizeof(err)))) {
		fprintf(stdout, "{\"code\":100,\"msg\":\"burst-standin %s: bad config or kubeconfig\"}\n", mode);
		return 1;
	}
	kube_client_set_timeout(KC, 10); /* cniTimeout */
	ce.ns = cni_arg(getenv("CNI_ARGS"), "K8S_POD_NAMESPACE", nsb, sizeof(nsb));
	ce.pod = cni_arg(getenv("CNI_ARGS"), "K8S_POD_NAME", podb, sizeof(podb));
	ce.cid = getenv("CNI_CONTAINERID") ?: "";
	ce.netns = getenv("CNI_NETNS") ?: "";
	ce.node = getenv("BURST_NODE") ?: "";
	NS = ce.ns ?: "";
	RNS = gj_str(ce.conf, "namespace") ?: "galactic-system";
	if (!strcmp(mode, "cni-veth")) {
		json_t *nad = NULL, *res;
		/* VerifyChainComplete: the NAD named as the network must chain galactic-bgp */
		if (req_get("cni", &NAD, NS, gj_str(ce.conf, "name"), &nad, &e) ||
		    !strstr(gj_str(nad, "spec.config") ?: "", "galactic-bgp")) {
			printf("{\"cniVersion\":\"1.0.0\",\"code\":7,\"msg\":\"NAD check: %s\"}\n", e.message);
			goto done;
		}
		json_decref(nad);
		if ((rc = run_plugin("galactic-veth", in, n, &out))) {
			fputs(out ?: "", stdout);
			goto done;
		}
		if ((res = json_loads(out, 0, NULL))) {
			snprintf(host, sizeof(host), "%s", gj_str(json_array_get(json_object_get(res, "interfaces"), 0), "name") ?: "");
			json_decref(res);
		}
		/* AnnotateNAD: merge patch of one annotation, no resourceVersion */
		json_t *p = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", ANN_HOSTIF, host);
		int prc = kube_merge_patch(KC, &NAD, NS, gj_str(ce.conf, "name"), NULL, p, NULL, NULL, &e);
		count("cni", &NAD, prc, &e);
		json_decref(p);
		if (prc) {
			printf("{\"cniVersion\":\"1.0.0\",\"code\":100,\"msg\":\"NAD patch: %s\"}\n", e.message);
			rc = 1;
			goto done;
		}
		fputs(out, stdout);
		rc = 0;
	} else {
		json_t *prev = json_object_get(ce.conf, "prevResult"), *ip;
		char a6[80] = "", a4[80] = "", a6addr[64] = "";
		size_t i;
		json_array_foreach(json_object_get(prev, "ips"), i, ip) {
			const char *a = gj_str(ip, "address") ?: "";
			if (strchr(a, ':') && !a6[0]) {
				snprintf(a6, sizeof(a6), "%s", a);
				snprintf(a6addr, sizeof(a6addr), "%.*s", (int)strcspn(a, "/"), a);
			} else if (!strchr(a, ':') && !a4[0]) {
				snprintf(a4, sizeof(a4), "%.*s", (int)strcspn(a, "/"), a);
			}
		}
		struct bgp_state s = { .cid = ce.cid, .netns = ce.netns, .a6 = a6[0] ? a6 : NULL, .a4 = a4[0] ? a4 : NULL };
		/* retryK8sOps: 3 attempts, 100 ms then 200 ms apart, on transient errors */
		for (int attempt = 0; attempt <= 2; attempt++) {
			if (attempt)
				usleep((useconds_t)(100000 << (attempt - 1)));
			if (!(rc = bgp_publish(&ce, &s, &e)) || !transient(&e))
				break;
		}
		if (rc || (a6[0] && publish_endpoint_slice(&ce, a6addr, &e))) {
			printf("{\"cniVersion\":\"1.0.0\",\"code\":100,\"msg\":\"galactic-bgp: %s\"}\n", e.message);
			rc = 1;
			goto done;
		}
		json_t *r = json_deep_copy(prev);
		json_object_set_new(r, "cniVersion", json_string(gj_str(ce.conf, "cniVersion") ?: "1.0.0"));
		char *s2 = json_dumps(r, JSON_COMPACT);
		puts(s2);
		free(s2);
		json_decref(r);
		rc = 0;
	}
done:
	counts_dump();
	free(in);
	free(out);
	return rc;
}

/* ---- main ---- */

static atomic_bool dump_pre;
static void on_term(int sig) { (void)sig; atomic_store(&stopping, true); }
/* SIGUSR1: the counts so far into COUNTS.pre (the bench takes them at the
 * burst's start), then COUNTS.pre.done. */
static void on_usr1(int sig) { (void)sig; atomic_store(&dump_pre, true); }

static int start_ctl(struct ctl *c, int (*fn)(const char *, double *))
{
	c->q = wq_new(NULL); /* controller-runtime's default rate limiter */
	c->reconcile = fn;
	return c->q ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	char err[256];
	struct kube_config *cfg;
	struct informer *infs[8];
	struct ctl *ctls[4];
	int ni = 0, nc = 0;

	glog_set_level(GLOG_WARN);
	if (!strncmp(mode, "cni-", 4))
		return cni_main(mode);
	if (argc < 5) {
		fprintf(stderr, "usage: burst-standin nso|cloud|router|nso-contract KUBECONFIG NS COUNTS [RNS]\n");
		return 2;
	}
	NS = argv[3];
	COUNTS = argv[4];
	if (argc > 5)
		RNS = argv[5];
	if (!(cfg = kube_config_from_kubeconfig(argv[2], NULL, err, sizeof(err))) ||
	    !(KC = kube_client_new(cfg, err, sizeof(err)))) {
		fprintf(stderr, "burst-standin: %s\n", err);
		return 1;
	}
	if (!strcmp(mode, "nso")) {
		start_ctl(&c_nso, nso_reconcile);
		ctls[nc++] = &c_nso;
		infs[ni++] = i_nic = cache_of(&NIC, NS, enq_name, enq_name_u, &c_nso);
		infs[ni++] = i_ni = cache_of(&NI, NS, enq_claimref, enq_claimref_u, &c_nso);
	} else if (!strcmp(mode, "cloud")) {
		start_ctl(&c_nir, nir_reconcile);
		start_ctl(&c_bgp, bgp_reconcile);
		ctls[nc++] = &c_nir;
		ctls[nc++] = &c_bgp;
		infs[ni++] = i_ni = cache_of(&NI, NS, enq_name, enq_name_u, &c_nir);
		infs[ni++] = i_va = cache_of(&VA, NS, enq_owner, enq_owner_u, &c_nir);
		infs[ni++] = i_nad = cache_of(&NAD, NS, enq_name, enq_name_u, &c_nir);
		infs[ni++] = i_nic = cache_of(&NIC, NS, NULL, NULL, NULL);
		infs[ni++] = i_vpc = cache_of(&VPC, NS, NULL, NULL, NULL);
		infs[ni++] = i_adv = cache_of(&ADV, RNS, enq_name, enq_name_u, &c_bgp);
		infs[ni++] = i_rtr = cache_of(&RTR, RNS, NULL, NULL, NULL);
		if (i_va)
			informer_add_index(i_va, "identity", va_identity, NULL);
	} else if (!strcmp(mode, "router")) {
		RNS = NS;
		start_ctl(&c_router, router_reconcile);
		ctls[nc++] = &c_router;
		infs[ni++] = i_adv = cache_of(&ADV, RNS, enq_name, enq_name_u, &c_router);
	} else if (!strcmp(mode, "nso-contract")) {
		start_ctl(&c_contract, contract_reconcile);
		ctls[nc++] = &c_contract;
		infs[ni++] = i_nic = cache_of(&NIC, NS, enq_name, enq_name_u, &c_contract);
	} else {
		fprintf(stderr, "burst-standin: unknown mode %s\n", mode);
		return 2;
	}
	for (int i = 0; i < nc; i++)
		if (!ctls[i]->q)
			return 1;
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	signal(SIGUSR1, on_usr1);
	/* controller-runtime starts the workers once the caches have synced */
	for (int i = 0; i < ni; i++)
		if (!infs[i] || informer_start(infs[i]))
			return 1;
	for (int i = 0; i < ni; i++)
		if (!informer_wait_synced(infs[i], 120)) {
			fprintf(stderr, "burst-standin %s: cache did not sync\n", mode);
			return 1;
		}
	for (int i = 0; i < nc; i++)
		pthread_create(&ctls[i]->th, NULL, worker, ctls[i]);
	{
		char rp[600];
		snprintf(rp, sizeof(rp), "%s.ready", COUNTS);
		int fd = open(rp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0)
			close(fd);
	}
	while (!atomic_load(&stopping)) {
		if (atomic_exchange(&dump_pre, false)) {
			char pp[600];
			snprintf(pp, sizeof(pp), "%s.pre", COUNTS);
			counts_dump_to(pp, O_TRUNC);
			snprintf(pp, sizeof(pp), "%s.pre.done", COUNTS);
			int fd = open(pp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd >= 0)
				close(fd);
		}
		usleep(20 * 1000);
	}
	for (int i = 0; i < ni; i++)
		informer_request_stop(infs[i]);
	for (int i = 0; i < nc; i++)
		wq_shutdown(ctls[i]->q);
	for (int i = 0; i < nc; i++)
		pthread_join(ctls[i]->th, NULL);
	counts_dump();
	for (int i = 0; i < ni; i++) {
		informer_stop(infs[i]);
		informer_free(infs[i]);
	}
	for (int i = 0; i < nc; i++)
		wq_free(ctls[i]->q);
	kube_client_free(KC);
	kube_config_free(cfg);
	return 0;
}
