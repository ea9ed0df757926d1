/* The issue-9 end-to-end suite on the maplist variant of the NI/NIC CRDs (tests/lib/crds.h). */
#define GT_CRD_VARIANT "maplist"
#include "tests/netns/test_upstream_e2e.c"
