/*
 * The node's record (agent/record.h): one allocator, commit and reload,
 * migration of the three legacy files (renamed aside, nothing lost), a
 * damaged file held with a reason (never half-used, never overwritten), the
 * strict parser's refusals, snapshots sharing the remote set; the journal
 * (a commit appends what changed, a torn last line is dropped, a damaged one
 * holds the record, another epoch is ignored, compaction past its limit);
 * the pipeline's incremental view (it follows the record through random
 * changes as a whole snapshot would, and its changes give the same delta);
 * the verbs' finds (the attachments' index) after many changes and a reload.
 */
#include "tests/lib/gtest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/record.h"
#include "agent/record_legacy.h"
#include "common/fileio.h"
#include "tests/lib/recfix.h"

static char dir[64];

static void mkdir_tmp(void) { recfix_mkdir(dir, sizeof(dir), "grec"); }
static void rm_tmp(void) { recfix_rmdir(dir); }

static bool exists(const char *name)
{
	char p[200];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static void put(const char *name, const char *text)
{
	char p[200];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	ck_assert_int_eq(gfile_write_atomic(p, text, strlen(text), NULL, 0), 0);
}

static struct record *open_rec(void) { return recfix_open(dir); }

static void commit(struct record *r)
{
	struct rec_snap s;
	char err[512];

	ck_assert_int_eq(record_snapshot(r, &s), 0);
	ck_assert_msg(record_commit(r, &s, err, sizeof(err)) == 0, "%s", err);
	record_snap_free(&s);
}

static struct rec_att *reserve(struct record *r, const char *vpc, const char *id, const char *addr)
{
	struct rec_att t, *a;
	char container[80];

	snprintf(container, sizeof(container), "c-%s", id);
	recfix_cni_att(&t, vpc, id, container);
	ck_assert_int_eq(gdp_prefix_parse(addr, &t.m.addrs[0]), 0);
	t.m.n_addrs = 1;
	t.config = json_pack("{s:s, s:s}", "vpc", vpc, "vpcattachment", id);
	t.netns = strdup("/var/run/netns/x");
	record_lock(r);
	a = recfix_reserve_locked(r, &t);
	record_unlock(r);
	return a;
}

START_TEST(t_allocate_commit_reload)
{
	struct gdp_node n = { .block = { 0xfc, 0xbb, 0xbb, 0, 0, 1 }, .node_id = 7 };
	struct record *r;
	struct rec_att *a1, *a2, *b1;
	struct rec_snap s;

	mkdir_tmp();
	r = open_rec();
	ck_assert(!record_node_identity(r, NULL, NULL));
	record_set_node_identity(r, &n, 1500);
	a1 = reserve(r, "vpcA", "a1", "10.1.0.1");
	a2 = reserve(r, "vpcA", "a2", "fd00:a::2");
	b1 = reserve(r, "vpcB", "b1", "fd00:a::2");
	ck_assert_uint_ne(a1->m.arg, a2->m.arg);
	ck_assert_uint_ne(a2->m.arg, b1->m.arg);
	ck_assert_uint_eq(a1->m.nh4.s_addr, gdp_default_nh4(a1->m.arg).s_addr); /* IPv4: a DX4 next hop */
	ck_assert_uint_eq(a2->m.nh4.s_addr, 0);
	record_lock(r);
	ck_assert_uint_ne(record_find_vpc(r, "vpcA")->m.arg, record_find_vpc(r, "vpcB")->m.arg);
	ck_assert_uint_eq(record_find_vpc(r, "vpcA")->m.table, GDP_TABLE_MIN_DEFAULT + record_find_vpc(r, "vpcA")->m.arg);
	record_activate(r, a1);
	record_activate(r, a2);
	/* b1 stays reserved: neither applied nor written */
	record_unlock(r);
	ck_assert_int_eq(record_snapshot(r, &s), 0);
	ck_assert_uint_eq(s.st.n_atts, 2);
	ck_assert_uint_eq(s.st.n_vpcs, 1); /* vpcB has no desired attachment yet */
	ck_assert_str_eq(s.pods[0].guest_ifname, "eth0");
	record_snap_free(&s);
	commit(r);
	record_close(r);

	r = open_rec();
	ck_assert(record_node_identity(r, &n, NULL));
	ck_assert_uint_eq(n.node_id, 7);
	record_lock(r);
	ck_assert_uint_eq(record_n_atts(r), 2);
	ck_assert_ptr_null(record_find_vpc(r, "vpcB")); /* the reservation did not outlive the restart */
	a1 = record_find_key(r, "net", "c-a1", "eth0");
	ck_assert_ptr_nonnull(a1);
	ck_assert_str_eq(a1->netns, "/var/run/netns/x");
	ck_assert_str_eq(json_string_value(json_object_get(a1->config, "vpcattachment")), "a1");
	/* the last attachment of a VPC takes its number with it */
	record_remove(r, record_find_att(r, "vpcA", "a1"));
	record_remove(r, record_find_att(r, "vpcA", "a2"));
	ck_assert_ptr_null(record_find_vpc(r, "vpcA"));
	record_unlock(r);
	record_close(r);
	rm_tmp();
}
END_TEST

/* The node's shard identity survives a restart, reaches the snapshot with the attachments' declarations. */
START_TEST(t_egress_shard_kept)
{
	struct gdp_node n = { .block = { 0xfc, 0xbb, 0xbb, 0, 0, 1 }, .node_id = 7 };
	struct gdp_egress e = { .have = true, .have_v4 = true, .oif = "inet0" }, got;
	struct rec_data d;
	struct record *r;
	struct rec_att *a;
	struct rec_snap s;
	char err[256];

	inet_pton(AF_INET6, "fcbb:bb00:1:7:f000::", &e.sid);
	inet_pton(AF_INET6, "2001:db8:5::7", &e.addr6);
	inet_pton(AF_INET, "203.0.113.7", &e.addr4);
	mkdir_tmp();
	r = open_rec();
	ck_assert(!record_egress(r, &got));
	record_set_node_identity(r, &n, 1500);
	record_set_egress(r, &e);
	a = reserve(r, "vpcA", "a1", "fd00:a::1");
	a->egress = REC_FAM_V6;
	record_lock(r);
	record_activate(r, a);
	record_unlock(r);
	commit(r);
	record_close(r);

	r = open_rec();
	ck_assert(record_egress(r, &got));
	ck_assert_mem_eq(&got, &e, sizeof(e));
	ck_assert_int_eq(record_snapshot(r, &s), 0);
	ck_assert(s.st.egress.have);
	ck_assert_mem_eq(&s.st.egress.addr4, &e.addr4, 4);
	ck_assert_uint_eq(s.st.n_atts, 1);
	ck_assert_uint_eq(s.st.atts[0].egress, GDP_FAM_V6);
	record_snap_free(&s);
	/* withdrawn: gone from the record and the next snapshot */
	record_set_egress(r, NULL);
	ck_assert(!record_egress(r, &got));
	record_close(r);
	rm_tmp();
	/* the strict parser names the bad field */
	ck_assert_int_eq(record_parse("{\"version\":1,\"egressShard\":{\"sid\":\"x\"},\"vpcs\":[],\"attachments\":[]}",
				      66, &d, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "egressShard"));
}
END_TEST

START_TEST(t_migrates_legacy_files)
{
	struct record *r;
	struct rec_snap s;
	struct rec_att *c;

	mkdir_tmp();
	put(LEGACY_STATE, "{\"node\":{\"block\":\"fcbb:bb00:1::/48\",\"node_id\":3,\"uplink\":\"up0\"},"
			  "\"vpcs\":[{\"id\":\"vpcA\",\"arg\":1,\"table\":16385,\"prefixes\":[\"fd00:a::/64\"]}],"
			  "\"attachments\":[{\"vpc\":\"vpcA\",\"id\":\"s1\",\"host_ifname\":\"hs1\",\"arg\":1,"
			  "\"addrs\":[\"fd00:a::1\"],\"pod_mac\":\"02:00:00:00:00:01\",\"mtu\":1400}]}");
	put(LEGACY_REMOTES, "{\"remotes\":[{\"vpc\":\"vpcA\",\"prefix\":\"fd00:a::9/128\",\"sid\":\"fcbb:bb00:1:2:e001::\"}]}");
	put(LEGACY_CNI, "{\"version\":1,\"vpcs\":[{\"id\":\"vpcC\",\"arg\":2,\"table\":16386}],"
			"\"attachments\":[{\"network\":\"net-c\",\"containerID\":\"ctr\",\"ifname\":\"eth0\","
			"\"netns\":\"/run/netns/p\",\"podNamespace\":\"default\",\"podName\":\"web-0\",\"podUID\":\"u\","
			"\"hostIfname\":\"gc0000000000001\",\"hostMac\":\"6a:ae:8b:5a:02:b5\",\"mac\":\"c6:8a:e1:51:59:a6\","
			"\"mtu\":1400,\"arg\":7,\"config\":{\"vpc\":\"vpcC\",\"vpcattachment\":\"C1\",\"ipFamilies\":[\"IPv6\",\"IPv4\"],"
			"\"addresses\":[{\"address\":\"fd00:c::5/128\"},{\"address\":\"10.3.0.5/32\"}],"
			"\"egress\":{\"internet\":{\"families\":[\"IPv4\"]}}}}]}");
	r = open_rec();
	ck_assert(exists(RECORD_FILE));
	ck_assert(exists(RECORD_REMOTES_FILE));
	ck_assert(!exists(LEGACY_STATE) && !exists(LEGACY_REMOTES) && !exists(LEGACY_CNI));
	ck_assert(exists(LEGACY_STATE LEGACY_ASIDE_SUFFIX) && exists(LEGACY_CNI LEGACY_ASIDE_SUFFIX));
	ck_assert_int_eq(record_snapshot(r, &s), 0);
	ck_assert_uint_eq(s.st.node.node_id, 3);
	ck_assert_uint_eq(s.st.n_vpcs, 2);
	ck_assert_uint_eq(s.st.n_atts, 2);
	ck_assert_uint_eq(s.st.n_remotes, 1);
	ck_assert_ptr_eq(s.st.remotes, s.remotes->v); /* shared, not copied */
	record_snap_free(&s);
	record_lock(r);
	c = record_find_att(r, "vpcC", "C1");
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->m.arg, 7);              /* numbers kept: the kernel has them */
	ck_assert_uint_eq(record_find_vpc(r, "vpcC")->m.table, 16386);
	ck_assert_uint_eq(c->m.nh4.s_addr, gdp_default_nh4(7).s_addr);
	ck_assert_str_eq(c->pod_name, "web-0");
	ck_assert_uint_eq(c->egress, REC_FAM_V4);
	ck_assert_uint_eq(c->m.pod_mac[0], 0xc6);
	record_unlock(r);
	record_close(r);
	/* Reopened from the record alone: the same. */
	r = open_rec();
	ck_assert_int_eq(record_snapshot(r, &s), 0);
	ck_assert_uint_eq(s.st.n_atts, 2);
	ck_assert_uint_eq(s.st.n_remotes, 1);
	record_snap_free(&s);
	record_close(r);
	rm_tmp();
}
END_TEST

