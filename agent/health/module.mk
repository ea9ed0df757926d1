# agent/health: the agent's /metrics, /healthz, /readyz (docs/identity.md, "Health").
$(eval $(call lib,ghealth,agent/health/health.c agent/health/drift.c))
$(eval $(call unit_test,test_agent_health,tests/unit/test_agent_health.c tests/lib/daemon.c,ghealth gdp gnl gcommon,jansson nl curl mhd yaml pthread m))
