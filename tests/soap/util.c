#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libxml/xmlschemas.h>
#include <unistd.h>
#include <cmocka.h>
#include <libxml/xmlmemory.h>
#include "util.h"

const char *util_source_path(const char *rel)
{
	static char path[4096];
	const char *root = getenv("WMS_SOURCE_ROOT");
	if (!root)
		fail_msg("WMS_SOURCE_ROOT is not set (run through meson test)");
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return path;
}

char *util_read_source_file(const char *rel, size_t *len)
{
	const char *path = util_source_path(rel);
	FILE *f = fopen(path, "rb");
	char *data = NULL;
	long n = 0;
	if (!f)
		fail_msg("cannot open %s", path);
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
		fail_msg("cannot size %s", path);
	data = malloc((size_t)n + 1);
	assert_non_null(data);
	if (fread(data, 1, (size_t)n, f) != (size_t)n)
		fail_msg("cannot read %s", path);
	fclose(f);
	data[n] = '\0';
	if (len)
		*len = (size_t)n;
	return data;
}

void util_write_source_file(const char *rel, const char *data, size_t len)
{
	const char *path = util_source_path(rel);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
		fail_msg("cannot write %s", path);
}

int util_under_valgrind(void)
{
	const char *v = getenv("WMS_UNDER_VALGRIND");
	return v && *v && strcmp(v, "0") != 0;
}

double util_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- counting / failing allocator for libxml2 ---- */

/* Atomic: the threaded parse test allocates from several threads at once. */
static _Atomic long mem_count, mem_fail_at;
static _Atomic size_t mem_bytes;
static _Atomic int mem_failed;
static _Atomic size_t mem_failed_size;

static int mem_should_fail(size_t n)
{
	long count = ++mem_count;
	mem_bytes += n;
	if (mem_fail_at > 0 && count == mem_fail_at) {
		mem_failed = 1;
		mem_failed_size = n;
		return 1;
	}
	return 0;
}

static void *mem_malloc(size_t n)
{
	return mem_should_fail(n) ? NULL : malloc(n);
}

static void *mem_realloc(void *p, size_t n)
{
	return mem_should_fail(n) ? NULL : realloc(p, n);
}

static char *mem_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = mem_should_fail(n) ? NULL : malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

void util_xml_mem_install(void)
{
	if (xmlMemSetup(free, mem_malloc, mem_realloc, mem_strdup) != 0)
		fail_msg("xmlMemSetup failed");
}

void util_xml_mem_fail_at(long n)
{
	mem_count = 0;
	mem_bytes = 0;
	mem_failed = 0;
	mem_failed_size = 0;
	mem_fail_at = n;
}

void util_xml_mem_reset(void)
{
	util_xml_mem_fail_at(0);
}

long util_xml_mem_count(void) { return mem_count; }
size_t util_xml_mem_bytes(void) { return mem_bytes; }
int util_xml_mem_failed(void) { return mem_failed; }
size_t util_xml_mem_failed_size(void) { return mem_failed_size; }

/* ---- stderr capture ---- */

static int saved_stderr = -1;
static FILE *capture;

void util_stderr_capture_begin(void)
{
	fflush(stderr);
	capture = tmpfile();
	assert_non_null(capture);
	saved_stderr = dup(2);
	assert_true(saved_stderr >= 0);
	assert_true(dup2(fileno(capture), 2) >= 0);
}

size_t util_stderr_capture_end(char *buf, size_t size)
{
	long n;
	size_t got;
	fflush(stderr);
	assert_true(dup2(saved_stderr, 2) >= 0);
	close(saved_stderr);
	saved_stderr = -1;
	n = ftell(capture);
	if (n < 0)
		n = 0;
	rewind(capture);
	got = fread(buf, 1, size ? size - 1 : 0, capture);
	if (size)
		buf[got] = '\0';
	fclose(capture);
	capture = NULL;
	return (size_t)n;
}

void *util_schema_load(void)
{
	xmlSchemaParserCtxtPtr pc = xmlSchemaNewParserCtxt(util_source_path("wsdl/warehouse.xsd"));
	xmlSchemaPtr schema;
	if (!pc)
		return NULL;
	schema = xmlSchemaParse(pc);
	xmlSchemaFreeParserCtxt(pc);
	return schema;
}