START_TEST(t_damaged_record_is_held)
{
	struct record *r;
	char why[512], err[512];
	static const char *const bad[] = {
		"{ nope",
		"{\"version\":3,\"vpcs\":[],\"attachments\":[]}",
		"{\"version\":1,\"vpcs\":[{\"id\":\"v\",\"arg\":1,\"table\":1},{\"id\":\"w\",\"arg\":1,\"table\":2}],\"attachments\":[]}",
		"{\"version\":1,\"vpcs\":[],\"attachments\":[{\"vpc\":\"v\",\"id\":\"a\",\"source\":\"declared\",\"hostIfname\":\"h\",\"arg\":1}]}",
		"{\"version\":1,\"vpcs\":[{\"id\":\"v\",\"arg\":1,\"table\":1}],\"attachments\":[{\"vpc\":\"v\",\"id\":\"a\",\"source\":\"x\",\"hostIfname\":\"h\",\"arg\":1}]}",
		"{\"version\":1,\"node\":{\"block\":\"fcbb::/64\",\"nodeID\":1},\"vpcs\":[],\"attachments\":[]}",
	};
	static const char *const says[] = { "not JSON", "\"version\" must be 1-2", "already used by vpc v",
					    "vpc v is not in \"vpcs\"", "\"source\"", "/48" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rec_snap s;

		mkdir_tmp();
		put(RECORD_FILE, bad[i]);
		put(LEGACY_STATE, "{\"node\":{\"block\":\"fcbb:bb00:1::/48\",\"node_id\":3}}");
		r = open_rec();
		ck_assert_msg(record_held(r, why, sizeof(why)) != NULL, "case %zu not held", i);
		ck_assert_msg(strstr(why, says[i]) && strstr(why, RECORD_FILE), "case %zu: %s", i, why);
		/* nothing written, nothing imported */
		ck_assert_int_eq(record_snapshot(r, &s), 0);
		ck_assert_int_eq(record_commit(r, &s, err, sizeof(err)), -EBUSY);
		record_snap_free(&s);
		ck_assert(exists(LEGACY_STATE));
		{
			char p[200], *text;
			size_t len;

			snprintf(p, sizeof(p), "%s/%s", dir, RECORD_FILE);
			ck_assert_int_eq(gfile_read(p, 1 << 20, &text, &len), 0);
			ck_assert_str_eq(text, bad[i]);
			free(text);
		}
		/* repaired (removed): SIGHUP's retry makes it usable */
		snprintf(why, sizeof(why), "%s/%s", dir, RECORD_FILE);
		unlink(why);
		ck_assert_int_eq(record_retry_load(r, err, sizeof(err)), 0);
		ck_assert_ptr_null(record_held(r, why, sizeof(why)));
		ck_assert_int_eq(record_import_legacy(r, err, sizeof(err)), 1);
		ck_assert(record_node_identity(r, NULL, NULL));
		record_close(r);
		rm_tmp();
	}
}
END_TEST

