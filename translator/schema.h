/*
 * What a target CRD's structural schema (openAPIV3Schema) can hold, checked
 * before the translator writes a value (DESIGN §4: a value the schema cannot
 * hold is withheld and reported, the rest is still written). Pure functions
 * over the CRD object: no I/O.
 *
 * Checked: whether the field is declared at all (properties, unless
 * x-kubernetes-preserve-unknown-fields or additionalProperties allows it),
 * type, enum, minLength/maxLength (in characters, as the API server counts),
 * pattern (the API server's Go regexp, translated to POSIX ERE: \d \w \s and
 * (?: are rewritten; a pattern ERE cannot express is not checked), minimum /
 * maximum, minItems/maxItems and required members of objects.
 * Not checked: x-kubernetes-validations (CEL rules), format, defaults.
 */
#ifndef GALACTIC_TRANSLATOR_SCHEMA_H
#define GALACTIC_TRANSLATOR_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The openAPIV3Schema of `version` in a CRD object (borrowed from crd), or NULL. */
const json_t *schema_of_crd(const json_t *crd, const char *version);

/* The schema node of a dotted path of properties ("status.conditions"); NULL if undeclared. */
const json_t *schema_at(const json_t *root, const char *path);

/*
 * 0 when node can hold v; -1 otherwise, why naming path and the constraint
 * ("status.containerID: maxLength 46 (value has 64 characters)").
 */
int schema_check(const json_t *node, const json_t *v, const char *path, char *why, size_t whylen);

/* True when the list at node is x-kubernetes-list-type map keyed by `key` alone. */
bool schema_list_is_map_by(const json_t *node, const char *key);

struct withheld {
	char field[160]; /* "status.containerID", "status.conditions[Programmed].message" */
	char why[480];   /* the constraint, as schema_check says it */
};

/*
 * Removes from intent's "status" every value root's status schema cannot
 * hold, recording each in out (up to max; the count of all is returned).
 * Conditions (status.conditions, a list of objects with "type"): a member
 * that fails and is not required is removed from its entry; an entry whose
 * required member fails, or whose type the schema cannot hold, is removed
 * whole ("status.conditions[Type]"). root NULL: nothing is checked (0).
 */
size_t schema_withhold(const json_t *root, json_t *intent, struct withheld *out, size_t max);

#endif
