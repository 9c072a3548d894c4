/*
 * GH100 worked example, built against NVIDIA's OpenRM 570.144 headers (struct layouts and
 * constants come from the headers; the arithmetic restates the C functions cited inline).
 * It prints hex fixtures that gsp/tests/proto_gh100.rs compares with nvbare-gsp.
 *
 * Build and run (gsp/scripts/gh100/run.sh does this):
 *   R=shared/reference/open-gpu-kernel-modules-570.144/src
 *   gcc -I gsp/scripts/gh100/stub -I $R/common/sdk/nvidia/inc -I $R/nvidia/inc/kernel \
 *       -I $R/nvidia/arch/nvalloc/common/inc -I $R/nvidia/inc/kernel/gpu/gsp \
 *       gsp/scripts/gh100/worked_example.c -o /tmp/gh100 && /tmp/gh100 gsp/tests/fixtures/proto/gh100
 */
#include <stdio.h>
#include <string.h>
#include <stddef.h>
#include <nvtypes.h>
#include "gpu/gsp/gsp_fw_heap.h"          /* GSP_FW_HEAP_PARAM_* */
#include "gsp/gsp_fw_wpr_meta.h"          /* GspFwWprMeta */
#include "gsp/gspifpub.h"                 /* GSP_FMC_BOOT_PARAMS */
#include "gpu/fsp/kern_fsp_cot_payload.h" /* NVDM_PAYLOAD_COT */
#include "fsp/fsp_nvdm_format.h"          /* NVDM_TYPE_COT */

#define MB (1ULL << 20)
#define ALIGN_UP(x, a) (((x) + (a) - 1) / (a) * (a))

/* Hopper+ values of the HAL variants in generated/g_kernel_gsp_nvoc.h:
 * kgspGetFwHeapParamOsCarveoutSize_4b5307 (baremetal: LIBOS3_BAREMETAL),
 * fwHeapParamBaseSize = GSP_FW_HEAP_PARAM_BASE_RM_SIZE_GH100,
 * kgspGetMinWprHeapSizeMB_647ce6 / kgspGetMaxWprHeapSizeMB_e7e092 (88 / 280). */
static NvU64 heap_size_gh100(NvU64 fbSize)
{
    /* _kgspCalculateFwHeapSize, kernel_gsp.c:5021 */
    const NvU32 fbSizeGB = (NvU32)(ALIGN_UP(fbSize, 1ULL << 30) >> 30);
    NvU64 heapSize = GSP_FW_HEAP_PARAM_OS_SIZE_LIBOS3_BAREMETAL +
                     GSP_FW_HEAP_PARAM_BASE_RM_SIZE_GH100 +
                     ALIGN_UP((NvU64)GSP_FW_HEAP_PARAM_SIZE_PER_GB_FB * fbSizeGB, 1 << 20) +
                     ALIGN_UP((NvU64)GSP_FW_HEAP_PARAM_CLIENT_ALLOC_SIZE, 1 << 20);
    if (heapSize < (NvU64)GSP_FW_HEAP_SIZE_OVERRIDE_LIBOS3_BAREMETAL_MIN_MB << 20)
        heapSize = (NvU64)GSP_FW_HEAP_SIZE_OVERRIDE_LIBOS3_BAREMETAL_MIN_MB << 20;
    if (heapSize > (NvU64)GSP_FW_HEAP_SIZE_OVERRIDE_LIBOS3_BAREMETAL_MAX_MB << 20)
        heapSize = (NvU64)GSP_FW_HEAP_SIZE_OVERRIDE_LIBOS3_BAREMETAL_MAX_MB << 20;
    return heapSize;
}

