/* The request side of HTTP/1.1 of the test servers (loopback.c's serve
 * loop, which tls_server.c runs over TLS): finding a header and reading one
 * request, head and Content-Length body, through the connection's read. */
#ifndef WMS_TEST_HTTP_WIRE_H
#define WMS_TEST_HTTP_WIRE_H

#include <stddef.h>

/* Up to room bytes into dst. idle: no byte of a request has arrived yet (a
 * server may wait longer for the next request than within one). 0: closed,
 * stopping, timed out or failed. */
typedef size_t (*hw_read_fn)(void *ctx, char *dst, size_t room, int idle);

/* How many times header `name` occurs in `head` (the request line and
 * headers, CRLF-separated); the first value, trimmed, into val (may be
 * NULL). */
int hw_header(const char *head, const char *name, char *val, size_t size);

/* Read one request. head gets the request line and headers (cut to
 * head_size - 1, NUL-terminated), *body a malloc'd, NUL-terminated copy of
 * the Content-Length body; buf (buf_size + 1 bytes) and *len keep what was
 * read past it, for the next request. 1: a request; 0: the peer closed, the
 * read function gave up, a head over buf_size, a chunked body (the
 * transport never sends one) or a body over max_body. */
int hw_read_request(hw_read_fn rd, void *ctx, char *buf, size_t buf_size, size_t *len,
		    size_t max_body, char *head, size_t head_size, char **body, size_t *body_len);

/* A malloc'd, NUL-terminated copy of n bytes; NULL when out of memory. */
char *hw_dup(const char *p, size_t n);

#endif
