# Suites of the foundation: the test control plane itself.
$(eval $(call e2e_test,test_controlplane,tests/e2e/test_controlplane.c tests/lib/cp.c tests/lib/kreq.c,,curl jansson))
$(eval $(call e2e_test,test_crds,tests/e2e/test_crds.c tests/lib/cp.c tests/lib/crds.c tests/lib/kreq.c,,curl jansson))
# The daemons (release builds) under valgrind: the agent serving real CNI
# requests, the translator on the real API server.
$(eval $(call netns_test,test_valgrind,tests/netns/test_valgrind.c tests/lib/topo.c tests/lib/cp.c tests/lib/crds.c tests/lib/kreq.c tests/lib/daemon.c tests/lib/translator_e2e.c,gdp gnl,jansson nl curl))
build/san/tests/test_valgrind: | build/rel/bin/galactic-agent build/rel/bin/galactic-cni build/rel/bin/galactic-translator
# The Helm chart's RBAC and node-binding admission policy, with real tokens.
$(eval $(call e2e_test,test_chart,tests/e2e/test_chart.c tests/lib/cp.c tests/lib/crds.c tests/lib/kreq.c,,curl jansson))
# galactic-agent on the bpf backend: traffic, restarts under ping, back to kernel.
$(eval $(call netns_test,test_agent_bpf,tests/netns/test_agent_bpf.c tests/lib/topo.c tests/lib/daemon.c,gdpbpf gdp gnl,jansson nl bpf curl))
# Another CNI's veths churning on the node: no pass, no read-back; our own host veth still repaired (both backends).
$(eval $(call netns_test,test_foreign_links,tests/netns/test_foreign_links.c tests/lib/topo.c tests/lib/daemon.c tests/lib/cnirt.c,gdp gnl,jansson nl curl))
# The agent's record parsers (agent/record.h). Here, not in agent/module.mk:
# a fuzzer links sources, and libgnl's are only known once agent/nl is read.
$(eval $(call fuzzer,fuzz_record,tests/fuzz/fuzz_record.c,gagent gdp gnl gcommon,jansson nl curl mhd yaml pthread m))
# Other nodes' reports as the route learner reads them, and the overlap
# resolution (agent/report/build.c; here for the same reason as fuzz_record).
$(eval $(call fuzzer,fuzz_report_routes,tests/fuzz/fuzz_report_routes.c agent/report/build.c,gcni gdp gnl gcommon,jansson nl curl mhd yaml pthread m))
# status.json as a restart reads it to adopt the last pass (agent/pipeline.h).
$(eval $(call fuzzer,fuzz_status,tests/fuzz/fuzz_status.c,gagent gdp gnl gcommon,jansson nl curl mhd yaml pthread m))
# The runner's own test: purpose-built check binaries it must fail (tests/runner-selftest.sh).
$(foreach c,ok skip none empty hang,$(eval $(call selftest_check,runner_$(c),tests/selftest/runner_$(c).c,,)))
