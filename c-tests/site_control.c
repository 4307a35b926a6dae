/* Call sites under control: per-site limits (a storm, once, every N, the
 * global VLOG_RATELIMIT), sites switched on by function, file and line
 * through the control socket, the catalog (`sites`, `sources`) listing a
 * site that never ran, and the ids a build gives its sites.
 *
 *   site_control storm DIR | once DIR | global DIR | switch DIR | ids DIR
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "check.h"

VLOG_INIT("storage.disk");

static char sock[512];

/* One request to the control socket and its whole reply (malloc'd). */
static char *ask(const char *request)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    struct timeval tv = {.tv_sec = 30};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    ssize_t n;

    CHECK(fd >= 0 && buf != NULL);
    CHECK(strlen(sock) < sizeof a.sun_path);
    strcpy(a.sun_path, sock);
    CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);
    CHECK(write(fd, request, strlen(request)) == (ssize_t)strlen(request));
    CHECK(write(fd, "\n", 1) == 1);
    while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)n;
        if (cap - len < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
            CHECK(buf != NULL);
        }
    }
    CHECK(n == 0);
    buf[len] = '\0';
    close(fd);
    return buf;
}

static void start_control(const char *dir)
{
    char spec[600];

    CHECK((size_t)snprintf(sock, sizeof sock, "%s/ctl.sock", dir) < sizeof sock);
    CHECK((size_t)snprintf(spec, sizeof spec, "%s", sock) < sizeof spec);
    CHECK(vlog_control_start(spec) == 0);
}

/* The file output's lines so far (malloc'd). */
static char *output(const char *path)
{
    CHECK(vlog_flush() == 0);
    return check_slurp_path(path);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void storm_site(int i)
{
    VLOG_ERROR_RATELIMITED("disk %d failed: %s", i, "EIO");
}

static void unlimited_site(int i)
{
    VLOG_ERROR("disk %d failed without a limit: %s", i, "EIO");
}

/* A storm of 1,000,000 errors from one site: at most the burst per
 * interval is printed (each after the first interval with the count left
 * out), in a fraction of the time 100,000 unlimited ones take, and the
 * ring keeps the earlier debug records of the other sites. */
static void storm(const char *dir)
{
    const char *log = check_path(dir, "storm.log");
    char spec[600];
    vlog_stats st;
    double t0, limited, unlimited;
    char *out, *dump;
    int records, lines, notes, intervals;

    snprintf(spec, sizeof spec, "4:file:%s", log);
    CHECK(vlog_set_outputs(spec) == 0);
    CHECK(vlog_set_filters("1:storage") == 0);
    for (int i = 0; i < 50; i++)
        VLOG_DEBUG("history %d before the storm", i);

    t0 = now_s();
    for (int i = 0; i < 1000000; i++)
        storm_site(i);
    limited = now_s() - t0;
    intervals = (int)(limited / VLOG_RATELIMIT_SECONDS) + 1;
    out = output(log);
    lines = check_count(out, "failed: EIO");
    notes = check_count(out, "VLOG_SUPPRESSED=");
    fprintf(stderr, "storm: %d lines, %d with a count, %.3f s, %d intervals\n", lines, notes,
            limited, intervals);
    CHECK(lines >= VLOG_RATELIMIT_BURST);
    CHECK(lines <= VLOG_RATELIMIT_BURST * intervals);
    CHECK(notes <= intervals);
    CHECK(vlog_get_stats(&st) == 0);
    CHECK(st.suppressed == 1000000u - (unsigned)lines);
    free(out);

    /* Every debug record from before the storm is still in the ring. */
    dump = check_dump(&records);
    for (int i = 0; i < 50; i++) {
        char want[64];
        snprintf(want, sizeof want, ": history %d before the storm\n", i);
        CHECK_HAS(dump, want);
    }
    free(dump);

    t0 = now_s();
    for (int i = 0; i < 100000; i++)
        unlimited_site(i);
    unlimited = now_s() - t0;
    fprintf(stderr, "1,000,000 limited: %.3f s; 100,000 unlimited: %.3f s\n", limited,
            unlimited);
    CHECK(limited < unlimited);
}

static void once_site(void)
{
    VLOG_INFO_ONCE("once only");
}

static void every_site(int i)
{
    VLOG_INFO_EVERY_N(10, "every tenth %d", i);
}

static void *hammer(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++) {
        once_site();
        every_site(i);
    }
    return NULL;
}

/* Once and every N count the calls of all threads exactly; the records
 * after the first say how many were left out. */
