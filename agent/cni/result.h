/*
 * CNI results, errors and VERSION replies as JSON, shaped for the version the
 * runtime asked for (0.3.x/0.4.0 carry "version" in ips; 1.1.0 adds the
 * interface MTU).
 */
#ifndef GALACTIC_CNI_RESULT_H
#define GALACTIC_CNI_RESULT_H

#include <jansson.h>
#include <stdint.h>

#include "agent/cni/config.h"

struct cni_result {
	char host_ifname[CNI_IFNAME_MAX + 1];
	uint8_t host_mac[6];
	char ifname[CNI_IFNAME_MAX + 1];
	uint8_t mac[6];
	char sandbox[CNI_NETNS_MAX + 1];
	int mtu;
};

/* The ADD result: interfaces, the configured addresses and routes, dns. */
json_t *cni_result_json(const struct cni_result *r, const struct cni_conf *c, enum cni_ver v);
/* {"cniVersion", "code", "msg", "details"} */
json_t *cni_err_json(const struct cni_err *e, enum cni_ver v);
/* {"cniVersion", "supportedVersions"} */
json_t *cni_version_json(enum cni_ver v);

/*
 * galactic-bgp chained after the attach (docs/cni.md): checks the stanza on
 * stdin (a JSON object without duplicate keys, a supported cniVersion that
 * defines cmd, prevResult an object if present) and, for ADD, sets *out to
 * prevResult unchanged but for cniVersion (an empty result when there is
 * none). *ver gets the stanza's version (CNI_V_UNKNOWN if unreadable).
 * Returns 0, or -1 with e.
 */
int cni_pass_through(const char *in, size_t len, enum cni_cmd cmd, enum cni_ver *ver, json_t **out,
		     struct cni_err *e);

/* Routes the pod gets: a default route per family with a gateway (unless the
 * config routes a default itself) followed by the configured routes. */
int cni_pod_routes(const struct cni_conf *c, struct cni_route *out, int max);

#endif
