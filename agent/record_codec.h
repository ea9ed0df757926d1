/*
 * The record's JSON <-> struct (agent/record.h describes the files). One
 * encoder and one decoder for each object family, next to each other, as
 * iproute2 keeps its families: record.json, record.journal and
 * record-remotes.json are written and read through the same pair, so what
 * one writes reads back the same (tests/unit/test_record_codec.c:
 * decode(encode(x)) == x for every family). Pure: no lock, no file, no
 * store. It defines the record's objects (rec_vpc, rec_att, rec_data) and
 * sits below agent/record.h, which includes it. The documents' parsers (record_parse, record_parse_journal,
 * record_parse_remotes) are here too; which objects a commit writes is the
 * store's (agent/record.c).
 *
 * Encoders return a new reference (NULL: out of memory) or 0 / -errno;
 * decoders fill the struct they are given and return 0, or -EINVAL with
 * err / why naming the field (their messages are the record's: "held" says
 * them).
 */
#ifndef GALACTIC_AGENT_RECORD_CODEC_H
#define GALACTIC_AGENT_RECORD_CODEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/dp/model.h"

/* ---- the record's objects ---- */

#define RECORD_VERSION      2   /* record.json and record.journal (1: no journal, still read) */
#define RECORD_REMOTES_VERSION 1

enum rec_src {
	REC_SRC_CNI,       /* attached through galactic-cni */
	REC_SRC_DECLARED,  /* declared by the operator (state.json import) */
};

/* Families of an egress declaration (bit values as CNI_FAM_*). */
enum { REC_FAM_V4 = 1u << 0, REC_FAM_V6 = 1u << 1 };

struct rec_vpc {
	struct gdp_vpc m;       /* id, arg, table, prefixes */
	bool declared;          /* kept without attachments (operator declared it) */
	size_t n_atts;          /* record.c: its attachments, any state (kept with the index; not in the files) */
	size_t n_active;        /* record.c: those of them desired (active) */
};

struct rec_att {
	struct gdp_attachment m; /* vpc, id, container id, host ifname, arg, addrs, nh4, pod MAC, MTU */
	enum rec_src src;
	bool active;             /* false: reserved by an ADD in progress (not applied, not saved) */
	/* CNI and pod facts (empty for declared attachments) */
	char network[254];
	char ifname[GDP_IFNAME_MAX + 1];   /* guest interface (CNI_IFNAME) */
	char *netns;                       /* CNI_NETNS path (owned, may be NULL) */
	char pod_ns[64], pod_name[254], pod_uid[64];
	uint8_t host_mac[6];
	unsigned egress;                   /* REC_FAM_*: declared internet egress (the VPC's default route toward the node's shard) */
	json_t *config;                    /* normalized CNI configuration (owned ref, may be NULL) */
	/* the commit's bookkeeping (record.c, under the lock) */
	unsigned long jgen;                /* generation of its last change on disk's terms */
	bool on_disk;                      /* in record.json + record.journal as committed */
	bool vdirty;                       /* listed for the pipeline's view (record_view_update) */
	bool jdirty;                       /* listed for the next journal line */
	size_t slot;                       /* its place in the record's array (a removal is O(1)) */
};

/* ---- the files' parsers (the store, tests, fuzz_record, galactic-bpf) ---- */

/* The contents of record.json. */
struct rec_data {
	struct gdp_node node;
	bool have_node;
	int uplink_mtu;
	struct rec_vpc *vpcs;
	size_t nvpcs;
	struct rec_att *atts;
	size_t natts;
	struct gdp_egress egress;  /* "egressShard" (have = false when absent) */
	unsigned long journal;     /* epoch of the journal that extends it (0: none, version 1) */
};

/*
 * Parses record.json text (strict: version, every field's type and range,
 * every attachment's VPC listed, no number used twice). 0, or -EINVAL with
 * err naming the object and the field (out then holds nothing).
 */
int record_parse(const char *text, size_t len, struct rec_data *out, char *err, size_t errlen);
void record_data_free(struct rec_data *d);
/*
 * Applies record.journal text to d (parsed from record.json): 0 with
 * *lines commits applied (the result checked as record_parse checks), 1
 * when the journal belongs to another epoch than d (d unchanged: record.json
 * was compacted after it), or -EINVAL with err naming the line (d then
 * partly changed: free it). *torn: a last line without its newline was
 * dropped. The text ends at its first NUL (the zeroed tail the agent
 * writes its lines over): what follows is never read.
 */
