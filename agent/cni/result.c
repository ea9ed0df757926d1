#include "agent/cni/result.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "common/mac.h"

int cni_pod_routes(const struct cni_conf *c, struct cni_route *out, int max)
{
	int n = 0;

	for (int i = 0; i < c->naddrs; i++) {
		const struct cni_addr *a = &c->addrs[i];
		int has_default = 0;

		if (!a->has_gw)
			continue;
		for (int j = 0; j < c->nroutes; j++)
			has_default |= c->routes[j].plen == 0 && c->routes[j].dst.family == a->ip.family;
		if (has_default || n >= max)
			continue;
		memset(&out[n], 0, sizeof(out[n]));
		out[n].dst.family = a->ip.family;
		out[n].plen = 0;
		out[n].has_gw = 1;
		out[n].gw = a->gw;
		n++;
	}
	for (int j = 0; j < c->nroutes && n < max; j++) {
		out[n] = c->routes[j];
		if (!out[n].has_gw) {
			/* validated: the family has a gateway in addresses */
			for (int i = 0; i < c->naddrs; i++)
				if (c->addrs[i].has_gw && c->addrs[i].ip.family == out[n].dst.family) {
					out[n].gw = c->addrs[i].gw;
					out[n].has_gw = 1;
					break;
				}
		}
		n++;
	}
	return n;
}

json_t *cni_result_json(const struct cni_result *r, const struct cni_conf *c, enum cni_ver v)
{
	json_t *o = json_object(), *ifs = json_array(), *ips = json_array(), *rts = json_array();
	json_t *host = json_object(), *guest = json_object();
	struct cni_route routes[CNI_MAX_ROUTES + 2];
	char b[64], cidr[80], mac[GMAC_STRLEN];
	int n;

	json_object_set_new(o, "cniVersion", json_string(cni_ver_str(v)));
	json_object_set_new(host, "name", json_string(r->host_ifname));
	json_object_set_new(host, "mac", json_string(gmac_str(r->host_mac, mac)));
	json_array_append_new(ifs, host);
	json_object_set_new(guest, "name", json_string(r->ifname));
	json_object_set_new(guest, "mac", json_string(gmac_str(r->mac, mac)));
	if (v >= CNI_V_1_1_0 && r->mtu)
		json_object_set_new(guest, "mtu", json_integer(r->mtu));
	json_object_set_new(guest, "sandbox", json_string(r->sandbox));
	json_array_append_new(ifs, guest);
	json_object_set_new(o, "interfaces", ifs);

	for (int i = 0; i < c->naddrs; i++) {
		const struct cni_addr *a = &c->addrs[i];
		json_t *x = json_object();

		if (v < CNI_V_1_0_0)
			json_object_set_new(x, "version", json_string(a->ip.family == AF_INET ? "4" : "6"));
		snprintf(cidr, sizeof(cidr), "%s/%d", cni_ip_str(&a->ip, b, sizeof(b)), a->plen);
		json_object_set_new(x, "address", json_string(cidr));
		if (a->has_gw)
			json_object_set_new(x, "gateway", json_string(cni_ip_str(&a->gw, b, sizeof(b))));
		json_object_set_new(x, "interface", json_integer(1));
		json_array_append_new(ips, x);
	}
	json_object_set_new(o, "ips", ips);

	n = cni_pod_routes(c, routes, (int)(sizeof(routes) / sizeof(routes[0])));
	for (int i = 0; i < n; i++) {
		json_t *x = json_object();

		snprintf(cidr, sizeof(cidr), "%s/%d", cni_ip_str(&routes[i].dst, b, sizeof(b)),
			 routes[i].plen);
		json_object_set_new(x, "dst", json_string(cidr));
		if (routes[i].has_gw)
			json_object_set_new(x, "gw", json_string(cni_ip_str(&routes[i].gw, b, sizeof(b))));
		json_array_append_new(rts, x);
	}
	json_object_set_new(o, "routes", rts);
	json_object_set_new(o, "dns", c->dns ? json_incref(c->dns) : json_object());
	return o;
}

json_t *cni_err_json(const struct cni_err *e, enum cni_ver v)
{
	json_t *o = json_object();

	json_object_set_new(o, "cniVersion",
			    json_string(cni_ver_str(v == CNI_V_UNKNOWN ? CNI_V_LATEST : v)));
	json_object_set_new(o, "code", json_integer(e->code));
	json_object_set_new(o, "msg", json_string(e->msg));
	if (e->details[0])
		json_object_set_new(o, "details", json_string(e->details));
	return o;
}

json_t *cni_version_json(enum cni_ver v)
{
	json_t *o = json_object(), *a = json_array();

	json_object_set_new(o, "cniVersion",
			    json_string(cni_ver_str(v == CNI_V_UNKNOWN ? CNI_V_LATEST : v)));
	for (int i = 0; i < CNI_V_COUNT; i++)
		json_array_append_new(a, json_string(cni_ver_str((enum cni_ver)i)));
	json_object_set_new(o, "supportedVersions", a);
	return o;
}

int cni_pass_through(const char *in, size_t len, enum cni_cmd cmd, enum cni_ver *ver, json_t **out,
		     struct cni_err *e)
{
	json_error_t je;
	json_t *o, *prev;
	const char *v;

	*out = NULL;
	*ver = CNI_V_UNKNOWN;
	if (len > CNI_CONF_MAX_BYTES) {
		cni_err_set(e, CNI_ERR_INVALID_CONFIG, "invalid network configuration",
			    "the configuration is %zu bytes; at most %u are accepted", len, CNI_CONF_MAX_BYTES);
		return -1;
	}
	o = json_loadb(in, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(o)) {
		if (o)
			cni_err_set(e, CNI_ERR_DECODE, "cannot decode network configuration",
				    "the configuration is not a JSON object");
		else
			cni_err_set(e, CNI_ERR_DECODE, "cannot decode network configuration",
				    "JSON error at line %d column %d: %s", je.line, je.column, je.text);
		json_decref(o);
		return -1;
	}
	v = json_string_value(json_object_get(o, "cniVersion"));
	if (v)
		*ver = cni_ver_parse(v);
	if (*ver == CNI_V_UNKNOWN) {
		cni_err_set(e, CNI_ERR_INCOMPATIBLE_VERSION, "incompatible CNI version",
			    "cniVersion is missing or not one of %s", cni_ver_list());
		json_decref(o);
		return -1;
	}
	if (!cni_ver_has_cmd(*ver, cmd)) {
		cni_err_set(e, CNI_ERR_INCOMPATIBLE_VERSION, "incompatible CNI version",
			    "%s is not defined by cniVersion %s", cni_cmd_str(cmd), cni_ver_str(*ver));
		json_decref(o);
		return -1;
	}
	prev = json_object_get(o, "prevResult");
	if (prev && !json_is_object(prev)) {
		cni_err_set(e, CNI_ERR_DECODE, "cannot decode prevResult",
			    "field 'prevResult': must be an object (a CNI result)");
		json_decref(o);
		return -1;
	}
	if (cmd == CNI_CMD_ADD) {
		*out = prev ? json_deep_copy(prev) : json_object();
		if (!*out) {
			cni_err_set(e, CNI_ERR_IO, "out of memory", "copying prevResult");
			json_decref(o);
			return -1;
		}
		json_object_set_new(*out, "cniVersion", json_string(cni_ver_str(*ver)));
	}
	json_decref(o);
	return 0;
}
