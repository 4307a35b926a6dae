/* Nobody outside the daemon's own user can make vlog open, write, wait or
 * say more than they should (DESIGN.md, "Authority"). The test
 * (tests/c_tests/authority.rs) plays the other user and prepares what this
 * program meets; this program is the daemon.
 *
 *   authority files DIR     DIR is sticky and world-writable (as /tmp),
 *                           and another user planted files there. The
 *                           environment names them as outputs and as the
 *                           dump file: each is refused with one warning,
 *                           the rest of VLOG_OUTPUTS works. Then devices,
 *                           hard links and FIFOs through vlog_set_outputs.
 *   authority crash         logs a secret and crashes (SIGSEGV): where the
 *                           dump and its ring image go is the test's.
 *   authority ring          logs one record (into the test's ring file).
 *   authority fields DIR    fields named as journald's own, as vlog's,
 *                           twice, too long for syslog, invalid: to a JSON
 *                           file, a syslog collector (this program's own
 *                           UDP socket) and journald.
 *   authority resolve DIR   in a network namespace whose resolver never
 *                           answers (the test's): a collector's name in
 *                           VLOG_OUTPUTS, vlog_set_outputs and the control
 *                           socket while a thread logs; nothing waits for
 *                           the resolver, and the other outputs work.
 *   authority recover DIR   a collector whose name cannot be resolved at
 *                           first: said once, its lines kept, and sent
 *                           once the name resolves (said once).
 *   authority stdio DIR     fd 2 closed: no name is looked up (its socket
 *                           would take fd 2), said once; looked up once
 *                           fd 2 is open again.
 *   authority group DIR     VLOG_CONTROL's group is looked up by a name
 *                           service that never answers (the test's):
 *                           vlog_control_stop and exit do not wait for it,
 *                           and no socket is put in force after the stop.
 */
#include "check.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <time.h>

VLOG_INIT("test.authority");

/* The contents the other user gave each planted file, unchanged. */
static void unchanged(const char *path, const char *want)
{
    char *text = check_slurp_path(path);
    if (strcmp(text, want) != 0) {
        fprintf(stderr, "%s was written by vlog: \"%.300s\"\n", path, text);
        exit(1);
    }
    free(text);
}

static void refused_output(const char *dir, const char *name, const char *why)
{
    char spec[600];

    snprintf(spec, sizeof spec, "1:file:%s 3:stderr", check_path(dir, name));
    if (vlog_set_outputs(spec) != -1) {
        fprintf(stderr, "vlog_set_outputs(\"%s\") was accepted\n", spec);
        exit(1);
    }
    CHECK_ERROR(why);
}

