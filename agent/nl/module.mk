# libgnl: rtnetlink on libnl-3 core (see agent/nl/nl.h).
GNL_SRCS := agent/nl/nl.c agent/nl/route.c agent/nl/rule.c agent/nl/neigh.c agent/nl/addr.c agent/nl/link.c
$(eval $(call lib,gnl,$(GNL_SRCS)))
$(eval $(call unit_test,test_nl_codec,tests/unit/test_nl_codec.c,gnl,nl))
$(eval $(call fuzzer,fuzz_nl_parse,tests/fuzz/fuzz_nl_parse.c,gnl,nl))
$(eval $(call fuzzer,fuzz_nl_reply,tests/fuzz/fuzz_nl_reply.c,gnl,nl))
