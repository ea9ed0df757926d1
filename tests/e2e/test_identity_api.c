/*
 * Node IDs through a real kube-apiserver (agent/identity/alloc.h), with a
 * real kube-controller-manager running the garbage collector:
 *   - the NodeID CRD's rules (name shape, immutable spec, field selectors);
 *   - a node with only its NodeDataplane gets an ID, and keeps it;
 *   - 50 runs of two allocators in separate processes, started together,
 *     racing for the same first candidate: never the same ID;
 *   - a pin is honoured (and the node's earlier ID released); a pin held by
 *     another node is refused with PinnedIDTaken, the holder keeps it;
 *   - deleting a NodeDataplane releases its ID (ownerReference GC);
 *   - the agent's identity thread (identity.h) hands the identity over and
 *     writes the NodeDataplane status (conditions, field manager), including
 *     PinnedIDTaken for a pin another node holds.
 */
#include "agent/identity/alloc.h"
#include "agent/identity/identity.h"
#include "common/kube_client.h"
#include "common/kube_config.h"
#include "tests/lib/cp.h"
#include "tests/lib/crds.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"

#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct cp cp;
#define req(...) kreq(&cp, __VA_ARGS__)
static const char *NET = "/apis/network.datumapis.com/v1alpha1";
static char self_exe[4096];

static void setup(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	ck_assert_msg(cp_up(&cp) == 0, "control plane did not start");
	ck_assert_msg(crds_install(&cp, NULL) == 0, "CRDs not established");
	/* After the CRDs, so its garbage collector watches NodeIDs from the start. */
	ck_assert_msg(cp_ctl(&cp, "start-controller-manager") == 0, "kube-controller-manager did not start");
}

static void teardown(void)
{
	cp_down(&cp);
	curl_global_cleanup();
}

static long create(const char *path, const char *body)
{
	long code = 0;

	for (int i = 0; i < 100; i++) {
		code = req("POST", path, "application/json", body, NULL, NULL);
		if (code != 404 && code != 429 && code != 503)
			break;
		usleep(100 * 1000);
	}
	return code;
}

static void make_ndp(const char *node, const char *block, int pin)
{
	char path[256], body[512];

	snprintf(path, sizeof(path), "%s/nodedataplanes", NET);
	if (pin)
		snprintf(body, sizeof(body), "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeDataplane\","
			 "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"sidBlock\":\"%s\",\"nodeID\":%d}}", node, block, pin);
	else
		snprintf(body, sizeof(body), "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeDataplane\","
			 "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"sidBlock\":\"%s\"}}", node, block);
	ck_assert_int_eq(create(path, body), 201);
}

static struct kube_client *client(struct kube_config **cfg)
{
	char err[512];
	struct kube_client *kc;

	*cfg = kube_config_from_kubeconfig(cp.kubeconfig, NULL, err, sizeof(err));
	ck_assert_msg(*cfg, "%s", err);
	kc = kube_client_new(*cfg, err, sizeof(err));
	ck_assert_msg(kc, "%s", err);
	return kc;
}

/* GET the node's NodeDataplane and run one acquire. */
static int acquire(struct kube_client *kc, const char *node, uint16_t prefer, const uint8_t *pb,
		   struct gid_result *r)
{
	struct kube_error e;
	json_t *ndp = NULL;
	int rc;

	if (kube_get(kc, &GID_NODEDATAPLANES, NULL, node, &ndp, &e)) {
		snprintf(r->message, sizeof(r->message), "%s", e.message);
		return -1;
	}
	rc = gid_acquire(kc, node, ndp, prefer, pb, r);
	json_decref(ndp);
	return rc;
}

/* The NodeIDs listed with a field selector: count, and the names joined. */
static size_t list_ids(const char *selector, char *names, size_t n)
{
	char path[512], *esc;
	json_t *l = NULL, *it;
	size_t i, count;

	esc = curl_easy_escape(NULL, selector, 0);
	snprintf(path, sizeof(path), "%s/nodeids?fieldSelector=%s", NET, esc);
	curl_free(esc);
	ck_assert_int_eq(req("GET", path, NULL, NULL, NULL, &l), 200);
	if (names)
		names[0] = 0;
	json_array_foreach(json_object_get(l, "items"), i, it)
		if (names)
			snprintf(names + strlen(names), n - strlen(names), "%s%s", i ? "," : "",
				 kstr(json_object_get(it, "metadata"), "name", NULL));
	count = json_array_size(json_object_get(l, "items"));
	json_decref(l);
	return count;
}

