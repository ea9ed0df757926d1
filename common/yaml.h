/*
 * YAML documents (kubeconfig files) as jansson values, on libyaml.
 * Plain scalars follow the YAML 1.2 core schema (null, booleans, integers;
 * everything else a string); quoted scalars are strings. JSON is YAML too.
 * Anchors and aliases are refused.
 */
#ifndef GALACTIC_COMMON_YAML_H
#define GALACTIC_COMMON_YAML_H

#include <jansson.h>
#include <stddef.h>

/* First document of text; a new reference, or NULL with "yaml line N: ..." in err. */
json_t *yaml_parse(const char *text, size_t len, char *err, size_t errlen);

#endif
