/* The control socket, from the program's side and a client's: every
 * command and its errors, the socket file's rules, hostile requests, fork,
 * a program that closes every descriptor, four threads logging while the
 * filters change, a loop that serves it itself, dump and follow while the
 * ring wraps. tests/c_tests/control.rs runs each mode, and drives vlog-ctl
 * against `serve`.
 *
 *   control MODE DIR     DIR: a fresh directory of the test's own (0700)
 */
#include "check.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <time.h>

VLOG_INIT("control.test");

/* A message to source `src`; 1 if recorded. */
static int say(vlog_source *src, int prio, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return vlog_write(src, prio, __FILE__, __LINE__, __func__, msg, (size_t)n, (size_t)n);
}

static char sock[512];

static void at(char *buf, size_t len, const char *dir, const char *name)
{
    CHECK((size_t)snprintf(buf, len, "%s/%s", dir, name) < len);
}

/* A client's connection to `path`, with a 10 s limit on every read. */
static int dial(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    struct timeval tv = {.tv_sec = 10};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    CHECK(fd >= 0);
    CHECK(strlen(path) < sizeof a.sun_path);
    strcpy(a.sun_path, path);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0);
    return fd;
}

/* Everything the server sends until it closes (malloc'd). */
static char *read_all(int fd)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    ssize_t n;

    CHECK(buf != NULL);
    while ((n = read(fd, buf + len, cap - len - 1)) > 0) {
        len += (size_t)n;
        if (cap - len < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
            CHECK(buf != NULL);
        }
    }
    if (n != 0)
        fprintf(stderr, "read: %s\n", strerror(errno));
    CHECK(n == 0);
    buf[len] = '\0';
    return buf;
}

/* One request to `path` and its whole reply. */
static char *ask_at(const char *path, const char *request)
{
    int fd = dial(path);
    char *reply;

    CHECK(fd >= 0);
    CHECK(write(fd, request, strlen(request)) == (ssize_t)strlen(request));
    CHECK(write(fd, "\n", 1) == 1);
    reply = read_all(fd);
    close(fd);
    return reply;
}

static char *ask(const char *request)
{
    return ask_at(sock, request);
}