START_TEST(t_remotes_replaced_and_filtered)
{
	struct gdp_node n = { .block = { 0xfc, 0xbb, 0xbb, 0, 0, 1 }, .node_id = 1 };
	struct gdp_remote v[2] = { { .vpc_ix = gdp_vpc_ix("vpcA") }, { .vpc_ix = gdp_vpc_ix("gone") } };
	struct record *r;
	struct rec_snap s;

	mkdir_tmp();
	r = open_rec();
	record_set_node_identity(r, &n, 0);
	{
		struct rec_att *a = reserve(r, "vpcA", "a1", "fd00:a::1");

		record_lock(r);
		record_activate(r, a);
		record_unlock(r);
	}
	gdp_prefix_parse("fd00:a::9/128", &v[0].prefix);
	gdp_prefix_parse("fd00:b::9/128", &v[1].prefix);
	inet_pton(AF_INET6, "fcbb:bb00:1:2:e001::", &v[0].sid);
	v[1].sid = v[0].sid;
	ck_assert_int_eq(record_set_remotes(r, v, 2), 0);
	{
		unsigned long g = record_gen(r);

		/* the learner hands the same set again: nothing changes */
		ck_assert_int_eq(record_set_remotes(r, v, 2), 1);
		ck_assert_uint_eq(record_gen(r), g);
		ck_assert_int_eq(record_set_remotes(r, v, 1), 0); /* a different one is taken */
		ck_assert_uint_gt(record_gen(r), g);
		ck_assert_int_eq(record_set_remotes(r, v, 2), 0);
	}
	ck_assert_int_eq(record_snapshot(r, &s), 0);
	ck_assert_uint_eq(s.st.n_remotes, 1); /* a VPC this node does not host is left out */
	ck_assert_str_eq(gdp_remote_vpc(&s.st.remotes[0]), "vpcA");
	record_snap_free(&s);
	commit(r);
	record_close(r);
	r = open_rec();
	ck_assert_int_eq(record_snapshot(r, &s), 0);
	ck_assert_uint_eq(s.remotes->n, 2); /* the durable set is the learner's, whole */
	record_snap_free(&s);
	record_close(r);
	rm_tmp();
}
END_TEST

/* record-remotes.json is parsed one element at a time: the same verdicts as a whole-tree parse. */
START_TEST(t_remotes_file_parse)
{
	static const char *const good[] = {
		"{\"version\":1,\"remotes\":[{\"vpc\":\"vpcA\",\"prefix\":\"fd00:a::9/128\",\"sid\":\"fcbb:bb00:1:2:e001::\"},"
		"{\"vpc\":\"v\\u0041\",\"prefix\":\"10.1.0.9/32\",\"sid\":\"fcbb:bb00:1:3:e001::\"}]}",
		/* members in any order, whitespace anywhere, unknown members ignored */
		" {\n \"remotes\" : [ {\"sid\":\"fcbb:bb00:1:2:e001::\", \"prefix\":\"fd00:a::9/128\",\"vpc\":\"vpcA\"} ,\n"
		"{\"vpc\":\"vA\",\"prefix\":\"10.1.0.9/32\",\"sid\":\"fcbb:bb00:1:3:e001::\"} ] ,"
		" \"note\": {\"x\": [1, 2.5, null, \"]}\"]}, \"version\" : 1 }\n",
	};
	static const char *const bad[] = {
		"", "[]", "{", "{\"version\":1}", "{\"remotes\":[]}", "{\"version\":2,\"remotes\":[]}",
		"{\"version\":\"1\",\"remotes\":[]}", "{\"version\":1,\"remotes\":{}}",
		"{\"version\":1,\"remotes\":[],\"version\":1}",                       /* a name twice */
		"{\"version\":1,\"remotes\":[]} x",                                      /* data after it */
		"{\"version\":1,\"remotes\":[{\"vpc\":\"v\",\"prefix\":\"fd00::1/128\",\"sid\":\"fcbb:bb00:1:2:e001::\"},]}",
		"{\"version\":1,\"remotes\":[{\"vpc\":\"v\",\"vpc\":\"w\",\"prefix\":\"fd00::1/128\",\"sid\":\"fcbb::\"}]}",
		"{\"version\":1,\"remotes\":[{\"vpc\":\"v\",\"prefix\":\"fd00::1/128\",\"sid\":\"fcbb:bb00:1:2:e001::\"} "
		"{\"vpc\":\"v\",\"prefix\":\"fd00::2/128\",\"sid\":\"fcbb:bb00:1:2:e001::\"}]}",
		"{\"version\":1,\"remotes\":[{\"vpc\":\"v\",\"prefix\":\"fd00::1/129\",\"sid\":\"fcbb:bb00:1:2:e001::\"}]}",
		"{\"version\":1,\"remotes\":[{\"vpc\":\"v\",\"prefix\":\"fd00::1/128\"}]}",
		"{\"version\":1,\"remotes\":[7]}",
	};
	struct gdp_state st;
	char err[512];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		gdp_state_init(&st);
		ck_assert_msg(record_parse_remotes(good[i], strlen(good[i]), &st, err, sizeof(err)) == 0, "good %zu: %s",
			      i, err);
		ck_assert_uint_eq(st.n_remotes, 2);
		ck_assert_str_eq(gdp_remote_vpc(&st.remotes[0]), "vpcA");
		ck_assert_uint_eq(st.remotes[1].prefix.family, AF_INET);
		ck_assert_uint_eq(st.remotes[1].sid.s6_addr[7], 3);
		gdp_state_free(&st);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct gdp_remote keep = { .vpc_ix = gdp_vpc_ix("kept") };

		gdp_state_init(&st);
		gdp_state_add_remote(&st, &keep);
		err[0] = 0;
		ck_assert_msg(record_parse_remotes(bad[i], strlen(bad[i]), &st, err, sizeof(err)) == -EINVAL,
			      "bad %zu accepted: %s", i, bad[i]);
		ck_assert_msg(err[0], "bad %zu: no reason", i);
		ck_assert_uint_eq(st.n_remotes, 1); /* nothing of a refused file is kept */
		gdp_state_free(&st);
	}
}
END_TEST

/* 20,000 remotes: committed by streaming, reloaded, the same set. */
START_TEST(t_remotes_streamed_roundtrip)
{
	struct gdp_node n = { .block = { 0xfc, 0xbb, 0xbb, 0, 0, 1 }, .node_id = 1 };
	size_t nr = 20000;
	struct gdp_remote *v = calloc(nr, sizeof(*v));
	struct record *r;
	struct rec_snap s;

	ck_assert_ptr_nonnull(v);
	for (size_t i = 0; i < nr; i++) {
		char pf[64];

		gdp_prefix_parse("::/0", &v[i].prefix);
		if (gdp_remote_set_vpc(&v[i], i % 2 ? "vpcA" : "vpc\"B"))
			ck_abort_msg("vpc of remote %zu", i);
		snprintf(pf, sizeof(pf), "fd00:a::%zx:%zx/128", i >> 16, i & 0xffff);
		if (gdp_prefix_parse(pf, &v[i].prefix))
			ck_abort_msg("prefix %s", pf);
		inet_pton(AF_INET6, "fcbb:bb00:1:2:e001::", &v[i].sid);
		v[i].sid.s6_addr[7] = (uint8_t)(i % 200);
	}
	mkdir_tmp();
	r = open_rec();
	record_set_node_identity(r, &n, 0);
	ck_assert_int_eq(record_set_remotes(r, v, nr), 0);
	commit(r);
	record_close(r);
	r = open_rec();
	ck_assert_ptr_null(record_held(r, (char[64]){ 0 }, 64));
	ck_assert_int_eq(record_snapshot(r, &s), 0);
	ck_assert_uint_eq(s.remotes->n, nr);
	{
		size_t differ = 0; /* counted, not asserted one by one (check marks every assertion) */

		for (size_t i = 0; i < nr; i++)
			differ += strcmp(gdp_remote_vpc(&s.remotes->v[i]), gdp_remote_vpc(&v[i])) ||
				  !gdp_prefix_equal(&s.remotes->v[i].prefix, &v[i].prefix) ||
				  memcmp(&s.remotes->v[i].sid, &v[i].sid, sizeof(v[i].sid));
		ck_assert_uint_eq(differ, 0);
	}
	record_snap_free(&s);
	record_close(r);
	rm_tmp();
	free(v);
}
END_TEST

