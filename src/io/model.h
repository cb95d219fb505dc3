/* model.h - model.c's internals, for the library and its tests. */
#ifndef RINGSIM_MODEL_H
#define RINGSIM_MODEL_H

#include "ringsim/ringsim.h"

/* Index of the param called name, or -1 (a hash lookup: O(1)). */
long rs__model_find(const rs_model_t *model, const char *name);

/* Index of the param holding flat element elem (params are sorted by
 * offset; a binary search). */
size_t rs__model_param_at(const rs_model_t *model, size_t elem);

/* Names compared while loading (the duplicate check and the inline grads'
 * lookups): about one per lookup, so loading is linear in the params. */
size_t rs__model_load_compares(const rs_model_t *model);

#endif /* RINGSIM_MODEL_H */