/* Asks, checks the reply has `needle`, frees it. */
static void expect(const char *request, const char *needle)
{
    char *r = ask(request);
    CHECK_HAS(r, needle);
    free(r);
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* ---- every command ---------------------------------------------------- */

static vlog_source qemu = VLOG_SOURCE_INITIALIZER("qemu.monitor");

static void commands(const char *dir)
{
    char log[512], bad[512], reply_file[512];
    struct stat st;
    char *r, *ring;
    int records;

    at(sock, sizeof sock, dir, "ctl.sock");
    at(log, sizeof log, dir, "out.log");
    at(bad, sizeof bad, dir, "never.log");
    CHECK(vlog_control_start(sock) == 0);
    CHECK(lstat(sock, &st) == 0 && S_ISSOCK(st.st_mode));
    CHECK((st.st_mode & 0777) == 0600);

    r = ask("show");
    CHECK(strncmp(r, "ok\n", 3) == 0);
    CHECK_HAS(r, "VLOG_LEVEL=3\n");
    CHECK_HAS(r, "VLOG_FILTERS=''\n");
    CHECK_HAS(r, "VLOG_OUTPUTS=''\n");
    CHECK_HAS(r, "VLOG_BUFFER_SIZE=8388608\n");
    CHECK_HAS(r, "VLOG_CONTROL=");
    CHECK_HAS(r, "ctl.sock\n");
    free(r);

    /* Filters: all or nothing, with the environment's error texts. */
    CHECK(!vlog__source_enabled(&qemu, VLOG_PRIO_DEBUG));
    expect("filters 1:qemu 3:util", "ok\nVLOG_FILTERS='1:qemu 3:util'\n");
    CHECK(vlog__source_enabled(&qemu, VLOG_PRIO_DEBUG));
    say(&qemu, VLOG_PRIO_DEBUG, "query-status sent");
    CHECK(vlog_set_filters("1:qemu 9:util") == -1);
    expect("filters 1:qemu 9:util", vlog_last_error());
    expect("filters 1:qemu 9:util", "error: invalid priority '9' in filter '9:util'");
    expect("filters", "error: filters needs its new value");
    expect("show", "VLOG_FILTERS='1:qemu 3:util'\n");
    expect("filters \"2:qemu\"", "VLOG_FILTERS=2:qemu\n");
    CHECK(!vlog__source_enabled(&qemu, VLOG_PRIO_DEBUG));
    expect("filters \"\"", "ok\nVLOG_FILTERS=''\n");
    expect("filters 1:qemu", "ok\n");

    /* Level. */
    expect("level 5", "error: invalid level '5': use 1-4");
    expect("level info", "ok\nVLOG_LEVEL=2\n");
    expect("show", "VLOG_LEVEL=2\n");

    /* Outputs: a rejected string opens nothing. */
    r = ask("outputs 3:file:/nonexistent-dir/x.log");
    CHECK_HAS(r, "error: ");
    free(r);
    at(reply_file, sizeof reply_file, "outputs 2:file:", bad);
    {
        char req[1200];
        snprintf(req, sizeof req, "outputs 2:file:%s 3:bogus", bad);
        expect(req, "error: invalid destination 'bogus'");
        CHECK(!exists(bad));
        snprintf(req, sizeof req, "outputs 2:file:%s", log);
        expect(req, "ok\nVLOG_OUTPUTS=2:file:");
        CHECK(exists(log));
        snprintf(req, sizeof req, "VLOG_OUTPUTS=2:file:%s\n", log);
        expect("show", req);
    }
    VLOG_INFO("to the file");
    expect("reopen", "ok\n");
    expect("reopen now", "error: reopen takes no argument");

    /* Stats, help, JSON, unknown commands. */
    expect("stats", "ok\nbuffer_size 8388608\nrecords ");
    expect("--json stats", "{\"ok\":true,\"buffer_size\":8388608,\"records\":");
    expect("--json show", "\"VLOG_LEVEL\":\"2\"");
    expect("--json filters 9:x", "{\"ok\":false,\"error\":\"invalid priority '9'");
    expect("frobnicate", "error: unknown command 'frobnicate'");
    expect("help", "follow [OPTIONS]");

    /* Dump, with vlog-dump's options. */
    r = ask("dump --source qemu");
    CHECK(strncmp(r, "ok\n", 3) == 0);
    CHECK_HAS(r, "query-status sent");
    CHECK(strstr(r, "to the file") == NULL);
    free(r);
    expect("dump --grep \"status sent\" --json", "\"message\":\"query-status sent\"");
    expect("dump --priority loud", "error: invalid priority 'loud'");
    expect("dump --grep \"open", "error: a quote is not closed");
    expect("dump qemu", "error: 'qemu' is not an option");

    /* Each change is one record of source vlog, naming the peer; the
     * values are its fields, never part of its message. */
    ring = check_dump(&records);
    CHECK_HAS(ring, "filters changed through the control socket by uid ");
    CHECK_HAS(ring, "[OLD=\"\" NEW=\"1:qemu 3:util\" PEER_UID=");
    CHECK_HAS(ring, "PEER_PID=");
    CHECK_HAS(ring, "level changed through the control socket by uid ");
    CHECK_HAS(ring, "[OLD=3 NEW=2 PEER_UID=");
    CHECK(strstr(ring, "9:util") == NULL);
    free(ring);

    /* Stopped: the file is gone; a second stop does nothing. */
    CHECK(vlog_control_stop() == 0);
    CHECK(!exists(sock));
    CHECK(vlog_control_stop() == 0);
    CHECK(vlog_control_handle() == -1);
    CHECK_ERROR("no control socket is open");
    /* NULL is `auto`: $RUNTIME_DIRECTORY/vlog.sock (systemd's). */
    {
        char rt[512], made[600];
        at(rt, sizeof rt, dir, "runtime");
        CHECK(mkdir(rt, 0700) == 0);
        at(made, sizeof made, rt, "vlog.sock");
        CHECK(setenv("RUNTIME_DIRECTORY", rt, 1) == 0);
        CHECK(vlog_control_start(NULL) == 0);
        CHECK(exists(made));
        r = ask_at(made, "show");
        CHECK_HAS(r, "vlog.sock\n");
        free(r);
        CHECK(vlog_control_start("auto") == 0);
        CHECK(vlog_control_stop() == 0);
        CHECK(!exists(made));
        CHECK(unsetenv("RUNTIME_DIRECTORY") == 0);
    }

    /* Started again, then ended by vlog_shutdown. */
    CHECK(vlog_control_start(sock) == 0);
    expect("show", "ok\n");
    vlog_shutdown();
    CHECK(!exists(sock));
}

/* ---- the socket file's rules ---------------------------------------- */

static void refused(const char *spec, const char *why)
{
    CHECK(vlog_control_start(spec) == -1);
    CHECK_ERROR(why);
}

static void files(const char *dir)
{
    char ww[512], gw[512], path[600], target[600], plain[512], link[512], stale[512];
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    char *r;
    int fd;

    /* A directory others or its group may write to. */
    at(ww, sizeof ww, dir, "world");
    CHECK(mkdir(ww, 0700) == 0 && chmod(ww, 01777) == 0);
    at(path, sizeof path, ww, "ctl.sock");
    refused(path, "others may write to it");
    CHECK(!exists(path));
    at(gw, sizeof gw, dir, "group");
    CHECK(mkdir(gw, 0700) == 0 && chmod(gw, 0770) == 0);
    at(path, sizeof path, gw, "ctl.sock");
    refused(path, "its group may write to it");
    CHECK(!exists(path));

    /* A file, or a link, at the path: never followed, never removed. */
    at(plain, sizeof plain, dir, "plain");
    fd = open(plain, O_CREAT | O_WRONLY, 0600);
    CHECK(fd >= 0 && write(fd, "mine", 4) == 4);
    close(fd);
    refused(plain, "is a file: left as it is");
    fd = open(plain, O_RDONLY);
    CHECK(fd >= 0);
    r = check_slurp_fd(fd);
    CHECK(strcmp(r, "mine") == 0);
    free(r);
    close(fd);
    at(link, sizeof link, dir, "link");
    at(target, sizeof target, dir, "target.sock");
    CHECK(symlink(target, link) == 0);
    refused(link, "is a symbolic link: left as it is");
    CHECK(!exists(target));
    CHECK(exists(link));

    /* A socket someone listens on is left to them; a stale one of this
     * user (its listener gone) is replaced. */
    at(stale, sizeof stale, dir, "stale.sock");
    strcpy(a.sun_path, stale);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 1) == 0);
    refused(stale, "a socket another process listens on");
    close(fd);
    CHECK(exists(stale));
    CHECK(vlog_control_start(stale) == 0);
    strcpy(sock, stale);
    expect("show", "ok\n");

    /* Bad specs, and a rejected one leaves the socket in force alone. */
    refused("relative/ctl.sock", "use an absolute path");
    refused("/tmp/x?user=root", "the one option is ?group=GROUP");
    refused("/nonexistent-dir/ctl.sock", "No such file or directory");
    refused("/tmp/x?group=no-such-group-here", "no group named 'no-such-group-here'");
    expect("show", "ok\n");
    CHECK(vlog_control_stop() == 0);
    CHECK(!exists(stale));

    /* A socket file replaced by someone else is not removed at stop. */
    CHECK(vlog_control_start(stale) == 0);
    CHECK(unlink(stale) == 0);
    fd = open(stale, O_CREAT | O_WRONLY, 0600);
    CHECK(fd >= 0);
    close(fd);
    CHECK(vlog_control_stop() == 0);
    CHECK(exists(stale));

    /* A link in the directory's path is resolved once: the socket is made
     * where it pointed then, and removed from there after the link was
     * turned elsewhere, and a file where it points now is left alone. */
    {
        char real[512], other[512], via[512], planted[600], made[600];
        at(real, sizeof real, dir, "real");
        at(other, sizeof other, dir, "other");
        at(via, sizeof via, dir, "via");
        CHECK(mkdir(real, 0700) == 0 && mkdir(other, 0700) == 0);
        CHECK(symlink(real, via) == 0);
        at(path, sizeof path, via, "ctl.sock");
        at(made, sizeof made, real, "ctl.sock");
        at(planted, sizeof planted, other, "ctl.sock");
        CHECK(vlog_control_start(path) == 0);
        CHECK(exists(made));
        CHECK(unlink(via) == 0 && symlink(other, via) == 0);
        fd = open(planted, O_CREAT | O_WRONLY, 0600);
        CHECK(fd >= 0);
        close(fd);
        CHECK(vlog_control_stop() == 0);
        CHECK(!exists(made));
        CHECK(exists(planted));
    }

    /* A group: the socket is 0660 and the group's, in a directory the
     * group can enter (one it cannot is refused, saying which). */
    {
        char spec[700];
        struct stat st;
        at(path, sizeof path, dir, "grp.sock");
        snprintf(spec, sizeof spec, "%s?group=%d", path, (int)getegid());
        CHECK(stat(dir, &st) == 0);
        if (st.st_gid == getegid()) {
            CHECK(vlog_control_start(spec) == -1);
            CHECK_ERROR("cannot enter");
        }
        CHECK(chmod(dir, 0750) == 0 && chown(dir, (uid_t)-1, getegid()) == 0);
        if (vlog_control_start(spec) != 0) {
            /* A directory above the test's (a home 0700) keeps the group
             * out: that is the refusal, not a failure of this test. */
            CHECK_ERROR("cannot enter");
            fprintf(stderr, "SKIPPED control made: a group's socket (%s)\n", vlog_last_error());
            CHECK(chmod(dir, 0700) == 0);
            return;
        }
        CHECK(lstat(path, &st) == 0 && (st.st_mode & 0777) == 0660);
        CHECK(st.st_gid == getegid());
        strcpy(sock, path);
        r = ask("show");
        CHECK_HAS(r, "?group=");
        free(r);
        CHECK(vlog_control_stop() == 0);
    }
}

