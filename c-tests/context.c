/* An error brings its context: the records before it that its output did
 * not print, marked, oldest first. `context MODE FILE`, with
 * VLOG_FILTERS=1:daemon (debug records kept in the ring) and the outputs
 * set here; each mode checks FILE itself and prints it when a check fails:
 *   threads  two threads log debug records in turns, then one logs an
 *            error: FILE has that thread's records as context, in order,
 *            then the error, and none of the other's; the same error again
 *            within the interval adds a note of what was left out, no
 *            context; another site has the records since; all-threads
 *            takes every thread's, never one printed before; the counters
 *   quiet    VLOG_CONTEXT=0, then off:MATCH, off:func=, off:file=: the
 *            error alone; a bad context string is refused and changes
 *            nothing
 *   json     a JSON output: `"context":true`, the record's own seq and time
 *   relay    a relay's error brings the relay's own lines, not the lines of
 *            the thread that fed it nor another relay's
 *   wrap     a 16 KiB ring the thread's records overran since its last
 *            context: the note says how many were overwritten, and at most
 *            N records are printed
 *   fork     a child's error within the parent's interval still brings the
 *            child's own context (its own memory), and nothing of the
 *            parent's
 *   reset    records the output printed, or that came before the ring or
 *            the outputs were replaced, are never context: a resized ring
 *            (whose carried records lost their marks and positions), an
 *            output set again at another priority, or removed and added
 *            back
 *   window   a thread whose last context is more than 4 MiB of the ring
 *            back: the context is read from the last 4 MiB, and a note
 *            says how many records were not read
 *   forkring with VLOG_BUFFER_FILE: a forked child's own printed line is
 *            not its context, and its lines are not the parent's
 *   bytes    records whose text is far longer than their arguments in the
 *            ring: what a context prints stays within 64 KiB
 *   forkall  with all-threads, a forked child's context has none of the
 *            records before the fork, which the parent's showed
 *   forkbig  with VLOG_BUFFER_FILE, a forked child (whose outputs do not
 *            read the ring) after more than 4 MiB of its own unprinted
 *            records: its error's context is not read, and a note says so;
 *            its next error's context is read from the first
 *   journald, fluent  a debug record then an error, to `3:journald` or
 *            `3:fluent:context@URL` (FILE is the URL): the driver reads the
 *            context's entry from the receiver */
#include "check.h"

#include <pthread.h>
#include <sys/wait.h>

VLOG_INIT("daemon");

static vlog_source probe = VLOG_SOURCE_INITIALIZER("daemon.probe");

static const char *file;
/* Lines of FILE already checked: each step checks the lines after. */
static int checked;

/* Whether `line` holds the parts of `want` (split at `*`) in order. */
static int holds(const char *line, const char *want)
{
    char part[512];

    while (*want != '\0') {
        size_t n = strcspn(want, "*");
        CHECK(n < sizeof part);
        memcpy(part, want, n);
        part[n] = '\0';
        line = strstr(line, part);
        if (line == NULL)
            return 0;
        line += n;
        want += n + (want[n] == '*');
    }
    return 1;
}

/* FILE's lines from `checked` on must hold `want[i]` each (see `holds`),
 * in order, and be exactly as many; then they are checked. Prints FILE
 * otherwise. */
static void expect(const char *step, const char *const *want, int n)
{
    FILE *f = fopen(file, "r");
    char *lines[256];
    int count = 0, ok = 1;
    char buf[16384];

    CHECK(f != NULL);
    while (count < 256 && fgets(buf, sizeof buf, f) != NULL)
        lines[count++] = strdup(buf);
    fclose(f);
    if (count - checked != n)
        ok = 0;
    for (int i = 0; ok && i < n; i++)
        if (!holds(lines[checked + i], want[i]))
            ok = 0;
    if (!ok) {
        fprintf(stderr, "%s: want %d new lines holding, in order:\n", step, n);
        for (int i = 0; i < n; i++)
            fprintf(stderr, "  %s\n", want[i]);
        fprintf(stderr, "%s has (%d checked before):\n", file, checked);
        for (int i = 0; i < count; i++)
            fprintf(stderr, "%c %s", i < checked ? ' ' : '>', lines[i]);
        exit(1);
    }
    for (int i = 0; i < count; i++)
        free(lines[i]);
    checked = count;
}

#define EXPECT(step, ...)                                                     \
    do {                                                                      \
        const char *const want_[] = {__VA_ARGS__};                            \
        expect(step, want_, (int)(sizeof want_ / sizeof want_[0]));           \
    } while (0)