START_TEST(test_nodeid_crd_rules)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/nodeids", NET);
	ck_assert_int_eq(create(path, "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeID\","
				      "\"metadata\":{\"name\":\"fd0000000099-0001\"},\"spec\":{\"node\":\"crd-a\","
				      "\"block\":\"fd00:0:99::/48\",\"nodeID\":1}}"), 201);
	/* names are <12 hex>-<4 hex>; IDs stop at 0xDFFF; blocks are /48 */
	ck_assert_int_eq(create(path, "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeID\","
				      "\"metadata\":{\"name\":\"node-crd-b\"},\"spec\":{\"node\":\"crd-b\","
				      "\"block\":\"fd00:0:99::/48\",\"nodeID\":2}}"), 422);
	ck_assert_int_eq(create(path, "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeID\","
				      "\"metadata\":{\"name\":\"fd0000000099-e000\"},\"spec\":{\"node\":\"crd-b\","
				      "\"block\":\"fd00:0:99::/48\",\"nodeID\":57344}}"), 422);
	ck_assert_int_eq(create(path, "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeID\","
				      "\"metadata\":{\"name\":\"fd0000000099-0003\"},\"spec\":{\"node\":\"crd-b\","
				      "\"block\":\"fd00:0:99::/64\",\"nodeID\":3}}"), 422);
	/* the same name again: 409, the lock the allocator relies on */
	ck_assert_int_eq(create(path, "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeID\","
				      "\"metadata\":{\"name\":\"fd0000000099-0001\"},\"spec\":{\"node\":\"crd-b\","
				      "\"block\":\"fd00:0:99::/48\",\"nodeID\":1}}"), 409);
	/* nothing of a hold changes */
	snprintf(path, sizeof(path), "%s/nodeids/fd0000000099-0001", NET);
	ck_assert_int_eq(req("PATCH", path, "application/merge-patch+json", "{\"spec\":{\"node\":\"crd-b\"}}", NULL, NULL), 422);
	ck_assert_uint_eq(list_ids("spec.node=crd-a", NULL, 0), 1);
	ck_assert_uint_eq(list_ids("spec.block=fd00:0:99::/48", NULL, 0), 1);
	ck_assert_uint_eq(list_ids("spec.node=crd-b", NULL, 0), 0);
}
END_TEST

