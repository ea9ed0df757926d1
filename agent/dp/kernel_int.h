/*
 * The kernel backend's own structs and the functions its files share
 * (agent/dp/kernel.c names the files and what the kernel holds). Internal:
 * nothing outside agent/dp/kernel*.c includes it; the backend's interface
 * is agent/dp/backend.h.
 */
#ifndef GALACTIC_AGENT_DP_KERNEL_INT_H
#define GALACTIC_AGENT_DP_KERNEL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/dp/backend.h"
#include "agent/dp/egress.h"
#include "agent/dp/steer.h"
#include "agent/nl/objects.h"
#include "common/grow.h"

struct kb {
	struct gdp_backend base;
	struct gnl_sock *nl;
	char *netns;
	uint8_t proto;
	uint32_t tmin, tmax, rule_prio;
	unsigned batch, max_retries;
	struct gdp_caps caps;
	char clsact_on[GDP_IFNAME_MAX + 1]; /* uplink that has its clsact */
	char *egress_text;      /* the nftables program last applied (NULL: none) */
	char *egress_listing;   /* the table as listed right after that apply (stateless) */
	bool egress_clean;      /* no galactic_egress table is left (checked once when egress is off) */
	struct gds_nft *nft;    /* libnftables in the backend's netns: pod steering (dp/steer.h) */
	/* What the last full reconcile verified, for delta applies. */
	bool full_ok;                       /* a full apply has run */
	uint32_t upidx;                     /* the uplink's ifindex then */
	char upname[GDP_IFNAME_MAX + 1];
	uint32_t *ok_tables;                /* VPC tables that passed their checks */
	size_t n_ok_tables;
	/* Counters (tests, docs): what each kind of pass cost. */
	unsigned long n_full, n_delta, n_dumps, n_delta_ops;
	unsigned long n_dump_intr; /* dump tries the kernel interrupted (NLM_F_DUMP_INTR), all passes */
	unsigned last_intr;        /* of the last dump that failed: how many tries were interrupted */
};

#define VEC(T) struct { T *v; size_t n, cap; }
#define VEC_PUSH(vec, item)                                                     \
	({                                                                      \
		int rc_ = G_GROW((vec).v, (vec).cap, (vec).n, 64);              \
		if (!rc_)                                                       \
			(vec).v[(vec).n++] = (item);                            \
		rc_;                                                            \
	})

/* What a pass keeps of the dump: everything but the routes, which are
 * compared with the desired ones as they arrive (route_cb) and not kept. */
struct snap {
	VEC(struct gnl_link) links;
	VEC(struct gnl_rule) rules;
	VEC(struct gnl_neigh) neighs;
	VEC(struct gnl_ifaddr) addrs;
};

struct rhash {
	int32_t *slot;  /* index + 1, 0 = empty */
	size_t mask;
};

/*
 * Index of the dumped rules, neighbours, addresses and links by key, so the
 * diff is linear in what the node holds (a linear search per wanted object
 * was quadratic: 1,000 attachments = millions of rule comparisons a pass).
 * Entries of one hash are met in insertion order: the lowest index first,
 * as the linear search found them.
 */
struct khash {
	uint64_t *h;
	int32_t *ix;    /* index + 1, 0 = empty */
	size_t mask;
};

#define KH_FOREACH(t, hv, j)                                                           \
	for (size_t kh_i_ = (size_t)(hv) & (t)->mask; (t)->ix[kh_i_]; kh_i_ = (kh_i_ + 1) & (t)->mask) \
		if ((t)->h[kh_i_] == (hv) && ((j) = (size_t)(t)->ix[kh_i_] - 1, 1))

enum okind { O_ROUTE, O_RULE, O_NEIGH, O_ADDR, O_LINK };
enum verb { V_ADD, V_REPLACE, V_DEL, V_SET };

/* A desired object other than a route (routes: plan.wroutes). */
struct want {
	enum okind k;
	struct gdp_result *res;
	union {
		struct gnl_rule ru;
		struct gnl_neigh n;
		struct gnl_ifaddr a;
		struct gnl_link l;
	} o;
};

/* Where an op's route is, when obj is NULL (a full pass's routes are not copied into ops). */
enum osrc { S_OBJ, S_DESIRED, S_LEFT };

