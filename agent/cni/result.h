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

/* Routes the pod gets: a default route per family with a gateway (unless the
 * config routes a default itself) followed by the configured routes. */
int cni_pod_routes(const struct cni_conf *c, struct cni_route *out, int max);

const char *cni_mac_str(const uint8_t mac[6], char buf[18]);
int cni_mac_parse(const char *s, uint8_t mac[6]);

#endif