static char *slurp(const char *name)
{
	char p[200], *text = NULL;
	size_t len;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	ck_assert_int_eq(gfile_read(p, 64 << 20, &text, &len), 0);
	return text;
}

static size_t count_lines(const char *t)
{
	size_t n = 0;

	for (; *t; t++)
		n += *t == '\n';
	return n;
}

static size_t count_lines_of(const char *name)
{
	char *t = slurp(name);
	size_t n = count_lines(t);

	free(t);
	return n;
}

static long long epoch_of_main(void)
{
	char *t = slurp(RECORD_FILE);
	json_t *o = json_loads(t, 0, NULL);
	long long e;

	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "version")), RECORD_VERSION);
	e = json_integer_value(json_object_get(o, "journal"));
	json_decref(o);
	free(t);
	return e;
}

static void activate(struct record *r, struct rec_att *a)
{
	record_lock(r);
	record_activate(r, a);
	record_unlock(r);
}

static void append_raw(const char *name, const char *text)
{
	char p[200];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "a");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0, 1);
	ck_assert_int_eq(fclose(f), 0);
}

static long long file_size(const char *name)
{
	char p[200];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	ck_assert_int_eq(stat(p, &st), 0);
	return (long long)st.st_size;
}

/* Bytes written at off of name (in place, as a crash in a commit's write leaves them). */
static void write_at(const char *name, long long off, const char *text)
{
	char p[200];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, text, strlen(text), (off_t)off), (ssize_t)strlen(text));
	close(fd);
}

/* A commit appends one line with what changed; record.json is not rewritten. */
START_TEST(t_journal_appends_what_changed)
{
	struct gdp_node n = { .block = { 0xfc, 0xbb, 0xbb, 0, 0, 1 }, .node_id = 7 };
	struct record *r;
	char *main0, *j, why[512];
	char ids[8][8];
	long long ep;

	mkdir_tmp();
	r = open_rec();
	record_set_node_identity(r, &n, 1500);
	for (int i = 0; i < 5; i++) {
		char a[32];

		snprintf(ids[i], sizeof(ids[i]), "a%d", i);
		snprintf(a, sizeof(a), "fd00:a::%d", i + 1);
		activate(r, reserve(r, "vpcA", ids[i], a));
	}
	commit(r); /* the first commit compacts: record.json whole, a journal with its header */
	ep = epoch_of_main();
	ck_assert_int_ge(ep, 1);
	j = slurp(RECORD_JOURNAL_FILE);
	ck_assert_uint_eq(count_lines(j), 1);
	free(j);
	main0 = slurp(RECORD_FILE);

	activate(r, reserve(r, "vpcA", "a5", "fd00:a::6"));
	commit(r);
	record_lock(r);
	record_remove(r, record_find_att(r, "vpcA", "a1"));
	record_unlock(r);
	commit(r);
	activate(r, reserve(r, "vpcB", "b1", "fd00:b::1"));
	commit(r);
	commit(r); /* nothing changed: nothing written */
	j = slurp(RECORD_JOURNAL_FILE);
	ck_assert_uint_eq(count_lines(j), 4);
	ck_assert_ptr_nonnull(strstr(j, "\"del\":[{\"id\":\"a1\",\"vpc\":\"vpcA\"}]"));
	ck_assert_ptr_nonnull(strstr(j, "\"vpcs\":[")); /* vpcB came with b1 */
	ck_assert_ptr_null(strstr(strchr(j, '\n') + 1, "\"a3\"")); /* an unchanged attachment is not written again */
	free(j);
	j = slurp(RECORD_FILE);
	ck_assert_str_eq(j, main0); /* not rewritten */
	free(j);
	free(main0);
	record_close(r);

	/* a restart replays it */
	r = open_rec();
	ck_assert_ptr_null(record_held(r, why, sizeof(why)));
	record_lock(r);
	ck_assert_uint_eq(record_n_atts(r), 6);
	ck_assert_ptr_null(record_find_att(r, "vpcA", "a1"));
	ck_assert_ptr_nonnull(record_find_att(r, "vpcA", "a5"));
	ck_assert_ptr_nonnull(record_find_att(r, "vpcB", "b1"));
	ck_assert_ptr_nonnull(record_find_vpc(r, "vpcB"));
	ck_assert_str_eq(record_find_att(r, "vpcA", "a5")->netns, "/var/run/netns/x");
	record_unlock(r);
	/* the first commit after a start compacts again: a new epoch */
	activate(r, reserve(r, "vpcA", "a6", "fd00:a::7"));
	commit(r);
	ck_assert_int_gt(epoch_of_main(), ep);
	j = slurp(RECORD_JOURNAL_FILE);
	ck_assert_uint_eq(count_lines(j), 1);
	free(j);
	record_close(r);
	rm_tmp();
}
END_TEST

/* A last line without its newline (a crash mid-append) is dropped; a damaged
 * complete line holds the record; a journal of another epoch is ignored. */
START_TEST(t_journal_torn_damaged_stale)
{
	struct gdp_node n = { .block = { 0xfc, 0xbb, 0xbb, 0, 0, 1 }, .node_id = 7 };
	struct record *r;
	char why[512], err[512], *j;

	mkdir_tmp();
	r = open_rec();
	record_set_node_identity(r, &n, 0);
	activate(r, reserve(r, "vpcA", "a1", "fd00:a::1"));
	commit(r);
	activate(r, reserve(r, "vpcA", "a2", "fd00:a::2"));
	commit(r);
	record_close(r);
	j = slurp(RECORD_JOURNAL_FILE); /* its text, up to the zeroed tail */

	/* torn in place: the beginning of a line over the zeros */
	write_at(RECORD_JOURNAL_FILE, (long long)strlen(j), "{\"put\":[{\"vpc\":\"vpcA\",\"id\":\"a9\"");
	r = open_rec();
	ck_assert_ptr_null(record_held(r, why, sizeof(why)));
	record_lock(r);
	ck_assert_uint_eq(record_n_atts(r), 2);
	ck_assert_ptr_null(record_find_att(r, "vpcA", "a9"));
	record_unlock(r);
	record_close(r);

	put(RECORD_JOURNAL_FILE, j); /* (no zeroed tail: as an older agent wrote it) */
	append_raw(RECORD_JOURNAL_FILE, "{\"put\":[{\"vpc\":\"vpcA\"}]}\n");
	r = open_rec();
	ck_assert(record_held(r, why, sizeof(why)) != NULL);
	ck_assert_msg(strstr(why, RECORD_JOURNAL_FILE) && strstr(why, "line 3"), "%s", why);
	record_close(r);

	/* an attachment put twice with one number: refused like record.json */
	put(RECORD_JOURNAL_FILE, j);
	{
		char *line = strchr(j, '\n') + 1, dup[4096];

		/* a2's line again under another id, same number */
		snprintf(dup, sizeof(dup), "%s", line);
		ck_assert_ptr_nonnull(strstr(dup, "\"id\":\"a2\""));
		memcpy(strstr(dup, "\"id\":\"a2\""), "\"id\":\"a3\"", 9);
		append_raw(RECORD_JOURNAL_FILE, dup);
	}
	r = open_rec();
	ck_assert(record_held(r, why, sizeof(why)) != NULL);
	ck_assert_msg(strstr(why, "already used"), "%s", why);
	record_close(r);

	/* another epoch's journal: record.json alone counts */
	put(RECORD_JOURNAL_FILE, "{\"journal\":999,\"version\":2}\n{\"del\":[{\"vpc\":\"vpcA\",\"id\":\"a1\"}]}\n");
	r = open_rec();
	ck_assert_ptr_null(record_held(r, why, sizeof(why)));
	record_lock(r);
	ck_assert_uint_eq(record_n_atts(r), 1); /* a2 was only in the replaced journal */
	ck_assert_ptr_nonnull(record_find_att(r, "vpcA", "a1"));
	record_unlock(r);
	/* a reader beside the agent takes it for a compaction caught half-way:
	 * it reads again, and says so when it never settles */
	{
		char *t;
		put(RECORD_JOURNAL_FILE, "{\"journal\":999,\"version\":2}\n");
		t = record_dump(dir, err, sizeof(err));
		ck_assert_ptr_null(t);
		ck_assert_msg(strstr(err, "changing under the reader"), "%s", err);
	}
	record_close(r);
	free(j);
	rm_tmp();
}
END_TEST

