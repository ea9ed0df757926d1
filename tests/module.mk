# Suites of the foundation: the test control plane itself.
$(eval $(call e2e_test,test_controlplane,tests/e2e/test_controlplane.c tests/lib/cp.c,,curl jansson))
