/*
 * A stand-in for libnvidia-ml.so.1, built by the NVML tests
 * (src/detect/nvidia/tests/fake_nvml.rs) with the system C compiler, so the
 * run-time loading path of the nvidia backend (dlopen, symbol lookup, struct
 * layouts, MIG and NVLink enumeration) runs without an NVIDIA GPU.
 *
 * Signatures, struct layouts, enum values and return codes follow NVIDIA's
 * nvml.h (NVML API Reference Guide). What each scenario reports is taken
 * from real captures in tests/fixtures (see SCENARIO below); nothing here is
 * a value the tests could not check against a real output.
 *
 * One scenario per build, chosen with -DSCENARIO=<n>:
 *   1  H100_MIG  one H100 80GB HBM3 in MIG mode (3g.40gb + 2g.20gb + 2 x
 *                1g.10gb), the values of
 *                nvidia-smi-q/linux-x86_64__nvidia-h100-mig__590.48.01__idle.txt
 *                (its UUIDs are masked there; MIG UUIDs are not printed by
 *                nvidia-smi -q, so the fake numbers them MIG-...-00000000000N).
 *   2  HGX8      eight H100 80GB HBM3 of nvidia-smi-q/gpud__h100-80gb-hbm3-x8__535.183.01.txt
 *                (bus ids, UUIDs, memory), each with 18 NVLinks to the four
 *                NVSwitch chips of the HGX board (5 + 4 + 4 + 5 links, NVIDIA
 *                DGX H100 user guide), the switches at the PCI addresses of the
 *                real HGX H100 lspci -vvv capture (83:00.0 .. 86:00.0, 10de:22a3).
 *   3  INIT_FAILS  nvmlInit_v2 returns NVML_ERROR_DRIVER_NOT_LOADED (9), as
 *                on a host whose kernel module is not loaded.
 *   4  V1_ONLY   only the unversioned entry points of pre-r319 drivers
 *                (nvmlInit, nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex)
 *                and the name and memory getters: the backend must use them
 *                and leave every other fact unknown.
 *
 * Events (scenarios 1 and 2: nvmlDeviceGetSupportedEventTypes,
 * nvmlEventSetCreate, nvmlDeviceRegisterEvents, nvmlEventSetWait_v2,
 * nvmlEventSetFree): every GPU supports the single- and double-bit ECC, P-state,
 * clock and Xid event types. Once a set has Xid events registered, its first
 * wait returns one Xid critical error, code 13 (the "Graphics SM Warp Exception"
 * of kernel-log/gpud-pr46__dmesg-ctime.txt), on the last GPU (scenario 1:
 * attributed to MIG GPU instance 2, compute instance 0, the 3g.40gb;
 * scenario 2: not attributable, 0xFFFFFFFF); every later wait times out
 * (NVML_ERROR_TIMEOUT) after its timeout, which the fake does not sleep.
 */
#include <stdio.h>
#include <string.h>

#ifndef SCENARIO
#error "build with -DSCENARIO=<1..4>"
#endif

typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_TIMEOUT 10

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned int multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount,
        sharedEncoderCount, sharedJpegCount, sharedOfaCount, gpuInstanceSliceCount,
        computeInstanceSliceCount;
    unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

#define MIB (1024ULL * 1024ULL)

struct mig {
    const char *name, *uuid;
    unsigned gi, ci, sms;
    unsigned long long total_mib, free_mib, used_mib;
};

struct gpu {
    const char *name, *uuid, *serial, *vbios, *bus_id;
    unsigned domain, bus, dev;
    unsigned long long total_mib, free_mib, used_mib;
    unsigned pci_device_id, pci_subsystem_id;
    unsigned arch, cc_major, cc_minor, minor;
    unsigned gen_cur, gen_max, width_cur, width_max, power_mw, temp;
    unsigned ecc, persistence, compute_mode, mig_mode;
    int nvlinks; /* links reported; 0 = NVML_ERROR_NOT_SUPPORTED */
    const struct mig *migs;
    unsigned nmigs;
};

/* A handle: the GPU, and the MIG device within it (-1 for the GPU itself). */
struct handle {
    int gpu, mig;
};

static int initialised;