/*
 * The journal is written in place over a zeroed tail: commits do not change
 * its size (no filesystem journal commit per fdatasync) until a line would
 * leave too little, then it grows; the load stops at the first NUL, so a
 * commit torn in place (part of its line, then zeros) is dropped and bytes
 * after the zeros (a write that never became a commit) are never read.
 */
START_TEST(t_journal_in_place)
{
	struct gdp_node n = { .block = { 0xfc, 0xbb, 0xbb, 0, 0, 1 }, .node_id = 7 };
	struct record *r;
	char why[512], *j;
	long long size0, end;
	int grew_by_pass = 0, ahead = 0;

	mkdir_tmp();
	r = open_rec();
	record_set_node_identity(r, &n, 0);
	activate(r, reserve(r, "vpcA", "a1", "fd00:a::1"));
	commit(r); /* compacts: the header and the zeroed tail */
	size0 = file_size(RECORD_JOURNAL_FILE);
	ck_assert_int_ge(size0, 64 << 10);
	for (int i = 2; i <= 20; i++) {
		char id[16], a[32];

		snprintf(id, sizeof(id), "a%d", i);
		snprintf(a, sizeof(a), "fd00:a::%x", i);
		activate(r, reserve(r, "vpcA", id, a));
		commit(r);
		ck_assert_int_eq(file_size(RECORD_JOURNAL_FILE), size0); /* written in place */
	}
	j = slurp(RECORD_JOURNAL_FILE);
	ck_assert_uint_eq(count_lines(j), 20);
	end = (long long)strlen(j); /* the first NUL: the next line's place */
	free(j);
	record_close(r);

	/* a commit torn in place: its beginning, then the zeros */
	write_at(RECORD_JOURNAL_FILE, end, "{\"put\":[{\"vpc\":\"vpcA\",\"id\":\"a99\"");
	/* and after the zeros, a line a write left that never became a commit */
	write_at(RECORD_JOURNAL_FILE, end + 4096, "{\"del\":[{\"id\":\"a1\",\"vpc\":\"vpcA\"}]}\n");
	r = open_rec();
	ck_assert_ptr_null(record_held(r, why, sizeof(why)));
	record_lock(r);
	ck_assert_uint_eq(record_n_atts(r), 20);
	ck_assert_ptr_nonnull(record_find_att(r, "vpcA", "a1"));
	ck_assert_ptr_null(record_find_att(r, "vpcA", "a99"));
	record_unlock(r);
	{
		struct rec_disk_pos pos;

		ck_assert(record_loaded_pos(r, &pos));
		ck_assert_uint_eq(pos.lines, 19); /* the torn one is not a line */
	}

	/* lines past the zeroed tail: it grows, and everything loads back */
	activate(r, reserve(r, "vpcA", "b0", "fd00:b::1"));
	commit(r); /* the first commit after a start compacts */
	size0 = file_size(RECORD_JOURNAL_FILE);
	for (int k = 0; k < 8; k++) {
		long long len, size;
		char err[256];
		int rc;

		for (int i = 0; i < 60; i++) {
			char id[16], a[32];

			snprintf(id, sizeof(id), "b%d", 1 + k * 60 + i);
			snprintf(a, sizeof(a), "fd00:b::%x", 2 + k * 60 + i);
			activate(r, reserve(r, "vpcA", id, a));
		}
		/* a verb's commit ahead writes its line unless the zeros left are
		 * short (under 128 KiB): growing the tail is the pass's */
		j = slurp(RECORD_JOURNAL_FILE);
		len = (long long)strlen(j);
		free(j);
		size = file_size(RECORD_JOURNAL_FILE);
		rc = record_commit_ahead(r, err, sizeof(err));
		if (len + (128 << 10) > size) {
			ck_assert_int_eq(rc, -EALREADY);
			ck_assert_int_eq(file_size(RECORD_JOURNAL_FILE), size);
			grew_by_pass++;
		} else {
			ck_assert_msg(rc == 0, "%s", err);
			ahead++;
		}
		commit(r); /* the pass: writes the line if the verb did not (one line with 60 attachments) */
	}
	ck_assert_int_gt(grew_by_pass, 0);
	ck_assert_int_gt(ahead, 0);
	ck_assert_int_gt(file_size(RECORD_JOURNAL_FILE), size0);
	j = slurp(RECORD_JOURNAL_FILE);
	ck_assert_uint_eq(count_lines(j), 9);
	free(j);
	record_close(r);
	r = open_rec();
	ck_assert_ptr_null(record_held(r, why, sizeof(why)));
	record_lock(r);
	ck_assert_uint_eq(record_n_atts(r), 20 + 1 + 8 * 60);
	ck_assert_ptr_nonnull(record_find_att(r, "vpcA", "b480"));
	record_unlock(r);
	record_close(r);
	rm_tmp();
}
END_TEST

/* Past its limit the journal is compacted into record.json (a new epoch),
 * so neither the journal nor a load grows without bound. */
START_TEST(t_journal_compacts)
{
	struct gdp_node n = { .block = { 0xfc, 0xbb, 0xbb, 0, 0, 1 }, .node_id = 7 };
	struct record *r;
	struct rec_att *a;
	long long ep0;
	size_t most = 0;
	char *j;

	mkdir_tmp();
	r = open_rec();
	record_set_node_identity(r, &n, 0);
	a = reserve(r, "vpcA", "a1", "fd00:a::1");
	activate(r, a);
	commit(r);
	ep0 = epoch_of_main();
	for (int i = 0; i < 600; i++) {
		record_lock(r);
		if (i % 2)
			record_activate(r, a);
		else
			record_deactivate(r, a);
		record_unlock(r);
		commit(r);
		j = slurp(RECORD_JOURNAL_FILE);
		if (count_lines(j) > most)
			most = count_lines(j);
		free(j);
	}
	ck_assert_int_ge(epoch_of_main(), ep0 + 2);
	ck_assert_uint_le(most, 256 + 2 + 1);
	record_close(r);
	r = open_rec();
	record_lock(r);
	ck_assert_uint_eq(record_n_atts(r), 1); /* the last change (i = 599) activated it */
	record_unlock(r);
	record_close(r);
	rm_tmp();
}
END_TEST