struct op {
	enum verb verb;
	enum okind k;
	struct gdp_result *res;
	const void *obj;        /* S_OBJ */
	uint8_t src;            /* enum osrc */
	size_t w;               /* S_DESIRED: desired route; S_LEFT: leftover (struct pass) */
};

/* A host veth's element of the steering map, tied to its attachment's result. */
struct steer_want {
	struct gds_pod pod;
	struct gdp_result *res;
};

struct plan {
	VEC(struct want) wants;
	VEC(struct steer_want) steer;   /* desired (or, in a delta's removals, departing) elements */
	char *steer_text;               /* the steering transaction execute runs (NULL: none) */
	VEC(struct gdp_result *) steer_res; /* whose elements it writes (a failure is theirs) */
	unsigned long steer_added, steer_removed;
	VEC(struct gnl_route) wroutes;  /* desired routes but the remotes' (those are built on demand) */
	VEC(struct gdp_result *) wroute_res;
	VEC(struct op) ops;
	VEC(uint32_t) prot_tables;      /* tables of invalid VPCs: leave as they are */
	VEC(uint32_t) prot_ifindex;     /* devices of invalid attachments */
};

/* A dumped route of ours nobody wants: what deleting it needs. */
struct rleft {
	struct gnl_addr dst;
	uint32_t table, priority, oif;
	uint8_t family, protocol, type, scope;
};

/* A desired route found as someone else's route. */
struct fgn {
	size_t j;
	uint8_t protocol;
};

/* A VPC table found holding someone else's route (the pass is planned again without it). */
struct busy {
	uint32_t table;
	char msg[320];
};

typedef VEC(struct busy) busy_vec;

/*
 * What a desired route found in the dump (struct pass, wst). The dump is
 * compared with the desired routes as it arrives and not kept: at 100,000
 * remote routes a copy of it, or of the desired routes, is 25 MB.
 */
enum {
	W_NONE,         /* not (yet) seen: add */
	W_EQUAL,        /* seen, ours and equal */
	W_DIFF,         /* seen, ours, different: replace */
	W_FOREIGN,      /* seen, not ours: refused */
	W_DUP,          /* a second desired route with the same key: refused */
	W_PROT,         /* the key of an invalid remote: whatever is there stays */
	W_SKIP,         /* its object failed: left as it is */
};

/* One reconcile pass: the model, the dump, the plan, the results. */
struct pass {
	struct kb *k;
	const struct gdp_state *d;
	struct gdp_results *res;
	struct gdp_result *node_res;
	struct snap s;
	struct plan p;
	struct gdp_result **vres, **ares;         /* results by model index */
	bool *vok;                                /* VPCs that passed their checks */
	uint32_t upidx;
	struct khash names;                       /* dumped links by name */
	struct gdp_result *eres;                  /* the egress shard's result (NULL: no shard) */
	unsigned *vegress;                        /* per VPC: families routed toward the shard */
	struct gde_vpc *evpcs;                    /* the shard's VPCs (nftables) */
	size_t n_evpcs;
	struct gde_shard shard;
	/* Desired routes: j < n_wr are p.wroutes, n_wr + i is remote i's route,
	 * built on demand from the model (remote_route) and never copied. */
	size_t n_wr, n_des;
	uint8_t *wst;                             /* per desired route: W_* */
	struct rhash wh;                          /* desired routes by key */
	uint32_t *rvpc;                           /* remote -> its VPC's index + 1 (0: no such VPC) */
	/* Remotes' results exist only for the remotes that failed (the others
	 * are counted in res->remotes_ok): at 100,000 remotes 40 MB otherwise. */
	struct gdp_result **rres;                 /* remote -> its result (allocated on the first failure) */
	size_t n_rres;
	VEC(struct rleft) left;                   /* dumped routes of ours nobody wants */
	VEC(struct fgn) foreign;                  /* desired routes found as someone else's (W_FOREIGN) */
	uint32_t *vtab;                           /* tables of the VPCs that passed their checks, sorted */
	size_t n_vtab;
	busy_vec *busy;                           /* VPC tables used by something else (kept across plans) */
	bool busy_new;                            /* the dump found a table not in busy before */
	int err;                                  /* allocation failure inside the dump callback */
	struct gdp_locals locals;                 /* the attachments' addresses, for the remotes' checks */
};