#if SCENARIO == 1
static const char *DRIVER = "590.48.01";
static const int CUDA = 13010; /* "CUDA Version : 13.1" */
static const struct mig MIGS[] = {
    {"NVIDIA H100 80GB HBM3 MIG 3g.40gb", "MIG-00000000-0000-0000-0000-000000000001", 2, 0, 60, 40448, 40423, 26},
    {"NVIDIA H100 80GB HBM3 MIG 2g.20gb", "MIG-00000000-0000-0000-0000-000000000002", 3, 0, 32, 20096, 20080, 17},
    {"NVIDIA H100 80GB HBM3 MIG 1g.10gb", "MIG-00000000-0000-0000-0000-000000000003", 9, 0, 16, 9984, 9976, 9},
    {"NVIDIA H100 80GB HBM3 MIG 1g.10gb", "MIG-00000000-0000-0000-0000-000000000004", 10, 0, 16, 9984, 9976, 9},
};
/* nvmlMemory_t v1: used = total - free (the capture's 479 MiB reserved + 59 MiB used). */
static const struct gpu GPUS[] = {
    {"NVIDIA H100 80GB HBM3", "GPU-00000000-0000-0000-0000-000000000000", "0000000000000",
     "96.00.A5.00.01", "00000000:00:09.0", 0, 0, 9, 81559, 81022, 538, 0x233010DE, 0x16C110DE,
     9, 9, 0, 0, 5, 5, 16, 16, 700000, 42, 1, 1, 0, 1, 0, MIGS, 4},
};
#elif SCENARIO == 2
static const char *DRIVER = "535.183.01";
static const int CUDA = 12020; /* "CUDA Version : 12.2" */
/* nvmlMemory_t v1: used = total - free (reserved 551 MiB + used). */
#define H100(bus, uuid, serial, free, minor, temp)                                           \
    {"NVIDIA H100 80GB HBM3", uuid, serial, "96.00.74.00.01", "00000000:" #bus ":00.0", 0,    \
     0x##bus, 0, 81559, free, 81559 - free, 0x233010DE, 0x16C110DE, 9, 9, 0, minor, 5, 5, 16, \
     16, 700000, temp, 1, 1, 0, 0, 18, NULL, 0}
static const struct gpu GPUS[] = {
    H100(53, "GPU-566e6f65-c38e-b12f-4824-6944218668b9", "1655022005478", 81007, 0, 36),
    H100(64, "GPU-9930d717-21dd-7692-054e-3d0a2bae76b5", "1654522012780", 81007, 1, 37),
    H100(75, "GPU-973565ff-45cf-12ea-4e91-33386720f7bb", "1654922018857", 71786, 2, 39),
    H100(86, "GPU-6b932a61-abfd-5ea1-b26a-7dea7f2fa601", "1654522012479", 81007, 3, 39),
    H100(97, "GPU-726d356b-f548-bbfd-c81e-b9c68f2f1587", "1654922016523", 81007, 4, 38),
    H100(A8, "GPU-06db64f6-6181-5a90-cf95-5ce52a58c4e5", "1655022006092", 81007, 5, 36),
    H100(B9, "GPU-a5271aa6-4cdb-28c7-0ef5-5da271d0caae", "1654522012843", 81007, 6, 37),
    H100(CA, "GPU-7e78e6c8-c71c-66c7-9ded-f8836cecab32", "1654922015414", 81007, 7, 35),
};
#elif SCENARIO == 3
static const char *DRIVER = NULL;
static const int CUDA = 0;
static const struct gpu GPUS[1];
#elif SCENARIO == 4
/* The name and memory of nvidia-smi-xml/netdata-godplugin__tesla-p100.xml
 * (v1 used = total - free = 104 MiB); nothing else is exported. */
static const struct gpu GPUS[] = {
    {.name = "Tesla P100-PCIE-16GB", .total_mib = 16384, .free_mib = 16280, .used_mib = 104},
};
#endif

#define NGPUS ((int)(sizeof GPUS / sizeof GPUS[0]))

static struct handle HANDLES[NGPUS * 9];

static const struct gpu *gpu_of(void *h, const struct mig **mig) {
    struct handle *p = (struct handle *)h;
    if (!initialised || p < HANDLES || p >= HANDLES + NGPUS * 9) return NULL;
    const struct gpu *g = &GPUS[p->gpu];
    *mig = p->mig >= 0 ? &g->migs[p->mig] : NULL;
    return g;
}

