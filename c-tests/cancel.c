/* No vlog call is cancelled halfway, and none loses a cancel either.
 *
 * Deferred cancellation: a cancel pending during a call that passes a
 * cancellation point (it prints to an output, opens one, syncs, serves the
 * control socket, dumps, joins the relay's thread) acts as that call
 * returns, with vlog's lock released and its work done; a call that only
 * records to the ring or reads state is no cancellation point. A thread
 * whose only cancellation points are its log calls ends on a cancel, as it
 * would with stdio; a call nested in a signal handler that interrupted vlog
 * leaves the cancel to the call it interrupted (before, the forced unwind
 * reached vlog's Rust frames and the process aborted, or the lock stayed
 * held for good; then the cancel waited for good).
 *
 * Asynchronous cancellation: never acts inside vlog either.
 *
 *   cancel exit-drain   a cancel left pending when the program calls
 *                       exit(7), while vlog's exit handler waits for a
 *                       fluent receiver that takes nothing: it never acts
 *                       in vlog's frames (the process ends with 7). */
#include "check.h"

#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <signal.h>
#include <time.h>

VLOG_INIT("test.cancel");

/* A frame a cancel discards by a forced unwind is not instrumented by
 * AddressSanitizer: ASan does not see that unwind, so the poison of the
 * frame's stack redzones (the macros' argument arrays) stays behind for its
 * own thread teardown to trip over. The library and every frame that
 * returns stay checked. */
#define UNWOUND __attribute__((no_sanitize_address))

static pthread_barrier_t ready, go;
static char log_path[256];
static char control_dir[64], control_path[128];
static vlog_relay *relay;

/* Whether the call on trial returned to its caller. */
static volatile int returned;

UNWOUND static void printed(void)
{
    VLOG_ERROR("printed with a cancel pending");
}

static void recorded(void)
{
    VLOG_DEBUG("recorded with a cancel pending %d", 3);
}

UNWOUND static void written(void)
{
    static const char msg[] = "written with a cancel pending";
    CHECK(vlog_write(NULL, VLOG_PRIO_ERROR, __FILE__, __LINE__, __func__, msg,
                     sizeof msg - 1, sizeof msg - 1) == 1);
}

UNWOUND static void outputs(void)
{
    char spec[300];
    snprintf(spec, sizeof spec, "3:file:%s", log_path);
    CHECK(vlog_set_outputs(spec) == 0);
}

UNWOUND static void flushed(void)
{
    CHECK(vlog_flush() == 0);
}

static int dump_fd;
UNWOUND static void dumped(void)
{
    CHECK(vlog_dump(dump_fd) > 0);
}

UNWOUND static void control_started(void)
{
    CHECK(vlog_control_start(control_path) == 0);
}

UNWOUND static void control_stopped(void)
{
    CHECK(vlog_control_stop() == 0);
}

UNWOUND static void relayed(void)
{
    static const char line[] = "[ERROR] relayed with a cancel pending\n";
    CHECK(vlog_relay_feed(relay, line, sizeof line - 1) == 0);
}

static void stats(void)
{
    vlog_stats st;
    CHECK(vlog_get_stats(&st) == 0);
}

UNWOUND static void context(void)
{
    CHECK(vlog_set_context("5") == 0);
}

static void level(void)
{
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
}

static void ratelimit(void)
{
    CHECK(vlog_set_ratelimit("3:10/5") == 0);
}

/* A call a site's limit leaves out: no lock, no cancellation point. */
static void limited(void)
{
    VLOG_LIMITED(VLOG_PRIO_DEBUG, 1, 3600, "left out with a cancel pending %d", 1);
}

/* Runs one call with a cancel pending since before it. */
UNWOUND static void *one_call(void *arg)
{
    void (*call)(void) = (void (*)(void))arg;

    pthread_barrier_wait(&ready);
    pthread_barrier_wait(&go);
    call();
    returned = 1;
    pthread_testcancel();
    return NULL; /* not reached */
}

/* Runs `call` on a thread cancelled before it: it must end cancelled,
 * having returned from the call (1) or not (0). */
