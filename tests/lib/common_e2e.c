#include "tests/lib/common_e2e.h"

#include "common/json.h"
#include "tests/lib/common_proxy.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const struct kube_resource CE_CONFIGMAPS = { "", "v1", "configmaps", true };
const struct kube_resource CE_NAMESPACES = { "", "v1", "namespaces", false };
const struct kube_resource CE_CRDS = { "apiextensions.k8s.io", "v1", "customresourcedefinitions", false };

void ce_setup(struct cp *cp)
{
	if (cp_up(cp) < 0) {
		fprintf(stderr, "e2e: control plane did not start\n");
		exit(1);
	}
}

struct kube_client *ce_client_token(const struct cp *cp, const char *server, struct kube_config **cfg)
{
	char err[256];
	struct kube_client *kc;
	*cfg = kube_config_new(server ? server : cp->apiserver, cp->token, cp->ca);
	ck_assert_ptr_nonnull(*cfg);
	kc = kube_client_new(*cfg, err, sizeof(err));
	ck_assert_msg(kc != NULL, "%s", err);
	return kc;
}

int ce_port(const struct cp *cp)
{
	const char *c = strrchr(cp->apiserver, ':');
	return c ? atoi(c + 1) : 0;
}

int ce_ctl(const struct cp *cp, const char *verb_and_args)
{
	char cmd[1024];
	const char *sp = strchr(verb_and_args, ' ');
	int vlen = sp ? (int)(sp - verb_and_args) : (int)strlen(verb_and_args);
	snprintf(cmd, sizeof(cmd), "setsid -w tests/controlplane/cp.sh %.*s %s%s", vlen,
		 verb_and_args, cp->dir, sp ? sp : "");
	return system(cmd) == 0 ? 0 : -1;
}

double ce_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

double ce_wall_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

void ce_namespace(struct kube_client *kc, const char *ns)
{
	struct kube_error e;
	json_t *o = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
			      "metadata", "name", ns);
	int rc = kube_create(kc, &CE_NAMESPACES, NULL, o, NULL, &e);
	json_decref(o);
	ck_assert_msg(rc == 0 || e.code == KUBE_ERR_ALREADY_EXISTS, "%s", e.message);
}

void ce_crd(struct kube_client *kc, const char *plural, const char *kind)
{
	char name[128];
	struct kube_error e;
	json_t *o, *got = NULL;
	snprintf(name, sizeof(name), "%s.e2e.galactic.io", plural);
	o = json_pack(
		"{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:{s:s, s:s}, s:[{s:s, s:b, s:b, s:{s:{}}, "
		"s:{s:{s:s, s:b}}}]}}",
		"apiVersion", "apiextensions.k8s.io/v1", "kind", "CustomResourceDefinition",
		"metadata", "name", name,
		"spec", "group", "e2e.galactic.io", "scope", "Namespaced",
		"names", "plural", plural, "kind", kind,
		"versions", "name", "v1", "served", 1, "storage", 1, "subresources", "status",
		"schema", "openAPIV3Schema", "type", "object",
		"x-kubernetes-preserve-unknown-fields", 1);
	ck_assert_ptr_nonnull(o);
	int rc = kube_create(kc, &CE_CRDS, NULL, o, NULL, &e);
	json_decref(o);
	ck_assert_msg(rc == 0 || e.code == KUBE_ERR_ALREADY_EXISTS, "%s", e.message);
	for (int i = 0; i < 300; i++) {
		size_t k;
		json_t *c;
		bool est = false;
		if (kube_get(kc, &CE_CRDS, NULL, name, &got, &e) == 0) {
			json_array_foreach(gj_get(got, "status.conditions"), k, c)
				if (!strcmp(gj_str(c, "type") ?: "", "Established") &&
				    !strcmp(gj_str(c, "status") ?: "", "True"))
					est = true;
			json_decref(got);
		}
		if (est) {
			/* Discovery of the new resource may trail the condition a little. */
			struct kube_resource r = { "e2e.galactic.io", "v1", plural, true };
			json_t *l = NULL;
			if (kube_list_page(kc, &r, "default", NULL, &l, &e) == 0) {
				json_decref(l);
				return;
			}
		}
		usleep(100 * 1000);
	}
	ck_abort_msg("CRD %s not established", name);
}

json_t *ce_cm(const char *ns, const char *name, const char *k, const char *v)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s}}", "apiVersion", "v1", "kind",
			 "ConfigMap", "metadata", "name", name, "namespace", ns, "data", k, v);
}

void ce_proxied_open(const struct cp *cp, const char *ns, struct ce_proxied *f)
{
	char url[64];

	f->direct = ce_client_token(cp, NULL, &f->dcfg);
	f->px = tproxy_start(ce_port(cp));
	ck_assert_ptr_nonnull(f->px);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d", tproxy_port(f->px));
	f->kc = ce_client_token(cp, url, &f->pcfg);
	ce_namespace(f->direct, ns);
}

void ce_proxied_close(struct ce_proxied *f)
{
	tproxy_stop(f->px);
	kube_client_free(f->kc);
	kube_client_free(f->direct);
	kube_config_free(f->pcfg);
	kube_config_free(f->dcfg);
}
