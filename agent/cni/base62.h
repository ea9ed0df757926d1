/*
 * Base62 identifiers as the VPC operator writes them into the attachment
 * definition (`vpc`, `vpcattachment`). Alphabet 0-9A-Za-z, most significant
 * digit first; the value is an unsigned 64-bit number, so at most 11 digits.
 * Names derived from an id (report objects, host interfaces) use the value in
 * lowercase hex, which is a valid DNS label.
 */
#ifndef GALACTIC_CNI_BASE62_H
#define GALACTIC_CNI_BASE62_H

#include <stddef.h>
#include <stdint.h>

#define B62_MAX_DIGITS 11

/*
 * Decodes s (NUL-terminated). Returns 0 and *out, or -1 with a reason in
 * why (static string): empty, too long, invalid character, overflow.
 */
int b62_decode(const char *s, uint64_t *out, const char **why);
/* Encodes v into buf (>= 12 bytes); returns the length. */
size_t b62_encode(uint64_t v, char *buf, size_t len);

#endif
