/* libxml2's process-wide set-up, and the capture of the errors libxml2
 * raises outside any parser context (src/soap.h). */
#include <pthread.h>
#include <string.h>
#include <libxml/parser.h>
#include <libxml/xmlerror.h>
#include "soap.h"

/* ---- libxml2 set-up and error capture ------------------------------------ */

static pthread_once_t xml_once = PTHREAD_ONCE_INIT;

static void xml_init_once(void)
{
	xmlInitParser();
}

void wms__xml_init(void)
{
	pthread_once(&xml_once, xml_init_once);
}

static void quiet_structured(void *ctx, xmlErrorPtr error)
{
	wms__xml_quiet *q = ctx;
	if (!q || !error)
		return;
	if (error->code == XML_ERR_NO_MEMORY)
		q->nomem = 1;
	if (error->level == XML_ERR_WARNING || error->level == XML_ERR_NONE)
		return;
	if (!q->errors++)
		q->first_code = error->code;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void quiet_generic(void *ctx, const char *msg, ...)
{
	wms__xml_quiet *q = ctx;
	(void)msg;
	if (q && !q->errors++)
		q->first_code = XML_ERR_INTERNAL_ERROR;
}

void wms__xml_quiet_begin(wms__xml_quiet *q)
{
	memset(q, 0, sizeof(*q));
	/* Function pointers are stored as another function pointer type and
	 * converted back before use, which C allows. */
	q->saved_structured = (void (*)(void))xmlStructuredError;
	q->saved_structured_ctx = xmlStructuredErrorContext;
	q->saved_generic = (void (*)(void))xmlGenericError;
	q->saved_generic_ctx = xmlGenericErrorContext;
	xmlSetStructuredErrorFunc(q, quiet_structured);
	xmlSetGenericErrorFunc(q, quiet_generic);
}

void wms__xml_quiet_end(wms__xml_quiet *q)
{
	xmlSetStructuredErrorFunc(q->saved_structured_ctx,
				  (xmlStructuredErrorFunc)q->saved_structured);
	/* NULL would install libxml2's default (stderr) handler, which is what
	 * a NULL saved value meant anyway. */
	xmlSetGenericErrorFunc(q->saved_generic_ctx, (xmlGenericErrorFunc)q->saved_generic);
}
