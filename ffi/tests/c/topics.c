/* Where topics live, from C: a publisher never replaces what is not a stale socket of ours
 * (SHMCAST_EEXIST, the file left as it was), and a subscriber finds no topic socket there
 * (SHMCAST_EEXIST too); a relative directory is taken from the working directory once, so a
 * publisher that changes directory still removes its socket; socket paths over the limit and missing
 * directories are SHMCAST_ETOPIC naming the path, and the topic directory comes from the
 * `directory` option, then SHMCAST_DIR, then XDG_RUNTIME_DIR; SHMCAST_ENOPUBLISHER says where
 * it looked and why.
 *
 * usage: topics SCRATCH_DIR (an empty directory of this process's uid, mode 0700) */
#include "common.h"
#include "expect.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* Writes `dir/name` into `out`, failing if it does not fit. */
static void join(char *out, size_t size, const char *dir, const char *name) {
    int n = snprintf(out, size, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= size) {
        FAIL("path %s/%s too long for the test", dir, name);
    }
}

static int mentions(const char *needle) {
    return strstr(shmcast_last_error_message(), needle) != NULL;
}

/* Creating a publisher at `path` fails with `SHMCAST_EEXIST`, says what is there, and leaves
 * the file as it was. */
static void refused_and_kept(const char *path, const char *kind) {
    struct stat before, after;
    shmcast_publisher *pub = NULL;
    EXPECT_TRUE(lstat(path, &before) == 0);
    EXPECT(shmcast_publisher_create(path, NULL, &pub), SHMCAST_EEXIST);
    EXPECT_TRUE(pub == NULL);
    EXPECT_TRUE(mentions(path) && mentions(kind) && mentions("not a topic socket"));
    EXPECT_TRUE(lstat(path, &after) == 0);
    EXPECT_TRUE(before.st_dev == after.st_dev && before.st_ino == after.st_ino &&
                before.st_mode == after.st_mode);
}

/* A stream socket another program listens on: no topic socket to a subscriber. */
static void another_programs_socket(const char *dir) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    shmcast_subscriber *sub = NULL;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_TRUE(fd >= 0);
    join(addr.sun_path, sizeof addr.sun_path, dir, "stream.sock");
    EXPECT_TRUE(bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 && listen(fd, 1) == 0);
    EXPECT(shmcast_subscriber_connect(addr.sun_path, NULL, &sub), SHMCAST_EEXIST);
    EXPECT_TRUE(sub == NULL && mentions("not a shmcast topic socket"));
    close(fd);
    unlink(addr.sun_path);
}

static void occupied_paths(const char *dir) {
    char file[512], fifo[512], link[512], sub[512];
    FILE *f;
    char text[16] = {0};
    join(file, sizeof file, dir, "notes.txt");
    f = fopen(file, "w");
    EXPECT_TRUE(f != NULL);
    fputs("my notes", f);
    fclose(f);
    refused_and_kept(file, "a regular file");
    {
        shmcast_subscriber *s = NULL;
        EXPECT(shmcast_subscriber_connect(file, NULL, &s), SHMCAST_EEXIST);
        EXPECT_TRUE(s == NULL && mentions("a regular file, not a topic socket"));
    }
    f = fopen(file, "r");
    EXPECT_TRUE(f != NULL && fgets(text, sizeof text, f) != NULL);
    fclose(f);
    EXPECT_TRUE(strcmp(text, "my notes") == 0);

    join(fifo, sizeof fifo, dir, "pipe");
    EXPECT_TRUE(mkfifo(fifo, 0600) == 0);
    refused_and_kept(fifo, "a FIFO");

    join(link, sizeof link, dir, "link");
    EXPECT_TRUE(symlink(file, link) == 0);
    refused_and_kept(link, "a symbolic link");

    another_programs_socket(dir);

    join(sub, sizeof sub, dir, "subdir");
    EXPECT_TRUE(mkdir(sub, 0700) == 0);
    refused_and_kept(sub, "a directory");
}

static void long_and_missing_paths(const char *dir) {
    char path[512], missing[512];
    shmcast_publisher *pub = NULL;
    shmcast_subscriber *sub = NULL;
    size_t len = strlen(dir);
    /* 108 bytes: one more than a socket address holds with its NUL. */
    EXPECT_TRUE(len + 2 < 108);
    memcpy(path, dir, len);
    path[len] = '/';
    memset(path + len + 1, 'x', 108 - len - 1);
    path[108] = '\0';
    EXPECT(shmcast_publisher_create(path, NULL, &pub), SHMCAST_ETOPIC);
    EXPECT_TRUE(mentions(path) && mentions("is 108 bytes, more than the 107"));
    EXPECT_TRUE(access(path, F_OK) != 0);
    EXPECT(shmcast_subscriber_connect(path, NULL, &sub), SHMCAST_ETOPIC);
    EXPECT_TRUE(mentions(path) && mentions("is 108 bytes, more than the 107"));
    path[107] = '\0';
    CHECK_OK(shmcast_publisher_create(path, NULL, &pub));
    shmcast_publisher_destroy(pub);

    join(missing, sizeof missing, dir, "missing");
    join(path, sizeof path, missing, "topic");
    EXPECT(shmcast_publisher_create(path, NULL, &pub), SHMCAST_ETOPIC);
    EXPECT_TRUE(mentions(path) && mentions(missing) && mentions("does not exist"));
}

