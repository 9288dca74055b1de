/* fuzz_topo.c - libFuzzer target: any bytes as a saved topology (dtrain --topology FILE, hwloc's
 * XML). Invariants: no crash here (hwloc 2.9's libxml2 reader crashed on damaged XML; dtrain reads
 * with hwloc's own parser and loads a file in a child process first); a topology that loads has
 * its GPUs and NICs within bounds; a refusal names the file. Not leaks: hwloc's parser leaks the
 * objects of some files it refuses, so LeakSanitizer looks away during the load; test_topo holds
 * dtrain's own loads to no leak under ASan. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sanitizer/lsan_interface.h>

#include "tests/fuzz/memfile.h"
#include "topology/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memfile(data, size, path);
    struct topo topo;
    struct dt_err err;
    __lsan_disable();
    int loaded = topo_load(&topo, path, &err);
    __lsan_enable();
    if (loaded == 0) {
        if (topo.num_gpus < 0 || topo.num_gpus > TOPO_MAX_GPUS || topo.num_nics < 0 || topo.num_nics > TOPO_MAX_NICS)
            abort();
        topo_free(&topo);
    } else if (!strstr(err.msg, path)) {
        abort();   /* a refusal names the file */
    }
    close(fd);
    return 0;
}
