/*
 * Informer against the real kube-apiserver:
 *  - a partition plus an apiserver restart, with create/update/delete while
 *    the informer is cut off: every change is delivered after it reconnects;
 *  - etcd compaction past the informer's version: it relists (410) and its
 *    cache equals the server's list;
 *  - a few thousand objects: list pages + watch, cache equals the list;
 *  - a watch stream cut or stalled in the middle of one event: resumed, the
 *    object delivered whole once, cache equals the list.
 */
#include "common/informer.h"
#include "common/json.h"
#include "tests/lib/common_e2e.h"
#include "tests/lib/common_proxy.h"
#include "tests/lib/gtest.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct cp cp;

struct rec {
	pthread_mutex_t mu;
	char log[64 * 1024];
	int adds, updates, deletes;
};

static void rec_add(struct rec *r, const char *kind, json_t *o)
{
	char key[256];
	gj_object_key(o, key, sizeof(key));
	pthread_mutex_lock(&r->mu);
	size_t n = strlen(r->log);
	if (n + 300 < sizeof(r->log))
		snprintf(r->log + n, sizeof(r->log) - n, "%s:%s:%s;", kind, key,
			 gj_str(o, "data.v") ? gj_str(o, "data.v") : "-");
	if (*kind == 'a')
		r->adds++;
	else if (*kind == 'u')
		r->updates++;
	else
		r->deletes++;
	pthread_mutex_unlock(&r->mu);
}

static void on_add(json_t *o, void *ud) { rec_add(ud, "add", o); }
static void on_update(json_t *old, json_t *o, void *ud) { (void)old; rec_add(ud, "upd", o); }
static void on_delete(json_t *o, void *ud) { rec_add(ud, "del", o); }

static bool rec_has(struct rec *r, const char *s)
{
	bool f;
	pthread_mutex_lock(&r->mu);
	f = strstr(r->log, s) != NULL;
	pthread_mutex_unlock(&r->mu);
	return f;
}

static struct informer *start_informer_bo(struct kube_client *kc, const char *ns, struct rec *r,
					 double backoff_max_s)
{
	struct informer_opts o = { .res = CE_CONFIGMAPS, .ns = ns, .page_size = 500, .idle_timeout_s = 30,
				   .backoff_max_s = backoff_max_s };
	struct informer_handlers h = { on_add, on_update, on_delete, r };
	struct informer *inf = informer_new(kc, &o);
	ck_assert_ptr_nonnull(inf);
	ck_assert_int_eq(informer_add_index(inf, "v", kube_index_by_label, (void *)"set"), 0);
	ck_assert_int_eq(informer_add_handlers(inf, &h), 0);
	ck_assert_int_eq(informer_start(inf), 0);
	ck_assert(informer_wait_synced(inf, 60));
	return inf;
}

/* Default reconnect backoff (0.8 s to 30 s). */
static struct informer *start_informer(struct kube_client *kc, const char *ns, struct rec *r)
{
	return start_informer_bo(kc, ns, r, 0);
}

static void put(struct kube_client *kc, const char *ns, const char *name, const char *v, char *rv_out)
{
	struct kube_error e;
	json_t *o = ce_cm(ns, name, "v", v), *out = NULL;
	ck_assert_msg(kube_apply(kc, &CE_CONFIGMAPS, ns, name, NULL, o, "e2e", true, &out, &e) == 0, "%s", e.message);
	if (rv_out)
		snprintf(rv_out, 64, "%s", gj_str(out, "metadata.resourceVersion"));
	json_decref(out);
	json_decref(o);
}

static void del(struct kube_client *kc, const char *ns, const char *name)
{
	struct kube_error e;
	ck_assert_msg(kube_delete(kc, &CE_CONFIGMAPS, ns, name, NULL, &e) == 0, "%s", e.message);
}