static void set_outputs(const char *form)
{
    char spec[600];
    snprintf(spec, sizeof spec, "3:%s:%s", form, file);
    CHECK(vlog_set_outputs(spec) == 0);
}

/* One error site, called more than once. */
static void attach_disk(const char *name)
{
    VLOG_ERROR("cannot attach disk %s", name);
}

static void detach_disk(const char *name)
{
    VLOG_ERROR("cannot detach disk %s", name);
}

static pthread_barrier_t turn;

static void *other_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5; i++) {
        pthread_barrier_wait(&turn);
        VLOG_DEBUG("b step %d", i);
        pthread_barrier_wait(&turn);
    }
    VLOG_INFO("b info");
    pthread_barrier_wait(&turn);
    /* For all-threads, below. */
    pthread_barrier_wait(&turn);
    VLOG_DEBUG("b late");
    pthread_barrier_wait(&turn);
    return NULL;
}

static int threads(void)
{
    pthread_t b;
    vlog_stats stats;

    set_outputs("file");
    CHECK(pthread_barrier_init(&turn, NULL, 2) == 0);
    CHECK(pthread_create(&b, NULL, other_thread, NULL) == 0);
    for (int i = 0; i < 5; i++) {
        VLOG_DEBUG("a step %d", i);
        pthread_barrier_wait(&turn);
        pthread_barrier_wait(&turn);
    }
    pthread_barrier_wait(&turn);
    attach_disk("vda");
    EXPECT("the first error", "debug (context) : daemon : threads:*: a step 0",
           "(context)*: a step 1", "(context)*: a step 2", "(context)*: a step 3",
           "(context)*: a step 4", "error : daemon : attach_disk:");

    /* The same site within the interval: a note, no context. */
    VLOG_DEBUG("a step 5");
    VLOG_DEBUG("a step 6");
    attach_disk("vdb");
    EXPECT("the same error again",
           "info (context) : vlog : context:0 : 2 records were left out of this error's "
           "context: its site had one 0 s ago (one every 60 s; its other errors until then "
           "come without this note)",
           ": cannot attach disk vdb");
    /* Nothing since: no note at all. */
    attach_disk("vdc");
    EXPECT("the same error with nothing before it", ": cannot attach disk vdc");
    /* Records left out again within the interval: one note a site an
     * interval, so a repeating error is one line. */
    VLOG_DEBUG("a step 6b");
    attach_disk("vdd");
    EXPECT("the same error a third time", ": cannot attach disk vdd");

    /* Another site: the records since the last error of this thread. */
    VLOG_DEBUG("a step 7");
    detach_disk("vda");
    EXPECT("another site", "debug (context) : daemon : threads:*: a step 7",
           "error : daemon : detach_disk:");

    /* Every thread's, in ring order, none from before the last context
     * (not b's info line, which came before the first error). */
    CHECK(vlog_set_context("20 all-threads") == 0);
    pthread_barrier_wait(&turn);
    pthread_barrier_wait(&turn);
    VLOG_DEBUG("a late");
    VLOG(VLOG_PRIO_ERROR, "all threads");
    EXPECT("all threads", ": b late", ": a late", "error : daemon : threads:");
    CHECK(pthread_join(b, NULL) == 0);

    CHECK(vlog_get_stats(&stats) == 0);
    if (stats.contexts != 3 || stats.context_records != 8 || stats.contexts_suppressed != 3) {
        fprintf(stderr, "counters: contexts %llu, context_records %llu, suppressed %llu\n",
                (unsigned long long)stats.contexts, (unsigned long long)stats.context_records,
                (unsigned long long)stats.contexts_suppressed);
        return 1;
    }
    /* The first header's function fills its six counters and no more. */
    {
        vlog_stats first;
        memset(&first, 0xa5, sizeof first);
        CHECK((vlog_get_stats)(&first) == 0);
        CHECK(first.records == stats.records || first.records > 0);
        CHECK(first.contexts == 0xa5a5a5a5a5a5a5a5ull);
    }
    return 0;
}

static void expected_error(void)
{
    VLOG_ERROR("expected");
}

