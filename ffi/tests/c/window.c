/* The cache window from C: a publisher of a 64 KiB ring with the window CACHE_WINDOW_KIB
 * ("none": SHMCAST_CACHE_WINDOW_NONE, "default": the field left as initialised) and a gating
 * subscriber that keeps up, in this process, pass COUNT messages of 1000 bytes, each checked
 * byte for byte. Then a late subscriber from the oldest message reads what the ring still
 * holds, in order up to the last message, and prints "history N" (N messages): a window of a
 * few KiB keeps only its own few messages, no window the whole ring's. The program then waits
 * for a line on stdin, so that the test can inspect the topic, and exits.
 *
 * usage: window TOPIC CACHE_WINDOW_KIB COUNT */
#include "common.h"

#define LEN 1000

int main(int argc, char **argv) {
    shmcast_publisher_options popts;
    shmcast_subscriber_options sopts;
    shmcast_publisher *pub = NULL;
    shmcast_subscriber *sub = NULL, *late = NULL;
    shmcast_sample sample;
    static uint8_t buf[LEN];
    uint64_t count, seq, history = 0, next = 0;
    char line[16];
    int rc, fds_at_start = open_fds();

    if (argc != 4) {
        FAIL("usage: window TOPIC CACHE_WINDOW_KIB COUNT");
    }
    count = strtoull(argv[3], NULL, 10);

    CHECK_OK(shmcast_publisher_options_init(&popts));
    popts.capacity = 65536;
    if (strcmp(argv[2], "none") == 0) {
        popts.cache_window_kib = SHMCAST_CACHE_WINDOW_NONE;
    } else if (strcmp(argv[2], "default") != 0) {
        popts.cache_window_kib = (uint32_t)strtoul(argv[2], NULL, 10);
    }
    CHECK_OK(shmcast_publisher_create(argv[1], &popts, &pub));
    CHECK_OK(shmcast_subscriber_options_init(&sopts));
    CHECK_OK(shmcast_subscriber_connect(argv[1], &sopts, &sub));
    CHECK_OK(shmcast_publisher_wait_for_subscribers(pub, 1, 60000));

    for (seq = 0; seq < count; seq++) {
        size_t bad;
        gen_fill(seq, buf, LEN);
        CHECK_OK(shmcast_publisher_send(pub, buf, LEN, 60000));
        CHECK_OK(shmcast_subscriber_recv(sub, 60000, &sample));
        if (sample.seq != seq || sample.len != LEN) {
            FAIL("got message %" PRIu64 " of %zu bytes, expected %" PRIu64, sample.seq,
                 sample.len, seq);
        }
        bad = gen_check(seq, (const uint8_t *)sample.data, LEN);
        if (bad != LEN) {
            FAIL("message %" PRIu64 " differs at byte %zu", seq, bad);
        }
        CHECK_OK(shmcast_sample_release(&sample));
    }

    /* What a late joiner finds: the newest messages, in order, ending with the last. */
    sopts.start = SHMCAST_START_OLDEST;
    CHECK_OK(shmcast_subscriber_connect(argv[1], &sopts, &late));
    while ((rc = shmcast_subscriber_recv(late, 0, &sample)) == SHMCAST_OK) {
        if (history > 0 && sample.seq != next) {
            FAIL("history jumps from %" PRIu64 " to %" PRIu64, next - 1, sample.seq);
        }
        if (gen_check(sample.seq, (const uint8_t *)sample.data, sample.len) != LEN) {
            FAIL("history message %" PRIu64 " is not what was sent", sample.seq);
        }
        next = sample.seq + 1;
        history++;
        CHECK_OK(shmcast_sample_release(&sample));
    }
    if (rc != SHMCAST_EAGAIN) {
        FAIL("reading the history ended with %d (%s)", rc, shmcast_last_error_message());
    }
    if (history == 0 || next != count) {
        FAIL("the history ends at %" PRIu64 ", not at the last message %" PRIu64, next, count);
    }
    printf("history %" PRIu64 "\n", history);
    fflush(stdout);

    if (fgets(line, sizeof line, stdin) == NULL) {
        FAIL("stdin closed before the go-ahead");
    }
    shmcast_subscriber_destroy(late);
    shmcast_subscriber_destroy(sub);
    shmcast_publisher_destroy(pub);
    EXPECT_NO_FD_LEAK(fds_at_start);
    printf("checks passed\n");
    return 0;
}