/* Cache equals the server's list: same keys, same resourceVersions. */
static bool cache_equals_server(struct kube_client *kc, struct informer *inf, const char *ns, size_t *n)
{
	struct kube_error e;
	json_t *list = NULL, *it;
	size_t i;
	bool eq = true;

	if (kube_list_all(kc, &CE_CONFIGMAPS, ns, &(struct kube_list_opts){ .limit = 500 }, &list, &e))
		return false;
	*n = json_array_size(json_object_get(list, "items"));
	if (*n != kube_store_len(informer_store(inf)))
		eq = false;
	json_array_foreach(json_object_get(list, "items"), i, it) {
		json_t *c = kube_store_get_nn(informer_store(inf), ns, gj_str(it, "metadata.name"));
		if (!c || strcmp(gj_str(c, "metadata.resourceVersion"), gj_str(it, "metadata.resourceVersion")))
			eq = false;
		json_decref(c);
		if (!eq)
			break;
	}
	json_decref(list);
	return eq;
}

static bool wait_until(bool (*pred)(void *), void *ud, double timeout_s)
{
	double end = ce_now() + timeout_s;
	while (ce_now() < end) {
		if (pred(ud))
			return true;
		usleep(50 * 1000);
	}
	return pred(ud);
}

static bool outage_seen(void *ud)
{
	struct rec *r = ud;
	return rec_has(r, "add:e2e-restart/new1:n1;") && rec_has(r, "upd:e2e-restart/x1:v1;") &&
	       rec_has(r, "del:e2e-restart/x2:");
}

START_TEST(restart_no_missed_event)
{
	struct ce_proxied f;
	struct rec r = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct informer_stats st;

	ce_proxied_open(&cp, "e2e-restart", &f);
	struct kube_client *direct = f.direct, *kc = f.kc;
	struct tproxy *px = f.px;
	put(direct, "e2e-restart", "x1", "v0", NULL);
	put(direct, "e2e-restart", "x2", "v0", NULL);
	put(direct, "e2e-restart", "x3", "v0", NULL);
	struct informer *inf = start_informer(kc, "e2e-restart", &r);
	ck_assert_int_eq(r.adds, 3);
	/* A second informer connects directly: it sees the apiserver go away. */
	struct rec r2 = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct informer *inf2 = start_informer(direct, "e2e-restart", &r2);
	put(direct, "e2e-restart", "x3", "live", NULL);
	for (int i = 0; i < 100 && !rec_has(&r, "upd:e2e-restart/x3:live;"); i++)
		usleep(50 * 1000);
	ck_assert_msg(rec_has(&r, "upd:e2e-restart/x3:live;"), "%s", r.log);

	/* Outage: the informer is cut off and the apiserver restarts; writes happen meanwhile. */
	tproxy_cut(px);
	double t_restart = ce_now();
	ck_assert_int_eq(ce_ctl(&cp, "restart-apiserver"), 0);
	printf("apiserver restart took %.1fs\n", ce_now() - t_restart);
	put(direct, "e2e-restart", "new1", "n1", NULL);
	put(direct, "e2e-restart", "x1", "v1", NULL);
	del(direct, "e2e-restart", "x2");
	ck_assert(!outage_seen(&r)); /* nothing can arrive while cut */
	tproxy_restore(px);
	double t0 = ce_now();
	ck_assert_msg(wait_until(outage_seen, &r, 60), "events after outage missing: %s", r.log);
	double seen = ce_now() - t0;
	ck_assert_msg(wait_until(outage_seen, &r2, 60), "direct informer missed events: %s", r2.log);
	size_t n = 0;
	ck_assert(cache_equals_server(direct, inf, "e2e-restart", &n));
	ck_assert_uint_eq(n, 3);
	/* The watch works again after the outage. */
	put(direct, "e2e-restart", "x3", "after", NULL);
	for (int i = 0; i < 100 && !rec_has(&r, "upd:e2e-restart/x3:after;"); i++)
		usleep(50 * 1000);
	ck_assert(rec_has(&r, "upd:e2e-restart/x3:after;"));
	informer_get_stats(inf, &st);
	printf("restart: create/update/delete made during the outage seen %.2fs after the partition healed; "
	       "lists %lu watches %lu relists(410) %lu errors %lu\n", seen, st.lists, st.watches,
	       st.relists_gone, st.errors);
	informer_get_stats(inf2, &st);
	ck_assert(cache_equals_server(direct, inf2, "e2e-restart", &n));
	printf("restart: directly connected informer saw them too; lists %lu watches %lu relists(410) %lu errors %lu\n",
	       st.lists, st.watches, st.relists_gone, st.errors);
	ck_assert_uint_ge(st.errors, 1); /* it did lose its connection */
	informer_free(inf2);
	informer_free(inf);
	ce_proxied_close(&f);
}
END_TEST

