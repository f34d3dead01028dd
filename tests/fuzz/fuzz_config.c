/*
 * Fuzz harness: the SLA configuration loader, wms_config_parse_yaml.
 *
 * Input: the YAML file. Checked: a failure is WMS_ERR_CONFIG, delivery
 * NOT_SENT, no config, one line "fuzz.yaml:<line>: ..." with a line that
 * exists in the input; a success is a config that wms_config_apply and
 * wms_config_breaker_options take, whose breaker options wms_breaker_new
 * accepts and whose client options wms_client_new accepts ("nothing falls
 * back silently": whatever the loader lets through, the library takes),
 * with an http(s) endpoint if any; nothing leaks.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "fuzz.h"
#include "wms/config.h"
#include "wms/sys/transport.h"

#define NAME "fuzz.yaml"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_count_allocations();
	return 0;
}

/* A transport that never sends: the client must not need the network here. */
static wms_status idle_send(wms_transport *self, const wms_http_request *req,
			    wms_http_response *resp, wms_error *err)
{
	(void)self;
	(void)req;
	(void)resp;
	return wms_transport_fail(err, WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT, "fuzz: no network");
}

static void idle_free(wms_transport *self)
{
	(void)self;
}

static wms_transport idle = { WMS_TRANSPORT_VERSION, idle_send, idle_free };

/* Line breaks as YAML counts them, an upper bound for any line number. */
static size_t max_line(const uint8_t *d, size_t n)
{
	size_t i, lines = 1;
	for (i = 0; i < n; i++)
		if (d[i] == '\n' || d[i] == '\r' || d[i] == 0x85 || d[i] == 0xA8 || d[i] == 0xA9)
			lines++;
	return lines;
}

static void check_failure(const uint8_t *data, size_t size, wms_status st, const wms_error *err,
			  const wms_config *cfg)
{
	const char *p = err->message + strlen(NAME ":");
	char *end;
	unsigned long line;

	FUZZ_CHECK(st == WMS_ERR_CONFIG, "wms_config_parse_yaml returned %s: %.200s",
		   wms_status_name(st), err->message);
	FUZZ_CHECK(cfg == NULL, "failure with a config");
	fuzz_check_error(err, st, "wms_config_parse_yaml");
	FUZZ_CHECK(err->delivery == WMS_DELIVERY_NOT_SENT, "delivery %s",
		   wms_delivery_name(err->delivery));
	FUZZ_CHECK(!strncmp(err->message, NAME ":", strlen(NAME ":")),
		   "message does not start with the file name: \"%.200s\"", err->message);
	line = strtoul(p, &end, 10);
	FUZZ_CHECK(end != p && *end == ':' && line >= 1 && line <= max_line(data, size),
		   "message has no line of the input (%zu lines): \"%.200s\"", max_line(data, size),
		   err->message);
}

static void check_success(const wms_config *cfg)
{
	wms_client_options co = WMS_CLIENT_OPTIONS_INIT;
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	wms_client_options bad = WMS_CLIENT_OPTIONS_INIT;
	wms_breaker *b = NULL;
	wms_client *c = NULL;
	wms_error err;
	wms_status st;

	FUZZ_CHECK(cfg != NULL, "WMS_OK without a config");
	st = wms_config_apply(cfg, &co);
	FUZZ_CHECK(st == WMS_OK, "wms_config_apply: %s", wms_status_name(st));
	bad.version = 0;
	FUZZ_CHECK(wms_config_apply(cfg, &bad) == WMS_ERR_INVALID_ARG && bad.endpoint == NULL,
		   "wms_config_apply took uninitialised options");
	st = wms_config_breaker_options(cfg, &bo);
	FUZZ_CHECK(st == WMS_OK, "wms_config_breaker_options: %s", wms_status_name(st));
	FUZZ_CHECK(!co.endpoint || ((!strncasecmp(co.endpoint, "http://", 7) ||
				     !strncasecmp(co.endpoint, "https://", 8)) &&
				    strlen(co.endpoint) <= 2048),
		   "accepted endpoint \"%.100s\"", co.endpoint);
	FUZZ_CHECK(!bo.name || (bo.name[0] && strlen(bo.name) <= 64 &&
				fuzz_field_ok(bo.name, strlen(bo.name) + 1)),
		   "accepted breaker name \"%.100s\"", bo.name);

	st = wms_breaker_new(&b, &bo);
	FUZZ_CHECK(st == WMS_OK, "the config's breaker options: wms_breaker_new gives %s",
		   wms_status_name(st));
	wms_breaker_free(b);

	memset(&err, 0, sizeof(err));
	co.transport = &idle;
	st = wms_client_new(&c, &co, &err);
	FUZZ_CHECK(st == WMS_OK, "the config's client options: wms_client_new gives %s: %.200s",
		   wms_status_name(st), err.message);
	wms_client_free(c);
}

static void one(const uint8_t *data, size_t size)
{
	static char poison;
	wms_config *cfg = (wms_config *)(void *)&poison; /* the loader must overwrite it */
	wms_error err;
	wms_status st;

	memset(&err, 0xA5, sizeof(err));
	st = wms_config_parse_yaml(&cfg, (const char *)data, size, NAME, &err);
	fuzz_note("%s %s", wms_status_name(st), st ? err.message : "");
	if (st == WMS_OK)
		check_success(cfg);
	else
		check_failure(data, size, st, &err, cfg);
	wms_config_free(cfg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_run_leak_checked(one, data, size);
	return 0;
}

int fuzz_seed_variant(size_t i, const uint8_t *seed, size_t n, fuzz_bytes *out)
{
	if (i > 0)
		return 0;
	fuzz_bytes_reset(out);
	fuzz_bytes_add(out, seed, n);
	return 1;
}

int fuzz_builtin_seed(size_t i, fuzz_bytes *out)
{
	static const char *const seeds[] = {
		"client: {endpoint: \"HTTPS://wms.example/x\", soap_version: 1.2}\n"
		"circuit_breaker: {mode: time_based, sliding_window_size: 3600, retry: {}}\n",
		"circuit_breaker:\n  open_duration_ms: 86400000\n  max_open_duration_ms: 86400000\n"
		"  retry:\n    initial_backoff_ms: 3600000\n    max_backoff_ms: 3600000\n",
		"service: x\nrest: [1, {a: [b, c]}, !!binary aGk=]\n---\n",
	};
	if (i >= sizeof(seeds) / sizeof(seeds[0]))
		return 0;
	fuzz_bytes_reset(out);
	fuzz_bytes_add(out, seeds[i], strlen(seeds[i]));
	return 1;
}
