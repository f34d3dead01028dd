/*
 * wms_global_init refuses to route a library it is too late for, and then
 * changes nothing. One process per case (argv[1]): the hooks are one-shot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <curl/curl.h>
#include <libxml/parser.h>
#include <libxml/xmlmemory.h>

#include "internal.h"
#include "soap/soap.h"
#include "wms/sys/alloc.h"
#include "wms/sys/transport.h"
#include "wms/wms.h"

#define CHECK(cond)                                                                 \
	do {                                                                        \
		if (!(cond)) {                                                      \
			fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #cond); \
			exit(1);                                                    \
		}                                                                   \
	} while (0)

static long allocs;

static void *my_malloc(size_t n, void *ctx) { (void)ctx; allocs++; return malloc(n); }
static void *my_realloc(void *p, size_t n, void *ctx) { (void)ctx; allocs++; return realloc(p, n); }
static void my_free(void *p, void *ctx) { (void)ctx; free(p); }

/* An application's own libxml2 allocator. */
static void *my_libxml_realloc(void *p, size_t n) { return realloc(p, n); }

static char *app_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

/* Refused with INVALID_ARG, the message saying `words`, and the allocator
 * left as it was (a libwms allocation does not reach my_malloc). */
static void expect_refused(unsigned route, const char *words)
{
	wms_allocator a = { my_malloc, my_realloc, my_free, NULL };
	wms_global_options go = WMS_GLOBAL_OPTIONS_INIT;
	wms_error err;
	wms_status st;
	void *p;

	go.allocator = &a;
	go.route = route;
	st = wms_global_init(&go, &err);
	printf("# route 0x%x: %s: %s\n", route, wms_status_name(st), err.message);
	CHECK(st == WMS_ERR_INVALID_ARG);
	CHECK(err.status == WMS_ERR_INVALID_ARG);
	CHECK(strstr(err.message, words) != NULL);
	allocs = 0;
	p = wms__malloc(16);
	CHECK(p != NULL);
	wms__free(p);
	CHECK(allocs == 0);
	/* ... and no routing is in force: any allocator may be installed. */
	CHECK(wms_set_allocator(&a) == WMS_OK);
	CHECK(wms_set_allocator(NULL) == WMS_OK);
}

int main(int argc, char **argv)
{
	const char *c = argc > 1 ? argv[1] : "";
	wms_global_options go = WMS_GLOBAL_OPTIONS_INIT;
	wms_error err;

	if (strcmp(c, "bad-options") == 0) {
		wms_allocator half = { my_malloc, NULL, my_free, NULL };
		go.version = 99;
		CHECK(wms_global_init(&go, &err) == WMS_ERR_INVALID_ARG);
		CHECK(strstr(err.message, "version") != NULL);
		go.version = WMS_GLOBAL_OPTIONS_VERSION;
		go.route = 0x80;
		CHECK(wms_global_init(&go, &err) == WMS_ERR_INVALID_ARG);
		CHECK(strstr(err.message, "route") != NULL);
		go.route = 0;
		go.allocator = &half;
		CHECK(wms_global_init(&go, &err) == WMS_ERR_INVALID_ARG);
		CHECK(wms_global_options_init(&go, 2) == WMS_ERR_INVALID_ARG);
		CHECK(wms_global_options_init(&go, WMS_GLOBAL_OPTIONS_VERSION) == WMS_OK);
		/* Bad options do not use up the one shot. */
		CHECK(wms_global_init(NULL, &err) == WMS_OK);
		CHECK(wms_global_init(NULL, &err) == WMS_ERR_INVALID_ARG);
		CHECK(strstr(err.message, "one-shot") != NULL);
	} else if (strcmp(c, "libwms-used-libxml2") == 0) {
		/* Any client, fixture or SOAP call initialises libxml2. */
		wms__xml_init();
		expect_refused(WMS_GLOBAL_ROUTE_LIBXML2 | WMS_GLOBAL_ROUTE_LIBCURL,
			       "libwms has already initialised libxml2");
	} else if (strcmp(c, "app-xmlmemsetup") == 0) {
		CHECK(xmlMemSetup(free, malloc, my_libxml_realloc, app_strdup) == 0);
		expect_refused(WMS_GLOBAL_ROUTE_LIBXML2, "xmlMemSetup");
	} else if (strcmp(c, "libwms-used-libcurl") == 0) {
		wms_transport *t = NULL;
		CHECK(wms_curl_transport_new(&t) == WMS_OK);
		t->free(t);
		expect_refused(WMS_GLOBAL_ROUTE_LIBCURL, "libcurl was initialised before");
	} else if (strcmp(c, "sla-file-first") == 0) {
		/* Reading the SLA file starts neither library: routing both
		 * afterwards is not too late (its endpoint is libcurl's to
		 * parse when the client is made). */
		static const char yaml[] = "client:\n  endpoint: http://[::1/wms\n";
		wms_allocator a = { my_malloc, my_realloc, my_free, NULL };
		wms_config *cfg = NULL;
		CHECK(wms_config_parse_yaml(&cfg, yaml, sizeof(yaml) - 1, "t.yaml", &err) == WMS_OK);
		wms_config_free(cfg);
		go.allocator = &a;
		go.route = WMS_GLOBAL_ROUTE_LIBCURL | WMS_GLOBAL_ROUTE_LIBXML2;
		CHECK(wms_global_init(&go, &err) == WMS_OK);
	} else if (strcmp(c, "app-curl-global-init") == 0) {
		CHECK(curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK);
		expect_refused(WMS_GLOBAL_ROUTE_LIBCURL, "libcurl was initialised before");
	} else {
		fprintf(stderr, "usage: %s CASE\n", argv[0]);
		return 2;
	}
	printf("# %s: ok\n", c);
	return 0;
}
