/*
 * A YAML subset reader, enough for kubeconfig files as kubectl, kind, kubeadm
 * and cloud CLIs write them: block mappings and sequences (including a
 * sequence at its parent key's indentation), "- key: v" items, flow {} and []
 * collections, quoted and plain scalars, | and > block scalars, comments,
 * document markers. Anchors, aliases, tags and multi-line plain scalars are
 * rejected or read as text. Input starting with '{' is read as JSON.
 * Scalars become JSON strings, except true/false/null/~.
 */
#ifndef GALACTIC_COMMON_YAML_LITE_H
#define GALACTIC_COMMON_YAML_LITE_H

#include <jansson.h>
#include <stddef.h>

/* Returns a new reference, or NULL with a message (with line number) in err. */
json_t *yaml_lite_parse(const char *text, size_t len, char *err, size_t errlen);

#endif