static int quiet(void)
{
    set_outputs("file");
    CHECK(vlog_set_context("0") == 0);
    VLOG_DEBUG("before zero");
    VLOG_ERROR("with context 0");
    EXPECT("N=0", "error : daemon : quiet:");

    CHECK(vlog_set_context("20 off:probe off:func=expected_error off:file=context.c:999") == 0);
    VLOG_DEBUG("before probe");
    vlog(&probe, VLOG_PRIO_ERROR, "context.c", 5, "probe_fn", "probe failed");
    EXPECT("a quiet source", "error : daemon.probe : probe_fn:5 : probe failed");
    VLOG_DEBUG("before expected");
    expected_error();
    EXPECT("a quiet function", "error : daemon : expected_error:");
    vlog(&vlog_default_source, VLOG_PRIO_ERROR, "src/context.c", 999, "f", "quiet line");
    EXPECT("a quiet line", ": quiet line");
    vlog(&vlog_default_source, VLOG_PRIO_ERROR, "src/context.c", 998, "f", "loud line");
    /* Every record of this thread since its last context (it had none:
     * its errors so far brought none). */
    EXPECT("another line of the file", "debug (context) : daemon : quiet:*: before zero",
           "(context)*: before probe", "(context)*: before expected", ": loud line");

    /* Refused whole, with the token named; the context in force stays. */
    CHECK(vlog_set_context("5 every") == -1);
    CHECK_ERROR("'every'");
    CHECK(vlog_set_context("1001") == -1);
    CHECK_ERROR("'1001'");
    CHECK(vlog_set_context(NULL) == -1);
    VLOG_DEBUG("still quiet");
    expected_error();
    EXPECT("after refusals", ": expected");
    return 0;
}

static int json(void)
{
    char *text, *ctx, *err;
    unsigned long long ctx_seq, err_seq, ctx_ns, err_ns;

    set_outputs("json");
    VLOG_DEBUG("json before");
    VLOG_ERROR("json error");
    text = check_slurp_path(file);
    ctx = strstr(text, "\"message\":\"json before\"");
    err = strstr(text, "\"message\":\"json error\"");
    if (ctx == NULL || err == NULL || strstr(text, "{\"seq\":") != text ||
        sscanf(text, "{\"seq\":%llu,\"context\":true,\"time\":\"", &ctx_seq) != 1 ||
        strstr(text, "\"time_ns\":") == NULL) {
        fprintf(stderr, "json: %s\n", text);
        return 1;
    }
    CHECK(sscanf(strstr(text, "\"time_ns\":"), "\"time_ns\":%llu", &ctx_ns) == 1);
    err = strchr(text, '\n') + 1;
    if (sscanf(err, "{\"seq\":%llu,\"time\":\"", &err_seq) != 1 || strstr(err, "\"context\":true") != NULL) {
        fprintf(stderr, "json, the error's line: %s\n", err);
        return 1;
    }
    CHECK(sscanf(strstr(err, "\"time_ns\":"), "\"time_ns\":%llu", &err_ns) == 1);
    if (ctx_seq + 1 != err_seq || ctx_ns > err_ns) {
        fprintf(stderr, "json: seq %llu then %llu, time %llu then %llu\n%s", ctx_seq, err_seq,
                ctx_ns, err_ns, text);
        return 1;
    }
    free(text);
    return 0;
}

static int relay(void)
{
    vlog_relay *child = vlog_relay_new("daemon.child", VLOG_PRIO_INFO);
    vlog_relay *other = vlog_relay_new("daemon.other", VLOG_PRIO_INFO);
    const char *a = "[DEBUG] child starts\n[DEBUG] child opens x.img\n";
    const char *b = "[DEBUG] other line\n";
    const char *boom = "[ERROR] child cannot lock x.img\n";

    set_outputs("file");
    CHECK(child != NULL && other != NULL);
    VLOG_DEBUG("daemon before");
    CHECK(vlog_relay_feed(child, a, strlen(a)) == 0);
    CHECK(vlog_relay_feed(other, b, strlen(b)) == 0);
    VLOG_DEBUG("daemon between");
    CHECK(vlog_relay_feed(child, boom, strlen(boom)) == 0);
    EXPECT("a relay's error", "debug (context) : daemon.child : ?:0 : child starts",
           "debug (context) : daemon.child : ?:0 : child opens x.img",
           "error : daemon.child : ?:0 : child cannot lock x.img");
    /* The thread's own error: its own records, none of the relays'. */
    VLOG_ERROR("daemon error");
    EXPECT("the feeding thread's error", ": daemon before", ": daemon between",
           ": daemon error");
    vlog_relay_close(child);
    vlog_relay_close(other);
    return 0;
}

