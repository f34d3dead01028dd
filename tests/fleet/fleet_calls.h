/* Calls on a breaker in the fleet tests (include after cmocka.h). */
#ifndef WMS_TEST_FLEET_CALLS_H
#define WMS_TEST_FLEET_CALLS_H

#include "wms/breaker.h"

/* n failures whose permits the store granted (the store decides them). */
static inline void fail_calls_shared(wms_breaker *b, int n)
{
	int i;
	for (i = 0; i < n; i++) {
		wms_breaker_permit p;
		assert_int_equal(wms_breaker_acquire(&p, b, NULL), WMS_OK);
		assert_true(p.flags & WMS_PERMIT_STORE);
		wms_breaker_record(b, &p, WMS_OUTCOME_FAILURE);
	}
}

#endif