struct relist_ctx {
	struct informer *inf;
	struct kube_client *kc;
};

static bool relisted_and_equal(void *ud)
{
	struct relist_ctx *c = ud;
	struct informer_stats st;
	size_t n;
	informer_get_stats(c->inf, &st);
	return st.relists_gone >= 1 && cache_equals_server(c->kc, c->inf, "e2e-compact", &n);
}

START_TEST(compaction_relist)
{
	struct ce_proxied f;
	struct rec r = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct informer_stats st;
	char name[32], rev[64] = "", cmd[256], rv0[64];

	ce_proxied_open(&cp, "e2e-compact", &f);
	struct kube_client *direct = f.direct, *kc = f.kc;
	struct tproxy *px = f.px;
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "c-%d", i);
		put(direct, "e2e-compact", name, "v0", NULL);
	}
	/* Backoff capped at 4 s: this test is about the relist, not the wait. */
	struct informer *inf = start_informer_bo(kc, "e2e-compact", &r, 4);
	informer_get_stats(inf, &st);
	snprintf(rv0, sizeof(rv0), "%s", st.resource_version);

	tproxy_cut(px);
	put(direct, "e2e-compact", "c-new", "n", NULL);
	put(direct, "e2e-compact", "c-0", "v1", NULL);
	del(direct, "e2e-compact", "c-1");
	for (int i = 0; i < 20; i++)
		put(direct, "e2e-compact", "c-2", i % 2 ? "odd" : "even", rev);
	snprintf(cmd, sizeof(cmd), "etcdctl compact %s", rev);
	ck_assert_int_eq(ce_ctl(&cp, cmd), 0);
	/* Proof that the informer's version is gone from etcd: a read at it fails. */
	snprintf(cmd, sizeof(cmd), "etcdctl get /registry/configmaps/e2e-compact/c-0 --rev=%s >/dev/null 2>&1", rv0);
	ck_assert_msg(ce_ctl(&cp, cmd) != 0, "etcd still serves revision %s", rv0);
	snprintf(cmd, sizeof(cmd), "etcdctl get /registry/configmaps/e2e-compact/c-0 --rev=%s >/dev/null", rev);
	ck_assert_int_eq(ce_ctl(&cp, cmd), 0);
	printf("compacted etcd at %s; informer was at %s (etcd refuses reads there now)\n", rev, rv0);
	/* A fresh apiserver has no watch-cache history: the watch from rv0 must 410. */
	ck_assert_int_eq(ce_ctl(&cp, "restart-apiserver"), 0);
	tproxy_restore(px);
	struct relist_ctx c = { inf, direct };
	double t0 = ce_now();
	ck_assert_msg(wait_until(relisted_and_equal, &c, 60), "no relist or cache differs: %s", r.log);
	size_t n = 0;
	ck_assert(cache_equals_server(direct, inf, "e2e-compact", &n));
	ck_assert_uint_eq(n, 5);
	ck_assert(rec_has(&r, "add:e2e-compact/c-new:n;"));
	ck_assert(rec_has(&r, "upd:e2e-compact/c-0:v1;"));
	ck_assert(rec_has(&r, "del:e2e-compact/c-1:"));
	informer_get_stats(inf, &st);
	printf("compaction: relisted (410) %lu time(s), cache == server list (%zu objects) %.2fs after reconnect allowed; "
	       "lists %lu watches %lu\n", st.relists_gone, n, ce_now() - t0, st.lists, st.watches);
	informer_free(inf);
	ce_proxied_close(&f);
}
END_TEST

struct seen_ctx {
	struct rec *r;
	const char *what;
};

static bool seen(void *ud)
{
	struct seen_ctx *c = ud;
	return rec_has(c->r, c->what);
}

/* Server-side watch timeouts re-watch without a relist; a black-holed
 * connection is caught by the client-side idle timeout. */
