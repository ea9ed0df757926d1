# libgdp: desired-state model, backend interface, kernel backend + reconciler.
GDP_SRCS := agent/dp/model.c agent/dp/backend.c agent/dp/kernel.c
$(eval $(call lib,gdp,$(GDP_SRCS)))
