/* libxml2's process-wide set-up (routed through the allocation seam when
 * wms_global_init asked first), and the capture of the errors libxml2 raises
 * outside any parser context (src/soap/soap.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <libxml/parser.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlmemory.h>
#include "init.h"
#include "soap/soap.h"

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
	/* wms_global_init (global.c) asked for it before anything in libwms used
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

wms_status wms__xml_global_init(int *routed)
{
	*routed = 0;
	if (pthread_once(&xml_once, xml_init_once) != 0)
		return WMS_ERR_INTERNAL;
	*routed = xml_routed;
	return WMS_OK;
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

void wms__xml_quiet_note(wms__xml_quiet *q, const struct _xmlError *error)
{
	quiet_structured(q, (xmlErrorPtr)error);
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

/* libxml2's four handler variables are per-thread slots, each reached
 * through a function call (its globals.h macros): looked up once a guard,
 * then read and written in place, as xmlSetStructuredErrorFunc and
 * xmlSetGenericErrorFunc do. */
void wms__xml_quiet_begin(wms__xml_quiet *q)
{
	xmlStructuredErrorFunc *structured = &xmlStructuredError;
	void **structured_ctx = &xmlStructuredErrorContext;
	xmlGenericErrorFunc *generic = &xmlGenericError;
	void **generic_ctx = &xmlGenericErrorContext;

	memset(q, 0, sizeof(*q));
	q->slot[0] = structured;
	q->slot[1] = structured_ctx;
	q->slot[2] = generic;
	q->slot[3] = generic_ctx;
	/* Function pointers are stored as another function pointer type and
	 * converted back before use, which C allows. */
	q->saved_structured = (void (*)(void))*structured;
	q->saved_structured_ctx = *structured_ctx;
	q->saved_generic = (void (*)(void))*generic;
	q->saved_generic_ctx = *generic_ctx;
	*structured_ctx = q;
	*structured = quiet_structured;
	*generic_ctx = q;
	*generic = quiet_generic;
}

void wms__xml_quiet_end(wms__xml_quiet *q)
{
	*(void **)q->slot[1] = q->saved_structured_ctx;
	*(xmlStructuredErrorFunc *)q->slot[0] = (xmlStructuredErrorFunc)q->saved_structured;
	*(void **)q->slot[3] = q->saved_generic_ctx;
	/* never NULL (libxml2 starts with its default), but NULL would mean it */
	if (q->saved_generic)
		*(xmlGenericErrorFunc *)q->slot[2] = (xmlGenericErrorFunc)q->saved_generic;
	else
		xmlSetGenericErrorFunc(q->saved_generic_ctx, NULL);
}