/* A version 1 record.json (before the journal) is read as it is. */
START_TEST(t_reads_version_1)
{
	struct record *r;
	char why[512];

	mkdir_tmp();
	put(RECORD_FILE, "{\"version\":1,\"vpcs\":[{\"id\":\"v\",\"arg\":1,\"table\":16385}],\"attachments\":"
			 "[{\"vpc\":\"v\",\"id\":\"a\",\"source\":\"declared\",\"hostIfname\":\"h\",\"arg\":1}]}");
	r = open_rec();
	ck_assert_ptr_null(record_held(r, why, sizeof(why)));
	record_lock(r);
	ck_assert_uint_eq(record_n_atts(r), 1);
	record_unlock(r);
	record_close(r);
	rm_tmp();
}
END_TEST

/* v's attachments are the snapshot's (same keys, same models, same pods), in any order. */
static void same_as_snapshot(struct record *r, const struct rec_view *v)
{
	struct rec_snap s;

	ck_assert_int_eq(record_snapshot(r, &s), 0);
	ck_assert_uint_eq(v->s.st.n_atts, s.st.n_atts);
	ck_assert_uint_eq(v->s.st.n_vpcs, s.st.n_vpcs);
	ck_assert_uint_eq(v->s.st.n_remotes, s.st.n_remotes);
	ck_assert_uint_eq(v->s.gen, s.gen);
	for (size_t i = 0; i < s.st.n_atts; i++) {
		const struct gdp_attachment *a = &s.st.atts[i], *b = NULL;
		size_t k;

		for (k = 0; k < v->s.st.n_atts && !b; k++)
			if (!strcmp(v->s.st.atts[k].vpc, a->vpc) && !strcmp(v->s.st.atts[k].id, a->id))
				b = &v->s.st.atts[k];
		ck_assert_msg(b != NULL, "%s/%s missing from the view", a->vpc, a->id);
		ck_assert_int_eq(b->n_addrs, a->n_addrs);
		ck_assert_int_eq(b->egress, a->egress);
		ck_assert_int_eq(memcmp(b->pod_mac, a->pod_mac, 6), 0);
		ck_assert_str_eq(v->s.pods[k - 1].name, s.pods[i].name);
	}
	for (size_t i = 0; i < s.st.n_vpcs; i++)
		ck_assert_ptr_nonnull(gdp_state_find_vpc(&v->s.st, s.st.vpcs[i].id));
	record_snap_free(&s);
}

/* The delta from the view's changes is the one a whole compare finds. */
static void same_delta(const struct gdp_state *prev, const struct rec_view *v, const struct rec_changes *ch)
{
	struct gdp_delta a, b;

	gdp_delta_init(&a);
	gdp_delta_init(&b);
	ck_assert_int_eq(gdp_delta_compute(prev, &v->s.st, &a), 0);
	ck_assert_int_eq(gdp_delta_compute_changes(prev, &v->s.st, ch->atts, ch->n_atts, &b), 0);
	ck_assert_int_eq(a.full, b.full);
	if (!a.full) {
		ck_assert_uint_eq(a.n_atts, b.n_atts);
		ck_assert_uint_eq(a.n_gone_atts, b.n_gone_atts);
		for (size_t i = 0; i < a.n_atts; i++) {
			bool found = false;

			for (size_t k = 0; k < b.n_atts; k++)
				found |= a.atts[i] == b.atts[k];
			ck_assert_msg(found, "added %s/%s not in the changes' delta", v->s.st.atts[a.atts[i]].vpc,
				      v->s.st.atts[a.atts[i]].id);
		}
		for (size_t i = 0; i < a.n_gone_atts; i++) {
			bool found = false;

			for (size_t k = 0; k < b.n_gone_atts; k++)
				found |= !strcmp(a.gone_atts[i].id, b.gone_atts[k].id) &&
					 !strcmp(a.gone_atts[i].vpc, b.gone_atts[k].vpc);
			ck_assert_msg(found, "removed %s not in the changes' delta", a.gone_atts[i].id);
		}
		ck_assert_uint_eq(a.n_remotes, b.n_remotes);
		ck_assert_uint_eq(a.n_gone_remotes, b.n_gone_remotes);
	}
	gdp_delta_free(&a);
	gdp_delta_free(&b);
}

/*
 * The pipeline's view (record_view_update) follows the record through
 * random ADDs, DELs, re-activations, learned addresses and remote sets:
 * after every update it holds what a whole snapshot holds, the changes it
 * lists give the delta a whole compare gives, and an update with nothing
 * changed lists nothing.
 */
START_TEST(t_view_follows_record)
{
	struct gdp_node n = { .block = { 0xfc, 0xbb, 0xbb, 0, 0, 1 }, .node_id = 7 };
	struct rec_att *live[64] = { 0 };
	struct gdp_state prev;
	struct rec_view v;
	struct record *r;
	unsigned seed = 12345;

	mkdir_tmp();
	r = open_rec();
	record_set_node_identity(r, &n, 1500);
	record_view_init(&v);
	gdp_state_init(&prev);
	for (int round = 0; round < 300; round++) {
		struct rec_changes ch;
		int ops = 1 + (int)(rand_r(&seed) % 4);

		for (int o = 0; o < ops; o++) {
			int k = (int)(rand_r(&seed) % 64), what = (int)(rand_r(&seed) % 10);
			char id[16], addr[64];

			snprintf(id, sizeof(id), "a%d", k);
			snprintf(addr, sizeof(addr), "fd00:a::%x", k + 1);
			record_lock(r);
			if (!live[k] && what < 6) {
				record_unlock(r);
				live[k] = reserve(r, k % 3 ? "vpcA" : "vpcB", id, addr);
				record_lock(r);
				if (what < 5)
					record_activate(r, live[k]); /* else: stays reserved (an ADD in flight) */
			} else if (live[k] && what < 3) {
				record_remove(r, live[k]);
				live[k] = NULL;
			} else if (live[k] && what < 5) {
				live[k]->m.pod_mac[5] = (uint8_t)round;
				snprintf(live[k]->pod_name, sizeof(live[k]->pod_name), "pod-%d", round);
				record_activate(r, live[k]);
			} else if (live[k] && what < 6) {
				record_deactivate(r, live[k]);
			} else if (live[k] && what < 7 && live[k]->active) {
				struct gdp_prefix p;

				snprintf(addr, sizeof(addr), "10.9.%d.%d", k, round % 250);
				ck_assert_int_eq(gdp_prefix_parse(addr, &p), 0);
				record_add_addr(r, live[k], &p);
			} else if (what == 9) {
				struct gdp_remote rm = { .prefix = { .family = AF_INET6, .len = 128 } };

				ck_assert_int_eq(gdp_remote_set_vpc(&rm, "vpcA"), 0);
				rm.prefix.addr.raw[0] = 0xfd;
				rm.prefix.addr.raw[15] = (uint8_t)round;
				record_unlock(r);
				ck_assert_int_ge(record_set_remotes(r, &rm, 1), 0);
				record_lock(r);
			}
			record_unlock(r);
		}
		ck_assert_int_eq(record_view_update(r, &v, &ch), 0);
		ck_assert(v.valid);
		ck_assert_int_eq(ch.whole, round == 0);
		same_as_snapshot(r, &v);
		if (!ch.whole)
			same_delta(&prev, &v, &ch);
		rec_changes_free(&ch);
		/* what the pipeline keeps of the applied state: a whole copy here */
		gdp_state_free(&prev);
		ck_assert_int_eq(gdp_state_copy(&prev, &v.s.st), 0);
		ck_assert_int_eq(record_view_update(r, &v, &ch), 0);
		ck_assert_uint_eq(ch.n_atts, 0);
		rec_changes_free(&ch);
	}
	/* an import of drop-in files rebuilds the view whole */
	put(LEGACY_STATE, "{\"node\":{\"block\":\"fcbb:bb00:1::/48\",\"node_id\":7}}");
	{
		struct rec_changes ch;
		char err[256];

		ck_assert_int_ge(record_import_legacy(r, err, sizeof(err)), 0);
		ck_assert_int_eq(record_view_update(r, &v, &ch), 0);
		ck_assert(ch.whole);
		same_as_snapshot(r, &v);
		rec_changes_free(&ch);
	}
	gdp_state_free(&prev);
	record_view_free(&v);
	record_close(r);
	rm_tmp();
}
END_TEST

