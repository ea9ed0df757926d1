# galactic-translator: reports -> upstream status (docs/translator.md).
TRANSLATOR_SRCS := translator/mapping.c translator/project.c translator/kinds.c translator/ssa.c translator/intent.c translator/nic.c \
	translator/schema.c translator/ownership.c translator/crds.c translator/writes.c \
	translator/rec_common.c translator/rec_attachment.c translator/rec_interface.c translator/rec_claim.c translator/egress.c translator/rec_egress.c \
	translator/controller.c
TRANSLATOR_LDLIBS := curl jansson mhd pthread m

$(eval $(call lib,gtranslator,$(TRANSLATOR_SRCS)))
$(eval $(call prog,galactic-translator,translator/main.c,gtranslator gcommon,$(TRANSLATOR_LDLIBS)))

$(eval $(call unit_test,test_translator_mapping,tests/unit/test_translator_mapping.c,gtranslator gcommon,$(TRANSLATOR_LDLIBS)))
$(eval $(call unit_test,test_translator_intent,tests/unit/test_translator_intent.c,gtranslator gcommon,$(TRANSLATOR_LDLIBS)))
# Each translator e2e suite runs on both NI/NIC condition-list variants (atomic as upstream today, maplist).
TRANSLATOR_E2E_LIB := tests/lib/cp.c tests/lib/kreq.c tests/lib/daemon.c tests/lib/crds.c tests/lib/translator_e2e.c
$(eval $(call e2e_test,test_translator_vpcatt,tests/e2e/test_translator_vpcatt.c $(TRANSLATOR_E2E_LIB),,curl jansson pthread))
$(eval $(call e2e_test,test_translator_vpcatt_maplist,tests/e2e/test_translator_vpcatt_maplist.c $(TRANSLATOR_E2E_LIB),,curl jansson pthread))
$(eval $(call unit_test,test_translator_patch,tests/unit/test_translator_patch.c,gtranslator gcommon,$(TRANSLATOR_LDLIBS)))
$(eval $(call e2e_test,test_translator_nic,tests/e2e/test_translator_nic.c $(TRANSLATOR_E2E_LIB),gtranslator gcommon,curl jansson pthread))
$(eval $(call e2e_test,test_translator_nic_maplist,tests/e2e/test_translator_nic_maplist.c $(TRANSLATOR_E2E_LIB),gtranslator gcommon,curl jansson pthread))
$(eval $(call unit_test,test_translator_schema,tests/unit/test_translator_schema.c,gtranslator gcommon,$(TRANSLATOR_LDLIBS)))
$(eval $(call e2e_test,test_translator_upstream,tests/e2e/test_translator_upstream.c $(TRANSLATOR_E2E_LIB),,curl jansson pthread))
$(eval $(call e2e_test,test_translator_upstream_maplist,tests/e2e/test_translator_upstream_maplist.c $(TRANSLATOR_E2E_LIB),,curl jansson pthread))
$(eval $(call e2e_test,test_translator_egress,tests/e2e/test_translator_egress.c $(TRANSLATOR_E2E_LIB),,curl jansson pthread))
$(eval $(call unit_test,test_translator_egress_unit,tests/unit/test_translator_egress.c,gtranslator gcommon,$(TRANSLATOR_LDLIBS)))
$(eval $(call fuzzer,fuzz_translator_schema,tests/fuzz/fuzz_translator_schema.c,gtranslator gcommon,$(TRANSLATOR_LDLIBS)))
$(eval $(call fuzzer,fuzz_translator_egress,tests/fuzz/fuzz_translator_egress.c,gtranslator gcommon,$(TRANSLATOR_LDLIBS)))
$(eval $(call fuzzer,fuzz_translator_mapping,tests/fuzz/fuzz_translator_mapping.c,gtranslator gcommon,$(TRANSLATOR_LDLIBS)))
$(eval $(call fuzzer,fuzz_translator_objects,tests/fuzz/fuzz_translator_objects.c,gtranslator gcommon,$(TRANSLATOR_LDLIBS)))
$(eval $(call bench,bench_translator,tests/bench/bench_translator.c tests/bench/bench.c tests/lib/cp.c tests/lib/crds.c tests/lib/daemon.c,gcommon,$(TRANSLATOR_LDLIBS)))