START_TEST(test_empty_node_gets_identity_and_keeps_it)
{
	struct kube_config *cfg;
	struct kube_client *kc = client(&cfg);
	struct gid_result r, r2;
	char path[256];
	json_t *o;

	make_ndp("fresh-1", "fcbb:bb00:10::/48", 0);
	ck_assert_msg(acquire(kc, "fresh-1", 0, NULL, &r) == 0, "%s", r.message);
	ck_assert_msg(r.assigned, "%s: %s", r.reason, r.message);
	ck_assert_str_eq(r.reason, "Allocated");
	ck_assert_uint_eq(r.id, gid_hash_start("fresh-1")); /* empty block: the hash's candidate */
	printf("fresh node: %s\n", r.message);
	/* the hold: owned by the NodeDataplane, labelled with the node */
	snprintf(path, sizeof(path), "%s/nodeids/%s", NET, r.name);
	o = kget(&cp, path, NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(kstr(json_array_get(json_object_get(json_object_get(o, "metadata"), "ownerReferences"), 0),
			      "kind", NULL), "NodeDataplane");
	ck_assert(json_is_true(json_object_get(json_array_get(json_object_get(json_object_get(o, "metadata"),
									     "ownerReferences"), 0), "controller")));
	json_decref(o);
	/* again (a restart): the same ID, nothing created */
	ck_assert_int_eq(acquire(kc, "fresh-1", 0, NULL, &r2), 0);
	ck_assert(r2.assigned);
	ck_assert_str_eq(r2.reason, "Reused");
	ck_assert_uint_eq(r2.id, r.id);
	ck_assert_uint_eq(r2.creates, 0);
	ck_assert_uint_eq(list_ids("spec.node=fresh-1", NULL, 0), 1);
	/* a node whose record has an ID takes that one when it is free */
	{
		struct gid_spec s;
		char why[128];
		json_t *n;

		make_ndp("fresh-2", "fcbb:bb00:10::/48", 0);
		n = kget(&cp, "/apis/network.datumapis.com/v1alpha1/nodedataplanes/fresh-2", NULL);
		ck_assert_int_eq(gid_spec_parse(n, "fresh-2", &s, why, sizeof(why)), 0);
		json_decref(n);
		ck_assert_int_eq(acquire(kc, "fresh-2", 4321, s.block, &r), 0);
		ck_assert(r.assigned);
		ck_assert_uint_eq(r.id, 4321);
	}
	kube_client_free(kc);
	kube_config_free(cfg);
}
END_TEST

/* Child mode: wait for the start byte on stdin, acquire, print "id creates conflicts". */
static int child_alloc(const char *kubeconfig, const char *node)
{
	struct kube_config *cfg;
	struct kube_client *kc;
	struct gid_result r;
	struct kube_error e;
	char err[512], go;
	json_t *ndp = NULL;
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	cfg = kube_config_from_kubeconfig(kubeconfig, NULL, err, sizeof(err));
	kc = cfg ? kube_client_new(cfg, err, sizeof(err)) : NULL;
	if (!kc) {
		fprintf(stderr, "child: %s\n", err);
		return 2;
	}
	/* connect first, so both children are equally warm when the gun goes */
	if (kube_get(kc, &GID_NODEDATAPLANES, NULL, node, &ndp, &e)) {
		fprintf(stderr, "child: %s\n", e.message);
		return 2;
	}
	printf("ready\n");
	fflush(stdout);
	if (read(0, &go, 1) != 1)
		return 2;
	rc = gid_acquire(kc, node, ndp, 0, NULL, &r);
	printf("%d %s %u %lu %lu\n", rc, r.assigned ? "assigned" : r.reason, r.id, r.creates, r.conflicts);
	fflush(stdout);
	json_decref(ndp);
	kube_client_free(kc);
	kube_config_free(cfg);
	curl_global_cleanup();
	return rc == 0 && r.assigned ? 0 : 1;
}

struct child {
	pid_t pid;
	int in, out;
};

static struct child spawn(const char *node)
{
	int pin[2], pout[2];
	struct child c;

	ck_assert_int_eq(pipe(pin), 0);
	ck_assert_int_eq(pipe(pout), 0);
	c.pid = fork();
	ck_assert_int_ge(c.pid, 0);
	if (c.pid == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		close(pin[1]);
		close(pout[0]);
		execl(self_exe, self_exe, "alloc", cp.kubeconfig, node, (char *)NULL);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	c.in = pin[1];
	c.out = pout[0];
	return c;
}

static void read_line(int fd, char *buf, size_t n)
{
	size_t k = 0;

	while (k + 1 < n && read(fd, buf + k, 1) == 1 && buf[k] != '\n')
		k++;
	buf[k] = 0;
}

/* Two node names whose hash gives the same first candidate (so they race for it). */
static void colliding_names(int run, char *a, char *b, size_t n)
{
	static uint16_t seen[4096];
	char nm[64];

	for (int k = 0; k < 4096; k++) {
		snprintf(nm, sizeof(nm), "race-%d-%d", run, k);
		seen[k] = gid_hash_start(nm);
		for (int j = 0; j < k; j++)
			if (seen[j] == seen[k]) {
				snprintf(a, n, "race-%d-%d", run, j);
				snprintf(b, n, "%s", nm);
				return;
			}
	}
	ck_abort_msg("no colliding names");
}

START_TEST(test_race_two_allocators_50_runs)
{
	unsigned collisions = 0, contended = 0, runs = 50;
	unsigned long c409 = 0, creates = 0;
	double t0 = (double)time(NULL);

	for (unsigned run = 0; run < runs; run++) {
		char a[64], b[64], block[64], sel[96], la[128], lb[128], names[256];
		struct child ca, cb;
		int rc_a, rc_b, sa, sb;
		char sta[32], stb[32];
		unsigned ida = 0, idb = 0;
		unsigned long cra, crb, cfa, cfb;

		colliding_names((int)run, a, b, sizeof(a));
		snprintf(block, sizeof(block), "fcbb:%x::/48", 0x100 + run);
		make_ndp(a, block, 0);
		make_ndp(b, block, 0);
		ca = spawn(a);
		cb = spawn(b);
		read_line(ca.out, la, sizeof(la));
		read_line(cb.out, lb, sizeof(lb));
		ck_assert_str_eq(la, "ready");
		ck_assert_str_eq(lb, "ready");
		ck_assert_int_eq(write(ca.in, "g", 1), 1);
		ck_assert_int_eq(write(cb.in, "g", 1), 1);
		read_line(ca.out, la, sizeof(la));
		read_line(cb.out, lb, sizeof(lb));
		waitpid(ca.pid, &sa, 0);
		waitpid(cb.pid, &sb, 0);
		close(ca.in), close(ca.out), close(cb.in), close(cb.out);
		ck_assert_msg(sscanf(la, "%d %31s %u %lu %lu", &rc_a, sta, &ida, &cra, &cfa) == 5, "child a: %s", la);
		ck_assert_msg(sscanf(lb, "%d %31s %u %lu %lu", &rc_b, stb, &idb, &crb, &cfb) == 5, "child b: %s", lb);
		ck_assert_msg(rc_a == 0 && !strcmp(sta, "assigned"), "run %u %s: %s", run, a, la);
		ck_assert_msg(rc_b == 0 && !strcmp(stb, "assigned"), "run %u %s: %s", run, b, lb);
		if (ida == idb)
			collisions++;
		if (cfa + cfb)
			contended++;
		c409 += cfa + cfb;
		creates += cra + crb;
		/* the server agrees: two holds in the block, one per node */
		snprintf(sel, sizeof(sel), "spec.block=%s", block);
		ck_assert_uint_eq(list_ids(sel, names, sizeof(names)), 2);
		snprintf(sel, sizeof(sel), "spec.node=%s", a);
		ck_assert_uint_eq(list_ids(sel, NULL, 0), 1);
		snprintf(sel, sizeof(sel), "spec.node=%s", b);
		ck_assert_uint_eq(list_ids(sel, NULL, 0), 1);
	}
	printf("race: %u runs of 2 allocator processes on the same first candidate: %u collisions, "
	       "%u runs where one lost a create (409), %lu x 409 in all, %lu creates, %.0f s\n",
	       runs, collisions, contended, c409, creates, (double)time(NULL) - t0);
	ck_assert_uint_eq(collisions, 0);
}
END_TEST

START_TEST(test_pin_honoured_and_pin_taken_refused)
{
	struct kube_config *cfg;
	struct kube_client *kc = client(&cfg);
	struct gid_result r;
	char path[256], names[256];

	/* pin-a first runs unpinned, then the operator pins 700 */
	make_ndp("pin-a", "fcbb:bb00:20::/48", 0);
	ck_assert_int_eq(acquire(kc, "pin-a", 0, NULL, &r), 0);
	ck_assert(r.assigned);
	ck_assert_uint_ne(r.id, 700);
	snprintf(path, sizeof(path), "%s/nodedataplanes/pin-a", NET);
	ck_assert_int_eq(req("PATCH", path, "application/merge-patch+json", "{\"spec\":{\"nodeID\":700}}", NULL, NULL), 200);
	ck_assert_int_eq(acquire(kc, "pin-a", r.id, r.spec.block, &r), 0);
	ck_assert_msg(r.assigned, "%s", r.message);
	ck_assert_str_eq(r.reason, "Pinned");
	ck_assert_uint_eq(r.id, 700);
	ck_assert_uint_eq(r.released, 1); /* the allocated one went */
	ck_assert_uint_eq(list_ids("spec.node=pin-a", names, sizeof(names)), 1);
	ck_assert_str_eq(names, "fcbbbb000020-02bc");

	/* pin-b pins the same ID: refused, with the holder named; nothing stolen */
	make_ndp("pin-b", "fcbb:bb00:20::/48", 700);
	ck_assert_int_eq(acquire(kc, "pin-b", 0, NULL, &r), 0);
	ck_assert(!r.assigned);
	ck_assert_str_eq(r.reason, "PinnedIDTaken");
	ck_assert_msg(strstr(r.message, "held by node pin-a"), "%s", r.message);
	printf("pin taken: %s\n", r.message);
	ck_assert_uint_eq(list_ids("spec.node=pin-b", NULL, 0), 0);
	ck_assert_uint_eq(list_ids("spec.node=pin-a", NULL, 0), 1);
	kube_client_free(kc);
	kube_config_free(cfg);
}
END_TEST

START_TEST(test_release_on_nodedataplane_delete)
{
	struct kube_config *cfg;
	struct kube_client *kc = client(&cfg);
	struct gid_result r, r2;
	char path[256];
	int i;

	make_ndp("gone-1", "fcbb:bb00:30::/48", 0);
	ck_assert_int_eq(acquire(kc, "gone-1", 0, NULL, &r), 0);
	ck_assert(r.assigned);
	snprintf(path, sizeof(path), "%s/nodedataplanes/gone-1", NET);
	ck_assert_uint_eq(list_ids("spec.node=gone-1", NULL, 0), 1);
	{
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		ck_assert_int_eq(req("DELETE", path, NULL, NULL, NULL, NULL), 200);
		for (i = 0; i < 600 && list_ids("spec.node=gone-1", NULL, 0); i++)
			usleep(100 * 1000);
		clock_gettime(CLOCK_MONOTONIC, &b);
		ck_assert_msg(i < 600, "NodeID %s not released 60 s after its NodeDataplane went", r.name);
		printf("release: NodeID %s garbage-collected %.1f s after the NodeDataplane delete\n", r.name,
		       (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	}
	/* the ID is free again: another node may take it */
	make_ndp("gone-2", "fcbb:bb00:30::/48", r.id);
	ck_assert_int_eq(acquire(kc, "gone-2", 0, NULL, &r2), 0);
	ck_assert_msg(r2.assigned, "%s", r2.message);
	ck_assert_uint_eq(r2.id, r.id);
	kube_client_free(kc);
	kube_config_free(cfg);
}
END_TEST

struct handed {
	pthread_mutex_t mu;
	int calls;
	uint16_t id;
	uint8_t block[6];
};

static void on_identity(void *ud, const struct gid_result *r)
{
	struct handed *h = ud;

	pthread_mutex_lock(&h->mu);
	h->calls++;
	h->id = r->id;
	memcpy(h->block, r->spec.block, 6);
	pthread_mutex_unlock(&h->mu);
}

/* Polls the NodeDataplane until condition type has status, up to 20 s; returns the object. */
static json_t *wait_cond(const char *node, const char *type, const char *status)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/nodedataplanes/%s", NET, node);
	for (int i = 0; i < 200; i++) {
		json_t *o = kget(&cp, path, NULL);
		const char *st = kstr(kcond(o, type), "status", NULL);

		if (st && !strcmp(st, status))
			return o;
		json_decref(o);
		usleep(100 * 1000);
	}
	ck_abort_msg("NodeDataplane %s: %s never became %s", node, type, status);
	return NULL;
}

START_TEST(test_identity_thread_hands_over_and_writes_status)
{
	static const char *const caps[] = { "seg6", "seg6local" };
	struct handed h = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct gid_daemon *d;
	struct gid_daemon_stats st;
	char err[512];
	json_t *o, *mf;
	size_t i;
	bool ours = false;
	int n;

	make_ndp("agent-1", "fcbb:bb00:40::/48", 0);
	ck_assert_msg(gid_daemon_start(&d, &(struct gid_daemon_opts){ .kubeconfig = cp.kubeconfig, .node = "agent-1",
					.datapath = "bpf", .version = "0.1.0", .caps = caps, .n_caps = 2,
					.on_identity = on_identity, .ud = &h }, err, sizeof(err)) == 0, "%s", err);
	for (n = 0; n < 200; n++) {
		pthread_mutex_lock(&h.mu);
		bool got = h.calls > 0;
		pthread_mutex_unlock(&h.mu);
		if (got)
			break;
		usleep(100 * 1000);
	}
	ck_assert_msg(h.calls > 0, "no identity handed over");
	/* before any datapath pass: identity yes, datapath unknown, not ready */
	o = wait_cond("agent-1", "IdentityAssigned", "True");
	ck_assert_str_eq(kstr(kcond(o, "IdentityAssigned"), "reason", NULL), "Allocated");
	ck_assert_str_eq(kstr(kcond(o, "Ready"), "status", NULL), "Unknown");
	json_decref(o);
	/* the agent applied it and verified the datapath */
	gid_daemon_datapath(d, h.id, h.block, true, "Verified", "bpf programs attached, maps read back");
	o = wait_cond("agent-1", "Ready", "True");
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o, "status"), "nodeID")), h.id);
	ck_assert_str_eq(kstr(json_object_get(o, "status"), "datapath", NULL), "bpf");
	ck_assert_str_eq(kstr(json_object_get(json_object_get(o, "status"), "reporter"), "version", NULL), "0.1.0");
	ck_assert_str_eq(kstr(kcond(o, "DatapathReady"), "reason", NULL), "Verified");
	mf = json_object_get(json_object_get(o, "metadata"), "managedFields");
	for (i = 0; i < json_array_size(mf); i++) {
		const char *m = kstr(json_array_get(mf, i), "manager", NULL), *sub = kstr(json_array_get(mf, i), "subresource", NULL);

		if (m && !strcmp(m, "galactic-agent/agent-1") && sub && !strcmp(sub, "status"))
			ours = true;
	}
	ck_assert_msg(ours, "status not written by galactic-agent/agent-1");
	json_decref(o);
	/* drift seen: DatapathReady and Ready go False with the reason */
	gid_daemon_datapath(d, h.id, h.block, false, "NotVerified", "eth0: decap filter not attached");
	o = wait_cond("agent-1", "Ready", "False");
	ck_assert_str_eq(kstr(kcond(o, "DatapathReady"), "message", NULL), "eth0: decap filter not attached");
	json_decref(o);
	gid_daemon_stats(d, &st);
	printf("identity thread: %lu acquires, %lu status writes, %lu API errors\n", st.acquires, st.status_writes,
	       st.api_errors);
	ck_assert_uint_ge(st.status_writes, 3);
	gid_daemon_stop(d);
}
END_TEST