int record_parse_journal(const char *text, size_t len, struct rec_data *d, size_t *lines, bool *torn,
			 char *err, size_t errlen);
/* Parses record-remotes.json text, appending to st->remotes. 0 or -EINVAL with err. */
int record_parse_remotes(const char *text, size_t len, struct gdp_state *st, char *err, size_t errlen);
/* Frees what an attachment owns (netns, config); not a itself. */
void rec_att_clear(struct rec_att *a);
/* rec_att_clear on each, then free(v). */
void record_atts_free(struct rec_att *v, size_t n);

/* ---- fields ---- */

/* o[k] if it is a string, else NULL. */
const char *rec_jstr(json_t *o, const char *k);
/* String field into dst (absent: 0, or -1 when required); -1 if not a string or too long. */
int rec_jcopy(json_t *o, const char *k, char *dst, size_t cap, bool required);
/* Integer field in [lo, hi]; absent gives def when def >= 0 (else an error). */
int rec_jint(json_t *o, const char *k, long long lo, long long hi, long long def, long long *out);
json_t *rec_prefix_encode(const struct gdp_prefix *p);
/* An array of prefixes (absent: none); host: each a /32 or /128. */
int rec_prefixes_decode(json_t *arr, struct gdp_prefix *out, size_t max, size_t *n, bool host);
/* REC_FAM_* as ["IPv6", "IPv4"]; *bad when not such an array. */
json_t *rec_families_encode(unsigned f);
unsigned rec_families_decode(json_t *arr, int *bad);

/* ---- families ---- */

/* record.json "node": {"block", "nodeID", "uplink", "uplinkMTU"}. */
json_t *rec_node_encode(const struct gdp_node *n, int uplink_mtu);
int rec_node_decode(json_t *o, struct gdp_node *n, int *uplink_mtu, char *err, size_t errlen);

/* record.json "egressShard": {"sid", "addressIPv6", "addressIPv4"?, "interface"?}. */
json_t *rec_egress_encode(const struct gdp_egress *e);
int rec_egress_decode(json_t *o, struct gdp_egress *e, char *err, size_t errlen);

/* One of "vpcs" (record.json, a journal line): {"id", "arg", "table", "prefixes", "declared"}; i: its index, for err. */
json_t *rec_vpc_encode(const struct rec_vpc *v);
int rec_vpc_decode(json_t *o, size_t i, struct rec_vpc *v, char *err, size_t errlen);
/* The whole list into a new vector (*out, *n): each decoded, no id, number or table twice. */
int rec_vpcs_decode(json_t *arr, struct rec_vpc **out, size_t *n, char *err, size_t errlen);

/* One attachment (record.json "attachments", a journal line's "put"). Decode: a owns netns/config (rec_att_clear). */
json_t *rec_att_encode(const struct rec_att *a);
int rec_att_decode(json_t *o, struct rec_att *a, char *why, size_t n);

/* An attachment's key (a journal line's "del"): {"vpc", "id"}. */
json_t *rec_key_encode(const char *vpc, const char *id);
int rec_key_decode(json_t *o, char vpc[GDP_ID_MAX + 1], char id[GDP_ID_MAX + 1]);

/*
 * One of record-remotes.json "remotes": {"vpc", "prefix", "sid"}. Written
 * as text to f (the file is streamed: 100k entries through a jansson tree
 * cost 10x more); 0, -ENOMEM or -errno. Decode: i is its index, for err.
 */
int rec_remote_encode(FILE *f, const struct gdp_remote *m);
int rec_remote_decode(json_t *o, size_t i, struct gdp_remote *m, char *err, size_t errlen);

/* record.journal's first line, {"journal": ep, "version": RECORD_VERSION} and its newline: the length written. */
int rec_journal_header_encode(char *buf, size_t n, unsigned long ep);
/* The first line without its newline; 0 with *ep, or -EINVAL. */
int rec_journal_header_decode(const char *line, size_t len, unsigned long *ep);

#endif
