# galactic-preflight: kernel capability report used by tests (SKIP) and operators.
$(eval $(call lib,gpreflight,agent/preflight/preflight.c))
$(eval $(call prog,galactic-preflight,agent/preflight/main.c,gpreflight gnl,nl bpf jansson))
