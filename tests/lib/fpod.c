/* Pods of the fault suites and the node state they check (fpod.h). */
#include "tests/lib/fpod.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/cni/base62.h"
#include "tests/lib/cnirt.h"
#include "tests/lib/daemon.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"
#include "tests/lib/noderec.h"

void fp_init(struct fpods *f, struct topo *t, struct cp *cp, const char *tns, const char *vpc, const char *natt_path,
	     unsigned att_base)
{
	f->t = t, f->cp = cp, f->tns = tns, f->vpc = vpc, f->natt_path = natt_path, f->att_base = att_base;
	f->n = 0;
}

struct fpod *fp_new(struct fpods *f, const char *prefix, int node)
{
	struct fpod *p;

	ck_assert_int_lt(f->n, FP_MAXP);
	p = &f->p[f->n];
	memset(p, 0, sizeof(*p));
	p->node = node;
	p->host = 20 + f->n;
	snprintf(p->name, sizeof(p->name), "%s%d", prefix, f->n);
	b62_encode(f->att_base + (uint64_t)f->n, p->att, sizeof(p->att));
	f->n++;
	return p;
}

const char *fp_a6(const struct fpod *p, char *b, size_t n)
{
	snprintf(b, n, "fd00:a::%x", p->host);
	return b;
}

const char *fp_a4(const struct fpod *p, char *b, size_t n)
{
	snprintf(b, n, "10.1.%d.%d", p->host / 250, p->host % 250 + 1);
	return b;
}

static void cid_of(const struct fpods *f, const struct fpod *p, char cid[65])
{
	char out[80];

	ck_assert_int_eq(topo_out(out, sizeof(out), "printf '%s-%s' | sha256sum | cut -c1-64", f->t->prefix, p->name), 0);
	snprintf(cid, 65, "%s", out);
}

int fp_rt(const struct fpods *f, const struct fpod *p, const char *verb, char *out, size_t n)
{
	char env[512], nsp[256], cid[65];

	if (!strcmp(verb, "gc")) /* GC naming no valid attachment: every attachment of the network goes */
		return cnirt_tool(f->t, p->node, NULL, NULL, out, n, "cnigc %s", p->name);
	cid_of(f, p, cid);
	snprintf(env, sizeof(env), "CNI_ARGS='IgnoreUnknown=1;K8S_POD_NAMESPACE=%s;K8S_POD_NAME=%s;"
		 "K8S_POD_INFRA_CONTAINER_ID=%s;K8S_POD_UID=uid-%s'", f->tns, p->name, cid, p->name);
	return cnirt_tool(f->t, p->node, NULL, env, out, n, "cnirt %s %s %s %s eth0", verb, p->name,
			  cnirt_ns_path(f->t, p->name, nsp, sizeof(nsp)), cid);
}

int fp_prepare(const struct fpods *f, const struct fpod *p)
{
	char a4[40], a6[48], x[40];
	struct cnirt_att a = { .net = p->name, .vpc = f->vpc, .att = p->att, .mtu = 1400, .n_addrs = 2 };

	snprintf(a6, sizeof(a6), "%s/128", fp_a6(p, x, sizeof(x)));
	snprintf(a4, sizeof(a4), "%s/32", fp_a4(p, x, sizeof(x)));
	a.addrs[0].address = a6, a.addrs[0].gateway = "fe80::1";
	a.addrs[1].address = a4, a.addrs[1].gateway = "169.254.1.1";
	if (cnirt_mkns(f->t, p->name))
		return -1;
	return cnirt_write_conflist(f->t, p->node, p->name, cnirt_operator_conflist(&a, "1.1.0"));
}

void fp_add_ok(const struct fpods *f, struct fpod *p)
{
	char out[8192];

	ck_assert_msg(fp_rt(f, p, "add", out, sizeof(out)) == 0, "cnirt add %s: %s", p->name, out);
	p->up = 1;
}

void fp_del_ok(const struct fpods *f, struct fpod *p)
{
	char out[8192];

	ck_assert_msg(fp_rt(f, p, "del", out, sizeof(out)) == 0, "cnirt del %s: %s", p->name, out);
	p->up = 0;
}

static void sort_strs(const char **v, int k)
{
	for (int i = 1; i < k; i++)
		for (int j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
			const char *t = v[j];

			v[j] = v[j - 1], v[j - 1] = t;
		}
}

