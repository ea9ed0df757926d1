/* Result bookkeeping and the backend registry shared by every backend. */
#include "agent/dp/backend.h"

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
}

void gdp_results_free(struct gdp_results *r)
{
	free(r->v);
	gdp_results_init(r);
}

struct gdp_result *gdp_results_get(struct gdp_results *r, enum gdp_obj_kind kind,
				   const char *vpc, const char *key)
{
	struct gdp_result *x;
	size_t i;

	vpc = vpc ? vpc : "";
	key = key ? key : "";
	for (i = r->n; i-- > 0;)
		if (r->v[i].kind == kind && !strcmp(r->v[i].vpc, vpc) && !strcmp(r->v[i].key, key))
			return &r->v[i];
	if (r->n == r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 64;
		struct gdp_result *nv = realloc(r->v, nc * sizeof(*nv));

		if (!nv)
			return NULL;
		r->v = nv;
		r->cap = nc;
	}
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

const char *gdp_obj_kind_str(enum gdp_obj_kind k)
{
	switch (k) {
	case GDP_OBJ_NODE: return "node";
	case GDP_OBJ_VPC: return "vpc";
	case GDP_OBJ_ATTACHMENT: return "attachment";
	case GDP_OBJ_REMOTE: return "remote";
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