/* What the finds must say, by a scan of the record (the index's reference). */
static void finds_match_scan(struct record *r)
{
	record_lock(r);
	/* every removal so far went by the attachment's place, never a scan */
	ck_assert_uint_eq(record_scans(r), 0);
	for (size_t i = 0; i < record_n_atts(r); i++) {
		struct rec_att *a = record_att(r, i);
		const struct rec_vpc *v = record_find_vpc(r, a->m.vpc);
		size_t same = 0, same_active = 0;

		ck_assert_uint_eq(a->slot, i);
		/* its VPC counts its attachments, and the desired ones (what "still
		 * used?" and the VPC list ask, instead of a scan) */
		for (size_t k = 0; k < record_n_atts(r); k++) {
			same += !strcmp(record_att(r, k)->m.vpc, a->m.vpc);
			same_active += !strcmp(record_att(r, k)->m.vpc, a->m.vpc) && record_att(r, k)->active;
		}
		ck_assert_ptr_nonnull(v);
		ck_assert_uint_eq(v->n_atts, same);
		ck_assert_uint_eq(v->n_active, same_active);

		ck_assert_ptr_eq(record_find_att(r, a->m.vpc, a->m.id), a);
		ck_assert_ptr_eq(record_find_key(r, a->network, a->m.container_id, a->ifname), a);
		ck_assert_ptr_eq(record_find_host(r, a->m.host_ifname), a);
		for (size_t k = 0; k < a->m.n_addrs; k++)
			ck_assert_ptr_eq(record_find_addr(r, a->m.vpc, &a->m.addrs[k]), a);
	}
	record_unlock(r);
}

/* One of the n ids, whether the record holds it now. */
static bool holds(struct record *r, const char *vpc, const char *id)
{
	char host[32], cid[64];
	bool by_att, by_key, by_host;

	snprintf(host, sizeof(host), "gc%s", id);
	snprintf(cid, sizeof(cid), "c-%s", id);
	record_lock(r);
	by_att = record_find_att(r, vpc, id) != NULL;
	by_key = record_find_key(r, "net", cid, "eth0") != NULL;
	by_host = record_find_host(r, host) != NULL;
	record_unlock(r);
	ck_assert_msg(by_att == by_key && by_key == by_host, "%s/%s: the finds disagree", vpc, id);
	return by_att;
}

/* The verbs' finds (an index kept with the attachments) after many reserves,
 * removals, learned addresses and a reload: each finds what a scan finds,
 * and nothing removed. */
