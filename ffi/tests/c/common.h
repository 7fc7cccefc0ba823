/* Helpers shared by the C test programs: the deterministic message generator (mirrored in
 * tests/support/mod.rs), the checksum, and failure reporting. */
#ifndef SHMCAST_TEST_COMMON_H
#define SHMCAST_TEST_COMMON_H

#include <shmcast.h>

#include <dirent.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* Length of message `seq`: 0 to 999 bytes, every residue reached. */
static inline size_t gen_len(uint64_t seq) {
    return (size_t)((seq * 37u + 11u) % 1000u);
}

/* Byte `i` of message `seq`. */
static inline uint8_t gen_byte(uint64_t seq, size_t i) {
    return (uint8_t)((seq * 131u + (uint64_t)i * 7u + ((uint64_t)i >> 8)) ^ (seq >> 3));
}

static inline void gen_fill(uint64_t seq, uint8_t *buf, size_t len) {
    size_t i;
    for (i = 0; i < len; i++) {
        buf[i] = gen_byte(seq, i);
    }
}

/* Index of the first byte that differs from the generator's, or `len` if all match. */
static inline size_t gen_check(uint64_t seq, const uint8_t *buf, size_t len) {
    size_t i;
    for (i = 0; i < len; i++) {
        if (buf[i] != gen_byte(seq, i)) {
            return i;
        }
    }
    return len;
}

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME UINT64_C(0x100000001b3)

static inline uint64_t fnv_byte(uint64_t h, uint8_t b) {
    return (h ^ b) * FNV_PRIME;
}

static inline uint64_t fnv_u64(uint64_t h, uint64_t v) {
    int i;
    for (i = 0; i < 8; i++) {
        h = fnv_byte(h, (uint8_t)(v >> (8 * i)));
    }
    return h;
}

/* Folds one message (sequence number, length, bytes) into a running checksum. */
static inline uint64_t checksum_add(uint64_t h, uint64_t seq, const uint8_t *data, size_t len) {
    size_t i;
    h = fnv_u64(h, seq);
    h = fnv_u64(h, (uint64_t)len);
    for (i = 0; i < len; i++) {
        h = fnv_byte(h, data[i]);
    }
    return h;
}

/* A `spin_limit_us` option from the command line: "none" for SHMCAST_SPIN_NONE, else a number. */
static inline uint32_t spin_limit_arg(const char *arg) {
    return strcmp(arg, "none") == 0 ? SHMCAST_SPIN_NONE : (uint32_t)strtoul(arg, NULL, 10);
}

/* Reports a failed call with its code, static message and detail, and exits with status 2. */
#define CHECK_OK(call)                                                                            \
    do {                                                                                          \
        int check_rc_ = (call);                                                                   \
        if (check_rc_ != SHMCAST_OK) {                                                            \
            fprintf(stderr, "%s:%d: %s failed: %d (%s): %s\n", __FILE__, __LINE__, #call,        \
                    check_rc_, shmcast_strerror(check_rc_), shmcast_last_error_message());        \
            exit(2);                                                                              \
        }                                                                                         \
    } while (0)

#define FAIL(...)                                                                                 \
    do {                                                                                          \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                           \
        fprintf(stderr, __VA_ARGS__);                                                             \
        fputc('\n', stderr);                                                                      \
        exit(3);                                                                                  \
    } while (0)

/* Descriptors this process has open below its descriptor limit (a tool running the program, such
 * as valgrind, keeps its own above it). The directory stream that counts them is one of them, at
 * every call, so two counts compare. */
static inline int open_fds(void) {
    struct rlimit lim;
    struct dirent *entry;
    long limit = 1024;
    int n = 0;
    DIR *dir;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
        limit = (long)lim.rlim_cur;
    }
    dir = opendir("/proc/self/fd");
    if (dir == NULL) {
        FAIL("cannot list /proc/self/fd");
    }
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] != '.' && strtol(entry->d_name, NULL, 10) < limit) {
            n++;
        }
    }
    closedir(dir);
    return n;
}

/* Fails if the process has another number of descriptors open than `at_start`: every handle the
 * program created has been destroyed by now, and must have closed what it opened. */
#define EXPECT_NO_FD_LEAK(at_start)                                                               \
    do {                                                                                          \
        int fds_now_ = open_fds();                                                                \
        if (fds_now_ != (at_start)) {                                                             \
            FAIL("descriptor leak: %d open at the start, %d at the end", (at_start), fds_now_);   \
        }                                                                                         \
    } while (0)

#endif
