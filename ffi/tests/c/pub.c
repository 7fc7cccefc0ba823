/* A C publisher: waits for SUBSCRIBERS subscribers, publishes messages 0..COUNT-1 of the
 * generator in common.h (alternating loan/publish and send, with an abandoned loan now and
 * then that nobody must see), prints its checksum and exits.
 *
 * usage: pub TOPIC COUNT SUBSCRIBERS [CAPACITY [SPIN_LIMIT_US]]
 *   SPIN_LIMIT_US: how long a loan polls a full ring before it sleeps, or "none". */
#include "common.h"

int main(int argc, char **argv) {
    shmcast_publisher_options opts;
    shmcast_publisher *pub = NULL;
    shmcast_publisher_stats stats;
    static uint8_t buf[1000];
    uint64_t count, subscribers, seq, checksum = FNV_OFFSET;
    int fds_at_start = open_fds();

    if (argc < 4) {
        FAIL("usage: pub TOPIC COUNT SUBSCRIBERS [CAPACITY [SPIN_LIMIT_US]]");
    }
    count = strtoull(argv[2], NULL, 10);
    subscribers = strtoull(argv[3], NULL, 10);

    CHECK_OK(shmcast_publisher_options_init(&opts));
    opts.capacity = argc > 4 ? strtoull(argv[4], NULL, 10) : 65536;
    if (argc > 5) {
        opts.spin_limit_us = spin_limit_arg(argv[5]);
    }
    /* Every message must arrive, also at a subscriber slowed down by memcheck: never demote. */
    opts.stall_bound_ms = -1;
    CHECK_OK(shmcast_publisher_create(argv[1], &opts, &pub));
    printf("listening %s\n", shmcast_publisher_path(pub));
    fflush(stdout);

    /* Whatever is published before a subscriber connects never reaches it. */
    if (shmcast_publisher_wait_for_subscribers(pub, (size_t)subscribers, 120000) != SHMCAST_OK) {
        FAIL("%s", shmcast_last_error_message());
    }

    for (seq = 0; seq < count; seq++) {
        size_t len = gen_len(seq);
        if (seq % 7 == 3) {
            void *junk = NULL;
            CHECK_OK(shmcast_publisher_loan(pub, len, -1, &junk));
            memset(junk, 0xEE, len);
            CHECK_OK(shmcast_publisher_abandon(pub));
        }
        if (seq % 2 == 0) {
            void *data = NULL;
            CHECK_OK(shmcast_publisher_loan(pub, len, -1, &data));
            if (((uintptr_t)data) % 16 != 0) {
                FAIL("loaned buffer %p is not 16-byte aligned", data);
            }
            gen_fill(seq, (uint8_t *)data, len);
            checksum = checksum_add(checksum, seq, (const uint8_t *)data, len);
            CHECK_OK(shmcast_publisher_publish(pub));
        } else {
            gen_fill(seq, buf, len);
            checksum = checksum_add(checksum, seq, buf, len);
            CHECK_OK(shmcast_publisher_send(pub, buf, len, -1));
        }
    }

    CHECK_OK(shmcast_publisher_get_stats(pub, &stats));
    if (stats.messages != count) {
        FAIL("stats say %" PRIu64 " messages, sent %" PRIu64, stats.messages, count);
    }
    printf("sent count %" PRIu64 " checksum %" PRIu64 "\n", count, checksum);
    fflush(stdout);
    shmcast_publisher_destroy(pub);
    EXPECT_NO_FD_LEAK(fds_at_start);
    return 0;
}
