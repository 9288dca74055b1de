/* page_memory.h - host memory a GPU may page-lock (cudaHostRegister) whole: it starts on a page and
 * fills whole pages, so no page it locks also holds the allocator's bookkeeping or another
 * buffer. The batches' buffers (loader.c) and the staged gradients (staging.c) come from here.
 * Freed with free(). */
#ifndef PAGE_MEMORY_H
#define PAGE_MEMORY_H

#include <stdlib.h>

static inline void *page_memory_alloc(size_t bytes)
{
    size_t page = 4096;
    return aligned_alloc(page, (bytes + page - 1) / page * page + (bytes == 0 ? page : 0));
}

#endif
