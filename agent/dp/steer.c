/* Pod steering through nftables (agent/dp/steer.h). */
#include "agent/dp/steer.h"

#include <errno.h>
#include <jansson.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <netlink/msg.h>
#include <nftables/libnftables.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/dp/egress.h"

#define NFPROTO_INET_ 1 /* linux/netfilter.h (it clashes with netinet/in.h) */

bool gds_ifname_ok(const char *s)
{
	size_t n = strnlen(s, GDS_IFNAME_MAX + 1);

	if (!n || n > GDS_IFNAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f || s[i] == '"' || s[i] == '\\' ||
		    s[i] == '/')
			return false;
	return true;
}

static int check_pods(const struct gds_pod *p, size_t n, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++)
		if (!gds_ifname_ok(p[i].ifname)) {
			snprintf(err, errlen, "steering: '%.*s' is not a device name nftables can hold", GDS_IFNAME_MAX,
				 p[i].ifname);
			return -EINVAL;
		}
	return 0;
}

/* A memory stream the renderers write to; *out is the text or NULL. */
static int finish(FILE *f, char **buf, char **out, char *err, size_t errlen)
{
	if (fclose(f) || !*buf) {
		free(*buf);
		*out = NULL;
		snprintf(err, errlen, "out of memory rendering the steering table");
		return -ENOMEM;
	}
	*out = *buf;
	return 0;
}

int gds_render(const struct gds_pod *p, size_t n, char **out, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc = check_pods(p, n, err, errlen);

	*out = NULL;
	if (rc)
		return rc;
	f = open_memstream(&buf, &len);
	if (!f) {
		snprintf(err, errlen, "out of memory rendering the steering table");
		return -ENOMEM;
	}
	/* add (so the delete cannot fail), delete, define: one transaction */
	fprintf(f, "add table inet %s\ndelete table inet %s\ntable inet %s {\n", GDS_TABLE, GDS_TABLE, GDS_TABLE);
	fprintf(f, "\tmap %s {\n\t\ttypeof iifname : meta mark\n", GDS_MAP);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\"%s\" : 0x%x", i ? ", " : "\t\telements = { ", p[i].ifname, p[i].mark);
	fprintf(f, "%s\t}\n", n ? " }\n" : "");
	/* a mark of our kinds already there (the bpf backend's egress mark) stays */
	fprintf(f, "\tchain %s {\n\t\ttype filter hook prerouting priority %d; policy accept;\n"
		   "\t\tmeta mark & 0x%x == 0 meta mark set iifname map @%s\n\t}\n}\n",
		GDS_CHAIN, GDS_PRIO, GDE_MARK_KIND, GDS_MAP);
	return finish(f, &buf, out, err, errlen);
}

int gds_render_elems(const struct gds_pod *add, size_t nadd, const char (*del)[GDS_IFNAME_MAX + 1], size_t ndel,
		     char **out, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int rc = check_pods(add, nadd, err, errlen);

	*out = NULL;
	for (size_t i = 0; !rc && i < ndel; i++)
		if (!gds_ifname_ok(del[i])) {
			snprintf(err, errlen, "steering: '%.*s' is not a device name nftables can hold", GDS_IFNAME_MAX,
				 del[i]);
			rc = -EINVAL;
		}
	if (rc || (!nadd && !ndel))
		return rc;
	f = open_memstream(&buf, &len);
	if (!f) {
		snprintf(err, errlen, "out of memory rendering steering elements");
		return -ENOMEM;
	}
	for (size_t i = 0; i < ndel; i++)
		fprintf(f, "%s\"%s\"", i ? ", " : "delete element inet " GDS_TABLE " " GDS_MAP " { ", del[i]);
	if (ndel)
		fprintf(f, " }\n");
	for (size_t i = 0; i < nadd; i++)
		fprintf(f, "%s\"%s\" : 0x%x", i ? ", " : "add element inet " GDS_TABLE " " GDS_MAP " { ", add[i].ifname,
			add[i].mark);
	if (nadd)
		fprintf(f, " }\n");
	return finish(f, &buf, out, err, errlen);
}

/* ---- read back ---- */

/* The rule gds_render writes, as nftables lists it in JSON (schema 1). */
static json_t *our_expr(void)
{
	return json_pack("[{s:{s:s, s:{s:[{s:{s:s}}, I]}, s:i}}, {s:{s:{s:{s:s}}, s:{s:{s:{s:{s:s}}, s:s}}}}]",
			 "match", "op", "==", "left", "&", "meta", "key", "mark", (json_int_t)GDE_MARK_KIND, "right", 0,
			 "mangle", "key", "meta", "key", "mark", "value", "map", "key", "meta", "key", "iifname", "data",
			 "@" GDS_MAP);
}

static bool str_is(json_t *o, const char *key, const char *want)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s && !strcmp(s, want);
}