static int files(const char *dir)
{
    char spec[600];
    char *own;
    struct stat st;

    /* VLOG_OUTPUTS named two planted files and one of our own: the planted
     * ones are refused (one warning each, on stderr), ours works. */
    VLOG_INFO("SECRET one");
    CHECK(vlog_flush() == 0);
    unchanged(check_path(dir, "planted.log"), "");
    unchanged(check_path(dir, "planted.json"), "theirs\n");
    own = check_slurp_path(check_path(dir, "own.log"));
    CHECK(strstr(own, "SECRET one") != NULL);
    free(own);
    CHECK(stat(check_path(dir, "own.log"), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600 && st.st_uid == geteuid());

    /* Devices: never a block device; no character device but /dev/null,
     * /dev/zero, /dev/full and terminals (the test made these nodes: a loop
     * device's numbers, /dev/kmsg's). */
    refused_output(dir, "disk", "block device");
    refused_output(dir, "kmsg", "character device");
    /* Another name for a file of ours: could be any file of ours. */
    refused_output(dir, "linked.log", "hard links");
    /* A FIFO someone else made: refused without waiting for a reader. */
    refused_output(dir, "planted.fifo", "owned by uid");
    /* A file of ours others may write to. */
    refused_output(dir, "shared.log", "writable by others");
    /* What is allowed: /dev/null, a group-writable log file of ours. */
    CHECK(vlog_set_outputs("1:file:/dev/null") == 0);
    snprintf(spec, sizeof spec, "1:json:%s", check_path(dir, "group.log"));
    CHECK(vlog_set_outputs(spec) == 0);
    VLOG_INFO("SECRET two");
    CHECK(vlog_flush() == 0);
    own = check_slurp_path(check_path(dir, "group.log"));
    CHECK(strstr(own, "SECRET two") != NULL);
    free(own);
    unchanged(check_path(dir, "secret"), "SECRET FILE\n");
    printf("files ok\n");
    return 0;
}

static int ring(void)
{
    VLOG_ERROR("RING RECORD");
    return 0;
}

static int crash(void)
{
    VLOG_ERROR("SECRET before the crash");
    fflush(stdout);
    raise(SIGSEGV);
    return 1;
}

/* ---- fields ------------------------------------------------------------ */

static int fields(const char *dir)
{
    int udp;
    struct sockaddr_in addr = {.sin_family = AF_INET};
    socklen_t len = sizeof addr;
    char spec[600], datagram[8192];
    char *json;
    ssize_t n;

    printf("PID %d\n", (int)getpid());
    udp = socket(AF_INET, SOCK_DGRAM, 0);
    CHECK(udp >= 0);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(udp, (struct sockaddr *)&addr, sizeof addr) == 0);
    CHECK(getsockname(udp, (struct sockaddr *)&addr, &len) == 0);
    snprintf(spec, sizeof spec, "1:json:%s 1:syslog:fields@udp://127.0.0.1:%d%s",
             check_path(dir, "fields.json"), ntohs(addr.sin_port),
             getenv("WITH_JOURNALD") ? " 1:journald" : "");
    CHECK(vlog_set_outputs(spec) == 0);

    VLOG_FIELDS(VLOG_PRIO_ERROR,
                (VLOG_FIELD_STR("PRIORITY", "0"),
                 VLOG_FIELD_STR("SYSLOG_IDENTIFIER", "spoofed"),
                 VLOG_FIELD_STR("MESSAGE", "not the message"),
                 VLOG_FIELD_INT("CODE_LINE", 1),
                 VLOG_FIELD_STR("MESSAGE_ID", "0123456789abcdef0123456789abcdef"),
                 VLOG_FIELD_STR("OBJECT_PID", "1"),
                 VLOG_FIELD_STR("OBJECT_SYSTEMD_UNIT", "sshd.service"),
                 VLOG_FIELD_STR("UNIT", "sshd.service"),
                 VLOG_FIELD_STR("VLOG_SOURCE", "someone.else"),
                 VLOG_FIELD_STR("REQUEST", "first"),
                 VLOG_FIELD_STR("REQUEST", "second"),
                 VLOG_FIELD_STR("a-bad-name", "x"),
                 VLOG_FIELD_STR("another bad name", "y"),
                 VLOG_FIELD_STR("A_VERY_LONG_FIELD_NAME_THAT_GOES_ON_ONE", "1"),
                 VLOG_FIELD_STR("A_VERY_LONG_FIELD_NAME_THAT_GOES_ON_TWO", "2")),
                "FIELDS RECORD");

    /* The JSON line: every key once. */
    json = check_slurp_path(check_path(dir, "fields.json"));
    printf("JSON %s", json);
    free(json);
    /* The syslog message. */
    n = recv(udp, datagram, sizeof datagram - 1, 0);
    CHECK(n > 0);
    datagram[n] = '\0';
    printf("SYSLOG %s\n", datagram);
    fflush(stdout);
    return 0;
}

/* ---- names that do not resolve ------------------------------------------ */

static atomic_long logged;
static atomic_int stop_logging;

