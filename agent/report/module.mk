# agent/report: NodeAttachment publishing and route learning (docs/dataplane-reports.md),
# linked into galactic-agent (agent/module.mk).
$(eval $(call lib,greport,agent/report/build.c agent/report/desired.c agent/report/report.c))
REPORT_LIBS := greport gcni gagent gdp gnl gcommon
REPORT_LDLIBS := jansson nl curl mhd pthread m

$(eval $(call unit_test,test_report_build,tests/unit/test_report_build.c,$(REPORT_LIBS),$(REPORT_LDLIBS)))
$(eval $(call unit_test,test_report_routes,tests/unit/test_report_routes.c,$(REPORT_LIBS),$(REPORT_LDLIBS)))
$(eval $(call netns_test,test_report_e2e,tests/netns/test_report_e2e.c tests/lib/topo.c tests/lib/cp.c tests/lib/crds.c tests/lib/kreq.c,$(REPORT_LIBS),$(REPORT_LDLIBS)))
$(eval $(call netns_test,test_report_publisher,tests/netns/test_report_publisher.c tests/lib/cp.c tests/lib/crds.c tests/lib/kreq.c,$(REPORT_LIBS),$(REPORT_LDLIBS)))
$(eval $(call bench,bench_learner,tests/bench/bench_learner.c tests/bench/bench.c tests/lib/cp.c tests/lib/crds.c,$(REPORT_LIBS),$(REPORT_LDLIBS)))
$(eval $(call bench,bench_publisher,tests/bench/bench_publisher.c tests/bench/bench.c,$(REPORT_LIBS),$(REPORT_LDLIBS)))