/* ---- hostile requests ----------------------------------------------- */

/* A client that sends its request a byte a second: the 5 s are counted
 * from the connection, so trickling does not keep it open. */
static void *trickle(void *arg)
{
    const char *req = "stats         \n";
    char *r;
    int fd = dial(sock);

    (void)arg;
    CHECK(fd >= 0);
    for (const char *p = req; *p; p++) {
        if (send(fd, p, 1, MSG_NOSIGNAL) != 1)
            break;
        sleep(1);
    }
    r = read_all(fd);
    CHECK_HAS(r, "error: no request within 5 s");
    free(r);
    close(fd);
    return NULL;
}

static void hostile(const char *dir)
{
    char big[6000];
    int fds[20];
    char *r;
    int fd, i;

    at(sock, sizeof sock, dir, "ctl.sock");
    /* The floods below are for the ring, not for the driver's pipe. */
    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    CHECK(vlog_set_buffer_size(1 << 20) == 0);
    CHECK(vlog_control_start(sock) == 0);

    /* Oversized: cut off with a reason at 4096 bytes. */
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    fd = dial(sock);
    CHECK(fd >= 0);
    CHECK(write(fd, big, sizeof big - 1) == (ssize_t)(sizeof big - 1));
    r = read_all(fd);
    CHECK_HAS(r, "error: the request is longer than 4096 bytes");
    free(r);
    close(fd);

    /* Binary junk and a request with no command word. */
    expect("\x01\x02\xff", "error: unknown command");
    expect("", "one command per connection");

    /* More clients than served at once are told so; the others wait. */
    for (i = 0; i < 20; i++)
        fds[i] = dial(sock);
    usleep(300 * 1000);
    r = read_all(fds[19]);
    CHECK_HAS(r, "error: busy");
    free(r);
    for (i = 0; i < 20; i++)
        close(fds[i]);

    /* A client that asks for a dump and reads none of it holds up nobody:
     * other clients are served and messages recorded meanwhile. */
    for (i = 0; i < 20000; i++)
        VLOG_ERROR("filler %d with some length to it, so the ring is full", i);
    fd = dial(sock);
    CHECK(fd >= 0 && write(fd, "dump\n", 5) == 5);
    usleep(200 * 1000);
    for (i = 0; i < 20000; i++)
        VLOG_ERROR("while stalled %d", i);
    expect("stats", "ok\n");
    close(fd);

    /* A silent client is dropped after 5 s with a reason, and so is one
     * that trickles. */
    {
        pthread_t slow;
        CHECK(pthread_create(&slow, NULL, trickle, NULL) == 0);
        fd = dial(sock);
        CHECK(fd >= 0);
        r = read_all(fd);
        CHECK_HAS(r, "error: no request within 5 s");
        free(r);
        close(fd);
        CHECK(pthread_join(slow, NULL) == 0);
    }
    expect("show", "ok\n");
    CHECK(vlog_control_stop() == 0);
}

