/* SPDX-License-Identifier: MIT */
/*
 * win_seccomp.c: the core's seccomp policy in the Windows build, for the
 * Linux kernel of a WSL2 distribution (bwrap's --seccomp there, and the
 * agent's FILTER). Windows has no libseccomp, so the BPF program is
 * compiled on the build machine by core/tools/seccomp_gen.c from the same
 * policy list, exactly as the Linux build does (scripts/build-windows.sh
 * builds that generator natively; x86_64 only, as the build is), and
 * embedded. A build made without it has no policy: seccomp_bpf_get
 * refuses, and so does every backend that needs it. Windows build only.
 */
#include <stddef.h>

#include "base/error.h"
#include "host/seccomp_policy.h"

#ifdef SBX_SECCOMP_PREBUILT
extern const unsigned char seccomp_prebuilt_bpf[];
extern const size_t seccomp_prebuilt_len;

int seccomp_bpf_get(const void **ret_bpf, size_t *ret_len, struct sbx_error **err)
{
    (void)err;
    *ret_bpf = seccomp_prebuilt_bpf;
    *ret_len = seccomp_prebuilt_len;
    return 0;
}
#else
int seccomp_bpf_get(const void **ret_bpf, size_t *ret_len, struct sbx_error **err)
{
    (void)ret_bpf;
    (void)ret_len;
    return sbx_error_set(err, SBX_E_UNSUPPORTED, 0,
            "this Windows build embeds no seccomp policy (build it with "
            "scripts/build-windows.sh, which compiles one)");
}
#endif
