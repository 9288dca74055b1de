/* gpu_busy.h - whether a watched rank's GPU is working, through NVML where the machine has it
 * (libnvidia-ml.so.1, loaded at run time: dtrain links no CUDA library). A rank that waits on its
 * GPU uses no CPU time; NVML's utilization (the share of its last sample period, 1/6 to 1 s, in
 * which a kernel ran) says it still progresses. */
#ifndef GPU_BUSY_H
#define GPU_BUSY_H

#include <stddef.h>

struct gpu_busy {
    void *library;            /* NULL: not read (no NVML, no such GPU) */
    void *device;             /* NVML's handle */
    int (*utilization)(void *device, unsigned int rates[2]);   /* nvmlDeviceGetUtilizationRates */
};

/* Opens the GPU of PCI bus id busid ("0000:17:00.0", dtrain's DTRAIN_GPU_BUSID). 0, or -1 with
 * why (into why: no NVML here, no such GPU) and g left closed. */
int gpu_busy_open(struct gpu_busy *g, const char *busid, char *why, size_t size);

/* The GPU's utilization in percent, or -1 when it cannot be read. */
int gpu_busy_percent(const struct gpu_busy *g);

void gpu_busy_close(struct gpu_busy *g);

#endif