static nvmlReturn_t copy(char *dst, unsigned len, const char *src) {
    if (!src) return NVML_ERROR_NOT_SUPPORTED;
    if (strlen(src) + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(dst, src);
    return NVML_SUCCESS;
}

#define DEVICE_OR_FAIL                       \
    const struct mig *m;                     \
    const struct gpu *g = gpu_of(dev, &m);   \
    if (!g) return NVML_ERROR_INVALID_ARGUMENT

/* ---- entry points every scenario has ---- */

static nvmlReturn_t do_init(void) {
#if SCENARIO == 3
    return NVML_ERROR_DRIVER_NOT_LOADED;
#else
    for (int i = 0; i < NGPUS * 9; i++) {
        HANDLES[i].gpu = i / 9;
        HANDLES[i].mig = i % 9 - 1;
    }
    initialised++; /* NVML counts nvmlInit calls; nvmlShutdown undoes one. */
    return NVML_SUCCESS;
#endif
}

nvmlReturn_t nvmlShutdown(void) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    initialised--;
    return NVML_SUCCESS;
}

static nvmlReturn_t do_count(unsigned int *n) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    *n = NGPUS;
    return NVML_SUCCESS;
}

static nvmlReturn_t do_handle(unsigned int i, void **h) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (i >= (unsigned)NGPUS) return NVML_ERROR_INVALID_ARGUMENT;
    *h = &HANDLES[i * 9];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(void *dev, char *buf, unsigned int len) {
    DEVICE_OR_FAIL;
    return copy(buf, len, m ? m->name : g->name);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(void *dev, nvmlMemory_t *mem) {
    DEVICE_OR_FAIL;
    mem->total = (m ? m->total_mib : g->total_mib) * MIB;
    mem->free = (m ? m->free_mib : g->free_mib) * MIB;
    mem->used = (m ? m->used_mib : g->used_mib) * MIB;
    return NVML_SUCCESS;
}

#if SCENARIO == 1
/* nvmlMemory_v2_t (r510+): the capture's "Reserved : 479 MiB" kept apart
 * from "Used : 59 MiB" (v1's used, 538 MiB, counts both); the MIG devices'
 * "Shared FB Memory Usage" prints Reserved 0 MiB. Scenario 2 has no v2
 * entry point, as before r510: the backend falls back to v1. */
typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
#define NVML_MEMORY_V2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH 25
static const unsigned long long RESERVED_MIB = 479;

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(void *dev, nvmlMemory_v2_t *mem) {
    DEVICE_OR_FAIL;
    if (mem->version != NVML_MEMORY_V2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    unsigned long long reserved = m ? 0 : RESERVED_MIB;
    mem->total = (m ? m->total_mib : g->total_mib) * MIB;
    mem->free = (m ? m->free_mib : g->free_mib) * MIB;
    mem->reserved = reserved * MIB;
    mem->used = ((m ? m->used_mib : g->used_mib) - reserved) * MIB;
    return NVML_SUCCESS;
}

/* The capture's "GPU Power Readings / Average Power Draw : 71.27 W" (on
 * Hopper nvmlDeviceGetPowerUsage is the one-second average nvidia-smi prints
 * as power.draw); its "Utilization / GPU : N/A" in MIG mode is
 * NVML_ERROR_NOT_SUPPORTED. */
nvmlReturn_t nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw) {
    DEVICE_OR_FAIL;
    if (m) return NVML_ERROR_NOT_SUPPORTED;
    *mw = 71270;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(void *dev, void *util) {
    DEVICE_OR_FAIL;
    (void)util;
    return NVML_ERROR_NOT_SUPPORTED;
}
#endif

#if SCENARIO == 4
nvmlReturn_t nvmlInit(void) { return do_init(); }
nvmlReturn_t nvmlDeviceGetCount(unsigned int *n) { return do_count(n); }
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int i, void **h) { return do_handle(i, h); }
#else
nvmlReturn_t nvmlInit_v2(void) { return do_init(); }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) { return do_count(n); }
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **h) { return do_handle(i, h); }

/* ---- the r450+ API the backend reads ---- */

nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned int len) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    return copy(buf, len, DRIVER);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) {
    *v = CUDA;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetIndex(void *dev, unsigned int *i) {
    DEVICE_OR_FAIL;
    if (m) return NVML_ERROR_NOT_SUPPORTED;
    *i = (unsigned)(g - GPUS);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(void *dev, char *buf, unsigned int len) {
    DEVICE_OR_FAIL;
    return copy(buf, len, m ? m->uuid : g->uuid);
}

nvmlReturn_t nvmlDeviceGetSerial(void *dev, char *buf, unsigned int len) {
    DEVICE_OR_FAIL;
    return m ? NVML_ERROR_NOT_SUPPORTED : copy(buf, len, g->serial);
}

nvmlReturn_t nvmlDeviceGetVbiosVersion(void *dev, char *buf, unsigned int len) {
    DEVICE_OR_FAIL;
    return m ? NVML_ERROR_NOT_SUPPORTED : copy(buf, len, g->vbios);
}

#define U32_GETTER(fn, field)                                   \
    nvmlReturn_t fn(void *dev, unsigned int *out) {             \
        DEVICE_OR_FAIL;                                         \
        if (m) return NVML_ERROR_NOT_SUPPORTED;                 \
        *out = g->field;                                        \
        return NVML_SUCCESS;                                    \
    }
U32_GETTER(nvmlDeviceGetArchitecture, arch)
U32_GETTER(nvmlDeviceGetMinorNumber, minor)
U32_GETTER(nvmlDeviceGetCurrPcieLinkGeneration, gen_cur)
U32_GETTER(nvmlDeviceGetMaxPcieLinkGeneration, gen_max)
U32_GETTER(nvmlDeviceGetCurrPcieLinkWidth, width_cur)
U32_GETTER(nvmlDeviceGetMaxPcieLinkWidth, width_max)
U32_GETTER(nvmlDeviceGetEnforcedPowerLimit, power_mw)
U32_GETTER(nvmlDeviceGetPersistenceMode, persistence)
U32_GETTER(nvmlDeviceGetComputeMode, compute_mode)

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(void *dev, int *major, int *minor) {
    DEVICE_OR_FAIL;
    *major = (int)g->cc_major;
    *minor = (int)g->cc_minor;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(void *dev, unsigned int sensor, unsigned int *t) {
    DEVICE_OR_FAIL;
    if (m) return NVML_ERROR_NOT_SUPPORTED;
    if (sensor != 0) return NVML_ERROR_INVALID_ARGUMENT; /* NVML_TEMPERATURE_GPU */
    *t = g->temp;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetEccMode(void *dev, unsigned int *cur, unsigned int *pending) {
    DEVICE_OR_FAIL;
    if (m) return NVML_ERROR_NOT_SUPPORTED;
    *cur = *pending = g->ecc;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(void *dev, unsigned int type, unsigned int counter,
                                         unsigned long long *n) {
    DEVICE_OR_FAIL;
    if (m) return NVML_ERROR_NOT_SUPPORTED;
    /* NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1, NVML_VOLATILE_ECC = 0 */
    if (type != 1 || counter != 0) return NVML_ERROR_INVALID_ARGUMENT;
    *n = 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(void *dev, unsigned int *cur, unsigned int *pending) {
    DEVICE_OR_FAIL;
    if (m) return NVML_ERROR_NOT_SUPPORTED;
    *cur = *pending = g->mig_mode;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(void *dev, nvmlPciInfo_t *p) {
    DEVICE_OR_FAIL;
    if (!g->bus_id) return NVML_ERROR_NOT_SUPPORTED;
    memset(p, 0, sizeof *p);
    /* The legacy field holds the 8-digit-domain form cut to 16 bytes. */
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%04X:%02X:%02X.0", g->domain, g->bus,
             g->dev);
    p->domain = g->domain;
    p->bus = g->bus;
    p->device = g->dev;
    p->pciDeviceId = g->pci_device_id;
    p->pciSubSystemId = g->pci_subsystem_id;
    snprintf(p->busId, sizeof p->busId, "%s", g->bus_id);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(void *dev, unsigned int *n) {
    DEVICE_OR_FAIL;
    if (m) return NVML_ERROR_NOT_SUPPORTED;
    /* 7 on H100: the largest number of GPU instances (1g profiles). */
    *n = g->mig_mode ? 7 : 0;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(void *dev, unsigned int i, void **h) {
    DEVICE_OR_FAIL;
    if (m || !g->mig_mode) return NVML_ERROR_INVALID_ARGUMENT;
    if (i >= g->nmigs) return NVML_ERROR_NOT_FOUND;
    *h = &HANDLES[(g - GPUS) * 9 + 1 + i];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(void *dev, unsigned int *id) {
    DEVICE_OR_FAIL;
    if (!m) return NVML_ERROR_NOT_SUPPORTED;
    *id = m->gi;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(void *dev, unsigned int *id) {
    DEVICE_OR_FAIL;
    if (!m) return NVML_ERROR_NOT_SUPPORTED;
    *id = m->ci;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(void *dev, nvmlDeviceAttributes_t *a) {
    DEVICE_OR_FAIL;
    if (!m) return NVML_ERROR_NOT_SUPPORTED;
    memset(a, 0, sizeof *a);
    a->multiprocessorCount = m->sms;
    a->memorySizeMB = m->total_mib;
    return NVML_SUCCESS;
}

/* NVLink: link l of every GPU goes to switch s where 5 + 4 + 4 + 5 = 18. */
static int switch_of(unsigned link) { return link < 5 ? 0 : link < 9 ? 1 : link < 13 ? 2 : 3; }

nvmlReturn_t nvmlDeviceGetNvLinkState(void *dev, unsigned int link, unsigned int *active) {
    DEVICE_OR_FAIL;
    if (m || g->mig_mode || g->nvlinks == 0) return NVML_ERROR_NOT_SUPPORTED;
    if (link >= (unsigned)g->nvlinks) return NVML_ERROR_INVALID_ARGUMENT;
    *active = 1;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(void *dev, unsigned int link, nvmlPciInfo_t *p) {
    DEVICE_OR_FAIL;
    if (m || g->nvlinks == 0) return NVML_ERROR_NOT_SUPPORTED;
    if (link >= (unsigned)g->nvlinks) return NVML_ERROR_INVALID_ARGUMENT;
    memset(p, 0, sizeof *p);
    p->bus = 0x83 + (unsigned)switch_of(link);
    p->pciDeviceId = 0x22A310DE;
    snprintf(p->busId, sizeof p->busId, "00000000:%02X:00.0", p->bus);
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "0000:%02X:00.0", p->bus);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(void *dev, unsigned int link, unsigned int *t) {
    DEVICE_OR_FAIL;
    if (m || g->nvlinks == 0) return NVML_ERROR_NOT_SUPPORTED;
    if (link >= (unsigned)g->nvlinks) return NVML_ERROR_INVALID_ARGUMENT;
    *t = 2; /* NVML_NVLINK_DEVICE_TYPE_SWITCH */
    return NVML_SUCCESS;
}
#endif

#if SCENARIO == 1 || SCENARIO == 2
/* nvmlEventData_t as nvmlEventSetWait_v2 fills it. */
typedef struct {
    void *device;
    unsigned long long eventType, eventData;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

#define EVENT_SINGLE_BIT_ECC 0x1ULL
#define EVENT_DOUBLE_BIT_ECC 0x2ULL
#define EVENT_PSTATE 0x4ULL
#define EVENT_XID 0x8ULL
#define EVENT_CLOCK 0x10ULL
#define SUPPORTED (EVENT_SINGLE_BIT_ECC | EVENT_DOUBLE_BIT_ECC | EVENT_PSTATE | EVENT_XID | EVENT_CLOCK)

struct event_set {
    unsigned long long registered[NGPUS];
    int delivered, live;
};
static struct event_set SET;

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(void *dev, unsigned long long *types) {
    DEVICE_OR_FAIL;
    if (m) return NVML_ERROR_NOT_SUPPORTED;
    *types = SUPPORTED;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetCreate(struct event_set **set) {
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (!set || SET.live) return NVML_ERROR_INVALID_ARGUMENT;
    memset(&SET, 0, sizeof SET);
    SET.live = 1;
    *set = &SET;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(void *dev, unsigned long long types, struct event_set *set) {
    DEVICE_OR_FAIL;
    if (m || set != &SET || !SET.live) return NVML_ERROR_INVALID_ARGUMENT;
    if (types & ~SUPPORTED) return NVML_ERROR_NOT_SUPPORTED;
    SET.registered[g - GPUS] |= types;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetWait_v2(struct event_set *set, nvmlEventData_t *data, unsigned int timeoutms) {
    (void)timeoutms;
    if (!initialised) return NVML_ERROR_UNINITIALIZED;
    if (set != &SET || !SET.live || !data) return NVML_ERROR_INVALID_ARGUMENT;
    int last = NGPUS - 1;
    if (SET.delivered || !(SET.registered[last] & EVENT_XID)) return NVML_ERROR_TIMEOUT;
    SET.delivered = 1;
    data->device = &HANDLES[last * 9];
    data->eventType = EVENT_XID;
    data->eventData = 13;
#if SCENARIO == 1
    data->gpuInstanceId = 2;
    data->computeInstanceId = 0;
#else
    data->gpuInstanceId = 0xFFFFFFFFu;
    data->computeInstanceId = 0xFFFFFFFFu;
#endif
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetFree(struct event_set *set) {
    if (set != &SET || !SET.live) return NVML_ERROR_INVALID_ARGUMENT;
    SET.live = 0;
    return NVML_SUCCESS;
}
#endif
