/* Thread-affine idle stacks (affine.h). */
#include <string.h>
#include "util/affine.h"

static _Thread_local char thread_tag;

uintptr_t wms__thread_tag(void)
{
	return (uintptr_t)&thread_tag;
}

void *wms__affine_take(wms__affine_slot *slots, size_t *count)
{
	uintptr_t me;
	size_t i, n = *count;
	void *item;

	if (!n)
		return NULL;
	me = wms__thread_tag();
	for (i = n; i-- > 0;)
		if (slots[i].owner == me)
			break;
	if (i == (size_t)-1)
		i = n - 1;
	item = slots[i].item;
	/* The others keep their order: the top stays the warmest. */
	memmove(&slots[i], &slots[i + 1], (n - 1 - i) * sizeof(*slots));
	*count = n - 1;
	return item;
}

void wms__affine_give(wms__affine_slot *slots, size_t *count, void *item)
{
	slots[*count].item = item;
	slots[*count].owner = wms__thread_tag();
	(*count)++;
}
