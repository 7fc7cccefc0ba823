/* The checks the C error-path tests count: each failed check prints where and why, with the
 * library's last error message, and exits non-zero. Include after common.h. */
#ifndef SHMCAST_TEST_EXPECT_H
#define SHMCAST_TEST_EXPECT_H

#include <string.h>

/* Checks passed so far, for the closing line. */
static int checks = 0;

#define EXPECT(call, code)                                                                        \
    do {                                                                                          \
        int expect_rc_ = (call);                                                                  \
        checks++;                                                                                 \
        if (expect_rc_ != (code)) {                                                               \
            fprintf(stderr, "%s:%d: %s returned %d (%s: %s), expected %s\n", __FILE__,           \
                    __LINE__, #call, expect_rc_, shmcast_strerror(expect_rc_),                    \
                    shmcast_last_error_message(), #code);                                         \
            exit(3);                                                                              \
        }                                                                                         \
    } while (0)

#define EXPECT_TRUE(cond)                                                                         \
    do {                                                                                          \
        checks++;                                                                                 \
        if (!(cond)) {                                                                            \
            FAIL("expected %s (last error: %s)", #cond, shmcast_last_error_message());            \
        }                                                                                         \
    } while (0)

/* The last error message contains `needle`. */
#define EXPECT_MESSAGE(needle)                                                                    \
    do {                                                                                          \
        checks++;                                                                                 \
        if (strstr(shmcast_last_error_message(), (needle)) == NULL) {                             \
            FAIL("error message \"%s\" lacks \"%s\"", shmcast_last_error_message(), (needle));    \
        }                                                                                         \
    } while (0)

#endif /* SHMCAST_TEST_EXPECT_H */
