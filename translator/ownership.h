/*
 * The contract rows the translator writes, and which of them it takes over
 * (staged takeover, docs/translator.md "Ownership is configuration").
 * Default: every row is the translator's. A row left to its incumbent is
 * never written: the translator leaves it out of every intent, so its
 * server-side apply owns nothing there and its condition patches do not
 * touch the entry. Pure: no I/O beyond reading the file it is given.
 *
 * Row names: <kind>.status.<field> or <kind>.conditions.<Type>, kind in
 * lower case: vpcattachment, networkinterface, networkinterfaceclaim.
 */
#ifndef GALACTIC_TRANSLATOR_OWNERSHIP_H
#define GALACTIC_TRANSLATOR_OWNERSHIP_H

#include "translator/kinds.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Every row, in contract order (the doc's table). */
extern const char *const OWNERSHIP_ROWS[];
extern const size_t OWNERSHIP_NROWS;

struct ownership {
	bool left[32]; /* indexed like OWNERSHIP_ROWS: true = left to the incumbent */
};

/* All rows ours. */
void ownership_init(struct ownership *o);
/* Leaves one row (by name) to its incumbent; -1 (err names it) when no such row. */
int ownership_leave(struct ownership *o, const char *row, char *err, size_t errlen);
/* Comma-separated rows ("vpcattachment.status.hostInterface,..."). */
int ownership_leave_list(struct ownership *o, const char *csv, char *err, size_t errlen);
/* A JSON file {"leaveToIncumbent": ["row", ...]}; unknown keys refused. */
int ownership_load_file(struct ownership *o, const char *path, char *err, size_t errlen);

/* Whether the translator writes field (status.<field>) / condition type of kind. */
bool ownership_field_ours(const struct ownership *o, enum tkind k, const char *field);
bool ownership_condition_ours(const struct ownership *o, enum tkind k, const char *type);

/*
 * Removes from intent["status"] the fields and condition entries (in
 * status.conditions) that are left to incumbents. Returns how many.
 */
size_t ownership_strip(const struct ownership *o, enum tkind k, json_t *intent);
/* Same for a bare list of condition entries (the guarded-patch path). */
size_t ownership_strip_conditions(const struct ownership *o, enum tkind k, json_t *conds);

/* The rows left to incumbents, comma-separated ("" when none), for the start-up log. */
void ownership_describe(const struct ownership *o, char *buf, size_t n);

#endif