static void trial(const char *name, void (*call)(void), int expect_return)
{
    pthread_t thread;
    void *result;

    returned = 0;
    CHECK(pthread_create(&thread, NULL, one_call, (void *)call) == 0);
    pthread_barrier_wait(&ready);
    CHECK(pthread_cancel(thread) == 0);
    pthread_barrier_wait(&go);
    CHECK(pthread_join(thread, &result) == 0);
    if (result != PTHREAD_CANCELED || returned != expect_return) {
        fprintf(stderr, "%s: %s, %s (expected %s)\n", name,
                result == PTHREAD_CANCELED ? "cancelled" : "not cancelled",
                returned ? "returned from the call" : "cancelled as the call returned",
                expect_return ? "returned" : "cancelled as it returned");
        exit(1);
    }
}

/* Waits for `thread` to end, up to 30 s: a thread that never acts on its
 * cancel fails the test instead of hanging it. */
static void *join_within(pthread_t thread, const char *what)
{
    struct timespec deadline;
    void *result;
    int err;

    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 30;
    err = pthread_timedjoin_np(thread, &result, &deadline);
    if (err != 0) {
        fprintf(stderr, "%s: still running 30 s after pthread_cancel (%s)\n", what,
                strerror(err));
        exit(1);
    }
    return result;
}

/* Logs until cancelled: its only cancellation points are its log calls. */
UNWOUND static void *loop_printing(void *arg)
{
    long i = 0;

    (void)arg;
    pthread_barrier_wait(&ready);
    for (;;)
        VLOG_ERROR("loop %ld", i++);
    return NULL;
}

/* Records only (no cancellation point), while a signal handler prints. */
static volatile sig_atomic_t in_handler;
UNWOUND static void print_from_handler(int sig)
{
    (void)sig;
    in_handler++;
    VLOG_ERROR("from a signal handler");
}

/* Set once the thread runs its loop (not a barrier: a cancel acting in the
 * handler inside pthread_barrier_wait would leave the barrier in use). */
static volatile sig_atomic_t recording_started;

UNWOUND static void *loop_recording(void *arg)
{
    long i = 0;

    (void)arg;
    recording_started = 1;
    for (;;)
        VLOG_DEBUG("recording %ld", i++);
    return NULL;
}

UNWOUND static void *asynchronous(void *arg)
{
    long i = 0;

    (void)arg;
    CHECK(pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL) == 0);
    pthread_barrier_wait(&ready);
    for (;;) {
        VLOG_DEBUG("async %ld", i);
        VLOG_ERROR("async printed %ld", i);
        /* A limited site: its decision is made with the cancel off too. */
        VLOG_LIMITED(VLOG_PRIO_DEBUG, 1, 3600, "async limited %ld", i);
        i++;
    }
    return NULL;
}

/* A thread that records, cancelled, with a handler that prints signalled
 * until the thread ends. */
static void cancel_with_handler(void)
{
    pthread_t thread;
    struct sigaction sa;
    void *joined = NULL;
    int err;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = print_from_handler;
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    recording_started = 0;
    CHECK(pthread_create(&thread, NULL, loop_recording, NULL) == 0);
    while (!recording_started)
        sched_yield();
    CHECK(pthread_cancel(thread) == 0);
    /* Signals until it ends, each once the last was handled. */
    for (int sent = 0; (err = pthread_tryjoin_np(thread, &joined)) == EBUSY; sent++) {
        sig_atomic_t seen = in_handler;
        struct timespec pause = {0, 100 * 1000};
        if (sent == 100000) {
            fprintf(stderr, "a thread whose signal handler prints: still running "
                            "after %d signals\n", sent);
            exit(1);
        }
        CHECK(pthread_kill(thread, SIGUSR1) == 0);
        while (in_handler == seen && (err = pthread_tryjoin_np(thread, &joined)) == EBUSY)
            nanosleep(&pause, NULL);
        if (err != EBUSY)
            break;
    }
    CHECK(err == 0);
    if (joined != PTHREAD_CANCELED) {
        fprintf(stderr, "a thread whose signal handler prints: not cancelled\n");
        exit(1);
    }
    signal(SIGUSR1, SIG_DFL);
}

