/* Helpers shared by the tests/soap programs. */
#ifndef SOAP_TEST_UTIL_H
#define SOAP_TEST_UTIL_H

#include <stddef.h>

/* Read $WMS_SOURCE_ROOT/<rel> whole (NUL-terminated; free() it). Fails the
 * test when the file cannot be read. */
char *util_read_source_file(const char *rel, size_t *len);

/* Write `len` bytes to $WMS_SOURCE_ROOT/<rel> (golden regeneration). */
void util_write_source_file(const char *rel, const char *data, size_t len);

/* The absolute path of $WMS_SOURCE_ROOT/<rel> in a static buffer. */
const char *util_source_path(const char *rel);

/* Whether the tests run under valgrind (timing bounds are widened). */
int util_under_valgrind(void);

/* Monotonic milliseconds. */
double util_now_ms(void);
/* wsdl/warehouse.xsd parsed (an xmlSchemaPtr), NULL if it cannot be. */
void *util_schema_load(void);

/* Route libxml2's allocations through counting wrappers; must be called
 * before anything else touches libxml2. */
void util_xml_mem_install(void);
/* Fail the n-th libxml2 allocation from now on (0: never). */
void util_xml_mem_fail_at(long n);
/* libxml2 allocations (count, bytes requested) since the last reset. */
void util_xml_mem_reset(void);
long util_xml_mem_count(void);
size_t util_xml_mem_bytes(void);
/* Whether the injected failure has happened since the last fail_at. */
int util_xml_mem_failed(void);
/* The size asked for by the allocation that was failed (0: none). */
size_t util_xml_mem_failed_size(void);

/* Capture what is written to file descriptor 2 between _begin and _end;
 * _end returns the number of bytes written and copies up to size-1 of
 * them into buf (NUL-terminated). */
void util_stderr_capture_begin(void);
size_t util_stderr_capture_end(char *buf, size_t size);

#endif
