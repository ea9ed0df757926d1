/*
 * A TCP pass-through proxy on 127.0.0.1 for e2e tests of common/: the client
 * under test connects through it, and the test can cut every connection and
 * refuse new ones (a network partition between one client and a real API
 * server) and later restore it. Bytes pass unchanged (TLS end to end).
 */
#ifndef GALACTIC_TESTS_COMMON_PROXY_H
#define GALACTIC_TESTS_COMMON_PROXY_H

struct tproxy;

/* upstream_port on 127.0.0.1; returns NULL on error. */
struct tproxy *tproxy_start(int upstream_port);
int tproxy_port(const struct tproxy *p);
/* Closes all connections; new ones are closed at once until restored. */
void tproxy_cut(struct tproxy *p);
void tproxy_restore(struct tproxy *p);
/*
 * Black-holes the connections open now: they stay open but no byte moves
 * (a dead peer behind a NAT or a dropped route). New connections work.
 */
void tproxy_freeze(struct tproxy *p);
/*
 * A fault in the middle of the server's next message, on the first of the
 * connections open now to carry `records` whole TLS records from the server
 * after this call: those are passed (the client can decrypt them: a JSON
 * event larger than a record arrives cut in its middle), then that
 * connection is closed (tproxy_cut_after_records) or black-holed
 * (tproxy_stall_after_records: open, no byte moves either way) and the
 * others are disarmed. Returns at once; tproxy_faults counts the faults so far.
 */
void tproxy_cut_after_records(struct tproxy *p, int records);
void tproxy_stall_after_records(struct tproxy *p, int records);
int tproxy_faults(struct tproxy *p);
/* Connections accepted and passed upstream so far. */
int tproxy_accepted(struct tproxy *p);
void tproxy_stop(struct tproxy *p);

#endif
