/* SPDX-License-Identifier: MIT */
/*
 * fuzz_b64.c: libFuzzer target for the base64 codec the file tools and
 * resources use (core/mcp/b64.c). Any input either fails to decode or
 * decodes to bytes that encode back to the canonical text and decode
 * again to the same bytes; and any input encodes to text that decodes
 * back to it. A crash, a leak or an abort() is a bug. Build with clang
 * -fsanitize=fuzzer, or link with replay.c to replay a corpus.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok)
{
    if (!ok)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *dec = NULL, *enc, *again = NULL;
    size_t n, m;

    /* decoding arbitrary text */
    if (b64_decode((const char *)data, size, &dec, &n) == 0) {
        check(dec[n] == '\0');
        enc = b64_encode(dec, n);
        check(enc != NULL && strlen(enc) % 4 == 0);
        check(b64_decode(enc, strlen(enc), &again, &m) == 0);
        check(m == n && memcmp(again, dec, n) == 0);
        free(enc);
        free(again);
        free(dec);
    }
    /* encoding arbitrary bytes */
    enc = b64_encode(data, size);
    check(enc != NULL && strlen(enc) == (size + 2) / 3 * 4);
    check(b64_decode(enc, strlen(enc), &dec, &n) == 0);
    check(n == size && memcmp(dec, data, size) == 0);
    free(enc);
    free(dec);
    return 0;
}
