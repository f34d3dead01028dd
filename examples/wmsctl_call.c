/*
 * wmsctl call: any operation of the WMS's WSDL through wms_call_bytes, the
 * request body read from a file, the reply's Body element printed as XML.
 * The body is read and checked before the client exists: a bad one is
 * exit 2 with nothing sent.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libxml/tree.h>
#include "wmsctl.h"

/* The whole file, at most `max` bytes: 0, or an exit code with the reason on stderr. */
static int read_body(char **out, size_t *len, const char *path, size_t max)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n;
	int rc = CTL_EXIT_USAGE;

	*out = NULL;
	*len = 0;
	if (!f) {
		fprintf(stderr, "wmsctl: call: --body %s: %s\n", path, strerror(errno));
		return CTL_EXIT_USAGE;
	}
	/* one byte more than allowed tells "at the cap" from "past it" without a stat
	 * that a pipe or a growing file would make wrong */
	if (!(buf = malloc(max + 1))) {
		fputs("wmsctl: call: out of memory\n", stderr);
		rc = CTL_EXIT_INTERNAL;
		goto done;
	}
	n = fread(buf, 1, max + 1, f);
	if (ferror(f)) {
		fprintf(stderr, "wmsctl: call: --body %s: cannot be read\n", path);
		goto done;
	}
	if (n > max) {
		fprintf(stderr, "wmsctl: call: --body %s: larger than %zu bytes\n", path, max);
		goto done;
	}
	*out = buf;
	*len = n;
	buf = NULL;
	rc = CTL_EXIT_OK;
done:
	free(buf);
	fclose(f);
	return rc;
}

/* The WMS's text, as ctl_put_safe prints it (no terminal escapes), lines kept. */
static void put_lines(FILE *f, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		fputc((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ? '?' : c, f);
	}
}

int ctl_run_call(const ctl_config *cfg)
{
	wms_call_options op = WMS_CALL_OPTIONS_INIT;
	wms_client *client = NULL;
	xmlDocPtr reply = NULL;
	xmlChar *xml = NULL;
	char *body = NULL;
	size_t len;
	int size = 0, rc;
	wms_error err;
	wms_status st;

	rc = read_body(&body, &len, cfg->body_path, CTL_CALL_BODY_MAX);
	if (rc != CTL_EXIT_OK)
		goto done;
	rc = ctl_make_client(&client, cfg, NULL);
	if (rc != CTL_EXIT_OK)
		goto done;
	op.operation = cfg->operation;
	op.soap_action = cfg->action;
	op.reply_element = cfg->reply_element;
	op.reply_namespace = cfg->reply_namespace;
	op.idempotent = cfg->idempotent;
	st = wms_call_bytes(&reply, client, &op, body, len, &err);
	if (st == WMS_OK) {
		xmlDocDumpFormatMemoryEnc(reply, &xml, &size, "UTF-8", 1);
		if (!xml || size <= 0) {
			fputs("wmsctl: call: out of memory writing the reply\n", stderr);
			rc = CTL_EXIT_INTERNAL;
			goto done;
		}
		put_lines(stdout, (const char *)xml, (size_t)size);
	}
	rc = ctl_finish(cfg, st, &err);
done:
	if (xml)
		xmlFree(xml);
	if (reply)
		xmlFreeDoc(reply);
	free(body);
	wms_client_free(client);
	return rc;
}
