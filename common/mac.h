/*
 * Ethernet MAC addresses as text, one helper for the whole tree: the form
 * the record, the legacy state files and CNI results use, six lower-case
 * hex pairs separated by colons ("de:ad:be:ef:00:01"). It depends on
 * nothing but libc, so galactic-cni links it alone (libgmac) and everything
 * else gets it from libgcommon.
 */
#ifndef GALACTIC_COMMON_MAC_H
#define GALACTIC_COMMON_MAC_H

#include <stdint.h>

/* Room for the text form and its NUL. */
#define GMAC_STRLEN 18

/* Writes mac as "xx:xx:xx:xx:xx:xx" (lower case) into buf; returns buf. */
const char *gmac_str(const uint8_t mac[6], char buf[GMAC_STRLEN]);
/*
 * Parses exactly 17 characters: six pairs of hex digits (either case)
 * separated by ':'. Nothing before or after, no signs, no blanks, no
 * single digits. 0 and mac set, or -EINVAL with mac unchanged.
 */
int gmac_parse(const char *s, uint8_t mac[6]);

#endif
