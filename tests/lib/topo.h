/*
 * Network-namespace topology for kernel tests (C side of tests/lib/topo.sh):
 * N nodes on a bridged fabric, pods behind host veths, two VPCs whose pods
 * use the same addresses, and the agent's state directory for every node.
 * Names carry the creating pid; topo_down (also run at exit of the creating
 * process, even after a failed assertion) removes everything.
 */
#ifndef GALACTIC_TESTS_TOPO_H
#define GALACTIC_TESTS_TOPO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define TOPO_MAX_NODES 8
#define TOPO_MAX_PODS  32

/* The two test VPCs: same prefixes, different tables and decap arguments. */
#define TOPO_VPC_A "vpcA"
#define TOPO_VPC_B "vpcB"
#define TOPO_TABLE_A 16385
#define TOPO_TABLE_B 16386

struct topo_pod {
	char name[32];          /* netns is <prefix>-<name> */
	int node;
	char vpc[16];
	char hostif[16];
	char a6[64], a4[32];
	char mac[18];
	uint16_t arg;           /* attachment argument on its node */
};

struct topo {
	char prefix[24];
	int nodes;
	char dir[256];          /* state dirs: <dir>/n<i> */
	struct topo_pod pods[TOPO_MAX_PODS];
	int npods;
	pid_t agent[TOPO_MAX_NODES + 1];
	pid_t owner;
	char agent_bin[400];    /* the agent binary; "" = <top>/build/rel/bin/galactic-agent */
};

/* Shell command (printf-style); returns its exit status (or -1). */
int topo_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, capturing stdout (trimmed) into out. */
int topo_out(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

int topo_up(struct topo *t, int nodes);
void topo_down(struct topo *t);
/* Adds a pod in vpc (TOPO_VPC_A/B) on node; returns its index or -1. */
int topo_add_pod(struct topo *t, int node, const char *name, const char *vpc, const char *a6,
		 const char *a4);
const struct topo_pod *topo_pod(const struct topo *t, const char *name);
/*
 * Adds the "internet" host <prefix>-inet on the fabric (2001:db8:f::ff/64,
 * 203.0.113.254/24; documentation ranges, never routed outside the test) and
 * gives every node 203.0.113.<i>/24 on up0 and default routes toward it.
 */
int topo_add_internet(struct topo *t);
/*
 * A TCP echo server on the internet host (topo_add_internet), listening on
 * [::]:port (IPv4 too): answers each of conns connections with one line,
 * "<what it read> <peer address> <peer port>\n", then exits (at the latest
 * after 20 s). Returns its pid once it listens, or -1.
 */
pid_t topo_echo_server(const struct topo *t, int conns, int port);
/*
 * Writes <dir>/n<node>/state.json (both VPCs, the node's pods) and
 * remotes.json (the other nodes' pods of the same VPC: IPv6 to the VPC decap
 * SID, IPv4 to the pod's End.DX4 SID) plus extra_remotes extra /128s in vpcA
 * pointing at node 2 (for scale tests).
 */
int topo_write_state(const struct topo *t, int node, unsigned extra_remotes);
/* "<dir>/n<node>", "<prefix>-n<node>" */
const char *topo_state_dir(const struct topo *t, int node, char *buf, size_t n);
const char *topo_node_ns(const struct topo *t, int node, char *buf, size_t n);

/* Starts galactic-agent for node (daemon, --interval 1); logs to <state dir>/agent.log. */
pid_t topo_agent_start(struct topo *t, int node, const char *extra_args);
/* Current agent pid of node (from <state dir>/agent.pid), 0 if none. */
pid_t topo_agent_pid(const struct topo *t, int node);
/* Signals it and waits (SIGTERM: clean exit; SIGKILL: crash). Returns the wait status. */
int topo_agent_stop(struct topo *t, int node, int sig);

/* Integer field of the agent's <state dir>/status.json for node (-1 when absent). */
long topo_status_int(const struct topo *t, int node, const char *key);
/* Waits until node's agent finished at least n reconciles with rc 0; 0 or -1 on timeout. */
int topo_wait_reconciled(const struct topo *t, int node, long n, double timeout_s);

/* Counter from /proc/net/snmp or snmp6 inside a pod's netns ("Icmp6InEchos", "Icmp:InEchos", "Tcp:InSegs"). */
long topo_snmp(const struct topo *t, const char *pod, const char *counter);
/* rx_packets of the pod's eth0. */
long topo_rx_packets(const struct topo *t, const char *pod);

#endif
