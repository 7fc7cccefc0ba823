/* Three subscribers served by one classic poll() loop: receive without waiting until
 * SHMCAST_EAGAIN (which arms the descriptor), then poll all descriptors. Every message is
 * checked against the generator in common.h; the loop ends when all three publishers are gone.
 *
 * usage: poll3 TOPIC1 TOPIC2 TOPIC3 COUNT */
#include "common.h"

#include <poll.h>

#define N 3

int main(int argc, char **argv) {
    shmcast_subscriber_options opts;
    shmcast_subscriber *subs[N];
    uint64_t next[N], checksum[N], count, polls = 0;
    int live[N], remaining = N, i;
    int fds_at_start = open_fds();

    if (argc != N + 2) {
        FAIL("usage: poll3 TOPIC1 TOPIC2 TOPIC3 COUNT");
    }
    count = strtoull(argv[N + 1], NULL, 10);
    CHECK_OK(shmcast_subscriber_options_init(&opts));
    opts.connect_timeout_ms = 120000;
    for (i = 0; i < N; i++) {
        CHECK_OK(shmcast_subscriber_connect(argv[i + 1], &opts, &subs[i]));
        if (shmcast_subscriber_fd(subs[i]) < 0) {
            FAIL("no descriptor for subscriber %d", i);
        }
        next[i] = 0;
        checksum[i] = FNV_OFFSET;
        live[i] = 1;
    }
    printf("connected\n");
    fflush(stdout);

    while (remaining > 0) {
        struct pollfd fds[N];
        int nfds = 0, ready;

        for (i = 0; i < N; i++) {
            while (live[i]) {
                shmcast_sample s;
                int rc = shmcast_subscriber_recv(subs[i], 0, &s);
                if (rc == SHMCAST_OK) {
                    const uint8_t *data = (const uint8_t *)s.data;
                    if (s.seq != next[i] || s.len != gen_len(s.seq) ||
                        gen_check(s.seq, data, s.len) != s.len) {
                        FAIL("subscriber %d: bad message %" PRIu64 " (expected %" PRIu64 ")", i,
                             s.seq, next[i]);
                    }
                    checksum[i] = checksum_add(checksum[i], s.seq, data, s.len);
                    next[i]++;
                    CHECK_OK(shmcast_sample_release(&s));
                } else if (rc == SHMCAST_EAGAIN) {
                    break;
                } else if (rc == SHMCAST_EDISCONNECTED) {
                    live[i] = 0;
                    remaining--;
                } else {
                    FAIL("subscriber %d: %d (%s): %s", i, rc, shmcast_strerror(rc),
                         shmcast_last_error_message());
                }
            }
            if (live[i]) {
                fds[nfds].fd = shmcast_subscriber_fd(subs[i]);
                fds[nfds].events = POLLIN;
                fds[nfds].revents = 0;
                nfds++;
            }
        }
        if (nfds == 0) {
            break;
        }
        ready = poll(fds, (nfds_t)nfds, 60000);
        if (ready < 0) {
            perror("poll");
            return 3;
        }
        if (ready == 0) {
            FAIL("no readiness for 60 s: a wakeup was lost");
        }
        polls++;
    }

    for (i = 0; i < N; i++) {
        printf("sub%d received count %" PRIu64 " checksum %" PRIu64 "\n", i, next[i],
               checksum[i]);
        shmcast_subscriber_destroy(subs[i]);
    }
    printf("polls count %" PRIu64 "\n", polls);
    fflush(stdout);
    for (i = 0; i < N; i++) {
        if (next[i] != count) {
            FAIL("subscriber %d received %" PRIu64 " of %" PRIu64, i, next[i], count);
        }
    }
    EXPECT_NO_FD_LEAK(fds_at_start);
    return 0;
}
