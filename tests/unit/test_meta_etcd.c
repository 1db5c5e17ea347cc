// SPDX-License-Identifier: MIT
/* The pure parts of rowgate-meta's etcd client: base64 and endpoint
 * validation (the calls themselves run in tests/e2e/meta_etcd_failover.sh). */
#include <string.h>

#include "check.h"
#include "../../user/meta/etcd.h"

static void test_base64(void)
{
	static const struct {
		const char *plain, *b64;
	} v[] = { /* RFC 4648 section 10 */
		  { "", "" },	      { "f", "Zg==" },	       { "fo", "Zm8=" },
		  { "foo", "Zm9v" },  { "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" },
		  { "foobar", "Zm9vYmFy" }, { "/rowgate/leader", "L3Jvd2dhdGUvbGVhZGVy" } };
	char enc[64], dec[64];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		rg_base64_encode(v[i].plain, strlen(v[i].plain), enc);
		CHECK(!strcmp(enc, v[i].b64), "encode %s: %s", v[i].plain, enc);
		CHECK(rg_base64_decode(v[i].b64, strlen(v[i].b64), dec) == (long)strlen(v[i].plain),
		      "decode length %s", v[i].b64);
		CHECK(!strcmp(dec, v[i].plain), "decode %s: %s", v[i].b64, dec);
	}
	CHECK(rg_base64_decode("Zm9", 3, dec) < 0, "length not a multiple of 4");
	CHECK(rg_base64_decode("Zm=v", 4, dec) < 0, "padding in the middle");
	CHECK(rg_base64_decode("Zm9v!A==", 8, dec) < 0, "bad character");
	CHECK(rg_base64_decode("=m9v", 4, dec) < 0, "padding first");
}

static void test_init(void)
{
	struct rg_etcd e;

	CHECK(rg_etcd_init(&e, "http://127.0.0.1:2379/", "/rowgate/") == 0, "ok");
	CHECK(!strcmp(e.endpoints[0], "http://127.0.0.1:2379"), "trailing slash: %s",
	      e.endpoints[0]);
	CHECK(e.nr_endpoints == 1, "one endpoint: %d", e.nr_endpoints);
	CHECK(rg_etcd_init(&e, "http://a:2379,https://b:2379/", "/rowgate/") == 0, "two");
	CHECK(e.nr_endpoints == 2 && !strcmp(e.endpoints[1], "https://b:2379"), "second: %s",
	      e.endpoints[1]);
	CHECK(e.origins.n == 2, "both are origins: %zu", e.origins.n);
	CHECK(rg_etcd_init(&e, "http://a:2379,b:2379", "/rowgate/") < 0, "a second without scheme");
	CHECK(rg_etcd_init(&e, ",", "/rowgate/") < 0, "no URL");
	CHECK(rg_etcd_init(&e, "http://1,http://2,http://3,http://4,http://5,http://6,http://7,"
			       "http://8,http://9",
			   "/rowgate/") < 0,
	      "more than RG_ETCD_ENDPOINTS_MAX");
	CHECK(rg_etcd_init(&e, "127.0.0.1:2379", "/rowgate/") < 0, "no scheme");
	CHECK(rg_etcd_init(&e, "http://x", "") < 0, "empty prefix");
}

int main(void)
{
	test_base64();
	test_init();
	return check_report("test_meta_etcd");
}