/* ---- fork --------------------------------------------------------- */

/* The inode of the listening socket bound to `path`, from /proc. */
static unsigned long listening_inode(const char *path)
{
    FILE *f = fopen("/proc/self/net/unix", "r");
    char line[1024];
    unsigned long inode = 0;

    CHECK(f != NULL);
    while (fgets(line, sizeof line, f)) {
        unsigned long ino;
        char p[600] = "";
        if (sscanf(line, "%*s %*s %*s %*s %*s %*s %lu %599s", &ino, p) == 2 &&
            strcmp(p, path) == 0)
            inode = ino;
    }
    fclose(f);
    return inode;
}

/* Whether this process has the socket of inode `ino` open. */
static int holds_socket(unsigned long ino)
{
    char want[64], fdpath[300], target[128];
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int found = 0;

    CHECK(d != NULL);
    snprintf(want, sizeof want, "socket:[%lu]", ino);
    while ((e = readdir(d)) != NULL) {
        ssize_t n;
        snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%s", e->d_name);
        n = readlink(fdpath, target, sizeof target - 1);
        if (n > 0) {
            target[n] = '\0';
            found |= strcmp(target, want) == 0;
        }
    }
    closedir(d);
    return found;
}

static void forked(const char *dir)
{
    char child_sock[512];
    unsigned long ino;
    pid_t pid;
    int status;

    at(sock, sizeof sock, dir, "ctl.sock");
    at(child_sock, sizeof child_sock, dir, "child.sock");
    CHECK(vlog_control_start(sock) == 0);
    ino = listening_inode(sock);
    CHECK(ino != 0 && holds_socket(ino));
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        char *r;
        /* Not the child's to serve: its copy of the socket is closed. */
        CHECK(!holds_socket(ino));
        CHECK(vlog_control_handle() == -1);
        /* The parent still answers. */
        r = ask("stats");
        CHECK_HAS(r, "ok\n");
        free(r);
        /* A child that asks opens its own, and its exit leaves the
         * parent's file alone. */
        CHECK(vlog_control_start(sock) == -1);
        CHECK_ERROR("a socket another process listens on");
        CHECK(vlog_control_start(child_sock) == 0);
        r = ask_at(child_sock, "filters 1:child");
        CHECK_HAS(r, "ok\n");
        free(r);
        /* Closing it removes the child's socket, and only the child's
         * (exit does the same: the `exits` mode). */
        CHECK(vlog_control_stop() == 0);
        CHECK(!exists(child_sock));
        CHECK(exists(sock));
        _exit(0);
    }
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(!exists(child_sock));
    CHECK(exists(sock));
    expect("show", "VLOG_FILTERS=''\n");
    CHECK(vlog_control_stop() == 0);
}

