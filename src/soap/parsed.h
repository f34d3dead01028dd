/* What a parse leaves behind (soap/parse.c produces it) and the reader of
 * it (soap/reply.c): the document's elements and their character data, as
 * the SAX2 callbacks recorded them. Private to src/soap/.
 *
 * How long each pointer here may be read: see the top of soap/parse.c. */
#ifndef WMS_SOAP_PARSED_H
#define WMS_SOAP_PARSED_H

#include <stddef.h>
#include <stdint.h>
#include "soap/soap.h"

/* ---- the reply's elements --------------------------------------------------- */

typedef struct rseg rseg;
typedef struct rel rel;

/* A run of an element's character data (text, CDATA, entity references). */
struct rseg {
	const char *p;     /* set once parsing is over */
	const rseg *next;  /* the element's next run */
	size_t off, len;   /* in the text array */
	uint32_t next_i;
};

/* One element. While parsing, links are indexes (the arrays move as they
 * grow); once it is over they become pointers. Index 0 is the document. */
struct rel {
	const char *name; /* local name */
	const char *uri;  /* namespace URI, NULL for none */
	const rel *children, *next;
	const rseg *text;
	uint32_t parent_i, first_i, last_i, next_i, text_i, text_last_i;
	int lang_en;      /* an xml:lang attribute starting with "en" */
};

/* ---- reading them ------------------------------------------------------------ */

/* The reply for `op` out of the parsed document `doc` (element 0) into
 * `out` (wms__parse_reply's), or a SOAP fault's fields into err. Reads
 * names and text the parse left; `html_type` when the Content-Type said
 * text/html. */
wms_status wms__check_reply(wms__op op, void *out, const rel *doc, int html_type, wms_error *err);

/* The same checks for a generic call's reply: the Body holds exactly one
 * element, {want_ns}want_name (NULL: any), or a fault (its fields into
 * err). Only the check: soap/generic.c reads the element from a tree. */
wms_status wms__check_generic(const rel *doc, int html_type, const char *want_ns,
			      const char *want_name, wms_error *err);

#endif