static int parse_elems(json_t *map, struct gds_pod **got, size_t *n, char *err, size_t errlen)
{
	json_t *elem = json_object_get(map, "elem"), *e;
	size_t i;

	if (!elem)
		return 0; /* an empty map lists no "elem" */
	if (!json_is_array(elem)) {
		snprintf(err, errlen, "map %s: elements are not a list", GDS_MAP);
		return -EPROTO;
	}
	*got = calloc(json_array_size(elem) + 1, sizeof(**got));
	if (!*got) {
		snprintf(err, errlen, "out of memory reading the steering map");
		return -ENOMEM;
	}
	json_array_foreach(elem, i, e) {
		const char *name = json_string_value(json_array_get(e, 0));
		json_t *mark = json_array_get(e, 1);

		if (!json_is_array(e) || json_array_size(e) != 2 || !name || !gds_ifname_ok(name) ||
		    !json_is_integer(mark) || json_integer_value(mark) < 0 || json_integer_value(mark) > UINT32_MAX) {
			snprintf(err, errlen, "map %s: element %zu is not a device name and a mark", GDS_MAP, i);
			return -EPROTO;
		}
		snprintf((*got)[*n].ifname, sizeof((*got)[*n].ifname), "%s", name);
		(*got)[(*n)++].mark = (uint32_t)json_integer_value(mark);
	}
	return 0;
}

int gds_parse(const char *text, struct gds_pod **got, size_t *n, char *err, size_t errlen)
{
	json_t *doc, *items, *it, *want = NULL;
	size_t i;
	int maps = 0, chains = 0, rules = 0, rc = 0;

	*got = NULL;
	*n = 0;
	doc = json_loads(text ? text : "", JSON_REJECT_DUPLICATES, NULL);
	items = json_object_get(doc, "nftables");
	if (!json_is_array(items)) {
		snprintf(err, errlen, "not an nftables JSON listing");
		json_decref(doc);
		return -EINVAL;
	}
	json_array_foreach(items, i, it) {
		const char *what = json_object_size(it) == 1 ? json_object_iter_key(json_object_iter(it)) : NULL;
		json_t *o = what ? json_object_get(it, what) : NULL;

		if (rc || !what || !json_is_object(o) || !strcmp(what, "metainfo"))
			continue;
		if (!strcmp(what, "table"))
			continue;
		if (!str_is(o, "table", GDS_TABLE) || !str_is(o, "family", "inet")) {
			snprintf(err, errlen, "%s of another table in the listing", what);
			rc = -EPROTO;
		} else if (!strcmp(what, "map") && str_is(o, "name", GDS_MAP) && str_is(o, "type", "ifname") &&
			   str_is(o, "map", "mark") && !json_object_get(o, "flags") && !maps++) {
			rc = parse_elems(o, got, n, err, errlen);
		} else if (!strcmp(what, "chain") && str_is(o, "name", GDS_CHAIN) && str_is(o, "type", "filter") &&
			   str_is(o, "hook", "prerouting") && json_is_integer(json_object_get(o, "prio")) &&
			   json_integer_value(json_object_get(o, "prio")) == GDS_PRIO && str_is(o, "policy", "accept") &&
			   !chains++) {
			continue;
		} else if (!strcmp(what, "rule") && str_is(o, "chain", GDS_CHAIN) && !rules++) {
			if (!want)
				want = our_expr();
			if (!want || !json_equal(json_object_get(o, "expr"), want)) {
				snprintf(err, errlen, "chain %s: its rule is not the steering rule", GDS_CHAIN);
				rc = -EPROTO;
			}
		} else {
			snprintf(err, errlen, "table %s holds a %s it should not", GDS_TABLE, what);
			rc = -EPROTO;
		}
	}
	if (!rc && (maps != 1 || chains != 1 || rules != 1)) {
		snprintf(err, errlen, "table %s: %s missing", GDS_TABLE,
			 maps != 1 ? "map " GDS_MAP : chains != 1 ? "chain " GDS_CHAIN : "the steering rule");
		rc = -EPROTO;
	}
	json_decref(want);
	json_decref(doc);
	if (rc) {
		free(*got);
		*got = NULL;
		*n = 0;
	}
	return rc;
}

/* ---- notifications ---- */

enum gds_event gds_notification(const struct nlmsghdr *h, char *proc, size_t proclen)
{
	struct nlattr *tb[NFTA_GEN_MAX > NFTA_TABLE_MAX ? NFTA_GEN_MAX + 1 : NFTA_TABLE_MAX + 1];
	int type = NFNL_MSG_TYPE(h->nlmsg_type);
	size_t l;

