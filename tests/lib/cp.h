/*
 * The test control plane from C: a real etcd + kube-apiserver started by
 * tests/controlplane/cp.sh, torn down by cp_down() or, if the test process
 * dies, by cp.sh's watchdog.
 */
#ifndef GALACTIC_TESTS_CP_H
#define GALACTIC_TESTS_CP_H

struct cp {
	char dir[256];        /* private temp dir holding pki/, logs, kubeconfig */
	char apiserver[128];  /* https://127.0.0.1:PORT */
	char etcd[128];       /* http://127.0.0.1:PORT */
	char kubeconfig[320];
	char ca[320];         /* CA of the serving certificate */
	char token[128];      /* admin bearer token (system:masters) */
	char bin[256];        /* directory with kubectl, etcdctl, helm */
};

/* Starts a control plane; returns 0 or -1 with a message on stderr. */
int cp_up(struct cp *cp);
/* Same, with extra `cp.sh up` flags (e.g. "--controller-manager"). */
int cp_up_with(struct cp *cp, const char *flags);
void cp_down(struct cp *cp);
/* Runs `cp.sh VERB DIR ARGS` (e.g. "restart-apiserver", "etcdctl compact 5",
 * "start-controller-manager" once the CRDs its garbage collector must see exist). */
int cp_ctl(const struct cp *cp, const char *verb_and_args);

#endif