START_TEST(t_finds_follow_changes)
{
	enum { N = 400 };
	struct record *r;
	bool in[N] = { 0 };
	unsigned seed = 7;
	char id[16], addr[64];
	struct gdp_prefix p, q;

	mkdir_tmp();
	r = open_rec();
	for (int round = 0; round < 3 * N; round++) {
		int i = (int)((unsigned)rand_r(&seed) % N);
		const char *vpc = i % 2 ? "vpcA" : "vpcB";

		snprintf(id, sizeof(id), "a%d", i);
		if (in[i]) {
			struct rec_att *a;

			record_lock(r);
			a = record_find_att(r, vpc, id);
			ck_assert_ptr_nonnull(a);
			record_remove(r, a);
			record_unlock(r);
			in[i] = false;
		} else {
			snprintf(addr, sizeof(addr), "fd00:a::%x/128", i + 1);
			activate(r, reserve(r, vpc, id, addr));
			in[i] = true;
		}
		if (round % 200 == 199) {
			bool any[2] = { false, false };

			finds_match_scan(r);
			for (int k = 0; k < N; k++) {
				snprintf(id, sizeof(id), "a%d", k);
				ck_assert_int_eq(holds(r, k % 2 ? "vpcA" : "vpcB", id), in[k]);
				any[k % 2] |= in[k];
			}
			/* a VPC goes with its last attachment (the index by VPC says) */
			record_lock(r);
			ck_assert_int_eq(record_find_vpc(r, "vpcB") != NULL, any[0]);
			ck_assert_int_eq(record_find_vpc(r, "vpcA") != NULL, any[1]);
			record_unlock(r);
		}
	}
	/* attachment numbers (counted with the index): unique, and a new one
	 * takes the lowest that no attachment holds */
	{
		bool taken[GDP_ARG_MAX + 1] = { 0 };
		struct rec_att *a;
		uint16_t lowest = 0;

		record_lock(r);
		for (size_t i = 0; i < record_n_atts(r); i++) {
			ck_assert(!taken[record_att(r, i)->m.arg]);
			taken[record_att(r, i)->m.arg] = true;
		}
		record_unlock(r);
		for (uint16_t k = 1; k <= GDP_ARG_MAX && !lowest; k++)
			lowest = taken[k] ? 0 : k;
		a = reserve(r, "vpcA", "extra", "fd00:a::ffff/128");
		ck_assert_uint_eq(a->m.arg, lowest);
		record_lock(r);
		record_remove(r, a);
		record_unlock(r);
		a = reserve(r, "vpcB", "extra2", "fd00:a::fffe/128");
		ck_assert_uint_eq(a->m.arg, lowest); /* given back by the removal */
		record_lock(r);
		record_remove(r, a);
		record_unlock(r);
	}
	/* a learned address is found; the same address in the other VPC is not */
	for (int i = 0; i < N; i++)
		if (in[i]) {
			struct rec_att *a;

			snprintf(id, sizeof(id), "a%d", i);
			ck_assert_int_eq(gdp_prefix_parse("10.1.2.3/32", &p), 0);
			record_lock(r);
			a = record_find_att(r, i % 2 ? "vpcA" : "vpcB", id);
			ck_assert_ptr_null(record_find_addr(r, i % 2 ? "vpcA" : "vpcB", &p));
			ck_assert_uint_ne(record_add_addr(r, a, &p), 0);
			ck_assert_ptr_eq(record_find_addr(r, i % 2 ? "vpcA" : "vpcB", &p), a);
			ck_assert_ptr_null(record_find_addr(r, i % 2 ? "vpcB" : "vpcA", &p));
			/* a removed attachment's addresses go with it */
			snprintf(addr, sizeof(addr), "fd00:a::%x/128", i + 1);
			ck_assert_int_eq(gdp_prefix_parse(addr, &q), 0);
			ck_assert_ptr_eq(record_find_addr(r, i % 2 ? "vpcA" : "vpcB", &q), a);
			/* by pod MAC: a self-addressed one, active, with the MAC it has now */
			{
				static const uint8_t m1[6] = { 2, 0, 0, 0, 0, 1 }, m2[6] = { 2, 0, 0, 0, 0, 2 },
						     h1[6] = { 2, 0, 0, 0, 1, 1 };

				record_set_macs(r, a, m1, h1);
				ck_assert_ptr_null(record_find_guest(r, m1)); /* not self-addressed */
				a->m.guest_addressed = true;
				ck_assert_ptr_eq(record_find_guest(r, m1), a);
				ck_assert_int_eq(memcmp(a->host_mac, h1, 6), 0);
				record_set_macs(r, a, m2, h1); /* the pair re-created */
				ck_assert_ptr_null(record_find_guest(r, m1));
				ck_assert_ptr_eq(record_find_guest(r, m2), a);
				record_deactivate(r, a);
				ck_assert_ptr_null(record_find_guest(r, m2));
				record_activate(r, a);
				ck_assert_ptr_eq(record_find_guest(r, m2), a);
			}
			record_unlock(r);
			break;
		}
	commit(r);
	finds_match_scan(r);
	/* reloaded from disk: the index is rebuilt with the attachments */
	record_close(r);
	r = open_rec();
	finds_match_scan(r);
	for (int k = 0; k < N; k++) {
		snprintf(id, sizeof(id), "a%d", k);
		ck_assert_int_eq(holds(r, k % 2 ? "vpcA" : "vpcB", id), in[k]);
	}
	ck_assert_int_eq(gdp_prefix_parse("10.1.2.3/32", &p), 0);
	record_lock(r);
	ck_assert_ptr_nonnull(record_find_addr(r, "vpcA", &p) ? record_find_addr(r, "vpcA", &p)
							       : record_find_addr(r, "vpcB", &p));
	ck_assert_ptr_null(record_find_host(r, ""));
	ck_assert_ptr_null(record_find_host(r, "gcnone"));
	/* vpcB's attachments all removed, one by one: vpcB goes with its last, vpcA stays */
	for (int k = 0; k < N; k += 2) {
		snprintf(id, sizeof(id), "a%d", k);
		if (!in[k])
			continue;
		ck_assert_ptr_nonnull(record_find_vpc(r, "vpcB"));
		record_remove(r, record_find_att(r, "vpcB", id));
	}
	ck_assert_ptr_null(record_find_vpc(r, "vpcB"));
	ck_assert_ptr_nonnull(record_find_vpc(r, "vpcA"));
	record_unlock(r);
	finds_match_scan(r);
	/* a reserved attachment counts for its VPC, not as desired, until activated */
	{
		struct rec_att *a = reserve(r, "vpcC", "c1", "fd00:c::1/128");
		const struct rec_vpc *v;

		record_lock(r);
		v = record_find_vpc(r, "vpcC");
		ck_assert(v && v->n_atts == 1 && v->n_active == 0);
		record_activate(r, a);
		v = record_find_vpc(r, "vpcC");
		ck_assert(v && v->n_atts == 1 && v->n_active == 1);
		record_activate(r, a); /* twice: counted once */
		ck_assert_uint_eq(record_find_vpc(r, "vpcC")->n_active, 1);
		record_deactivate(r, a);
		ck_assert_uint_eq(record_find_vpc(r, "vpcC")->n_active, 0);
		record_unlock(r);
		finds_match_scan(r);
		record_lock(r);
		record_remove(r, a);
		ck_assert_ptr_null(record_find_vpc(r, "vpcC"));
		record_unlock(r);
	}
	record_close(r);
	rm_tmp();
}
END_TEST

/*
 * A journal of many commits of random ADDs and DELs (each DEL a "del" of
 * an attachment that record.json or an earlier line put, in any order)
 * replays to what was committed: the load's index of the attachments
 * (each line's keys found in O(1), the last one moved into a removed
 * one's place) gives what a search of every attachment gave.
 */
START_TEST(t_journal_replays_random_changes)
{
	enum { N = 300 };
	struct record *r;
	bool in[N] = { 0 };
	unsigned seed = 11;
	char id[16], addr[64], why[512];

	mkdir_tmp();
	r = open_rec();
	for (int i = 0; i < N; i += 3) { /* a third in record.json */
		snprintf(id, sizeof(id), "a%d", i);
		snprintf(addr, sizeof(addr), "fd00:a::%x/128", i + 1);
		activate(r, reserve(r, i % 2 ? "vpcA" : "vpcB", id, addr));
		in[i] = true;
	}
	commit(r);
	for (int c = 0; c < 60; c++) {
		for (int k = 0; k < 15; k++) {
			int i = (int)((unsigned)rand_r(&seed) % N);
			const char *vpc = i % 2 ? "vpcA" : "vpcB";

			snprintf(id, sizeof(id), "a%d", i);
			if (in[i]) {
				record_lock(r);
				record_remove(r, record_find_att(r, vpc, id));
				record_unlock(r);
			} else {
				snprintf(addr, sizeof(addr), "fd00:a::%x/128", i + 1);
				activate(r, reserve(r, vpc, id, addr));
			}
			in[i] = !in[i];
		}
		commit(r);
	}
	record_close(r);
	ck_assert_uint_gt(count_lines_of(RECORD_JOURNAL_FILE), 50); /* replayed, not compacted */
	r = open_rec();
	ck_assert_ptr_null(record_held(r, why, sizeof(why)));
	finds_match_scan(r);
	for (int k = 0; k < N; k++) {
		snprintf(id, sizeof(id), "a%d", k);
		ck_assert_msg(holds(r, k % 2 ? "vpcA" : "vpcB", id) == in[k], "a%d: %s after the replay", k,
			      in[k] ? "missing" : "still there");
	}
	record_close(r);
	rm_tmp();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("record");
	TCase *tc = tcase_create("record");

	/* t_journal_compacts commits 600 times, each one fdatasync'd: 4-5 ms
	 * apiece on this shared machine's disk at times, past check's 4 s */
	tcase_set_timeout(tc, 60);

	tcase_add_test(tc, t_allocate_commit_reload);
	tcase_add_test(tc, t_egress_shard_kept);
	tcase_add_test(tc, t_migrates_legacy_files);
	tcase_add_test(tc, t_damaged_record_is_held);
	tcase_add_test(tc, t_remotes_replaced_and_filtered);
	tcase_add_test(tc, t_remotes_file_parse);
	tcase_add_test(tc, t_remotes_streamed_roundtrip);
	tcase_add_test(tc, t_journal_appends_what_changed);
	tcase_add_test(tc, t_journal_torn_damaged_stale);
	tcase_add_test(tc, t_journal_compacts);
	tcase_add_test(tc, t_journal_in_place);
	tcase_add_test(tc, t_reads_version_1);
	tcase_add_test(tc, t_view_follows_record);
	tcase_add_test(tc, t_finds_follow_changes);
	tcase_add_test(tc, t_journal_replays_random_changes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return gt_run(suite());
}