/* kernel_snap.c: the dump, the key hashes */
void kb_snap_free(struct snap *s);
void kb_dump_failed(struct kb *k, struct gdp_results *res, struct gdp_result *node_res, const char *what,
		    int rc);
int kb_snapshot(struct kb *k, struct snap *s);
uint64_t kb_route_key_hash(const struct gnl_route *r);
int kb_rhash_init(struct rhash *h, size_t n);
long kb_rhash_insert(struct rhash *h, const struct gnl_route *base, size_t idx);
long kb_rhash_find(const struct rhash *h, const struct gnl_route *base, const struct gnl_route *r);
uint64_t kb_fnv(uint64_t h, const void *p, size_t n);
int kb_kh_init(struct khash *t, size_t n);
void kb_kh_put(struct khash *t, uint64_t hv, size_t idx);
void kb_kh_free(struct khash *t);
uint64_t kb_rule_hash(const struct gnl_rule *r);
uint64_t kb_neigh_hash(const struct gnl_neigh *n);
uint64_t kb_ifaddr_hash(const struct gnl_ifaddr *a);
uint64_t kb_link_hash(uint32_t ifindex);

/* kernel_plan.c: the wanted objects, a pass's desired routes */
void kb_plan_free(struct plan *p);
int kb_want_route(struct plan *p, struct gdp_result *res, const struct gnl_route *r);
bool kb_u32_in(const uint32_t *v, size_t n, uint32_t x);
int kb_u32_cmp(const void *a, const void *b);
void kb_to_gaddr(const struct gdp_prefix *p, struct gnl_addr *a);
void kb_v6_addr(const struct in6_addr *x, uint8_t len, struct gnl_addr *a);
void kb_base_route(struct kb *k, struct gnl_route *r, int family, uint32_t table);
int kb_plan_attachment(struct kb *k, struct plan *p, const struct gdp_state *d,
		       const struct gdp_attachment *a, const struct gdp_vpc *v,
		       const struct gnl_link *hl, struct gdp_result *res);
uint64_t kb_name_hash(const char *name);
const struct gnl_link *kb_pass_link(const struct pass *ps, const char *name);
const struct gnl_route *kb_des_route(const struct pass *ps, size_t j, struct gnl_route *tmp);
struct gdp_result *kb_des_res(struct pass *ps, size_t j);
bool kb_des_failed(const struct pass *ps, size_t j);
long kb_dhash_insert(struct pass *ps, size_t j);
long kb_dhash_find(const struct pass *ps, const struct gnl_route *r, struct gnl_route *tmp);
const struct gnl_route *kb_op_route(const struct pass *ps, const struct op *o, struct gnl_route *tmp);
struct gdp_result *kb_op_res(struct pass *ps, const struct op *o, struct gdp_result *node_res);
int kb_plan(struct pass *ps);

/* kernel_diff.c: the dump against the plan */
int kb_add_op(struct plan *p, enum verb v, enum okind k, struct gdp_result *res, const void *obj);
int kb_diff(struct pass *ps);
int kb_steer_diff(struct pass *ps, bool dry);

/* kernel_exec.c: the ops, the steering and egress programs, the netns helpers */
void kb_describe(const struct pass *ps, const struct op *o, char *buf, size_t n);
int kb_execute(struct kb *k, struct plan *p, struct pass *ps, struct gdp_results *res,
	       struct gdp_result *node_res);
int kb_in_netns(const char *netns, int (*fn)(void *), void *arg, char *err, size_t errlen);
void kb_egress_nft(struct kb *k, struct gdp_result *eres, const struct gde_shard *sh,
		   const struct gde_vpc *v, size_t n, bool dry, int *pending);
int kb_write_sysctl(const char *path, const char *val);

/* kernel_delta.c: the backend's apply_delta (backend.h) */
int kb_apply_delta(struct gdp_backend *b, const struct gdp_state *d, const struct gdp_delta *dl,
		   struct gdp_results *res);

#endif
