/* The nic suite on the maplist variant of the NI/NIC CRDs (tests/lib/crds.h). */
#define GT_CRD_VARIANT "maplist"
#include "tests/e2e/test_translator_nic.c"
