/*
 * The galactic-cni network configuration (the per-attachment stanza the VPC
 * operator renders into the attachment definition, passed by the runtime on
 * stdin) and the CNI_* environment. Two shapes are read:
 *   canonical: upstream's stanza (vpc, vpcattachment, namespace, mtu,
 *              ipam{type galactic-ipam, addresses[{address, gateway?}]});
 *              no ipam = the guest addresses itself;
 *   legacy:    galactic-cni's own earlier shape (top-level ipFamilies +
 *              addresses), kept for existing records and tests.
 * Every known field is checked for type, range and consistency; unknown keys
 * are ignored, as upstream's plugin does; every error names the field and
 * the value. The same parser runs in the plugin and again in the agent.
 * Field reference: docs/cni.md.
 */
#ifndef GALACTIC_CNI_CONFIG_H
#define GALACTIC_CNI_CONFIG_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/cni/cni.h"

#define CNI_CONF_MAX_BYTES (1u << 20)
#define CNI_NAME_MAX 253
#define CNI_MAX_ADDRS 8 /* GDP_ADDRS_MAX */
#define CNI_IPAM_TYPE "galactic-ipam"
#define CNI_MAX_ROUTES 64
#define CNI_MAX_VALID_ATTACHMENTS 65536
#define CNI_CONTAINERID_MAX 127 /* GDP_CONTAINER_MAX */
#define CNI_IFNAME_MAX 15
#define CNI_NETNS_MAX 4095
#define CNI_SOCKET_MAX 107 /* sun_path minus the NUL */
#define CNI_MTU_MIN_V6 1280
#define CNI_MTU_MIN_V4 576
#define CNI_MTU_MAX 9000

enum { CNI_FAM_V4 = 1u << 0, CNI_FAM_V6 = 1u << 1 };

struct cni_ip {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
};

struct cni_addr {
	struct cni_ip ip;
	int plen;
	int has_gw;
	struct cni_ip gw;
	/* canonical IPv6 shorter than /128: a delegated block; the whole prefix
	 * (ip masked to plen) is routed to the pod, which owns it */
	int block;
};

struct cni_route {
	struct cni_ip dst; /* network address: host bits zero */
	int plen;
	int has_gw;
	struct cni_ip gw;
};

struct cni_conf {
	enum cni_ver ver;
	char name[CNI_NAME_MAX + 1];
	char type[64];
	int legacy;          /* addresses came from top-level ipFamilies/addresses */
	int ipam;            /* canonical: an ipam block gave the addresses */
	char ns[254];        /* canonical "namespace" (where upstream reads its NAD); recorded only */
	char vpc_s[12];
	uint64_t vpc;
	char att_s[12];
	uint64_t att;
	unsigned families;  /* CNI_FAM_*: the families the VPC carries */
	struct cni_addr addrs[CNI_MAX_ADDRS];
	int naddrs;
	struct cni_route routes[CNI_MAX_ROUTES];
	int nroutes;
	int mtu;             /* 0: the agent's default (uplink MTU - encap) */
	unsigned egress;     /* CNI_FAM_*: families declared for internet egress */
	char agent_socket[CNI_SOCKET_MAX + 1]; /* "" = default */
	int timeout_s;       /* plugin <-> agent deadline */
	json_t *dns;         /* owned; NULL if absent */
	json_t *prev_result; /* owned; NULL if absent */
	/* GC only: cni.dev/valid-attachments (or the legacy cni.dev/attachments).
	 * has_valid 0: the runtime named no valid set (libcni sends neither key
	 * when it has no GC args): nothing may be collected. JSON null = []. */
	int has_valid;
	struct cni_valid_att {
		char container_id[CNI_CONTAINERID_MAX + 1];
		char ifname[CNI_IFNAME_MAX + 1];
	} *valid;
	size_t nvalid;
};

/*
 * Parses and validates a network configuration for command cmd.
 * Returns 0, or -1 with e filled (code 6 for undecodable JSON, 1 for an
 * unsupported cniVersion, 2 for a field this plugin does not support, 7 for
 * an invalid value). On error c holds nothing to free.
 */
int cni_conf_parse(const char *buf, size_t len, enum cni_cmd cmd,
		   struct cni_conf *c, struct cni_err *e);
int cni_conf_parse_json(json_t *root, enum cni_cmd cmd, struct cni_conf *c,
			struct cni_err *e);
void cni_conf_free(struct cni_conf *c);
/* The normalized configuration as JSON (parseable by cni_conf_parse_json). */
json_t *cni_conf_to_json(const struct cni_conf *c);

/* The CNI_* environment of one invocation. */
struct cni_env {
	enum cni_cmd cmd;
	char container_id[CNI_CONTAINERID_MAX + 1];
	char netns[CNI_NETNS_MAX + 1];
	char ifname[CNI_IFNAME_MAX + 1];
	char pod_namespace[64];
	char pod_name[254];
	char pod_uid[64];
};

/*
 * Reads and validates the environment through getenv_fn (getenv in the
 * plugin; a table in tests). Returns 0, or -1 with e (code 4).
 */
int cni_env_parse(const char *(*getenv_fn)(const char *, void *), void *arg,
		  struct cni_env *env, struct cni_err *e);
/* Validators shared with the agent, which re-checks what it receives. */
int cni_ifname_valid(const char *s, const char **why);
int cni_container_id_valid(const char *s, const char **why);
int cni_args_parse(const char *s, struct cni_env *env, struct cni_err *e);

/* "10.1.0.5" / "fd00::5" into buf (>= 46 bytes). */
const char *cni_ip_str(const struct cni_ip *ip, char *buf, size_t len);
int cni_ip_parse(const char *s, struct cni_ip *ip);
/* "a.b.c.d/n": requires a prefix length. */
int cni_cidr_parse(const char *s, struct cni_ip *ip, int *plen);

#endif
