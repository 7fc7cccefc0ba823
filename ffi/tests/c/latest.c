/* Resume policies and latest reads from C: a lossy subscriber connects with the resume policy
 * given, lets the publisher lap it (it waits for a line on stdin), then receives once with
 * shmcast_subscriber_recv (a lag, counted exactly), once with shmcast_subscriber_recv_latest
 * (the newest message, with the count it passed over), and checks that the stream then ends.
 *
 * usage: latest TOPIC TOTAL slack|newest|oldest
 *   TOTAL: messages the publisher sends before the go-ahead; lagged + skipped + 1 must equal
 *   it. Prints `lagged N`, then `latest seq S skipped K`. */
#include "common.h"

#include "expect.h"

int main(int argc, char **argv) {
    shmcast_subscriber_options opts;
    shmcast_subscriber *sub = NULL;
    shmcast_sample sample, other;
    uint64_t total, lagged, skipped = 0;
    size_t bad;
    char line[16];
    int fds_at_start = open_fds();

    if (argc != 4) {
        FAIL("usage: latest TOPIC TOTAL slack|newest|oldest");
    }
    total = strtoull(argv[2], NULL, 10);
    CHECK_OK(shmcast_subscriber_options_init(&opts));
    opts.connect_timeout_ms = -1; /* the test's watchdog bounds it */
    opts.mode = SHMCAST_MODE_LOSSY;

    /* An unknown policy is refused before anything is sent. */
    opts.resume = 7;
    EXPECT(shmcast_subscriber_connect(argv[1], &opts, &sub), SHMCAST_EINVAL);
    EXPECT_MESSAGE("resume");
    EXPECT_TRUE(sub == NULL);

    if (strcmp(argv[3], "newest") == 0) {
        opts.resume = SHMCAST_RESUME_NEWEST;
    } else if (strcmp(argv[3], "oldest") == 0) {
        opts.resume = SHMCAST_RESUME_OLDEST;
    } else {
        opts.resume = SHMCAST_RESUME_SLACK;
    }
    CHECK_OK(shmcast_subscriber_connect(argv[1], &opts, &sub));
    printf("connected\n");
    fflush(stdout);
    if (fgets(line, sizeof line, stdin) == NULL) {
        FAIL("stdin closed before the go-ahead");
    }

    /* Lapped: the first receive reports exactly what was overwritten. */
    EXPECT(shmcast_subscriber_recv(sub, 60000, &sample), SHMCAST_ELAGGED);
    lagged = shmcast_last_lagged_count();
    EXPECT_TRUE(lagged > 0 && lagged < total);
    printf("lagged %" PRIu64 "\n", lagged);

    /* Then the newest message, and how many it passed over since the lag. */
    EXPECT(shmcast_subscriber_recv_latest(sub, 60000, NULL, &skipped), SHMCAST_EINVAL);
    CHECK_OK(shmcast_subscriber_recv_latest(sub, 60000, &sample, &skipped));
    EXPECT_TRUE(sample.seq == total - 1);
    EXPECT_TRUE(sample.seq == lagged + skipped);
    EXPECT_TRUE(sample.len == gen_len(sample.seq));
    bad = gen_check(sample.seq, (const uint8_t *)sample.data, sample.len);
    EXPECT_TRUE(bad == sample.len);
    /* One sample at a time, as with shmcast_subscriber_recv. */
    EXPECT(shmcast_subscriber_recv_latest(sub, 0, &other, NULL), SHMCAST_EBUSY);
    printf("latest seq %" PRIu64 " skipped %" PRIu64 "\n", sample.seq, skipped);
    fflush(stdout);
    CHECK_OK(shmcast_sample_release(&sample));

    /* Nothing newer: the publisher is gone, and the end is final for both receives. */
    EXPECT(shmcast_subscriber_recv_latest(sub, 0, &sample, &skipped), SHMCAST_EDISCONNECTED);
    EXPECT_TRUE(sample.data == NULL && sample.owner == NULL);
    EXPECT(shmcast_subscriber_recv(sub, 0, &sample), SHMCAST_EDISCONNECTED);
    shmcast_subscriber_destroy(sub);
    EXPECT_NO_FD_LEAK(fds_at_start);
    printf("checks passed %d\n", checks);
    return 0;
}