START_TEST(watch_timeouts)
{
	struct ce_proxied f;
	struct rec r = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct informer_stats st;

	ce_proxied_open(&cp, "e2e-timeout", &f);
	struct kube_client *direct = f.direct, *kc = f.kc;
	struct tproxy *px = f.px;
	put(direct, "e2e-timeout", "t", "0", NULL);
	struct informer_opts o = { .res = CE_CONFIGMAPS, .ns = "e2e-timeout", .min_timeout_s = 2,
				   .max_timeout_s = 3, .idle_timeout_s = 4 };
	struct informer_handlers h = { on_add, on_update, on_delete, &r };
	struct informer *inf = informer_new(kc, &o);
	informer_add_handlers(inf, &h);
	informer_start(inf);
	ck_assert(informer_wait_synced(inf, 30));
	usleep(9000 * 1000);
	informer_get_stats(inf, &st);
	printf("timeouts: after 9s with server timeout 2-3s: lists %lu watches %lu errors %lu\n",
	       st.lists, st.watches, st.errors);
	ck_assert_uint_eq(st.lists, 1);
	ck_assert_uint_ge(st.watches, 3);
	ck_assert_uint_eq(st.errors, 0);

	/* Long server timeout now matters not: freeze the live connection. */
	informer_free(inf);
	o.min_timeout_s = o.max_timeout_s = 300;
	inf = informer_new(kc, &o);
	informer_add_handlers(inf, &h);
	informer_start(inf);
	ck_assert(informer_wait_synced(inf, 30));
	usleep(300 * 1000);
	tproxy_freeze(px);
	double t0 = ce_now();
	put(direct, "e2e-timeout", "t", "after-freeze", NULL);
	struct seen_ctx c = { &r, "upd:e2e-timeout/t:after-freeze;" };
	ck_assert_msg(wait_until(seen, &c, 20), "update not seen through a frozen connection: %s", r.log);
	double dt = ce_now() - t0;
	informer_get_stats(inf, &st);
	printf("idle timeout: frozen connection replaced, update seen %.2fs after the freeze (idle timeout 4s); "
	       "watches %lu errors %lu lists %lu\n", dt, st.watches, st.errors, st.lists);
	ck_assert_double_ge(dt, 3.0);
	ck_assert_uint_ge(st.errors, 1);
	ck_assert_uint_eq(st.lists, 1); /* resumed from its version, no relist */
	informer_free(inf);
	ce_proxied_close(&f);
}
END_TEST

struct filler {
	struct kube_client *kc;
	int from, to;
};

static void *fill(void *arg)
{
	struct filler *f = arg;
	struct kube_error e;
	char name[32];
	for (int i = f->from; i < f->to; i++) {
		snprintf(name, sizeof(name), "s-%05d", i);
		json_t *o = ce_cm("e2e-scale", name, "v", "x");
		gj_set(o, "metadata.labels.set", json_string(i % 2 ? "odd" : "even"));
		if (kube_create(f->kc, &CE_CONFIGMAPS, "e2e-scale", o, NULL, &e))
			fprintf(stderr, "%s\n", e.message);
		json_decref(o);
	}
	return NULL;
}

