/* gpu_busy.c - a GPU's utilization through NVML, loaded at run time (gpu_busy.h). */
#include "launcher/gpu_busy.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* NVML's calls used here, as nvml.h declares them (nvmlReturn_t is an int enum, NVML_SUCCESS 0;
 * nvmlDevice_t an opaque pointer; nvmlUtilization_t two unsigned ints: gpu, memory). */
typedef int (*nvml_init)(void);
typedef int (*nvml_by_bus_id)(const char *busid, void **device);
typedef int (*nvml_shutdown)(void);

int gpu_busy_open(struct gpu_busy *g, const char *busid, char *why, size_t size)
{
    *g = (struct gpu_busy){0};
    if (!busid || !busid[0])
        return snprintf(why, size, "no GPU bound to this rank"), -1;
    void *library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!library)
        return snprintf(why, size, "no NVML here (libnvidia-ml.so.1)"), -1;
    nvml_init init = (nvml_init)dlsym(library, "nvmlInit_v2");
    nvml_by_bus_id by_bus_id = (nvml_by_bus_id)dlsym(library, "nvmlDeviceGetHandleByPciBusId_v2");
    void *utilization = dlsym(library, "nvmlDeviceGetUtilizationRates");
    void *device = NULL;
    if (!init || !by_bus_id || !utilization || init() != 0) {
        dlclose(library);
        return snprintf(why, size, "NVML would not start"), -1;
    }
    if (by_bus_id(busid, &device) != 0 || !device) {
        nvml_shutdown shutdown = (nvml_shutdown)dlsym(library, "nvmlShutdown");
        if (shutdown)
            shutdown();
        dlclose(library);
        return snprintf(why, size, "NVML knows no GPU at %s", busid), -1;
    }
    *g = (struct gpu_busy){.library = library, .device = device,
                           .utilization = (int (*)(void *, unsigned int[2]))utilization};
    return 0;
}

int gpu_busy_percent(const struct gpu_busy *g)
{
    unsigned int rates[2] = {0, 0};
    if (!g->library || g->utilization(g->device, rates) != 0)
        return -1;
    return rates[0] <= 100 ? (int)rates[0] : -1;
}

void gpu_busy_close(struct gpu_busy *g)
{
    if (!g->library)
        return;
    nvml_shutdown shutdown = (nvml_shutdown)dlsym(g->library, "nvmlShutdown");
    if (shutdown)
        shutdown();
    dlclose(g->library);
    *g = (struct gpu_busy){0};
}