/* The program's first vlog call, made with a cancel pending: it sets vlog
 * up and opens the outputs (cancellation points) before the message is
 * recorded, and the cancel acts as the recording call returns, the message
 * kept. */
static void *first_call(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&ready);
    pthread_barrier_wait(&go);
    VLOG_ERROR("the first call, with a cancel pending");
    returned = 1;
    pthread_testcancel();
    return NULL;
}

static int cancel_first_call(void)
{
    pthread_t thread;
    void *result;
    vlog_stats st;

    CHECK(pthread_barrier_init(&ready, NULL, 2) == 0);
    CHECK(pthread_barrier_init(&go, NULL, 2) == 0);
    CHECK(pthread_create(&thread, NULL, first_call, NULL) == 0);
    pthread_barrier_wait(&ready);
    CHECK(pthread_cancel(thread) == 0);
    pthread_barrier_wait(&go);
    CHECK(pthread_join(thread, &result) == 0);
    CHECK(vlog_get_stats(&st) == 0);
    if (result != PTHREAD_CANCELED || returned || st.records != 1) {
        fprintf(stderr, "the first call: %s, %s, %llu records\n",
                result == PTHREAD_CANCELED ? "cancelled" : "not cancelled",
                returned ? "returned" : "cancelled as it returned",
                (unsigned long long)st.records);
        return 1;
    }
    puts("ok");
    return 0;
}

/* With "no-handler", the part where a signal handler prints in the cancelled
 * thread is left out (said on stdout); "first-call" runs only
 * cancel_first_call. */
/* See the top: a receiver that accepts nothing (its queue holds the
 * connection), a fluent output with lines for it, a cancel made pending
 * with no cancellation point after it, then exit. */
static int exit_drain(void)
{
    char path[108], spec[200];
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int s, old;

    snprintf(path, sizeof path, "/tmp/vlog-cancel-exit-%d.sock", (int)getpid());
    CHECK(strlen(path) < sizeof addr.sun_path);
    strcpy(addr.sun_path, path);
    unlink(path);
    s = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(s >= 0 && bind(s, (struct sockaddr *)&addr, sizeof addr) == 0 && listen(s, 8) == 0);
    snprintf(spec, sizeof spec, "2:fluent:test@unix:%s", path);
    CHECK(vlog_set_filters("2:test.cancel") == 0);
    CHECK(vlog_set_outputs(spec) == 0);
    for (int i = 0; i < 20000; i++)
        VLOG_INFO("line %d for a receiver that takes nothing ..........", i);
    unlink(path); /* the socket stays, the name goes */
    CHECK(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old) == 0);
    CHECK(pthread_cancel(pthread_self()) == 0);
    CHECK(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old) == 0);
    exit(7);
}