static void once(const char *dir)
{
    const char *log = check_path(dir, "once.log");
    char spec[600];
    pthread_t t[4];
    vlog_stats st;
    char *out;
    long reported = 0;

    snprintf(spec, sizeof spec, "1:file:%s", log);
    CHECK(vlog_set_outputs(spec) == 0);
    CHECK(vlog_set_filters("1:storage") == 0);
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, hammer, NULL) == 0);
    for (int i = 0; i < 4; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    out = output(log);
    CHECK(check_count(out, "once only") == 1);
    CHECK(check_count(out, "every tenth") == 400);
    /* (A site's record reports what was left out before it was made: with
     * threads, the once site's one record may report calls that came
     * while it was being made.) */
    for (const char *p = out; (p = strstr(p, ": every tenth ")) != NULL; p++) {
        const char *end = strchr(p, '\n'), *n = strstr(p, "VLOG_SUPPRESSED=");
        if (n != NULL && n < end)
            reported += atol(n + strlen("VLOG_SUPPRESSED="));
    }
    /* The records after the first report what came before them; what
     * came after the last (and what other threads counted while it was
     * being made) the catalog holds. */
    {
        char *r, *site, *at;
        long pending;
        start_control(dir);
        r = ask("--json sites");
        site = strstr(r, "\"func\":\"every_site\"");
        CHECK(site != NULL);
        at = strstr(site, "\"suppressed\":");
        CHECK(at != NULL);
        pending = atol(at + strlen("\"suppressed\":"));
        fprintf(stderr, "every N: %ld reported, %ld pending\n", reported, pending);
        CHECK(reported + pending == 3600);
        CHECK(strstr(site, "\"recorded\":400,") != NULL);
        free(r);
        CHECK(vlog_control_stop() == 0);
    }
    CHECK(vlog_get_stats(&st) == 0);
    CHECK(st.suppressed == 3999u + 3600u);
    free(out);
}

static void warn_site(int i)
{
    VLOG_WARN("warned %d", i);
}

static void info_site(int i)
{
    VLOG_INFO("informed %d", i);
}

static void own_limit_site(int i)
{
    VLOG_ERROR_ONCE("erred once %d", i);
}

/* VLOG_RATELIMIT (here vlog_set_ratelimit and the control socket) limits
 * every site from its priority up that has no limit of its own. */
static void global(const char *dir)
{
    const char *log = check_path(dir, "global.log");
    char spec[600];
    char *out, *r;

    snprintf(spec, sizeof spec, "1:file:%s", log);
    CHECK(vlog_set_outputs(spec) == 0);
    CHECK(vlog_set_filters("1:storage") == 0);
    CHECK(vlog_set_ratelimit("3:5/3600") == 0);
    for (int i = 0; i < 100; i++) {
        warn_site(i);
        info_site(i);
        own_limit_site(i);
    }
    out = output(log);
    CHECK(check_count(out, "warned") == 5);
    CHECK(check_count(out, "informed") == 100);
    CHECK(check_count(out, "erred once") == 1);
    free(out);
    CHECK(vlog_set_ratelimit("3:0/5") == -1);
    CHECK_ERROR("BURST/SECONDS");
    CHECK(vlog_set_ratelimit("10") == -1);
    CHECK_ERROR("BURST/SECONDS");

    start_control(dir);
    r = ask("show");
    CHECK_HAS(r, "VLOG_RATELIMIT=3:5/3600\n");
    free(r);
    r = ask("ratelimit off");
    CHECK_HAS(r, "ok\nVLOG_RATELIMIT=off\n");
    free(r);
    for (int i = 0; i < 100; i++)
        warn_site(i);
    out = output(log);
    /* The five of the first round (its interval is not over) and 100. */
    CHECK(check_count(out, "warned") == 105);
    free(out);
    r = ask("ratelimit 3:x/5");
    CHECK_HAS(r, "error: invalid rate limit");
    free(r);
    CHECK(vlog_control_stop() == 0);
}

/* The neighbours, at the end of this file: three statements in two
 * functions of "disk.c", one in "net.c", all debug, and a warning never
 * called. */
static void disk_submit(int i);
static void disk_read(int i);
static void net_send(int i);
void never_called(void);

static void all_four(int i)
{
    disk_submit(i);
    disk_read(i);
    net_send(i);
}

/* The records in the log of each statement since the last look. */
static void counts(const char *log, int want_submit, int want_too, int want_read,
                   int want_sent)
{
    char *out = output(log);
    int too = check_count(out, ": submitted too ");
    int submit = check_count(out, ": submitted ") - too;
    int read = check_count(out, ": read ");
    int sent = check_count(out, ": sent ");

    if (submit != want_submit || too != want_too || read != want_read || sent != want_sent) {
        fprintf(stderr, "submitted %d (want %d), too %d (%d), read %d (%d), sent %d (%d):\n%s",
                submit, want_submit, too, want_too, read, want_read, sent, want_sent, out);
        exit(1);
    }
    free(out);
    CHECK(truncate(log, 0) == 0);
}

/* Sites switched on by function, file, and file and line through the
 * control socket record from their next call; their neighbours stay off.
 * The catalog lists every site, the one never called too. */
