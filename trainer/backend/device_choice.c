/* device_choice.c - which GPU a rank drives and the convolution algorithms' names (see
 * backend_cuda.h), apart from CUDA so that they are tested on any machine. */
#include "trainer/backend/backend_cuda.h"

#include <stdlib.h>

#include "common/dt_parse.h"

const char *const conv_algo_names[CONV_ALGO_COUNT] = {"heuristic", "find", "deterministic"};

int cuda_device_for_rank(const char *dtrain_gpu, const char *local_rank, int devices)
{
    int index;
    if (dtrain_gpu && dt_parse_int(dtrain_gpu, 0, 1 << 16, &index) == 0)
        return index;   /* dtrain's plan, an index among the devices this process sees */
    if (local_rank && dt_parse_int(local_rank, 0, 1 << 16, &index) == 0)
        /* srun --gpus-per-task or a per-rank CUDA_VISIBLE_DEVICES shows each rank one GPU: its
         * local rank is then no index into them */
        return devices > 0 ? index % devices : index;
    return 0;
}