/* ---- a program that closes every descriptor ------------------------- */

static void closes_all(const char *dir)
{
    char name[600];
    int fds[32], n = 0, i;
    char *ring;
    int records;

    at(sock, sizeof sock, dir, "ctl.sock");
    CHECK(vlog_control_start(sock) == 0);
    expect("show", "ok\n");
    /* closefrom(3), then files of the program's own at those numbers. */
    CHECK(syscall(SYS_close_range, 3U, ~0U, 0U) == 0);
    for (i = 0; i < 32; i++) {
        snprintf(name, sizeof name, "%s/mine.%d", dir, i);
        fds[n++] = open(name, O_CREAT | O_RDWR | O_TRUNC, 0600);
        CHECK(fds[n - 1] >= 0);
    }
    /* The server notices within its look (a second), makes the socket
     * anew, and writes into none of the program's files. */
    sleep(2);
    expect("filters 1:after", "ok\n");
    for (i = 0; i < n; i++) {
        struct stat st;
        CHECK(fstat(fds[i], &st) == 0);
        CHECK(st.st_size == 0);
    }
    ring = check_dump(&records);
    CHECK_HAS(ring, "the control socket's descriptor was closed by the program");
    free(ring);
    CHECK(vlog_control_stop() == 0);
    CHECK(!exists(sock));
    for (i = 0; i < n; i++) {
        struct stat st;
        CHECK(fstat(fds[i], &st) == 0 && st.st_size == 0);
    }
}

/* ---- four threads logging while the filters change ------------------ */

#define THREADS 4
static atomic_int stop_threads;
static atomic_long started[THREADS];
static vlog_source srcs[THREADS] = {
    VLOG_SOURCE_INITIALIZER("t0"), VLOG_SOURCE_INITIALIZER("t1"),
    VLOG_SOURCE_INITIALIZER("t2"), VLOG_SOURCE_INITIALIZER("t3")};

static void *logger(void *arg)
{
    int t = (int)(long)arg;
    long n;

    for (n = 0; !atomic_load(&stop_threads); n++) {
        /* Published before the call: a message whose call began after the
         * change was answered has a number above what the reader saw. */
        atomic_store(&started[t], n);
        say(&srcs[t], VLOG_PRIO_DEBUG, "thread %d message %ld end", t, n);
        if (n % 64 == 0)
            usleep(100);
    }
    return NULL;
}