static void *logger(void *arg)
{
    (void)arg;
    while (!atomic_load(&stop_logging)) {
        VLOG_INFO("tick %ld", atomic_load(&logged));
        atomic_fetch_add(&logged, 1);
    }
    return NULL;
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Waits until the logging thread has logged `more` messages since now;
 * fails, saying what it saw, if it has not within `seconds` (a thread that
 * waits for a resolver waits far longer: the test's never answers). */
static void logging_goes_on(long more, int seconds, const char *during)
{
    long from = atomic_load(&logged), deadline = now_ms() + seconds * 1000L;

    while (atomic_load(&logged) < from + more) {
        if (now_ms() > deadline) {
            fprintf(stderr, "%s: the logging thread logged %ld messages in %d s, not %ld\n",
                    during, atomic_load(&logged) - from, seconds, more);
            exit(1);
        }
        usleep(1000);
    }
}

/* One request to the control socket at `path`; the reply's first line. */
static void control(const char *path, const char *request, char *reply, size_t cap)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    size_t got = 0;
    ssize_t n;

    CHECK(s >= 0);
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    CHECK(connect(s, (struct sockaddr *)&sa, sizeof sa) == 0);
    CHECK(write(s, request, strlen(request)) == (ssize_t)strlen(request));
    while (got < cap - 1 && (n = read(s, reply + got, cap - 1 - got)) > 0)
        got += (size_t)n;
    reply[got] = '\0';
    close(s);
}

/* How many of this process's threads are named `name`. */
static int threads_named(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    CHECK(d != NULL);
    while ((e = readdir(d)) != NULL) {
        char path[300], comm[32] = "";
        FILE *f;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (fgets(comm, sizeof comm, f) != NULL && strncmp(comm, name, strlen(name)) == 0)
            n++;
        fclose(f);
    }
    closedir(d);
    return n;
}

static int resolve(const char *dir)
{
    pthread_t t;
    char spec[600], reply[4096];
    char *own;
    long t0;

    /* The resolver was asked (the test's never answers). */
    t0 = now_ms();
    while (access(getenv("DNS_ASKED"), F_OK) != 0) {
        if (now_ms() - t0 > 30000) {
            fprintf(stderr, "the resolver was never asked\n");
            exit(1);
        }
        usleep(10000);
    }
    CHECK(pthread_create(&t, NULL, logger, NULL) == 0);
    /* VLOG_OUTPUTS (the test's) named a collector nobody can resolve now,
     * and a file: the file works. */
    logging_goes_on(1000, 20, "after start");
    /* Info lines: vlog's writer thread writes them a few milliseconds
     * later (longer on a busy machine). */
    t0 = now_ms();
    for (;;) {
        own = check_slurp_path(check_path(dir, "own.log"));
        if (strstr(own, "tick") != NULL || now_ms() - t0 > 30000)
            break;
        free(own);
        usleep(10000);
    }
    CHECK(strstr(own, "tick") != NULL);
    free(own);

    /* vlog_set_outputs naming another such collector returns at once. */
    t0 = now_ms();
    snprintf(spec, sizeof spec,
             "2:syslog:d@tcp://collector.example.net:514 2:fluent:t@tcp://fluent.example.net:24224 1:file:%s",
             check_path(dir, "own.log"));
    CHECK(vlog_set_outputs(spec) == 0);
    printf("vlog_set_outputs took %ld ms\n", now_ms() - t0);
    logging_goes_on(1000, 20, "after vlog_set_outputs");

    /* The same through the control socket. */
    control(check_path(dir, "ctl.sock"),
            "outputs 2:syslog:d@udp://other.example.net:514 3:stderr\n", reply,
            sizeof reply);
    CHECK(strncmp(reply, "ok\n", 3) == 0);
    logging_goes_on(1000, 20, "after the control socket's outputs");
    control(check_path(dir, "ctl.sock"), "show\n", reply, sizeof reply);
    CHECK(strstr(reply, "other.example.net:514") != NULL);

    /* Outputs switched between a name and none, again and again, while the
     * resolver waits: one resolver thread, never one per switch. */
    for (int i = 0; i < 50; i++) {
        snprintf(spec, sizeof spec, "%s1:file:%s",
                 i % 2 ? "" : "2:syslog:d@udp://again.example.net:514 ",
                 check_path(dir, "own.log"));
        CHECK(vlog_set_outputs(spec) == 0);
    }
    printf("resolver threads: %d\n", threads_named("vlog-resolver"));
    CHECK(threads_named("vlog-resolver") == 1);

    atomic_store(&stop_logging, 1);
    pthread_join(t, NULL);
    printf("resolve ok\n");
    fflush(stdout);
    return 0;
}

/* A TCP listener on 127.0.0.1; its port. */
static int listener(int *port)
{
    struct sockaddr_in addr = {.sin_family = AF_INET};
    socklen_t len = sizeof addr;
    int s = socket(AF_INET, SOCK_STREAM, 0);

    CHECK(s >= 0);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(s, (struct sockaddr *)&addr, sizeof addr) == 0);
    CHECK(listen(s, 4) == 0);
    CHECK(getsockname(s, (struct sockaddr *)&addr, &len) == 0);
    *port = ntohs(addr.sin_port);
    return s;
}