START_TEST(scale_small)
{
	struct kube_config *cfg;
	struct kube_client *kc = ce_client_token(&cp, NULL, &cfg);
	struct rec r = { .mu = PTHREAD_MUTEX_INITIALIZER };
	pthread_t t[4];
	struct filler f[4];
	const int N = 2000;

	ce_namespace(kc, "e2e-scale");
	for (int i = 0; i < 4; i++) {
		f[i] = (struct filler){ kc, i * N / 4, (i + 1) * N / 4 };
		pthread_create(&t[i], NULL, fill, &f[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	double t0 = ce_now();
	struct informer *inf = start_informer(kc, "e2e-scale", &r);
	double synced = ce_now() - t0;
	size_t n = 0;
	ck_assert(cache_equals_server(kc, inf, "e2e-scale", &n));
	ck_assert_uint_eq(n, (size_t)N);
	ck_assert_int_eq(r.adds, N);
	json_t *odd = kube_store_by_index(informer_store(inf), "v", "odd");
	ck_assert_uint_eq(json_array_size(odd), (size_t)N / 2);
	json_decref(odd);
	printf("scale: %d objects synced in %.3fs (pages of 500)\n", N, synced);
	{
		/* From the watch cache, with a label selector (the route learner's
		 * informers): exactly the selected half, then a later change. */
		struct rec r2 = { .mu = PTHREAD_MUTEX_INITIALIZER };
		struct informer_opts o = { .res = CE_CONFIGMAPS, .ns = "e2e-scale", .page_size = 100,
					   .label_selector = "set in (odd)", .list_from_cache = true };
		struct informer *ci = informer_new(kc, &o);
		struct informer_stats st;
		json_t *ob;

		ck_assert_ptr_nonnull(ci);
		ck_assert_int_eq(informer_add_handlers(ci, &(struct informer_handlers){ on_add, on_update,
											on_delete, &r2 }), 0);
		ck_assert_int_eq(informer_start(ci), 0);
		ck_assert(informer_wait_synced(ci, 60));
		ck_assert_uint_eq(kube_store_len(informer_store(ci)), (size_t)N / 2);
		ck_assert_int_eq(r2.adds, N / 2);
		informer_get_stats(ci, &st);
		ck_assert_uint_eq(st.lists, 1);
		ob = ce_cm("e2e-scale", "s-00000", "v", "y"); /* even -> odd: now selected */
		gj_set(ob, "metadata.labels.set", json_string("odd"));
		{
			struct kube_error e;
			ck_assert_msg(kube_apply(kc, &CE_CONFIGMAPS, "e2e-scale", "s-00000", NULL, ob, "e2e", true,
						 NULL, &e) == 0, "%s", e.message);
		}
		json_decref(ob);
		for (double t1 = ce_now(); ce_now() - t1 < 10 && kube_store_len(informer_store(ci)) != (size_t)N / 2 + 1;)
			usleep(20 * 1000);
		ck_assert_uint_eq(kube_store_len(informer_store(ci)), (size_t)N / 2 + 1);
		informer_free(ci);
	}
	informer_free(inf);
	kube_client_free(kc);
	kube_config_free(cfg);
}
END_TEST

/* Occurrences of s in the record's log. */
static int rec_count(struct rec *r, const char *s)
{
	int n = 0;
	pthread_mutex_lock(&r->mu);
	for (const char *q = r->log; (q = strstr(q, s)); q += strlen(s))
		n++;
	pthread_mutex_unlock(&r->mu);
	return n;
}

static bool faulted(void *ud)
{
	void **a = ud;
	return tproxy_faults(a[0]) >= *(int *)a[1];
}

/*
 * Watch streams cut, then stalled, in the middle of one event over a real
 * connection: a ConfigMap of 96 KiB travels in several TLS records, the
 * proxy passes the first one and then closes the connection (or stops
 * moving bytes). The partial object is discarded (the decoder is reset with
 * each watch), the informer watches again from its last version (no
 * relist), gets the object whole exactly once, and its cache equals the
 * server's list.
 */
START_TEST(truncated_mid_object)
{
	struct ce_proxied f;
	struct rec r = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct informer_stats st0, st;
	char *blob = malloc(96 * 1024 + 1);
	const char *ns = "e2e-trunc";
	size_t n = 0;

	ck_assert_ptr_nonnull(blob);
	memset(blob, 'x', 96 * 1024);
	blob[96 * 1024] = 0;
	ce_proxied_open(&cp, ns, &f);
	struct kube_client *direct = f.direct, *kc = f.kc;
	struct tproxy *px = f.px;
	put(direct, ns, "small-1", "s1", NULL);
	put(direct, ns, "small-2", "s2", NULL);
	struct informer_opts o = { .res = CE_CONFIGMAPS, .ns = ns, .min_timeout_s = 300, .max_timeout_s = 300,
				   .idle_timeout_s = 3, .backoff_max_s = 1 };
	struct informer *inf = informer_new(kc, &o);
	ck_assert_int_eq(informer_add_handlers(inf, &(struct informer_handlers){ on_add, on_update, on_delete, &r }), 0);
	ck_assert_int_eq(informer_start(inf), 0);
	ck_assert(informer_wait_synced(inf, 30));
	usleep(500 * 1000); /* the watch is open */
	informer_get_stats(inf, &st0);
	for (int round = 0; round < 2; round++) {
		const char *name = round ? "big-stall" : "big-cut";
		int want = round + 1;
		void *fa[2] = { px, &want };
		char key[64];
		struct kube_error e;
		double t0;
		unsigned long rx0, rx1, wire;
		json_t *ob = ce_cm(ns, name, "v", round ? "b2" : "b1"), *c;

		if (round)
			tproxy_stall_after_records(px, 1);
		else
			tproxy_cut_after_records(px, 1);
		gj_set(ob, "data.blob", json_string(blob));
		kube_client_rx_bytes(kc, &rx0, &wire);
		t0 = ce_now();
		ck_assert_msg(kube_apply(direct, &CE_CONFIGMAPS, ns, name, NULL, ob, "e2e", true, NULL, &e) == 0,
			      "%s", e.message);
		json_decref(ob);
		ck_assert_msg(wait_until(faulted, fa, 10), "the proxy never cut the stream");
		if (round) {
			/* Stalled: part of the event's body is in, the object is not. */
			usleep(500 * 1000);
			kube_client_rx_bytes(kc, &rx1, &wire);
			printf("truncated watch: %lu bytes of the 96 KiB event received before the stall\n", rx1 - rx0);
			ck_assert_uint_gt(rx1 - rx0, 0);
			ck_assert_uint_lt(rx1 - rx0, 96 * 1024);
			ck_assert_int_eq(rec_count(&r, "add:e2e-trunc/big-stall:"), 0);
		}
		snprintf(key, sizeof(key), "add:%s/%s:%s;", ns, name, round ? "b2" : "b1");
		struct seen_ctx sc = { &r, key };
		ck_assert_msg(wait_until(seen, &sc, 20), "%s never delivered after the %s", name,
			      round ? "stall" : "cut");
		printf("truncated watch (%s after one TLS record of a 96 KiB event): object delivered %.2f s later\n",
		       round ? "stalled" : "cut", ce_now() - t0);
		if (round)
			ck_assert_double_ge(ce_now() - t0, 2.5); /* only the idle timeout ends a stall */
		usleep(300 * 1000);
		ck_assert_int_eq(rec_count(&r, key), 1); /* once, whole */
		c = kube_store_get_nn(informer_store(inf), ns, name);
		ck_assert_ptr_nonnull(c);
		ck_assert_uint_eq(strlen(gj_str(c, "data.blob") ?: ""), 96 * 1024);
		json_decref(c);
	}
	/* And the informer keeps following the server afterwards. */
	put(direct, ns, "small-1", "s1b", NULL);
	del(direct, ns, "small-2");
	struct seen_ctx sc = { &r, "del:e2e-trunc/small-2:" };
	ck_assert(wait_until(seen, &sc, 10));
	ck_assert(cache_equals_server(direct, inf, ns, &n));
	ck_assert_uint_eq(n, 3);
	informer_get_stats(inf, &st);
	printf("truncated watch: %lu reconnects (watches %lu -> %lu), errors %lu, lists %lu, cache = server (%zu objects)\n",
	       st.watches - st0.watches, st0.watches, st.watches, st.errors - st0.errors, st.lists, n);
	ck_assert_uint_ge(st.watches - st0.watches, 2);
	ck_assert_uint_ge(st.errors - st0.errors, 2);
	ck_assert_uint_eq(st.lists, 1); /* resumed from its version both times */
	ck_assert_int_eq(tproxy_faults(px), 2);
	informer_free(inf);
	ce_proxied_close(&f);
	free(blob);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common_informer");
	TCase *tc = tcase_create("informer");
	int rc;
	ce_setup(&cp);
	tcase_set_timeout(tc, 180);
	tcase_add_test(tc, restart_no_missed_event);
	tcase_add_test(tc, compaction_relist);
	tcase_add_test(tc, scale_small);
	tcase_add_test(tc, watch_timeouts);
	tcase_add_test(tc, truncated_mid_object);
	suite_add_tcase(s, tc);
	rc = gt_run(s);
	cp_down(&cp);
	return rc;
}
