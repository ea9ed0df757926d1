/* Helpers shared by the e2e suites of common/ (tests/e2e/test_common_*.c). */
#ifndef GALACTIC_TESTS_COMMON_E2E_H
#define GALACTIC_TESTS_COMMON_E2E_H

#include "common/kube_client.h"
#include "tests/lib/cp.h"

extern const struct kube_resource CE_CONFIGMAPS, CE_NAMESPACES, CE_CRDS;

/* Brings the control plane up once per process (exits the process on failure). */
void ce_setup(struct cp *cp);
/* Client with the admin bearer token (server may be overridden, e.g. a proxy). */
struct kube_client *ce_client_token(const struct cp *cp, const char *server, struct kube_config **cfg);
int ce_port(const struct cp *cp);
/*
 * cp_ctl in a new session: check's fork mode kills the test's process group
 * when a test ends, which would take an apiserver (re)started from a test
 * with it. Waits for the command.
 */
int ce_ctl(const struct cp *cp, const char *verb_and_args);
void ce_namespace(struct kube_client *kc, const char *ns);
/* Creates a namespaced CRD with a status subresource and waits until established:
 * group e2e.galactic.io, version v1, kind Widget, plural `plural`. */
void ce_crd(struct kube_client *kc, const char *plural, const char *kind);
double ce_now(void);       /* monotonic seconds */
double ce_wall_ms(void);   /* epoch milliseconds */
json_t *ce_cm(const char *ns, const char *name, const char *k, const char *v);

/*
 * A test's two clients of the API server: `direct`, and `kc` through a
 * pass-through proxy the test can cut or stall (tests/lib/common_proxy.h: a
 * partition between that one client and the server).
 */
struct tproxy;
struct ce_proxied {
	struct tproxy *px;
	struct kube_client *direct, *kc;
	struct kube_config *dcfg, *pcfg;
};
/* The proxy, both clients and namespace ns (made through direct); fails the test on error. */
void ce_proxied_open(const struct cp *cp, const char *ns, struct ce_proxied *f);
void ce_proxied_close(struct ce_proxied *f);

#endif
