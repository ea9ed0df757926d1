# common/: the Kubernetes client and controller toolkit shared by the agent and
# the translator (docs/common.md).
COMMON_SRCS := common/log.c common/fileio.c common/gmap.c common/json.c common/yaml.c \
	common/kube_config.c common/kube_client.c common/kube_watch.c \
	common/kube_store.c common/backoff.c common/informer.c common/workqueue.c \
	common/leader.c common/metrics.c common/kube_core_event.c common/status_writer.c \
	common/mac.c
COMMON_LDLIBS := curl jansson mhd yaml pthread m
LIBDEPS_gcommon := yaml z

$(eval $(call lib,gcommon,$(COMMON_SRCS)))
# common/mac.c alone, for what links no libgcommon (galactic-cni and the tests
# and fuzzers of libgcni only): libc only, so the plugin's DT_NEEDED stays
# glibc's. A binary links libgmac or libgcommon, never both (a fuzzer would
# get mac.c twice).
$(eval $(call lib,gmac,common/mac.c))

$(eval $(call unit_test,test_common_watch,tests/unit/test_common_watch.c,gcommon,$(COMMON_LDLIBS)))
$(eval $(call unit_test,test_common_config,tests/unit/test_common_config.c,gcommon,$(COMMON_LDLIBS)))
$(eval $(call unit_test,test_common_workqueue,tests/unit/test_common_workqueue.c,gcommon,$(COMMON_LDLIBS)))
$(eval $(call unit_test,test_common_store,tests/unit/test_common_store.c,gcommon,$(COMMON_LDLIBS)))
$(eval $(call unit_test,test_common_http,tests/unit/test_common_http.c,gcommon,$(COMMON_LDLIBS)))
$(eval $(call unit_test,test_common_core_event,tests/unit/test_common_core_event.c,gcommon,$(COMMON_LDLIBS)))
$(eval $(call unit_test,test_common_json,tests/unit/test_common_json.c,gcommon,$(COMMON_LDLIBS)))
$(eval $(call unit_test,test_common_metrics,tests/unit/test_common_metrics.c,gcommon,$(COMMON_LDLIBS)))
# common/mac.h: MAC addresses as text (format, strict parse).
$(eval $(call unit_test,test_common_mac,tests/unit/test_common_mac.c,gmac,))
# common/grow.h: the one grow-by-doubling helper.
$(eval $(call unit_test,test_common_grow,tests/unit/test_common_grow.c,,))
# common/leader.h: the three states of a term (leading, renewing late, not leading).
$(eval $(call unit_test,test_common_leader_term,tests/unit/test_common_leader_term.c,gcommon,$(COMMON_LDLIBS)))

COMMON_E2E_LIB := tests/lib/cp.c tests/lib/common_e2e.c tests/lib/common_proxy.c
$(eval $(call e2e_test,test_common_client,tests/e2e/test_common_client.c $(COMMON_E2E_LIB),gcommon,$(COMMON_LDLIBS)))
$(eval $(call e2e_test,test_common_informer,tests/e2e/test_common_informer.c $(COMMON_E2E_LIB),gcommon,$(COMMON_LDLIBS)))
$(eval $(call e2e_test,test_common_leader,tests/e2e/test_common_leader.c $(COMMON_E2E_LIB),gcommon,$(COMMON_LDLIBS)))

$(eval $(call fuzzer,fuzz_watch,tests/fuzz/fuzz_watch.c,gcommon,$(COMMON_LDLIBS)))
$(eval $(call bench,bench_informer,tests/bench/bench_informer.c tests/bench/bench.c tests/lib/cp.c,gcommon,$(COMMON_LDLIBS)))
$(eval $(call fuzzer,fuzz_kubeconfig,tests/fuzz/fuzz_kubeconfig.c,gcommon,$(COMMON_LDLIBS)))
$(eval $(call fuzzer,fuzz_informer_list,tests/fuzz/fuzz_informer_list.c,gcommon,$(COMMON_LDLIBS)))
$(eval $(call fuzzer,fuzz_lease,tests/fuzz/fuzz_lease.c,gcommon,$(COMMON_LDLIBS)))