static void threads(const char *dir)
{
    pthread_t th[THREADS];
    long after[THREADS];
    char *ring;
    int records, t;

    at(sock, sizeof sock, dir, "ctl.sock");
    CHECK(vlog_set_buffer_size(64 << 20) == 0);
    CHECK(vlog_control_start(sock) == 0);
    for (t = 0; t < THREADS; t++)
        CHECK(pthread_create(&th[t], NULL, logger, (void *)(long)t) == 0);
    usleep(100 * 1000);
    expect("filters 1:t", "ok\n");
    for (t = 0; t < THREADS; t++)
        after[t] = atomic_load(&started[t]) + 1;
    usleep(200 * 1000);
    expect("filters 3:t", "ok\n");
    atomic_store(&stop_threads, 1);
    for (t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    ring = check_dump(&records);
    CHECK(strstr(ring, "vlog: ") == NULL);
    {
        /* From the first message begun after the reply, every one is
         * there, whole, in order, until the filters went up again; one pass
         * over the ring. */
        long next[THREADS], seen[THREADS] = {0};
        char *line = strtok(ring, "\n");
        for (t = 0; t < THREADS; t++)
            next[t] = -1;
        for (; line != NULL; line = strtok(NULL, "\n")) {
            char *m = strstr(line, ": thread ");
            long n;
            int tt, end = 0;
            if (m == NULL)
                continue;
            CHECK(sscanf(m, ": thread %d message %ld end%n", &tt, &n, &end) == 2 && end > 0);
            CHECK(tt >= 0 && tt < THREADS && m[end] == '\0');
            if (n < after[tt])
                continue;
            if (next[tt] == -1)
                CHECK(n == after[tt]);
            else
                CHECK(n == next[tt]);
            next[tt] = n + 1;
            seen[tt]++;
        }
        for (t = 0; t < THREADS; t++) {
            fprintf(stderr, "thread %d: %ld messages recorded from %ld on\n", t, seen[t],
                    after[t]);
            CHECK(seen[t] > 10);
        }
    }
    free(ring);
    ring = check_dump(&records);
    /* Nothing recorded before the first change: the threads logged at
     * debug with the default level. */
    CHECK(strstr(ring, "thread 0 message 0 end\n") == NULL);
    free(ring);
    CHECK(vlog_control_stop() == 0);
}

/* ---- served by the program's own loop ------------------------------- */

static atomic_int client_done;
static char *client_reply;

static void *client(void *arg)
{
    sigset_t alarm;
    int i;
    (void)arg;
    /* The alarm is the loop's; this thread's reads would see EINTR. */
    sigemptyset(&alarm);
    sigaddset(&alarm, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alarm, NULL);
    for (i = 0; i < 100; i++)
        free(ask("stats"));
    client_reply = ask("filters 1:loop");
    atomic_store(&client_done, 1);
    return NULL;
}

static atomic_long handler_calls, handler_recorded;

/* Logs from a signal handler that interrupts the loop, in vlog or out of
 * it: never a deadlock (a message nested in vlog is dropped and counted). */
static void on_alarm(int sig)
{
    int saved = errno;
    (void)sig;
    if (vlog_write(NULL, VLOG_PRIO_ERROR, "", 0, "on_alarm", "from the handler", 16, 16) == 1)
        atomic_fetch_add(&handler_recorded, 1);
    atomic_fetch_add(&handler_calls, 1);
    errno = saved;
}

static void own_loop(const char *dir)
{
    struct itimerval every = {.it_interval = {0, 500}, .it_value = {0, 500}};
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    struct timespec t0, now;
    pthread_t th;
    int fd;

    at(sock, sizeof sock, dir, "ctl.sock");
    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    fd = vlog_control_open(sock);
    CHECK(fd > 2);
    CHECK(vlog_control_open(sock) > 2);
    /* A signal handler that logs interrupts the loop often. */
    CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
    CHECK(setitimer(ITIMER_REAL, &every, NULL) == 0);
    CHECK(pthread_create(&th, NULL, client, NULL) == 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!atomic_load(&client_done)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int rc = poll(&p, 1, 100);
        CHECK(rc >= 0 || errno == EINTR);
        fd = vlog_control_handle();
        CHECK(fd > 2);
        clock_gettime(CLOCK_MONOTONIC, &now);
        CHECK(now.tv_sec - t0.tv_sec < 20);
    }
    memset(&every, 0, sizeof every);
    CHECK(setitimer(ITIMER_REAL, &every, NULL) == 0);
    pthread_join(th, NULL);
    CHECK_HAS(client_reply, "ok\nVLOG_FILTERS=1:loop\n");
    free(client_reply);
    fprintf(stderr, "own loop: %ld messages from the handler, %ld recorded\n",
            (long)atomic_load(&handler_calls), (long)atomic_load(&handler_recorded));
    CHECK(atomic_load(&handler_calls) > 0);
    CHECK(vlog_control_stop() == 0);
    CHECK(!exists(sock));
}

/* ---- dump and follow while the ring wraps --------------------------- */

static void *flood(void *arg)
{
    long n;
    (void)arg;
    for (n = 0; !atomic_load(&stop_threads); n++) {
        VLOG_ERROR("flood %ld", n);
        if (n % 16 == 0)
            usleep(50);
    }
    return NULL;
}

/* Checks the JSON lines of a stream: sequence numbers only go up, and a
 * jump is announced by a line of vlog's before it. */
static long check_stream(char *text)
{
    char *line = strtok(text, "\n");
    long last = -1, lines = 0;
    int told = 0;

    for (; line != NULL; line = strtok(NULL, "\n")) {
        long seq;
        char *at_seq;
        if (strncmp(line, "{\"vlog\":", 8) == 0) {
            CHECK(strstr(line, "overwritten before they were read") != NULL);
            told = 1;
            continue;
        }
        if (strcmp(line, "{\"ok\":true}") == 0)
            continue;
        at_seq = strstr(line, "\"seq\":");
        if (at_seq == NULL || sscanf(at_seq + 6, "%ld", &seq) != 1)
            fprintf(stderr, "not a record: %s\n", line);
        CHECK(at_seq != NULL && sscanf(at_seq + 6, "%ld", &seq) == 1);
        CHECK(seq > last);
        CHECK(last < 0 || seq == last + 1 || told);
        last = seq;
        told = 0;
        lines++;
    }
    return lines;
}

static void wraps(const char *dir)
{
    pthread_t th;
    char buf[65536];
    char *r, *followed;
    size_t len = 0;
    int fd, round;

    at(sock, sizeof sock, dir, "ctl.sock");
    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    CHECK(vlog_set_buffer_size(16 * 1024) == 0);
    CHECK(vlog_control_start(sock) == 0);
    CHECK(pthread_create(&th, NULL, flood, NULL) == 0);
    usleep(50 * 1000);
    for (round = 0; round < 20; round++) {
        r = ask("--json dump");
        CHECK(strncmp(r, "{\"ok\":true}\n", 12) == 0);
        CHECK(check_stream(r) > 0);
        free(r);
    }
    /* Follow for a while, reading slowly: what the ring overwrote before
     * it was read is said, the rest comes in order. */
    fd = dial(sock);
    CHECK(fd >= 0 && write(fd, "follow --json\n", 14) == 14);
    followed = malloc(1 << 22);
    CHECK(followed != NULL);
    for (round = 0; round < 40; round++) {
        ssize_t n = read(fd, buf, sizeof buf);
        CHECK(n > 0);
        if (len + (size_t)n < (1 << 22) - 1) {
            memcpy(followed + len, buf, (size_t)n);
            len += (size_t)n;
        }
        usleep(20 * 1000);
    }
    close(fd);
    atomic_store(&stop_threads, 1);
    pthread_join(th, NULL);
    followed[len] = '\0';
    /* The last line may be cut where reading stopped. */
    *strrchr(followed, '\n') = '\0';
    CHECK(check_stream(followed) > 100);
    free(followed);
    expect("stats", "ok\n");
    CHECK(vlog_control_stop() == 0);
}

/* ---- exit removes the socket file ---------------------------------- */

static void exits(const char *dir)
{
    at(sock, sizeof sock, dir, "ctl.sock");
    CHECK(vlog_control_start(sock) == 0);
    expect("show", "ok\n");
    /* The driver checks that the file is gone once the process is. */
    exit(0);
}

/* ---- a daemon for vlog-ctl ------------------------------------------ */

static void serve(const char *dir)
{
    char ready[512];
    long n;
    int fd;

    (void)dir;
    /* VLOG_CONTROL opened the socket at the first call. */
    VLOG_INFO("serving, pid %d", (int)getpid());
    at(ready, sizeof ready, dir, "ready");
    fd = open(ready, O_CREAT | O_WRONLY, 0600);
    CHECK(fd >= 0);
    close(fd);
    for (n = 0;; n++) {
        say(&qemu, VLOG_PRIO_DEBUG, "tick %ld", n);
        VLOG_INFO("request %ld served", n);
        usleep(20 * 1000);
    }
}

/* ---- a daemon at rest, its ring wrapped, for `held` ------------------ */

static void rest(const char *dir)
{
    char ready[512];
    int fd;

    for (int i = 0; i < 2000; i++)
        say(&qemu, VLOG_PRIO_DEBUG, "step %d", i);
    at(ready, sizeof ready, dir, "ready");
    fd = open(ready, O_CREAT | O_WRONLY, 0600);
    CHECK(fd >= 0);
    close(fd);
    for (;;)
        pause();
}

/* ---- a handler that logs while a round holds the server's lock ---------
 *
 * The program's loop serves the socket (vlog_control_handle); inside the
 * round (accept4, interposed below), another thread forks: vlog's prepare
 * handler takes the logger's lock, then waits for the server's, held by
 * the round. A signal handler on the serving thread that logs then must
 * not wait for the logger's lock (held by the forking thread, which waits
 * for this one): it is dropped and counted. */
static volatile int in_round_armed;
static atomic_int forker_tid, in_round;
static volatile sig_atomic_t handled_in_round;
static pthread_t serving_thread;

static int thread_waits_on_a_lock(int tid)
{
    char path[64], text[64] = "";
    FILE *f;

    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    if (fgets(text, sizeof text, f) == NULL)
        text[0] = '\0';
    fclose(f);
    return strncmp(text, "202 ", 4) == 0; /* futex */
}

int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
    if (in_round_armed && pthread_equal(pthread_self(), serving_thread)) {
        in_round_armed = 0;
        /* Inside the round: the other thread forks now, takes the logger's
         * lock and waits for the server's, which this round holds. */
        atomic_store(&in_round, 1);
        while (atomic_load(&forker_tid) == 0 || !thread_waits_on_a_lock(atomic_load(&forker_tid)))
            usleep(1000);
        pthread_kill(pthread_self(), SIGUSR1);
    }
    return (int)syscall(SYS_accept4, fd, addr, len, flags);
}

