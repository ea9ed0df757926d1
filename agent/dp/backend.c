/* Result bookkeeping and the backend registry shared by every backend. */
#include "agent/dp/backend.h"
#include "common/grow.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gdp_results_init(struct gdp_results *r)
{
	memset(r, 0, sizeof(*r));
}

void gdp_results_reset(struct gdp_results *r)
{
	r->n = 0;
	r->added = r->removed = r->unchanged = r->retries = r->failed = 0;
	r->remotes_ok = 0;
	r->unread = false;
	r->idx_done = 0;
	if (r->idx)
		memset(r->idx, 0, r->idx_cap * sizeof(*r->idx));
}

void gdp_results_free(struct gdp_results *r)
{
	free(r->v);
	free(r->idx);
	gdp_results_init(r);
}

static uint64_t res_hash(enum gdp_obj_kind kind, const char *vpc, const char *key)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)kind;

	for (const char *p = vpc; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	h = (h ^ 0xff) * 0x100000001b3ull;
	for (const char *p = key; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

static bool res_is(const struct gdp_result *x, enum gdp_obj_kind kind, const char *vpc, const char *key)
{
	return x->kind == kind && !strcmp(x->vpc, vpc) && !strcmp(x->key, key);
}

static void idx_put(struct gdp_results *r, size_t i)
{
	const struct gdp_result *x = &r->v[i];
	size_t m = r->idx_cap - 1, s = (size_t)res_hash(x->kind, x->vpc, x->key) & m;

	for (;; s = (s + 1) & m) {
		if (!r->idx[s] || res_is(&r->v[r->idx[s] - 1], x->kind, x->vpc, x->key)) {
			r->idx[s] = i + 1; /* a later duplicate wins, as the linear search did */
			return;
		}
	}
}

/* Indexes v[idx_done..n); false on allocation failure (callers fall back to a scan). */
static bool idx_sync(struct gdp_results *r)
{
	if (r->idx_done > r->n) { /* shrunk behind our back */
		r->idx_done = 0;
		if (r->idx)
			memset(r->idx, 0, r->idx_cap * sizeof(*r->idx));
	}
	if (r->n * 2 >= r->idx_cap) {
		size_t nc = r->idx_cap ? r->idx_cap : 256;
		size_t *ni;

		while (r->n * 2 >= nc)
			nc *= 2;
		ni = calloc(nc, sizeof(*ni));
		if (!ni)
			return false;
		free(r->idx);
		r->idx = ni;
		r->idx_cap = nc;
		r->idx_done = 0;
	}
	for (; r->idx_done < r->n; r->idx_done++)
		idx_put(r, r->idx_done);
	return true;
}

void gdp_results_drop(struct gdp_results *r, const bool *drop)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n; i++)
		if (!drop[i])
			r->v[n++] = r->v[i];
	if (n == r->n)
		return;
	r->n = n;
	r->idx_done = 0; /* entries moved: the index is rebuilt at the next lookup */
	if (r->idx)
		memset(r->idx, 0, r->idx_cap * sizeof(*r->idx));
}

size_t gdp_results_fold_remotes(struct gdp_results *r)
{
	size_t n = 0, folded;

	for (size_t i = 0; i < r->n; i++) {
		const struct gdp_result *x = &r->v[i];

		if (x->kind == GDP_OBJ_REMOTE && x->programmed && !x->err)
			continue;
		if (n != i)
			r->v[n] = *x;
		n++;
	}
	folded = r->n - n;
	r->remotes_ok += folded;
	if (!folded)
		return 0;
	r->n = n;
	r->idx_done = 0; /* entries moved: the index is rebuilt at the next lookup */
	if (r->cap > 2 * n + 64) {
		struct gdp_result *nv = realloc(r->v, (n + 64) * sizeof(*nv));

		if (nv) {
			r->v = nv;
			r->cap = n + 64;
		}
		free(r->idx); /* sized for the entries before: rebuilt small */
		r->idx = NULL;
		r->idx_cap = 0;
	} else if (r->idx) {
		memset(r->idx, 0, r->idx_cap * sizeof(*r->idx));
	}
	return folded;
}

struct gdp_result *gdp_results_find(struct gdp_results *r, enum gdp_obj_kind kind, const char *vpc,
				    const char *key)
{
	size_t m, s;

	vpc = vpc ? vpc : "";
	key = key ? key : "";
	if (!idx_sync(r)) {
		for (size_t i = r->n; i-- > 0;)
			if (res_is(&r->v[i], kind, vpc, key))
				return &r->v[i];
		return NULL;
	}
	m = r->idx_cap - 1;
	for (s = (size_t)res_hash(kind, vpc, key) & m; r->idx[s]; s = (s + 1) & m) {
		struct gdp_result *x = &r->v[r->idx[s] - 1];

		if (res_is(x, kind, vpc, key))
			return x;
	}
	return NULL;
}

struct gdp_result *gdp_results_get(struct gdp_results *r, enum gdp_obj_kind kind,
				   const char *vpc, const char *key)
{
	struct gdp_result *x;

	vpc = vpc ? vpc : "";
	key = key ? key : "";
	x = gdp_results_find(r, kind, vpc, key);
	if (x)
		return x;
	if (G_GROW(r->v, r->cap, r->n, 64))
		return NULL;
	x = &r->v[r->n++];
	memset(x, 0, sizeof(*x));
	x->kind = kind;
	snprintf(x->vpc, sizeof(x->vpc), "%s", vpc);
	snprintf(x->key, sizeof(x->key), "%s", key);
	return x;
}

void gdp_result_fail(struct gdp_result *res, int err, const char *fmt, ...)
{
	va_list ap;

	if (!res || res->err)
		return;
	res->err = err ? err : -EIO;
	res->programmed = false;
	va_start(ap, fmt);
	vsnprintf(res->msg, sizeof(res->msg), fmt, ap);
	va_end(ap);
}

void gdp_result_fail_what(struct gdp_result *res, enum gdp_what what, int err, const char *fmt, ...)
{
	va_list ap;

	if (!res || res->err)
		return;
	res->err = err ? err : -EIO;
	res->programmed = false;
	res->what = (uint8_t)what;
	va_start(ap, fmt);
	vsnprintf(res->msg, sizeof(res->msg), fmt, ap);
	va_end(ap);
}

const char *gdp_obj_kind_str(enum gdp_obj_kind k)
{
	switch (k) {
	case GDP_OBJ_NODE: return "node";
	case GDP_OBJ_VPC: return "vpc";
	case GDP_OBJ_ATTACHMENT: return "attachment";
	case GDP_OBJ_REMOTE: return "remote";
	case GDP_OBJ_EGRESS: return "egress";
	}
	return "?";
}

#define MAX_BACKENDS 8
static const struct gdp_backend_ops *registry[MAX_BACKENDS];

int gdp_backend_register(const struct gdp_backend_ops *ops)
{
	size_t i;

	for (i = 0; i < MAX_BACKENDS; i++) {
		if (registry[i] == ops)
			return 0;
		if (!registry[i]) {
			registry[i] = ops;
			return 0;
		}
	}
	return -ENOSPC;
}

const struct gdp_backend_ops *gdp_backend_find(const char *name)
{
	size_t i;

	if (!strcmp(name, gdp_kernel_backend.name))
		return &gdp_kernel_backend;
	for (i = 0; i < MAX_BACKENDS && registry[i]; i++)
		if (!strcmp(registry[i]->name, name))
			return registry[i];
	return NULL;
}
