#include "translator/crds.h"

#include "common/informer.h"
#include "common/json.h"
#include "common/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct kube_resource CRD_RES = { "apiextensions.k8s.io", "v1",
					      "customresourcedefinitions", false };

struct crd_ud {
	struct crds *c;
	enum tkind k;
};

struct crds {
	struct informer *inf[TK_N];
	struct crd_ud ud[TK_N];
	crds_changed_fn fn;
	void *fn_ud;
	pthread_mutex_t mu;
	json_t *schema[TK_N]; /* own copies; NULL: unknown */
	char rv[TK_N][64];
};

static void set_from(struct crds *c, enum tkind k, const json_t *crd)
{
	const json_t *s = crd ? schema_of_crd(crd, TKINDS[k].res.version) : NULL;
	json_t *cp = s ? json_deep_copy(s) : NULL;
	const char *rv = gj_str(crd, "metadata.resourceVersion");
	bool changed, first;

	pthread_mutex_lock(&c->mu);
	changed = strcmp(c->rv[k], rv ? rv : "") != 0;
	first = !c->rv[k][0];
	json_decref(c->schema[k]);
	c->schema[k] = cp;
	snprintf(c->rv[k], sizeof(c->rv[k]), "%s", rv ? rv : "");
	pthread_mutex_unlock(&c->mu);
	if (!changed)
		return;
	glog_kv(GLOG_INFO, "translator", cp ? "read target schema" : "target schema unknown", "crd",
		TKINDS[k].crd, "version", TKINDS[k].res.version, "resourceVersion", rv ? rv : "",
		NULL);
	if (c->fn)
		c->fn(k, first, c->fn_ud);
}

static void on_add(json_t *obj, void *ud)
{
	struct crd_ud *u = ud;
	set_from(u->c, u->k, obj);
}
static void on_update(json_t *old, json_t *nw, void *ud)
{
	(void)old;
	on_add(nw, ud);
}
static void on_delete(json_t *obj, void *ud)
{
	struct crd_ud *u = ud;
	(void)obj;
	set_from(u->c, u->k, NULL);
}

struct crds *crds_new(struct kube_client *kc, crds_changed_fn fn, void *ud)
{
	struct crds *c = calloc(1, sizeof(*c));
	char sel[300];

	if (!c)
		return NULL;
	pthread_mutex_init(&c->mu, NULL);
	c->fn = fn;
	c->fn_ud = ud;
	for (int k = 0; k < TK_N; k++) {
		struct informer_opts io = { .res = CRD_RES, .drop_managed_fields = true };
		snprintf(sel, sizeof(sel), "metadata.name=%s", TKINDS[k].crd);
		io.field_selector = sel;
		io.name = TKINDS[k].crd;
		io.backoff_initial_s = TK_INFORMER_BACKOFF_INITIAL_S;
		io.backoff_max_s = TK_INFORMER_BACKOFF_MAX_S;
		c->ud[k] = (struct crd_ud){ c, (enum tkind)k };
		if (!(c->inf[k] = informer_new(kc, &io)) ||
		    informer_add_handlers(c->inf[k], &(struct informer_handlers){ on_add, on_update,
										  on_delete, &c->ud[k] })) {
			crds_free(c);
			return NULL;
		}
	}
	return c;
}

int crds_start(struct crds *c)
{
	for (int k = 0; k < TK_N; k++)
		if (informer_start(c->inf[k]))
			return -1;
	return 0;
}

bool crds_synced(struct crds *c)
{
	for (int k = 0; k < TK_N; k++)
		if (!informer_synced(c->inf[k]))
			return false;
	return true;
}

void crds_request_stop(struct crds *c)
{
	for (int k = 0; c && k < TK_N; k++)
		informer_request_stop(c->inf[k]);
}

void crds_stop(struct crds *c)
{
	crds_request_stop(c);
	for (int k = 0; c && k < TK_N; k++)
		if (c->inf[k])
			informer_stop(c->inf[k]);
}

void crds_free(struct crds *c)
{
	if (!c)
		return;
	crds_stop(c);
	for (int k = 0; k < TK_N; k++) {
		informer_free(c->inf[k]);
		json_decref(c->schema[k]);
	}
	pthread_mutex_destroy(&c->mu);
	free(c);
}

bool crds_known(struct crds *c, enum tkind k)
{
	bool r;
	pthread_mutex_lock(&c->mu);
	r = c->schema[k] != NULL;
	pthread_mutex_unlock(&c->mu);
	return r;
}

bool crds_conditions_map(struct crds *c, enum tkind k)
{
	bool r;
	pthread_mutex_lock(&c->mu);
	r = schema_list_is_map_by(schema_at(c->schema[k], "status.conditions"), "type");
	pthread_mutex_unlock(&c->mu);
	return r;
}

size_t crds_withhold(struct crds *c, enum tkind k, json_t *intent, struct withheld *out,
		     size_t max)
{
	size_t n;
	pthread_mutex_lock(&c->mu);
	n = schema_withhold(c->schema[k], intent, out, max);
	pthread_mutex_unlock(&c->mu);
	return n;
}
