/* The test servers' HTTP request reading (see http_wire.h). */
#include "http_wire.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

int hw_header(const char *head, const char *name, char *val, size_t size)
{
	const char *line = strstr(head, "\r\n");
	size_t nlen = strlen(name);
	int count = 0;
	if (val && size)
		val[0] = '\0';
	while (line) {
		const char *end;
		line += 2;
		end = strstr(line, "\r\n");
		if (!end || end == line)
			break;
		if ((size_t)(end - line) > nlen && line[nlen] == ':' &&
		    strncasecmp(line, name, nlen) == 0) {
			if (count == 0 && val && size) {
				const char *v = line + nlen + 1, *e = end;
				size_t n;
				while (v < e && (*v == ' ' || *v == '\t'))
					v++;
				while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
					e--;
				n = (size_t)(e - v) < size - 1 ? (size_t)(e - v) : size - 1;
				memcpy(val, v, n);
				val[n] = '\0';
			}
			count++;
		}
		line = end;
	}
	return count;
}

int hw_read_request(hw_read_fn rd, void *ctx, char *buf, size_t buf_size, size_t *len,
		    size_t max_body, char *head, size_t head_size, char **body, size_t *body_len)
{
	char *end, value[64];
	size_t head_len, have, cl = 0, n;
	int first = 1;

	*body = NULL;
	*body_len = 0;
	head[0] = '\0';
	for (;;) {
		buf[*len] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end)
			break;
		if (*len >= buf_size)
			return 0;
		n = rd(ctx, buf + *len, buf_size - *len, first && !*len);
		if (!n)
			return 0;
		*len += n;
		first = 0;
	}
	head_len = (size_t)(end - buf) + 4;
	n = head_len < head_size ? head_len : head_size - 1;
	memcpy(head, buf, n);
	head[n] = '\0';
	if (hw_header(head, "Content-Length", value, sizeof(value)) == 1)
		cl = strtoul(value, NULL, 10);
	if (cl > max_body || hw_header(head, "Transfer-Encoding", NULL, 0))
		return 0;
	if (!(*body = malloc(cl + 1)))
		return 0;
	have = *len - head_len < cl ? *len - head_len : cl;
	memcpy(*body, buf + head_len, have);
	memmove(buf, buf + head_len + have, *len - head_len - have);
	*len -= head_len + have;
	while (have < cl) {
		n = rd(ctx, *body + have, cl - have, 0);
		if (!n) {
			free(*body);
			*body = NULL;
			return 0;
		}
		have += n;
	}
	(*body)[cl] = '\0';
	*body_len = cl;
	return 1;
}

char *hw_dup(const char *p, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		if (n)
			memcpy(d, p, n);
		d[n] = '\0';
	}
	return d;
}