int main(int argc, char **argv)
{
    int with_handler = !(argc > 1 && strcmp(argv[1], "no-handler") == 0);
    pthread_t thread;
    void *result;
    vlog_stats before, after;
    char *text, *dump;
    int records;

    alarm(60);
    if (argc > 1 && strcmp(argv[1], "first-call") == 0)
        return cancel_first_call();
    if (argc > 1 && strcmp(argv[1], "exit-drain") == 0)
        return exit_drain();
    snprintf(log_path, sizeof log_path, "/tmp/vlog-cancel-%d.log", (int)getpid());
    CHECK(vlog_set_filters("1:test.cancel") == 0);
    {
        char spec[300];
        snprintf(spec, sizeof spec, "3:file:%s", log_path);
        CHECK(vlog_set_outputs(spec) == 0);
    }

    strcpy(control_dir, "/tmp/vlog-cancel-XXXXXX");
    CHECK(mkdtemp(control_dir) != NULL);
    snprintf(control_path, sizeof control_path, "%s/ctl.sock", control_dir);

    relay = vlog_relay_new("test.cancel.relay", VLOG_PRIO_INFO);
    CHECK(relay != NULL);
    {
        FILE *f = tmpfile();
        CHECK(f != NULL);
        dump_fd = fileno(f);
    }

    /* Deferred cancellation, pending since before each call. */
    CHECK(pthread_barrier_init(&ready, NULL, 2) == 0);
    CHECK(pthread_barrier_init(&go, NULL, 2) == 0);
    trial("VLOG_ERROR printed", printed, 0);
    trial("VLOG_DEBUG recorded only", recorded, 1);
    trial("vlog_write printed", written, 0);
    trial("vlog_set_outputs", outputs, 0);
    trial("vlog_flush", flushed, 0);
    trial("vlog_dump", dumped, 0);
    trial("vlog_control_start", control_started, 0);
    CHECK(vlog_control_handle() > 2);
    trial("vlog_control_stop", control_stopped, 0);
    trial("vlog_relay_feed printed", relayed, 0);
    trial("vlog_get_stats", stats, 1);
    trial("vlog_set_level", level, 1);
    trial("vlog_set_context", context, 0);
    trial("vlog_set_ratelimit", ratelimit, 1);
    CHECK(vlog_set_ratelimit("off") == 0);
    limited();
    trial("a call a site's limit leaves out", limited, 1);
    /* Each call did its work. */
    text = check_slurp_path(log_path);
    CHECK(strstr(text, "printed with a cancel pending") != NULL);
    CHECK(strstr(text, "written with a cancel pending") != NULL);
    CHECK(strstr(text, "relayed with a cancel pending") != NULL);
    free(text);
    CHECK(vlog_control_handle() == -1);
    CHECK_ERROR("no control socket is open");
    vlog_relay_close(relay);
    CHECK(rmdir(control_dir) == 0);

    /* A thread that only logs ends on a cancel sent while it runs. */
    CHECK(pthread_barrier_destroy(&ready) == 0);
    CHECK(pthread_barrier_init(&ready, NULL, 2) == 0);
    CHECK(pthread_create(&thread, NULL, loop_printing, NULL) == 0);
    pthread_barrier_wait(&ready);
    CHECK(pthread_cancel(thread) == 0);
    CHECK(join_within(thread, "a thread logging printed messages") == PTHREAD_CANCELED);

    /* A handler that prints, nested in a recording call or not: the cancel
     * acts as the outermost call returns, or in the handler when it
     * interrupted the program's own code; never inside vlog. Ten times, as
     * where the signal lands is chance. */
    if (with_handler) {
        for (int round = 0; round < 10; round++) {
            /* Every other round with every site under a limit that lets
             * all through: the recording thread's calls then ask the limit
             * first, and the handler lands there too. */
            CHECK(vlog_set_ratelimit(round % 2 ? "1:1000000/5" : "off") == 0);
            cancel_with_handler();
        }
        CHECK(vlog_set_ratelimit("off") == 0);
    } else {
        printf("skipped under valgrind: a cancel that acts in a signal handler (valgrind's "
               "signal frames cannot be unwound, and it delivers a busy thread's signals "
               "only at its own scheduling points)\n");
    }


    /* Asynchronous cancellation while the thread logs at full rate. */
    CHECK(pthread_barrier_destroy(&ready) == 0);
    CHECK(pthread_barrier_init(&ready, NULL, 2) == 0);
    CHECK(pthread_create(&thread, NULL, asynchronous, NULL) == 0);
    pthread_barrier_wait(&ready);
    usleep(50 * 1000);
    CHECK(pthread_cancel(thread) == 0);
    CHECK(pthread_join(thread, &result) == 0);
    CHECK(result == PTHREAD_CANCELED);

    /* The lock was released and the ring is whole. */
    CHECK(vlog_get_stats(&before) == 0);
    for (int i = 0; i < 1000; i++)
        VLOG_DEBUG("after %d", i);
    CHECK(vlog_get_stats(&after) == 0);
    CHECK(after.records == before.records + 1000);
    dump = check_dump(&records);
    CHECK(strstr(dump, "damaged") == NULL);
    free(dump);
    unlink(log_path);
    puts("ok");
    return 0;
}
