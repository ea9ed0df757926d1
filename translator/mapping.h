/*
 * Report mapping (DESIGN §4.2): which data-plane report kinds the translator
 * reads and where each keeps the facts the translator needs.
 *
 * A mapping entry names a resource (group/version/resource) and gives, for
 * each fact, a dotted JSON path into the report ("spec.node"; a leading '.'
 * is accepted). Galactic's NodeAttachment is the built-in default entry;
 * a JSON config file adds entries or replaces them by name:
 *
 *   {"reportKinds": [{
 *      "name": "galactic",
 *      "group": "network.datumapis.com", "version": "v1alpha1",
 *      "resource": "nodeattachments", "namespaced": true,
 *      "fields": {"node": "spec.node", "vpc": "spec.vpc",
 *                 "vpcAttachment": "spec.vpcAttachment", ...},
 *      "programmed": {"conditions": "status.conditions", "type": "Programmed"}
 *        or          {"path": "status.programmed"}            (a boolean)
 *   }], "replaceDefaults": false}
 *
 * An entry with "enabled": false removes the entry of that name.
 * node, vpc and vpcAttachment are required; the other fields are optional.
 *
 * report_extract() reads one report through its entry. Reports are written
 * by others and may be malformed: every value is type- and length-checked,
 * and a problem is returned as a message naming the report and the path, never
 * a crash.
 */
#ifndef GALACTIC_TRANSLATOR_MAPPING_H
#define GALACTIC_TRANSLATOR_MAPPING_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum map_field {
	MF_NODE,
	MF_VPC,
	MF_ATTACHMENT,
	MF_HOST_IF,
	MF_GUEST_IF,
	MF_VRF_IF,
	MF_CONTAINER_ID,
	MF_POD_NAME,
	MF_POD_SUBNET,
	MF_COUNT,
};

/* The config key of each field ("node", "vpcAttachment", "hostInterface"...). */
const char *map_field_name(enum map_field f);

#define MAP_NAME_MAX 63
#define MAP_PATH_MAX 255

struct report_mapping {
	char name[MAP_NAME_MAX + 1];
	char group[254], version[64], resource[64];
	bool namespaced;
	char path[MF_COUNT][MAP_PATH_MAX + 1]; /* "" = not provided by this kind */
	/* Programmed: a condition in a list (cond_path + cond_type), or a boolean. */
	char cond_path[MAP_PATH_MAX + 1];
	char cond_type[MAP_NAME_MAX + 1];
	char bool_path[MAP_PATH_MAX + 1];
};

struct mapping_set {
	size_t n;
	struct report_mapping *e;
};

/* The built-in Galactic NodeAttachment entry. */
void mapping_default(struct report_mapping *m);
/* A set holding only the default entry; -1 on ENOMEM. */
int mapping_set_init(struct mapping_set *s);
void mapping_set_free(struct mapping_set *s);

/*
 * Merges a config document into s (entries replace same-named ones or are
 * appended; "replaceDefaults": true drops the existing entries first).
 * On error s is unchanged and err says what and where ("reportKinds[1].fields.node: ...").
 */
int mapping_set_load_json(struct mapping_set *s, const json_t *doc, char *err, size_t errlen);
int mapping_set_load_file(struct mapping_set *s, const char *path, char *err, size_t errlen);

enum programmed_state { PS_ABSENT = 0, PS_TRUE, PS_FALSE, PS_UNKNOWN };

/* What one report says, read through its mapping. Strings malloc'd or NULL. */
struct report_view {
	char *v[MF_COUNT];
	enum programmed_state programmed;
	char *reason, *message;  /* of the Programmed condition, if any */
	bool outdated;            /* condition's observedGeneration < report generation */
	char key[320];            /* "namespace/name" of the report */
	const char *kind;         /* mapping name (borrowed from the mapping) */
	char *created;            /* metadata.creationTimestamp (ordering among duplicates) */
};

/*
 * Reads report obj through m into v (which the caller report_view_clear()s).
 * Returns 0; or -1 with err naming the report and the bad path: missing ids
 * or node, wrong types, over-long values. Unknown optional values are NULL.
 */
int report_extract(const struct report_mapping *m, const json_t *obj, struct report_view *v,
		   char *err, size_t errlen);
void report_view_clear(struct report_view *v);

/* Index value "vpc/attachment" of a report or of an attachment's ids. */
int mapping_ids_key(const char *vpc, const char *attachment, char *buf, size_t n);

#endif
