/*
 * The record's JSON <-> struct (agent/record.h describes the files). One
 * encoder and one decoder for each object family, next to each other, as
 * iproute2 keeps its families: record.json, record.journal and
 * record-remotes.json are written and read through the same pair, so what
 * one writes reads back the same (tests/unit/test_record_codec.c:
 * decode(encode(x)) == x for every family). Pure: no lock, no file, no
 * record. The documents' parsers (record_parse, record_parse_journal,
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

#include "agent/record.h"

/* ---- fields ---- */

/* o[k] if it is a string, else NULL. */
const char *rec_jstr(json_t *o, const char *k);
/* String field into dst (absent: 0, or -1 when required); -1 if not a string or too long. */
int rec_jcopy(json_t *o, const char *k, char *dst, size_t cap, bool required);
/* Integer field in [lo, hi]; absent gives def when def >= 0 (else an error). */
int rec_jint(json_t *o, const char *k, long long lo, long long hi, long long def, long long *out);
/* "aa:bb:cc:dd:ee:ff" (lower case). */
const char *rec_mac_encode(const uint8_t m[6], char b[18]);
int rec_mac_decode(const char *s, uint8_t m[6]);
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