static void join(const char **v, int k, char *buf, size_t n)
{
	buf[0] = 0;
	for (int i = 0; i < k; i++)
		snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", i ? "," : "", v[i]);
}

void fp_desired(const struct fpods *f, int node, char *buf, size_t n)
{
	const char *ids[FP_MAXP];
	int k = 0;

	for (int i = 0; i < f->n; i++)
		if (f->p[i].up && f->p[i].node == node)
			ids[k++] = f->p[i].att;
	sort_strs(ids, k);
	join(ids, k, buf, n);
}

static const char *jstr(const json_t *j, const char *k)
{
	const char *s = json_string_value(json_object_get(j, k));

	return s ? s : "";
}

int fp_record_matches(const struct fpods *f, int node, char *got, size_t n)
{
	char want[4096];
	json_t *r = noderec(f->t, node), *a;
	const char *ids[FP_MAXP];
	size_t i;
	int k = 0;

	fp_desired(f, node, want, sizeof(want));
	got[0] = 0;
	if (!r) {
		snprintf(got, n, "(unreadable)");
		return 0;
	}
	json_array_foreach(json_object_get(r, "attachments"), i, a)
		if (k < FP_MAXP)
			ids[k++] = jstr(a, "id");
	sort_strs(ids, k);
	join(ids, k, got, n);
	json_decref(r);
	return !strcmp(got, want);
}

int fp_reports_match(const struct fpods *f, char *why, size_t wn)
{
	json_t *l = NULL, *x;
	size_t i;
	static char got[2][4096], want[4096];
	const char *ids[2][FP_MAXP];
	int k[2] = { 0, 0 }, ok = 1;

	why[0] = 0;
	if (kreq(f->cp, "GET", f->natt_path, NULL, NULL, NULL, &l) != 200) {
		snprintf(why, wn, "list failed");
		json_decref(l);
		return 0;
	}
	json_array_foreach(json_object_get(l, "items"), i, x) {
		const char *nd = kstr(x, "spec", "node"), *att = kstr(x, "spec", "vpcAttachment");
		const char *pr = kstr(kcond(x, "Programmed"), "status", NULL);
		int n = nd && !strcmp(nd, "n1") ? 0 : nd && !strcmp(nd, "n2") ? 1 : -1;

		if (n < 0 || !att || k[n] >= FP_MAXP) {
			snprintf(why, wn, "report %s of unknown node", kstr(x, "metadata", "name"));
			ok = 0;
			continue;
		}
		if (!pr || strcmp(pr, "True")) {
			snprintf(why, wn, "report of %s/%s Programmed=%s", nd, att, pr ? pr : "(none)");
			ok = 0;
		}
		ids[n][k[n]++] = att;
	}
	for (int n = 0; n < 2 && ok; n++) {
		sort_strs(ids[n], k[n]);
		join(ids[n], k[n], got[n], sizeof(got[n]));
		fp_desired(f, n + 1, want, sizeof(want));
		if (strcmp(got[n], want)) {
			snprintf(why, wn, "n%d reports [%s], want [%s]", n + 1, got[n], want);
			ok = 0;
		}
	}
	json_decref(l);
	return ok;
}

int fp_kernel_matches(const struct fpods *f, int node, char *why, size_t wn)
{
	static char want[8192], got[8192], ws[8192];
	json_t *r = noderec(f->t, node);

	want[0] = 0;
	for (int i = 0; i < f->n; i++) {
		const struct fpod *p = &f->p[i];
		char hif[64] = "";
		json_t *a;
		size_t k;

		if (!p->up || p->node != node)
			continue;
		json_array_foreach(json_object_get(r, "attachments"), k, a)
			if (!strcmp(jstr(a, "id"), p->att))
				snprintf(hif, sizeof(hif), "%s", jstr(a, "hostIfname"));
		if (!hif[0]) {
			snprintf(why, wn, "n%d: no hostIfname for %s in the record", node, p->att);
			json_decref(r);
			return 0;
		}
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s ", hif);
	}
	json_decref(r);
	if (topo_out(got, sizeof(got), "for l in $(ip -n %s-n%d -o link show type veth 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1"
		     " | grep -vx up0); do echo $l; done | sort | tr '\\n' ' '", f->t->prefix, node))
		return 0;
	/* want in the record's order; compared as sorted sets */
	topo_out(ws, sizeof(ws), "for l in %s; do echo $l; done | sort | tr '\\n' ' '", want);
	if (strcmp(ws, got)) {
		snprintf(why, wn, "n%d veths [%s], want [%s]", node, got, ws);
		return 0;
	}
	return 1;
}