static void hex(const char *dir, const char *name, const void *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.hex", dir, name);
    FILE *f = fopen(path, "w");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%02x%s", ((const unsigned char *)p)[i], (i % 64 == 63 || i == n - 1) ? "\n" : "");
    fclose(f);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    const NvU64 vram[2] = { 141ULL << 30, 80ULL << 30 };  /* H200, H100 */
    const char *name[2] = { "wpr_meta_gh100_141g", "wpr_meta_gh100_80g" };

    for (int i = 0; i < 2; i++)
    {
        /* kgspCalculateFbLayout_GH100, arch/hopper/kernel_gsp_gh100.c:300 */
        GspFwWprMeta m;
        memset(&m, 0, sizeof m);
        m.vgaWorkspaceSize = 128 * 1024;
        m.pmuReservedSize = 0;                       /* kpmuReservedMemorySizeGet: none on GH100 */
        m.sizeOfBootloader = 0xd123;                 /* images: same inputs as the Rust test */
        m.sysmemAddrOfBootloader = 0x300000000ULL;
        m.sizeOfRadix3Elf = 0x2a01234;
        m.sysmemAddrOfRadix3Elf = 0x100000000ULL;
        m.bootloaderCodeOffset = 0x100;
        m.bootloaderDataOffset = 0x4200;
        m.bootloaderManifestOffset = 0x8000;
        m.sysmemAddrOfSignature = 0x200000000ULL;
        m.sizeOfSignature = 0x1000;
        m.nonWprHeapSize = 2097152;                  /* kgspGetNonWprHeapSize_d505ea */
        m.gspFwHeapSize = heap_size_gh100(vram[i]);  /* kgspGetFwHeapSize(pGpu, pKernelGsp, 0, 0) */
        m.frtsSize = 0x100000;                       /* kgspGetFrtsSize_HAL */
        m.gspFwHeapVfPartitionCount = 0;
        m.revision = GSP_FW_WPR_META_REVISION;
        m.magic = GSP_FW_WPR_META_MAGIC;
        hex(dir, name[i], &m, sizeof m);
        printf("%s: gspFwHeapSize = %#llx (%llu MiB)\n", name[i],
               (unsigned long long)m.gspFwHeapSize, (unsigned long long)(m.gspFwHeapSize >> 20));
    }

    /* kgspSetupGspFmcArgs_GH100, kernel_gsp_gh100.c:442-450 (no CC, no suspend/resume) */
    GSP_FMC_BOOT_PARAMS fmc;
    memset(&fmc, 0, sizeof fmc);
    fmc.bootGspRmParams.gspRmDescOffset = 0x800000000ULL;  /* WPR meta */
    fmc.bootGspRmParams.gspRmDescSize = sizeof(GspFwWprMeta);
    fmc.bootGspRmParams.target = GSP_DMA_TARGET_COHERENT_SYSTEM;
    fmc.bootGspRmParams.bIsGspRmBoot = NV_TRUE;
    fmc.gspRmParams.bootArgsOffset = 0x900000000ULL;       /* libos init args */
    fmc.gspRmParams.target = GSP_DMA_TARGET_COHERENT_SYSTEM;
    hex(dir, "fmc_boot_params_gh100", &fmc, sizeof fmc);

    /* kfspPrepareBootCommands_GH100, kern_fsp_gh100.c:1364-1460 */
    NVDM_PAYLOAD_COT cot;
    memset(&cot, 0, sizeof cot);
    cot.version = 1;                         /* cotPayloadVersion on GH100 */
    cot.size = sizeof(NVDM_PAYLOAD_COT);
    cot.frtsSysmemOffset = 0;                /* no sysmem FRTS */
    cot.frtsSysmemSize = 0;
    NvU64 frtsOffsetFromEnd = 0x200000;      /* memmgrGetFBEndReserveSizeEstimate */
    /* pmu reserve is 0 on GH100: no extra reserve, no 2 MiB align; WPR end margin 0 */
    cot.frtsVidmemOffset = frtsOffsetFromEnd;
    cot.frtsVidmemSize = 0x100000;
    /* kfspSetupGspImages: FMC image, hash (SHA-384), RSA-3K signature and public key */
    cot.gspFmcSysmemOffset = 0x600000000ULL;
    cot.gspBootArgsSysmemOffset = 0x700000000ULL;
    for (int i = 0; i < 48; i++) ((NvU8 *)cot.hash384)[i] = (NvU8)(i + 1);
    for (int i = 0; i < 384; i++) ((NvU8 *)cot.signature)[i] = (NvU8)(i * 5 + 2);
    for (int i = 0; i < 384; i++) ((NvU8 *)cot.publicKey)[i] = (NvU8)(i * 11 + 7);
    hex(dir, "cot_payload_gh100", &cot, sizeof cot);

    /* kfspSendMessage, kern_fsp.c:478: one packet, SOM=EOM=1, SEID 0, SEQ 0 */
    NvU32 pkt[2 + sizeof(NVDM_PAYLOAD_COT) / 4];
    pkt[0] = (1u << 31) | (1u << 30);
    pkt[1] = 0x7e | (0x10deu << 8) | ((NvU32)NVDM_TYPE_COT << 24);
    memcpy(&pkt[2], &cot, sizeof cot);
    hex(dir, "fsp_cot_message_gh100", pkt, sizeof pkt);
    printf("sizeof(NVDM_PAYLOAD_COT) = %zu, sizeof(GSP_FMC_BOOT_PARAMS) = %zu\n",
           sizeof(NVDM_PAYLOAD_COT), sizeof(GSP_FMC_BOOT_PARAMS));
    return 0;
}
