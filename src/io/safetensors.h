/* safetensors.h - the stream entry point of the safetensors reader, for the
 * fuzz target (fuzz/fuzz_safetensors.c), which reads from memory. */
#ifndef RINGSIM_SAFETENSORS_H
#define RINGSIM_SAFETENSORS_H

#include <stdint.h>
#include <stdio.h>

#include "ringsim/ringsim.h"

/* Read from an open stream of file_size bytes (path names it in messages):
 * what rs_safetensors_read does after opening the file. */
int rs__safetensors_read_stream(FILE *f, uint64_t file_size, const char *path,
                                const rs_model_t *model, void *data,
                                char *errmsg);

#endif /* RINGSIM_SAFETENSORS_H */