static int wrap(void)
{
    set_outputs("file");
    CHECK(vlog_set_buffer_size(16384) == 0);
    CHECK(vlog_set_context("5") == 0);
    VLOG_DEBUG("wrap first");
    attach_disk("first");
    EXPECT("before the wrap", ": wrap first", ": cannot attach disk first");
    for (int i = 0; i < 2000; i++)
        VLOG_DEBUG("wrap filler %d with words to take room", i);
    detach_disk("after");
    EXPECT("after the wrap",
           "info (context) : vlog : context:0 : the last 5 of ",
           ": wrap filler 1995 ", ": wrap filler 1996 ", ": wrap filler 1997 ",
           ": wrap filler 1998 ", ": wrap filler 1999 ", ": cannot detach disk after");
    {
        char *text = check_slurp_path(file);
        char *note = strstr(text, "context:0 : the last 5 of ");
        CHECK(note != NULL);
        if (strstr(note, "made since this thread's last context were overwritten in the ring "
                         "first") == NULL || strchr(note, '\n') < strstr(note, "overwritten")) {
            fprintf(stderr, "wrap: no count of records overwritten:\n%s", text);
            return 1;
        }
        free(text);
    }
    return 0;
}

static int forked(void)
{
    pid_t pid;
    int status;

    set_outputs("file");
    VLOG_DEBUG("parent before");
    attach_disk("parent");
    EXPECT("the parent's", ": parent before", ": cannot attach disk parent");
    VLOG_DEBUG("parent after");
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        VLOG_DEBUG("child own");
        attach_disk("child");
        _exit(0);
    }
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    EXPECT("the child's", "debug (context) : daemon : forked:*: child own",
           ": cannot attach disk child");
    return 0;
}

static int reset(void)
{
    char spec[600];

    CHECK(vlog_set_context("3/0") == 0);
    snprintf(spec, sizeof spec, "2:file:%s", file);
    CHECK(vlog_set_outputs(spec) == 0);
    for (int i = 0; i < 3000; i++)
        VLOG_DEBUG("before %d", i);
    attach_disk("one");
    EXPECT("the first error", "info (context) : vlog : context:0 : the last 3 of ",
           ": before 2997", ": before 2998", ": before 2999", ": cannot attach disk one");
    VLOG_INFO("printed once");
    VLOG_DEBUG("before the resize");
    CHECK(vlog_set_buffer_size(1 << 20) == 0);
    VLOG_DEBUG("after 1");
    VLOG_DEBUG("after 2");
    detach_disk("two");
    EXPECT("after the ring was resized", "info : daemon : reset:*: printed once",
           "debug (context)*: after 1", "debug (context)*: after 2", ": cannot detach disk two");

    /* The same file at a higher priority: the info line it printed is not
     * context now. */
    VLOG_INFO("printed at 2");
    snprintf(spec, sizeof spec, "3:file:%s", file);
    CHECK(vlog_set_outputs(spec) == 0);
    VLOG_ERROR("after the priority changed");
    EXPECT("another priority", ": printed at 2", ": after the priority changed");
    /* Removed and added back: what it showed as context is not shown
     * again. */
    VLOG_DEBUG("shown once");
    VLOG_ERROR("first of two");
    CHECK(vlog_set_outputs("3:file:/dev/null") == 0);
    CHECK(vlog_set_outputs(spec) == 0);
    VLOG_ERROR("second of two");
    EXPECT("added back", "debug (context)*: shown once", ": first of two", ": second of two");
    return 0;
}

static void *filler(void *arg)
{
    (void)arg;
    /* About 10 MiB of another thread's records. */
    for (int i = 0; i < 150000; i++)
        VLOG_DEBUG("filler %d, with words to take some room in the ring", i);
    return NULL;
}

