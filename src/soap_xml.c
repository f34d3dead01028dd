/* libxml2's process-wide set-up (routed through the allocation seam when
 * wms_global_init asked first), and the capture of the errors libxml2 raises
 * outside any parser context (src/soap.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <libxml/parser.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlmemory.h>
#include "soap.h"

/* ---- libxml2 set-up and error capture ------------------------------------ */

static pthread_once_t xml_once = PTHREAD_ONCE_INIT;
static atomic_int xml_started;
static int xml_routed;

/* libxml2's allocator is still the C library's. (Its default strdup is a
 * static function of libxml2's, so it cannot be compared.) */
static int xml_mem_is_default(void)
{
	xmlFreeFunc f = NULL;
	xmlMallocFunc m = NULL;
	xmlReallocFunc r = NULL;
	xmlStrdupFunc d = NULL;
	if (xmlMemGet(&f, &m, &r, &d) != 0)
		return 0;
	return f == free && m == malloc && r == realloc;
}

static void xml_init_once(void)
{
	atomic_store(&xml_started, 1);
	/* wms_global_init (alloc.c) asked for it before anything in libwms used
	 * libxml2: the switch must precede libxml2's first allocation. */
	if (wms__alloc_route_libxml2() && xml_mem_is_default())
		xml_routed = xmlMemSetup(wms__lib_free, wms__lib_malloc, wms__lib_realloc,
					 wms__lib_strdup) == 0;
	xmlInitParser();
}

void wms__xml_init(void)
{
	pthread_once(&xml_once, xml_init_once);
}

const char *wms__xml_route_obstacle(void)
{
	if (atomic_load(&xml_started))
		return "libwms has already initialised libxml2";
	if (!xml_mem_is_default())
		return "libxml2's allocator was already replaced (xmlMemSetup)";
	return NULL;
}

int wms__xml_init_routed(void)
{
	if (pthread_once(&xml_once, xml_init_once) != 0)
		return 0;
	return xml_routed;
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