static void log_in_round(int sig)
{
    (void)sig;
    VLOG_ERROR("from a handler inside a round");
    handled_in_round = 1;
}

static void *forker(void *arg)
{
    pid_t pid;
    int status;

    (void)arg;
    while (!atomic_load(&in_round))
        usleep(1000);
    atomic_store(&forker_tid, (int)syscall(SYS_gettid));
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0)
        _exit(0);
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
    return NULL;
}

static void handler_in_round(const char *dir)
{
    struct sigaction sa;
    vlog_stats before, after;
    pthread_t t;

    at(sock, sizeof sock, dir, "ctl.sock");
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = log_in_round;
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    serving_thread = pthread_self();
    CHECK(vlog_control_open(sock) > 2);
    CHECK(vlog_get_stats(&before) == 0);
    in_round_armed = 1;
    CHECK(pthread_create(&t, NULL, forker, NULL) == 0);
    while (in_round_armed)
        CHECK(vlog_control_handle() > 2);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(handled_in_round);
    CHECK(vlog_get_stats(&after) == 0);
    CHECK(after.dropped_nested == before.dropped_nested + 1);
    CHECK(vlog_control_stop() == 0);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    const char *dir = argc > 2 ? argv[2] : "";

    if (strcmp(mode, "commands") == 0)
        commands(dir);
    else if (strcmp(mode, "files") == 0)
        files(dir);
    else if (strcmp(mode, "hostile") == 0)
        hostile(dir);
    else if (strcmp(mode, "fork") == 0)
        forked(dir);
    else if (strcmp(mode, "closes-all") == 0)
        closes_all(dir);
    else if (strcmp(mode, "threads") == 0)
        threads(dir);
    else if (strcmp(mode, "own-loop") == 0)
        own_loop(dir);
    else if (strcmp(mode, "wraps") == 0)
        wraps(dir);
    else if (strcmp(mode, "exits") == 0)
        exits(dir);
    else if (strcmp(mode, "serve") == 0)
        serve(dir);
    else if (strcmp(mode, "rest") == 0)
        rest(dir);
    else if (strcmp(mode, "handler-in-round") == 0)
        handler_in_round(dir);
    else {
        fprintf(stderr, "control: unknown mode '%s'\n", mode);
        return 2;
    }
    vlog__source_unregister(&qemu);
    for (int t = 0; t < THREADS; t++)
        vlog__source_unregister(&srcs[t]);
    vlog_shutdown();
    return 0;
}