static int window(void)
{
    pthread_t t;

    set_outputs("file");
    CHECK(vlog_set_buffer_size(16 << 20) == 0);
    VLOG_DEBUG("long ago");
    attach_disk("long ago");
    EXPECT("the first", ": long ago", ": cannot attach disk long ago");
    CHECK(pthread_create(&t, NULL, filler, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    VLOG_DEBUG("just now");
    detach_disk("now");
    EXPECT("beyond the window",
           "info (context) : vlog : context:0 : * (of all threads) made since this thread's last "
           "context were not read: a context reads the last 4 MiB of the ring",
           "debug (context)*: just now", ": cannot detach disk now");
    return 0;
}

static int forkring(void)
{
    pid_t pid;
    int status;
    char spec[600];

    snprintf(spec, sizeof spec, "2:file:%s", file);
    CHECK(vlog_set_outputs(spec) == 0);
    CHECK(vlog_set_context("20/0") == 0);
    VLOG_DEBUG("parent before");
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        VLOG_INFO("child info");
        VLOG_DEBUG("child debug");
        VLOG_ERROR("child error");
        _exit(0);
    }
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    VLOG_ERROR("parent error");
    EXPECT("a shared ring file", "info : daemon : forkring:*: child info",
           "debug (context)*: child debug", "error : daemon : forkring:*: child error",
           "debug (context)*: parent before", "error : daemon : forkring:*: parent error");
    return 0;
}

static int bytes(void)
{
    char *text, *line;
    size_t context_bytes = 0;
    int context_lines = 0;

    set_outputs("file");
    CHECK(vlog_set_context("1000/0") == 0);
    for (int i = 0; i < 200; i++)
        VLOG_DEBUG("%f %f %f", 1e300, 1e300, (double)i);
    VLOG_ERROR("after long records");
    text = check_slurp_path(file);
    for (line = text; *line != '\0';) {
        char *end = strchr(line, '\n');
        CHECK(end != NULL);
        if (strstr(line, "debug (context)") != NULL && strstr(line, "debug (context)") < end) {
            context_bytes += (size_t)(end - line + 1);
            context_lines++;
        }
        line = end + 1;
    }
    if (context_bytes > 70000 || context_lines < 10 ||
        strstr(text, "context:0 : the last ") == NULL || strstr(text, " of 200 records") == NULL) {
        fprintf(stderr, "bytes: %d context lines, %zu bytes:\n%.2000s\n", context_lines,
                context_bytes, text);
        return 1;
    }
    free(text);
    return 0;
}

static int forkall(void)
{
    pid_t pid;
    int status;

    set_outputs("file");
    CHECK(vlog_set_context("20/0 all-threads") == 0);
    VLOG_DEBUG("parent one");
    attach_disk("parent");
    EXPECT("the parent's", ": parent one", ": cannot attach disk parent");
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        VLOG_DEBUG("child one");
        detach_disk("child");
        _exit(0);
    }
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    EXPECT("the child's, with all-threads", "debug (context)*: child one",
           ": cannot detach disk child");
    return 0;
}

static int forkbig(void)
{
    pid_t pid;
    int status;

    set_outputs("file");
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        for (int i = 0; i < 150000; i++)
            VLOG_DEBUG("child filler %d, with words to take some room in the ring", i);
        attach_disk("child");
        VLOG_DEBUG("child two");
        detach_disk("child");
        _exit(0);
    }
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    EXPECT("a child's error past 4 MiB",
           "info (context) : vlog : context:0 : this error's context was not read: no record "
           "boundary is known within the last 4 MiB of the ring",
           ": cannot attach disk child", "debug (context)*: child two",
           ": cannot detach disk child");
    return 0;
}

static int receiver(const char *form)
{
    char spec[600];

    if (strcmp(form, "journald") == 0)
        snprintf(spec, sizeof spec, "3:journald");
    else
        snprintf(spec, sizeof spec, "3:fluent:context@%s", file);
    CHECK(vlog_set_outputs(spec) == 0);
    VLOG_DEBUG("%s context record", form);
    VLOG_ERROR("%s error", form);
    CHECK(vlog_flush() == 0);
    printf("%d\n", (int)getpid());
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode;

    alarm(120);
    CHECK(argc == 3);
    mode = argv[1];
    file = argv[2];
    if (strcmp(mode, "threads") == 0)
        return threads();
    if (strcmp(mode, "quiet") == 0)
        return quiet();
    if (strcmp(mode, "json") == 0)
        return json();
    if (strcmp(mode, "relay") == 0)
        return relay();
    if (strcmp(mode, "wrap") == 0)
        return wrap();
    if (strcmp(mode, "fork") == 0)
        return forked();
    if (strcmp(mode, "reset") == 0)
        return reset();
    if (strcmp(mode, "window") == 0)
        return window();
    if (strcmp(mode, "forkring") == 0)
        return forkring();
    if (strcmp(mode, "bytes") == 0)
        return bytes();
    if (strcmp(mode, "forkall") == 0)
        return forkall();
    if (strcmp(mode, "forkbig") == 0)
        return forkbig();
    if (strcmp(mode, "journald") == 0 || strcmp(mode, "fluent") == 0)
        return receiver(mode);
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