static void directories(const char *dir) {
    char topics[512], elsewhere[512], path[512];
    shmcast_publisher_options popts;
    shmcast_subscriber_options sopts;
    shmcast_publisher *pub = NULL;
    shmcast_subscriber *sub = NULL;
    shmcast_sample sample;
    struct stat st;
    join(topics, sizeof topics, dir, "topics");
    join(elsewhere, sizeof elsewhere, dir, "elsewhere");

    /* The publisher's `directory` option: created private, and the socket is there. */
    CHECK_OK(shmcast_publisher_options_init(&popts));
    popts.directory = topics;
    CHECK_OK(shmcast_publisher_create("ticks", &popts, &pub));
    join(path, sizeof path, topics, "ticks");
    EXPECT_TRUE(strcmp(shmcast_publisher_path(pub), path) == 0);
    EXPECT_TRUE(stat(topics, &st) == 0 && (st.st_mode & 0777) == 0700);

    /* A subscriber finds it through the same option... */
    CHECK_OK(shmcast_subscriber_options_init(&sopts));
    sopts.directory = topics;
    CHECK_OK(shmcast_subscriber_connect("ticks", &sopts, &sub));
    CHECK_OK(shmcast_publisher_send(pub, "hi", 2, -1));
    CHECK_OK(shmcast_subscriber_recv(sub, -1, &sample));
    EXPECT_TRUE(sample.len == 2 && memcmp(sample.data, "hi", 2) == 0);
    CHECK_OK(shmcast_sample_release(&sample));
    shmcast_subscriber_destroy(sub);

    /* ...or through SHMCAST_DIR, which the option overrides. */
    EXPECT_TRUE(setenv("SHMCAST_DIR", topics, 1) == 0);
    CHECK_OK(shmcast_subscriber_connect("ticks", NULL, &sub));
    shmcast_subscriber_destroy(sub);
    sopts.directory = elsewhere;
    EXPECT(shmcast_subscriber_connect("ticks", &sopts, &sub), SHMCAST_ENOPUBLISHER);
    EXPECT_TRUE(sub == NULL);
    join(path, sizeof path, elsewhere, "ticks");
    EXPECT_TRUE(mentions(path) && mentions("the topic directory given by the `directory` option"));

    /* XDG_RUNTIME_DIR without SHMCAST_DIR: the error says so, and how to look elsewhere. */
    EXPECT_TRUE(unsetenv("SHMCAST_DIR") == 0);
    EXPECT_TRUE(setenv("XDG_RUNTIME_DIR", dir, 1) == 0);
    EXPECT(shmcast_subscriber_connect("ticks", NULL, &sub), SHMCAST_ENOPUBLISHER);
    join(path, sizeof path, dir, "shmcast/ticks");
    EXPECT_TRUE(mentions(path) && mentions("the topic directory from XDG_RUNTIME_DIR") &&
                mentions("set SHMCAST_DIR or the `directory` option"));
    shmcast_publisher_destroy(pub);

    /* An empty directory is a mistake, not the default. */
    popts.directory = "";
    EXPECT(shmcast_publisher_create("ticks", &popts, &pub), SHMCAST_EINVAL);
    EXPECT_TRUE(mentions("directory"));
    /* A directory others may enter is refused. */
    EXPECT_TRUE(chmod(topics, 0755) == 0);
    popts.directory = topics;
    EXPECT(shmcast_publisher_create("ticks", &popts, &pub), SHMCAST_ETOPIC);
    EXPECT_TRUE(mentions(topics) && mentions("lets others in"));
}

/* A relative `directory` is taken from the working directory at create and connect time and
 * kept absolute: the publisher's path says where, and its socket goes away with it even after
 * the process changed directory. */
static void relative_directory(const char *dir) {
    char cwd[512], topics[512], path[512];
    shmcast_publisher_options popts;
    shmcast_subscriber_options sopts;
    shmcast_publisher *pub = NULL;
    shmcast_subscriber *sub = NULL;
    EXPECT_TRUE(getcwd(cwd, sizeof cwd) != NULL);
    EXPECT_TRUE(chdir(dir) == 0);
    CHECK_OK(shmcast_publisher_options_init(&popts));
    popts.directory = "relative";
    CHECK_OK(shmcast_publisher_create("ticks", &popts, &pub));
    join(topics, sizeof topics, dir, "relative");
    join(path, sizeof path, topics, "ticks");
    EXPECT_TRUE(strcmp(shmcast_publisher_path(pub), path) == 0);
    CHECK_OK(shmcast_subscriber_options_init(&sopts));
    sopts.directory = "relative";
    CHECK_OK(shmcast_subscriber_connect("ticks", &sopts, &sub));
    shmcast_subscriber_destroy(sub);
    EXPECT_TRUE(chdir("/") == 0);
    shmcast_publisher_destroy(pub);
    EXPECT_TRUE(access(path, F_OK) != 0);
    EXPECT_TRUE(chdir(cwd) == 0);
}

int main(int argc, char **argv) {
    int fds_at_start = open_fds();
    if (argc != 2) {
        fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    occupied_paths(argv[1]);
    long_and_missing_paths(argv[1]);
    directories(argv[1]);
    relative_directory(argv[1]);
    EXPECT_NO_FD_LEAK(fds_at_start);
    printf("%d checks passed\n", checks);
    return 0;
}
