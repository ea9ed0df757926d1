/*
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go does it.
 *
 * A background thread tries to acquire the lease every retry period
 * (jittered): create it if absent, or take it over once the holder has not
 * renewed for lease_duration as observed on our own clock. Writes are PUTs
 * carrying the resourceVersion we read, so of two racing candidates one gets
 * 409 and loses. While leading it renews every retry period; if no renewal
 * succeeds within renew_deadline it stops leading.
 *
 * A term has three states (leader_state()): LEADER_LEADING while the last
 * successful renewal is younger than renew_deadline; LEADER_RENEWING_LATE
 * from renew_deadline until lease_duration, while renewals are still tried
 * (a late one that succeeds makes the term LEADING again, with no
 * on_started); LEADER_NOT_LEADING otherwise. No renewal by lease_duration
 * (when another candidate may take over) ends the term: on_stopped.
 * leader_is_leader() is LEADER_LEADING, so a leader that cannot renew stops
 * writing renew_deadline after its last renewal, before anyone else may take
 * over. Check it before every write; work refused while RENEWING_LATE must be
 * looked at again, not dropped (nothing re-queues it when the renewal
 * succeeds).
 *
 * Callbacks run on the election thread and must return quickly.
 * leader_stop() releases the lease (empty holder) if held: a clean shutdown
 * hands over at once instead of after lease_duration.
 */
#ifndef GALACTIC_COMMON_LEADER_H
#define GALACTIC_COMMON_LEADER_H

#include "common/kube_client.h"

#include <stdbool.h>

/*
 * What the elector holds, as client-go's resourcelock.Interface: by default
 * (leader_opts.lock NULL) the Lease ns/name through the client. Another
 * lock (a test's) gives every attempt's outcome itself; leader_holder then
 * stays "". Borrowed: it outlives the elector.
 */
struct leader_lock {
	bool (*try_acquire_or_renew)(void *ud); /* one attempt: true when held now */
	void (*release)(void *ud);              /* leader_stop while holding */
	void *ud;
};

struct leader_opts {
	const char *ns, *name, *identity;
	const struct leader_lock *lock; /* NULL: the Lease */
	double lease_duration_s; /* 0: 15 */
	double renew_deadline_s; /* 0: 10 */
	double retry_period_s;   /* 0: 2 */
	void (*on_started)(void *ud);
	void (*on_stopped)(void *ud);
	void (*on_new_leader)(const char *identity, void *ud); /* holder changed (may be us) */
	void *ud;
};

struct leader;

/* kc borrowed; strings copied. */
struct leader *leader_new(struct kube_client *kc, const struct leader_opts *o);
int leader_start(struct leader *l);

enum leader_state {
	LEADER_NOT_LEADING,   /* no term, or its renewals stopped past lease_duration */
	LEADER_RENEWING_LATE, /* last renewal older than renew_deadline, still tried: write nothing, keep the work */
	LEADER_LEADING,       /* last renewal younger than renew_deadline: may write */
};
enum leader_state leader_state(struct leader *l);
/* leader_state(l) == LEADER_LEADING. */
bool leader_is_leader(struct leader *l);
/* Holder last observed (copied into buf; "" if none). */
void leader_holder(struct leader *l, char *buf, size_t n);
/* Stops the thread; releases the lease if we hold it. */
void leader_stop(struct leader *l);
void leader_free(struct leader *l);

/*
 * What a Lease says, read defensively (every candidate writes it): rv,
 * holder ("" when none) and acquire (NULL when none) are borrowed from
 * lease; a leaseDurationSeconds outside 1..INT32_MAX reads as def_duration_s,
 * a leaseTransitions outside 0..INT32_MAX as 0.
 */
struct lease_view {
	const char *rv, *holder, *acquire;
	double duration_s;
	long transitions;
};
void leader_lease_read(const json_t *lease, double def_duration_s, struct lease_view *v);
/* The count after a takeover: +1, back to 0 past INT32_MAX (the API's int32). */
long leader_next_transitions(long transitions);
/* The coordination.k8s.io/v1 Lease a candidate writes (rv NULL or "": none). */
json_t *leader_lease_body(const char *ns, const char *name, const char *rv, const char *holder,
			  int duration_s, const char *acquire, const char *renew, long transitions);

/*
 * A term on the clock, apart from the API (what leader_state() reads; the
 * election thread drives it; monotonic seconds).
 */
struct leader_term {
	bool held;
	double renewed_at; /* start of the last successful acquire or renewal */
	double renew_deadline_s, lease_duration_s;
};
/* Acquired with an attempt that started at `at`. */
void leader_term_begin(struct leader_term *t, double at);
enum leader_state leader_term_state(const struct leader_term *t, double now);
/*
 * A renewal attempt that started at `started` ended at `now`, ok or not; the
 * state after. One that ends past lease_duration since the last success ends
 * the term (LEADER_NOT_LEADING, held false) whatever it says: another
 * candidate may have taken over by then.
 */
enum leader_state leader_term_renewed(struct leader_term *t, double started, double now, bool ok);

/* RFC 3339 with microseconds, the format of Lease times. */
void leader_format_microtime(double epoch_s, char *buf, size_t n);

#endif