static int recover(const char *dir)
{
    int l, port, c, hosts;
    char spec[600], got[65536] = "";
    size_t have = 0;
    long deadline;
    vlog_stats st;

    l = listener(&port);
    snprintf(spec, sizeof spec, "1:syslog:d@tcp://late.collector.test:%d 1:file:%s", port,
             check_path(dir, "own.log"));
    CHECK(vlog_set_outputs(spec) == 0);
    VLOG_INFO("LINE before the name resolves");

    /* Wait for the one report that the name cannot be resolved. */
    deadline = now_ms() + 30000;
    for (;;) {
        char *text = check_dump(NULL);
        int said = check_count(text, "cannot resolve syslog collector 'late.collector.test:");
        free(text);
        if (said > 0)
            break;
        if (now_ms() > deadline) {
            fprintf(stderr, "no report of the name that does not resolve\n");
            exit(1);
        }
        usleep(10000);
    }
    VLOG_INFO("LINE while it does not");
    /* The name resolves now (the test's /etc/hosts is this file). */
    hosts = open(getenv("HOSTS_FILE"), O_WRONLY | O_APPEND);
    CHECK(hosts >= 0);
    CHECK(write(hosts, "127.0.0.1 late.collector.test\n", 30) == 30);
    close(hosts);

    c = accept(l, NULL, NULL);
    CHECK(c >= 0);
    deadline = now_ms() + 30000;
    while (strstr(got, "LINE while it does not") == NULL) {
        struct pollfd p = {.fd = c, .events = POLLIN};
        ssize_t n;
        if (now_ms() > deadline) {
            fprintf(stderr, "the collector got only: %s\n", got);
            exit(1);
        }
        if (poll(&p, 1, 100) != 1)
            continue;
        n = read(c, got + have, sizeof got - 1 - have);
        CHECK(n > 0);
        have += (size_t)n;
        got[have] = '\0';
    }
    CHECK(strstr(got, "LINE before the name resolves") != NULL);
    CHECK(vlog_get_stats(&st) == 0);
    printf("recover ok, lost %llu\n", (unsigned long long)st.output_lines_lost);
    fflush(stdout);
    return 0;
}

/* The ring as text, through a descriptor opened before stdin was closed
 * (a file opened now would take fd 0, and the resolver would look). */
static char *ring_text(int fd)
{
    CHECK(ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0);
    CHECK(vlog_dump(fd) >= 0);
    return check_slurp_fd(fd);
}

/* fd 0 closed: the collector's name is not looked up (the test's name
 * server records every query), which is said once; fd 0 open again, it is. */
static int stdio(const char *dir)
{
    const char *asked = getenv("DNS_ASKED");
    char *text;
    long deadline;
    int fd, ring;

    ring = open(check_path(dir, "ring.txt"), O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(ring > 2);
    close(0);
    CHECK(vlog_set_outputs("1:syslog:d@udp://collector.example.net:514") == 0);
    VLOG_INFO("LINE while fd 0 is closed");
    deadline = now_ms() + 30000;
    for (;;) {
        text = ring_text(ring);
        int said = check_count(text, "descriptor 0 is closed");
        free(text);
        if (said > 0)
            break;
        CHECK(now_ms() < deadline);
        usleep(10000);
    }
    CHECK(access(asked, F_OK) != 0);
    /* Open again (at 0, the lowest free number). */
    fd = open("/dev/null", O_RDONLY);
    CHECK(fd == 0);
    deadline = now_ms() + 30000;
    while (access(asked, F_OK) != 0) {
        CHECK(now_ms() < deadline);
        usleep(10000);
    }
    text = ring_text(ring);
    CHECK(check_count(text, "descriptor 0 is closed") == 1);
    free(text);
    printf("stdio ok\n");
    return 0;
}

/* VLOG_CONTROL names a group whose look-up never returns (the test's
 * /etc/group is a FIFO nobody writes): the control socket's thread waits
 * for it; a stop, a new socket and exit do not. */
static int group(const char *dir)
{
    struct stat st;

    VLOG_INFO("started");
    CHECK(vlog_control_stop() == 0);
    CHECK(stat(check_path(dir, "a.sock"), &st) != 0);
    CHECK(vlog_control_start(check_path(dir, "b.sock")) == 0);
    CHECK(stat(check_path(dir, "b.sock"), &st) == 0);
    printf("group ok\n");
    fflush(stdout);
    exit(0);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 3 && strcmp(argv[1], "files") == 0)
        return files(argv[2]);
    if (argc >= 2 && strcmp(argv[1], "crash") == 0)
        return crash();
    if (argc >= 2 && strcmp(argv[1], "ring") == 0)
        return ring();
    if (argc >= 3 && strcmp(argv[1], "fields") == 0)
        return fields(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "resolve") == 0)
        return resolve(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "recover") == 0)
        return recover(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "stdio") == 0)
        return stdio(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "group") == 0)
        return group(argv[2]);
    fprintf(stderr, "usage: authority files|crash|fields|resolve|recover DIR\n");
    return 2;
}
