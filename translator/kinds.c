#include "translator/kinds.h"

#include <stdio.h>
#include <string.h>

const struct tkind_info TKINDS[TK_N] = {
	[TK_VPCATT] = { "VPCAttachment", "vpcattachment", "cloud.datumapis.com/v1alpha1",
			"vpcattachments.cloud.datumapis.com",
			{ "cloud.datumapis.com", "v1alpha1", "vpcattachments", true } },
	[TK_NI] = { "NetworkInterface", "networkinterface", "networking.datumapis.com/v1alpha",
		    "networkinterfaces.networking.datumapis.com",
		    { "networking.datumapis.com", "v1alpha", "networkinterfaces", true } },
	[TK_NIC] = { "NetworkInterfaceClaim", "networkinterfaceclaim",
		     "networking.datumapis.com/v1alpha",
		     "networkinterfaceclaims.networking.datumapis.com",
		     { "networking.datumapis.com", "v1alpha", "networkinterfaceclaims", true } },
	[TK_ESC] = { "EgressShardClaim", "egressshardclaim", "network.datumapis.com/v1alpha1",
		     "egressshardclaims.network.datumapis.com",
		     { "network.datumapis.com", "v1alpha1", "egressshardclaims", true } },
	[TK_ES] = { "EgressShard", "egressshard", "network.datumapis.com/v1alpha1",
		    "egressshards.network.datumapis.com",
		    { "network.datumapis.com", "v1alpha1", "egressshards", true } },
	[TK_NC] = { "NetworkContext", "networkcontext", "networking.datumapis.com/v1alpha",
		    "networkcontexts.networking.datumapis.com",
		    { "networking.datumapis.com", "v1alpha", "networkcontexts", true } },
};

static bool is_name(const char *s)
{
	return s && *s && !strchr(s, '/') && strlen(s) <= 253;
}

int qkey_format(enum tkind k, const char *ns, const char *name, char *buf, size_t n)
{
	if ((unsigned)k >= TK_N || !is_name(ns) || !is_name(name))
		return -1;
	return (size_t)snprintf(buf, n, "%s/%s/%s", TKINDS[k].kind, ns, name) < n ? 0 : -1;
}

int qkey_parse(const char *s, struct qkey *out)
{
	const char *a = strchr(s, '/'), *b = a ? strchr(a + 1, '/') : NULL;
	size_t kl, nl;

	if (!a || !b)
		return -1;
	kl = (size_t)(a - s);
	nl = (size_t)(b - a - 1);
	for (int k = 0; k < TK_N; k++) {
		if (strlen(TKINDS[k].kind) != kl || strncmp(TKINDS[k].kind, s, kl))
			continue;
		if (!nl || nl >= sizeof(out->ns) || !is_name(b + 1))
			return -1;
		out->kind = (enum tkind)k;
		memcpy(out->ns, a + 1, nl);
		out->ns[nl] = 0;
		snprintf(out->name, sizeof(out->name), "%s", b + 1);
		return 0;
	}
	return -1;
}

void qkey_nskey(const struct qkey *k, char *buf, size_t n)
{
	snprintf(buf, n, "%s/%s", k->ns, k->name);
}