START_TEST(test_identity_thread_pin_taken_condition)
{
	struct handed h = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct gid_daemon *d;
	char err[512];
	json_t *o;

	/* pin-b pins 700, which pin-a holds (test_pin_honoured_and_pin_taken_refused) */
	ck_assert_msg(gid_daemon_start(&d, &(struct gid_daemon_opts){ .kubeconfig = cp.kubeconfig, .node = "pin-b",
					.datapath = "kernel", .on_identity = on_identity, .ud = &h }, err, sizeof(err)) == 0,
		      "%s", err);
	o = wait_cond("pin-b", "IdentityAssigned", "False");
	ck_assert_str_eq(kstr(kcond(o, "IdentityAssigned"), "reason", NULL), "PinnedIDTaken");
	ck_assert_msg(strstr(kstr(kcond(o, "IdentityAssigned"), "message", NULL), "held by node pin-a"), "%s",
		      kstr(kcond(o, "IdentityAssigned"), "message", NULL));
	ck_assert_str_eq(kstr(kcond(o, "Ready"), "status", NULL), "False");
	ck_assert_ptr_null(json_object_get(json_object_get(o, "status"), "nodeID"));
	json_decref(o);
	ck_assert_int_eq(h.calls, 0); /* nothing handed over */
	gid_daemon_stop(d);
}
END_TEST

int main(int argc, char **argv)
{
	Suite *s;
	TCase *tc;
	ssize_t n;

	if (argc == 4 && !strcmp(argv[1], "alloc"))
		return child_alloc(argv[2], argv[3]);
	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (n <= 0)
		return 2;
	self_exe[n] = 0;
	s = suite_create("identity-api");
	tc = tcase_create("alloc");
	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_nodeid_crd_rules);
	tcase_add_test(tc, test_empty_node_gets_identity_and_keeps_it);
	tcase_add_test(tc, test_race_two_allocators_50_runs);
	tcase_add_test(tc, test_pin_honoured_and_pin_taken_refused);
	tcase_add_test(tc, test_release_on_nodedataplane_delete);
	tcase_add_test(tc, test_identity_thread_hands_over_and_writes_status);
	tcase_add_test(tc, test_identity_thread_pin_taken_condition);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