static void sites_switched(const char *dir)
{
    const char *log = check_path(dir, "switch.log");
    char spec[600];
    char *r;

    snprintf(spec, sizeof spec, "1:file:%s", log);
    CHECK(vlog_set_outputs(spec) == 0);
    CHECK(vlog_set_level(VLOG_PRIO_WARN) == 0);
    start_control(dir);

    all_four(0);
    counts(log, 0, 0, 0, 0);

    r = ask("filters 1:func=disk_submit");
    CHECK_HAS(r, "ok\nVLOG_FILTERS=1:func=disk_submit\n");
    free(r);
    all_four(1);
    counts(log, 1, 1, 0, 0);

    r = ask("filters 1:file=disk.c");
    free(r);
    all_four(2);
    counts(log, 1, 1, 1, 0);

    r = ask("filters 1:file=disk.c:1004");
    free(r);
    all_four(3);
    counts(log, 0, 1, 0, 0);

    r = ask("filters off:file=net.c 1:storage");
    free(r);
    all_four(4);
    counts(log, 1, 1, 1, 0);

    r = ask("filters 1:file=nosuch.c:1");
    free(r);
    all_four(5);
    counts(log, 0, 0, 0, 0);

    /* The catalog: every site, the one never called among them, with its
     * id, whether it is on, its priority, level, count and format. */
    r = ask("sites");
    CHECK_HAS(r, "ok\nID ");
    CHECK_HAS(r, "storage.disk  net.c:2008  never_called  \"never called %s\"");
    CHECK_HAS(r, "storage.disk  disk.c:1003  disk_submit  \"submitted %d\"");
    free(r);
    r = ask("--json sites");
    CHECK_HAS(r, "{\"ok\":true,\"sites\":[{\"id\":\"");
    CHECK_HAS(r, "\"file\":\"net.c\",\"line\":2008,\"func\":\"never_called\",\"priority\":"
                 "\"warning\",\"level\":\"warning\",\"on\":true,\"recorded\":0,");
    CHECK_HAS(r, "\"func\":\"disk_submit\",\"priority\":\"debug\",\"level\":\"warning\","
                 "\"on\":false,\"recorded\":3,");
    free(r);
    r = ask("sources");
    CHECK_HAS(r, "ok\nSOURCE  LEVEL  SITES\n");
    CHECK_HAS(r, "storage.disk  warning  ");
    free(r);

    /* An id names one statement. */
    {
        char request[64], *line, id[9];
        r = ask("sites");
        line = strstr(r, "disk_submit  \"submitted too %d\"");
        CHECK(line != NULL);
        while (line > r && line[-1] != '\n')
            line--;
        memcpy(id, line, 8);
        id[8] = '\0';
        free(r);
        snprintf(request, sizeof request, "filters off:id=%s 1:storage", id);
        r = ask(request);
        CHECK_HAS(r, "ok\n");
        free(r);
        all_four(6);
        counts(log, 1, 0, 1, 1);
    }
    r = ask("filters 1:id=nothex");
    CHECK_HAS(r, "error: malformed filter '1:id=nothex'");
    free(r);
    CHECK(vlog_control_stop() == 0);
}

/* The ids of two statements, as the catalog shows them: the test builds
 * this twice (lines moved, one format reworded) and compares. */
static void ids(const char *dir)
{
    const char *names[] = {"disk_read  \"read %d", "disk_submit  \"submitted %d\""};
    start_control(dir);
    char *r = ask("sites");
    for (size_t i = 0; i < 2; i++) {
        char *line = strstr(r, names[i]);
        CHECK(line != NULL);
        while (line > r && line[-1] != '\n')
            line--;
        printf("%.8s %s\n", line, names[i]);
    }
    free(r);
    CHECK(vlog_control_stop() == 0);
}

int main(int argc, char **argv)
{
    CHECK(argc == 3);
    if (strcmp(argv[1], "storm") == 0)
        storm(argv[2]);
    else if (strcmp(argv[1], "once") == 0)
        once(argv[2]);
    else if (strcmp(argv[1], "global") == 0)
        global(argv[2]);
    else if (strcmp(argv[1], "switch") == 0)
        sites_switched(argv[2]);
    else if (strcmp(argv[1], "ids") == 0)
        ids(argv[2]);
    else
        return 2;
    if (strcmp(argv[1], "ids") != 0)
        puts("ok");
    return 0;
}

/* Last in the file: what follows seems to the compiler to be other files.
 * The test of ids builds it with the lines moved (SITES_MOVED) and with one
 * format reworded (SITES_REWORDED). */
#ifdef SITES_MOVED
#line 3000 "src/storage/disk-moved.c"
#else
#line 1000 "disk.c"
#endif
static void disk_submit(int i)
{
    VLOG_DEBUG("submitted %d", i);
    VLOG_DEBUG("submitted too %d", i);
}

static void disk_read(int i)
{
#ifdef SITES_REWORDED
    VLOG_DEBUG("read %d bytes", i);
#else
    VLOG_DEBUG("read %d", i);
#endif
}
#line 2000 "net.c"
static void net_send(int i)
{
    VLOG_DEBUG("sent %d", i);
}

/* Not static: a static function never called is not compiled at all. */
void never_called(void)
{
    VLOG_WARN("never called %s", "at all");
}