	if (proclen)
		proc[0] = 0;
	if (NFNL_SUBSYS_ID(h->nlmsg_type) != NFNL_SUBSYS_NFTABLES ||
	    h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nfgenmsg)))
		return GDS_EV_OTHER;
	if (type == NFT_MSG_NEWGEN) {
		if (nlmsg_parse((struct nlmsghdr *)h, sizeof(struct nfgenmsg), tb, NFTA_GEN_MAX, NULL) < 0)
			return GDS_EV_OTHER;
		if (tb[NFTA_GEN_PROC_NAME] && proclen) {
			l = (size_t)nla_len(tb[NFTA_GEN_PROC_NAME]);
			if (l >= proclen)
				l = proclen - 1;
			memcpy(proc, nla_data(tb[NFTA_GEN_PROC_NAME]), l);
			proc[l] = 0;
		}
		return GDS_EV_GEN;
	}
	switch (type) {
	case NFT_MSG_NEWTABLE: case NFT_MSG_DELTABLE:
	case NFT_MSG_NEWCHAIN: case NFT_MSG_DELCHAIN:
	case NFT_MSG_NEWRULE: case NFT_MSG_DELRULE:
	case NFT_MSG_NEWSET: case NFT_MSG_DELSET:
	case NFT_MSG_NEWSETELEM: case NFT_MSG_DELSETELEM:
	case NFT_MSG_NEWOBJ: case NFT_MSG_DELOBJ:
		break;
	default:
		return GDS_EV_OTHER;
	}
	/* Each of these names its table in attribute 1 (NFTA_TABLE_NAME,
	 * NFTA_CHAIN_TABLE, NFTA_RULE_TABLE, NFTA_SET_TABLE, ...). */
	if (((const struct nfgenmsg *)NLMSG_DATA(h))->nfgen_family != NFPROTO_INET_ ||
	    nlmsg_parse((struct nlmsghdr *)h, sizeof(struct nfgenmsg), tb, NFTA_TABLE_MAX, NULL) < 0 ||
	    !tb[NFTA_TABLE_NAME])
		return GDS_EV_OTHER;
	l = (size_t)nla_len(tb[NFTA_TABLE_NAME]);
	return strnlen(nla_data(tb[NFTA_TABLE_NAME]), l) == strlen(GDS_TABLE) &&
			       !memcmp(nla_data(tb[NFTA_TABLE_NAME]), GDS_TABLE, strlen(GDS_TABLE))
		       ? GDS_EV_OURS
		       : GDS_EV_OTHER;
}

/* ---- libnftables ---- */

struct gds_nft {
	struct nft_ctx *c;
};

int gds_nft_open(struct gds_nft **out, char *err, size_t errlen)
{
	struct gds_nft *g = calloc(1, sizeof(*g));

	*out = NULL;
	if (!g || !(g->c = nft_ctx_new(NFT_CTX_DEFAULT))) {
		free(g);
		snprintf(err, errlen, "libnftables: cannot create a context");
		return -ENOMEM;
	}
	nft_ctx_buffer_error(g->c);
	nft_ctx_buffer_output(g->c);
	*out = g;
	return 0;
}

void gds_nft_close(struct gds_nft *g)
{
	if (!g)
		return;
	nft_ctx_free(g->c);
	free(g);
}

static void ctx_err(struct gds_nft *g, const char *what, char *err, size_t errlen)
{
	const char *e = nft_ctx_get_error_buffer(g->c);
	size_t k;

	snprintf(err, errlen, "%s: %s", what, e && *e ? e : "failed");
	for (char *p = err; *p; p++)
		if (*p == '\n')
			*p = ' '; /* nftables' caret lines, on one line */
	k = strlen(err);
	while (k && err[k - 1] == ' ')
		err[--k] = 0;
}

int gds_nft_run(struct gds_nft *g, const char *text, char *err, size_t errlen)
{
	nft_ctx_output_set_flags(g->c, nft_ctx_output_get_flags(g->c) & ~NFT_CTX_OUTPUT_JSON);
	if (nft_run_cmd_from_buffer(g->c, text)) {
		ctx_err(g, "nftables table inet " GDS_TABLE, err, errlen);
		return -EIO;
	}
	nft_ctx_get_error_buffer(g->c); /* warnings: rewound, not kept for the next error */
	nft_ctx_get_output_buffer(g->c);
	return 0;
}

int gds_nft_list(struct gds_nft *g, char **json, char *err, size_t errlen)
{
	const char *o;

	*json = NULL;
	nft_ctx_output_set_flags(g->c, nft_ctx_output_get_flags(g->c) | NFT_CTX_OUTPUT_JSON);
	if (nft_run_cmd_from_buffer(g->c, "list table inet " GDS_TABLE)) {
		const char *e = nft_ctx_get_error_buffer(g->c);
		int rc = e && strstr(e, "No such file or directory") ? -ENOENT : -EIO;

		ctx_err(g, "list table inet " GDS_TABLE, err, errlen);
		return rc;
	}
	o = nft_ctx_get_output_buffer(g->c);
	*json = strdup(o ? o : "");
	if (!*json) {
		snprintf(err, errlen, "out of memory listing the steering table");
		return -ENOMEM;
	}
	return 0;
}