int fp_state_matches(const struct fpods *f, char *why, size_t wn)
{
	static char got[4096], want[4096];

	for (int n = 1; n <= 2; n++) {
		if (!fp_record_matches(f, n, got, sizeof(got))) {
			fp_desired(f, n, want, sizeof(want));
			snprintf(why, wn, "n%d record [%s], want [%s]", n, got, want);
			return 0;
		}
		if (!fp_kernel_matches(f, n, why, wn))
			return 0;
	}
	return fp_reports_match(f, why, wn);
}

double fp_converge_within(const struct fpods *f, const char *tag, double limit)
{
	double t0 = gt_now(), t;
	static char why[4096];
	int ok = 0;

	while (!(ok = fp_state_matches(f, why, sizeof(why))) && gt_now() - t0 < limit)
		usleep(200 * 1000);
	ck_assert_msg(ok, "%s: not converged in %.0f s: %s (logs %s)", tag, limit, why, f->t->dir);
	t = gt_now() - t0;
	/* traffic: each desired pod to a pod of the other node */
	for (int i = 0; i < f->n; i++) {
		const struct fpod *o = NULL;
		char dst[48];

		if (!f->p[i].up)
			continue;
		for (int j = 0; j < f->n && !o; j++)
			if (f->p[j].up && f->p[j].node != f->p[i].node)
				o = &f->p[j];
		ck_assert_ptr_nonnull(o);
		fp_a6(o, dst, sizeof(dst));
		ck_assert_msg(cnirt_wait_ping(f->t, f->p[i].name, dst, 20) == 0, "%s: %s -> %s (IPv6)", tag, f->p[i].name,
			      dst);
		fp_a4(o, dst, sizeof(dst));
		ck_assert_msg(cnirt_wait_ping(f->t, f->p[i].name, dst, 20) == 0, "%s: %s -> %s (IPv4)", tag, f->p[i].name,
			      dst);
	}
	return t;
}

double fp_converge(const struct fpods *f, const char *tag)
{
	return fp_converge_within(f, tag, 45);
}

int fp_learned(const struct fpods *f, int node, const char *prefix)
{
	return topo_sh("jq -e --arg p '%s' 'any(.remotes[]; .prefix == $p)' %s/n%d/record-remotes.json >/dev/null 2>&1",
		       prefix, f->t->dir, node) == 0;
}

int fp_learned_pod(const struct fpods *f, int node, const struct fpod *p)
{
	char a6[48], pfx[64];

	snprintf(pfx, sizeof(pfx), "%s/128", fp_a6(p, a6, sizeof(a6)));
	return fp_learned(f, node, pfx);
}

void fp_ping_start(const struct fpods *f, const struct fpod *from, const struct fpod *to)
{
	char a6[48];

	ck_assert_int_eq(topo_sh("ip netns exec %s-%s ping -q -i 0.1 -W 2 %s >%s/ping.out 2>&1 & echo $! >%s/ping.pid",
				 f->t->prefix, from->name, fp_a6(to, a6, sizeof(a6)), f->t->dir, f->t->dir), 0);
}

void fp_ping_stop(const struct fpods *f, long *tx, long *rx)
{
	char out[512];

	sleep(1);
	ck_assert_int_eq(topo_sh("kill -INT $(cat %s/ping.pid) && sleep 1", f->t->dir), 0);
	ck_assert_int_eq(topo_out(out, sizeof(out), "sed -n 's/^\\([0-9]*\\) packets transmitted, \\([0-9]*\\) received.*/\\1 \\2/p' %s/ping.out",
				  f->t->dir), 0);
	ck_assert_int_eq(sscanf(out, "%ld %ld", tx, rx), 2);
}

long fp_log_count(const char *log, const char *msg, const char *informer)
{
	char out[32];

	if (informer) {
		if (topo_out(out, sizeof(out), "grep -F '%s' %s | grep -c -e 'informer=%s$' -e 'informer=%s '; true", msg, log,
			     informer, informer))
			return -1;
	} else if (topo_out(out, sizeof(out), "grep -c -F '%s' %s; true", msg, log))
		return -1;
	return atol(out);
}
