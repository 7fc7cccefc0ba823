/* A C subscriber: receives until the publisher is gone, checks every message byte for byte
 * against the generator in common.h and that sequence numbers only skip what a lag reported,
 * then prints what it got.
 *
 * usage: sub TOPIC TOTAL [--lossy] [--copy | --mixed] [--wait-stdin] [--spin-limit-us N|none]
 *   TOTAL: messages the publisher sends; received + lagged must equal it.
 *   --copy: receive with shmcast_subscriber_recv_copy; --mixed: alternate, with a buffer
 *   that is sometimes too small; default: in place with shmcast_subscriber_recv.
 *   --wait-stdin: after connecting, wait for a line on stdin before receiving.
 *   --spin-limit-us: how long a receive polls for a message before it sleeps, or "none". */
#include "common.h"

enum how { IN_PLACE, COPY, MIXED };

int main(int argc, char **argv) {
    shmcast_subscriber_options opts;
    shmcast_subscriber *sub = NULL;
    shmcast_subscriber_stats stats;
    static uint8_t buf[1000];
    enum how how = IN_PLACE;
    int wait_stdin = 0, i, rc;
    uint64_t total, next = 0, received = 0, lagged = 0, lag_events = 0, checksum = FNV_OFFSET;
    int fds_at_start = open_fds();

    if (argc < 3) {
        FAIL("usage: sub TOPIC TOTAL [--lossy] [--copy | --mixed] [--wait-stdin] "
             "[--spin-limit-us N|none]");
    }
    total = strtoull(argv[2], NULL, 10);
    CHECK_OK(shmcast_subscriber_options_init(&opts));
    opts.connect_timeout_ms = -1; /* wait without limit: the test's watchdog bounds it */
    for (i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--lossy") == 0) {
            opts.mode = SHMCAST_MODE_LOSSY;
        } else if (strcmp(argv[i], "--copy") == 0) {
            how = COPY;
        } else if (strcmp(argv[i], "--mixed") == 0) {
            how = MIXED;
        } else if (strcmp(argv[i], "--wait-stdin") == 0) {
            wait_stdin = 1;
        } else if (strcmp(argv[i], "--spin-limit-us") == 0 && i + 1 < argc) {
            opts.spin_limit_us = spin_limit_arg(argv[++i]);
        } else {
            FAIL("unknown option %s", argv[i]);
        }
    }
    CHECK_OK(shmcast_subscriber_connect(argv[1], &opts, &sub));
    printf("connected\n");
    fflush(stdout);
    if (wait_stdin) {
        char line[16];
        if (fgets(line, sizeof line, stdin) == NULL) {
            FAIL("stdin closed before the go-ahead");
        }
    }

    for (;;) {
        shmcast_sample sample;
        const uint8_t *data;
        size_t len = 0;
        uint64_t seq = 0;
        int in_place = how == IN_PLACE || (how == MIXED && received % 2 == 0);

        if (in_place) {
            rc = shmcast_subscriber_recv(sub, 60000, &sample);
            data = (const uint8_t *)sample.data;
            len = sample.len;
            seq = sample.seq;
        } else {
            /* In mixed mode every third copy gets a buffer too small for most messages: the
             * message must be kept and handed out by the next receive. */
            size_t cap = how == MIXED && received % 3 == 1 ? 10 : sizeof buf;
            rc = shmcast_subscriber_recv_copy(sub, 60000, buf, cap, &len, &seq);
            if (rc == SHMCAST_EMSGSIZE) {
                if (len <= cap) {
                    FAIL("EMSGSIZE for %zu bytes with room for %zu", len, cap);
                }
                rc = shmcast_subscriber_recv_copy(sub, 0, buf, sizeof buf, &len, &seq);
                if (rc != SHMCAST_OK) {
                    FAIL("the kept message was not handed out: %d (%s)", rc,
                         shmcast_last_error_message());
                }
            }
            data = buf;
        }

        if (rc == SHMCAST_OK) {
            size_t bad;
            if (seq != next) {
                FAIL("got message %" PRIu64 ", expected %" PRIu64, seq, next);
            }
            if (len != gen_len(seq)) {
                FAIL("message %" PRIu64 " has %zu bytes, expected %zu", seq, len, gen_len(seq));
            }
            bad = gen_check(seq, data, len);
            if (bad != len) {
                FAIL("message %" PRIu64 " differs at byte %zu", seq, bad);
            }
            checksum = checksum_add(checksum, seq, data, len);
            received++;
            next++;
            if (in_place) {
                CHECK_OK(shmcast_sample_release(&sample));
                if (sample.data != NULL || sample.owner != NULL) {
                    FAIL("release did not clear the sample");
                }
            }
        } else if (rc == SHMCAST_ELAGGED) {
            uint64_t n = shmcast_last_lagged_count();
            if (n == 0) {
                FAIL("lagged by 0 messages");
            }
            lagged += n;
            lag_events++;
            next += n;
        } else if (rc == SHMCAST_EDISCONNECTED) {
            break;
        } else {
            FAIL("receive failed: %d (%s): %s", rc, shmcast_strerror(rc),
                 shmcast_last_error_message());
        }
    }

    /* The end of the stream is final. */
    {
        shmcast_sample sample;
        rc = shmcast_subscriber_recv(sub, 0, &sample);
        if (rc != SHMCAST_EDISCONNECTED) {
            FAIL("receive after the end gave %d, not SHMCAST_EDISCONNECTED", rc);
        }
    }
    CHECK_OK(shmcast_subscriber_get_stats(sub, &stats));
    if (stats.received != received || stats.lagged != lagged || stats.lag_events != lag_events) {
        FAIL("stats disagree: received %" PRIu64 "/%" PRIu64 ", lagged %" PRIu64 "/%" PRIu64,
             stats.received, received, stats.lagged, lagged);
    }
    printf("received count %" PRIu64 " lagged %" PRIu64 " lag_events %" PRIu64
           " checksum %" PRIu64 "\n",
           received, lagged, lag_events, checksum);
    fflush(stdout);
    shmcast_subscriber_destroy(sub);
    if (received + lagged != total) {
        FAIL("received %" PRIu64 " + lagged %" PRIu64 " != %" PRIu64, received, lagged, total);
    }
    EXPECT_NO_FD_LEAK(fds_at_start);
    return 0;
}
