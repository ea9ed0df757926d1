#include "tests/lib/recfix.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void recfix_mkdir(char *dir, size_t n, const char *tag)
{
	snprintf(dir, n, "/tmp/%s.XXXXXX", tag);
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

void recfix_rmdir(const char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

struct record *recfix_open(const char *dir)
{
	struct record *r;
	char err[512];

	ck_assert_msg(record_open(&r, &(struct record_opts){ .dir = dir }, err, sizeof(err)) == 0, "%s", err);
	return r;
}

void recfix_cni_att(struct rec_att *t, const char *vpc, const char *id, const char *container)
{
	memset(t, 0, sizeof(*t));
	t->src = REC_SRC_CNI;
	snprintf(t->m.vpc, sizeof(t->m.vpc), "%s", vpc);
	snprintf(t->m.id, sizeof(t->m.id), "%s", id);
	snprintf(t->m.host_ifname, sizeof(t->m.host_ifname), "gc%s", id);
	snprintf(t->m.container_id, sizeof(t->m.container_id), "%s", container);
	snprintf(t->network, sizeof(t->network), "net");
	snprintf(t->ifname, sizeof(t->ifname), "eth0");
}

struct rec_att *recfix_reserve_locked(struct record *r, struct rec_att *t)
{
	struct rec_att *a;
	char err[256];

	a = record_reserve(r, t, err, sizeof(err));
	ck_assert_msg(a != NULL, "%s", err);
	return a;
}
