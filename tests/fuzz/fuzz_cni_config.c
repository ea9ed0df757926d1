/* libFuzzer: the galactic-cni network configuration parser (stdin of the
 * plugin) for every command; accepted configs must survive a round trip.
 * The same input also goes through galactic-bgp's pass-through. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cni/config.h"
#include "agent/cni/result.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum cni_cmd cmds[] = { CNI_CMD_ADD, CNI_CMD_DEL, CNI_CMD_CHECK, CNI_CMD_GC };
	struct cni_conf c, d;
	struct cni_err e;

	if (!size)
		return 0;
	{
		/* galactic-bgp's pass-through reads the same stdin */
		enum cni_ver v;
		json_t *out = NULL;

		if (cni_pass_through((const char *)data + 1, size - 1, cmds[data[0] % 4], &v, &out, &e) == 0) {
			if (v == CNI_V_UNKNOWN || (cmds[data[0] % 4] == CNI_CMD_ADD) != (out != NULL))
				abort();
			if (out && !json_is_string(json_object_get(out, "cniVersion")))
				abort();
			json_decref(out);
		} else if (!e.code || !e.msg[0] || out) {
			abort();
		}
	}
	if (cni_conf_parse((const char *)data + 1, size - 1, cmds[data[0] % 4], &c, &e) == 0) {
		json_t *j = cni_conf_to_json(&c);
		struct cni_result r = { .host_ifname = "gc0", .ifname = "eth0", .sandbox = "/x" };
		json_t *res;

		if (cni_conf_parse_json(j, cmds[data[0] % 4], &d, &e) != 0)
			abort(); /* what we accepted and re-encoded must parse again */
		if (memcmp(c.addrs, d.addrs, sizeof(c.addrs)) || c.naddrs != d.naddrs ||
		    c.nroutes != d.nroutes || c.vpc != d.vpc || c.att != d.att ||
		    c.families != d.families || c.egress != d.egress || c.legacy != d.legacy ||
		    c.ipam != d.ipam || c.has_valid != d.has_valid || c.nvalid != d.nvalid ||
		    strcmp(c.ns, d.ns))
			abort();
		/* canonical ipam: at most one address per family, IPv4 /32 */
		for (int i = 0; c.ipam && i < c.naddrs; i++)
			if ((c.addrs[i].ip.family == AF_INET && c.addrs[i].plen != 32) ||
			    (i && c.addrs[i].ip.family == c.addrs[0].ip.family) ||
			    c.addrs[i].block != (c.addrs[i].ip.family == AF_INET6 && c.addrs[i].plen < 128))
				abort();
		res = cni_result_json(&r, &c, c.ver);
		free(json_dumps(res, 0));
		json_decref(res);
		json_decref(j);
		cni_conf_free(&d);
		cni_conf_free(&c);
	} else if (!e.code || !e.msg[0]) {
		abort(); /* every refusal carries a code and a message */
	}
	return 0;
}
