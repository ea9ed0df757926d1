/* gmac_str / gmac_parse (common/mac.h): the one text form of a MAC address. */
#include "common/mac.h"

#include "tests/lib/gtest.h"

#include <errno.h>
#include <string.h>

static const uint8_t dead[6] = { 0xde, 0xad, 0xbe, 0xef, 0x00, 0x01 };

START_TEST(format_is_lower_case_pairs)
{
	char b[GMAC_STRLEN];

	memset(b, 'x', sizeof(b));
	ck_assert_ptr_eq(gmac_str(dead, b), b);
	ck_assert_str_eq(b, "de:ad:be:ef:00:01");
	ck_assert_str_eq(gmac_str((uint8_t[]){ 0, 0, 0, 0, 0, 0 }, b), "00:00:00:00:00:00");
	ck_assert_str_eq(gmac_str((uint8_t[]){ 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, b), "ff:ff:ff:ff:ff:ff");
	ck_assert_str_eq(gmac_str((uint8_t[]){ 0x0a, 0xb0, 0x01, 0x10, 0x9f, 0xf9 }, b), "0a:b0:01:10:9f:f9");
}
END_TEST

START_TEST(round_trip_every_byte)
{
	uint8_t m[6], back[6];
	char b[GMAC_STRLEN];

	for (unsigned v = 0; v < 256; v++) {
		for (int i = 0; i < 6; i++)
			m[i] = (uint8_t)(v + 37 * i);
		ck_assert_int_eq(gmac_parse(gmac_str(m, b), back), 0);
		ck_assert_mem_eq(back, m, 6);
		ck_assert_uint_eq(strlen(b), GMAC_STRLEN - 1);
	}
}
END_TEST

START_TEST(parse_accepts_either_case)
{
	uint8_t m[6];

	ck_assert_int_eq(gmac_parse("DE:AD:BE:EF:00:01", m), 0);
	ck_assert_mem_eq(m, dead, 6);
	ck_assert_int_eq(gmac_parse("De:aD:bE:eF:00:01", m), 0);
	ck_assert_mem_eq(m, dead, 6);
}
END_TEST

START_TEST(parse_rejects_and_leaves_mac)
{
	static const char *bad[] = {
		"",
		"de:ad:be:ef:00:0",	  /* short */
		"de:ad:be:ef:00:01x",	  /* trailing */
		"de:ad:be:ef:00:01:",	  /* trailing separator */
		"de:ad:be:ef:00:01 ",	  /* trailing blank */
		" de:ad:be:ef:00:01",	  /* leading blank */
		"de:ad:be:ef: 0:01",	  /* blank instead of a digit (sscanf's %2x took it) */
		"de:ad:be:ef:00:1x",	  /* a single digit padded to length (the old legacy parser took it) */
		"de:ad:be:ef:-1:01",	  /* a sign */
		"de:ad:be:ef:+1:01",
		"0x:ad:be:ef:00:01",	  /* a 0x prefix */
		"de-ad-be-ef-00-01",	  /* another separator */
		"de:ad:be:ef:0001",	  /* a missing separator */
		"dead:beef:0001",
		"de:ad:be:ef:00:0g",	  /* not hex */
		"de:ad:be:ef:00",	  /* five pairs */
		"de:ad:be:ef:00:01:02",	  /* seven */
	};
	uint8_t m[6];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(m, dead, 6);
		ck_assert_msg(gmac_parse(bad[i], m) == -EINVAL, "accepted \"%s\"", bad[i]);
		ck_assert_mem_eq(m, dead, 6);
	}
	ck_assert_int_eq(gmac_parse(NULL, m), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common_mac");
	TCase *tc = tcase_create("mac");

	tcase_add_test(tc, format_is_lower_case_pairs);
	tcase_add_test(tc, round_trip_every_byte);
	tcase_add_test(tc, parse_accepts_either_case);
	tcase_add_test(tc, parse_rejects_and_leaves_mac);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
