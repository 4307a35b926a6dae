/* Re-entrant everywhere: a signal handler that logs while its thread is
 * inside any vlog entry point (configuration calls, the fork handlers, the
 * counters) must not deadlock; the nested message is dropped and counted.
 *
 * First deterministically: the signal is raised from inside vlog, by the
 * allocator vlog calls under its lock (interposed: raise_in_malloc.h) and by a fork
 * handler that runs while vlog's own holds the lock. Then a second thread
 * sends the signal at random moments while the main thread calls every
 * entry point in turn. A deadlock ends the test by its alarm. */
#include "check.h"
#include "raise_in_malloc.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

VLOG_INIT("test.reentrant");

static vlog_source other = VLOG_SOURCE_INITIALIZER("test.other");

static volatile sig_atomic_t handled;
static char control_path[128];
static volatile int done;

static void on_signal(int sig)
{
    vlog_stats stats;

    (void)sig;
    in_handler = 1;
    handled++;
    VLOG_ERROR("from the handler");
    /* Now and then (a backtrace's lines take long to write: the storm
     * below would leave the main thread no time). */
    if (handled % 16 == 1)
        VLOG_BACKTRACE(VLOG_PRIO_ERROR, "from the handler, with its backtrace");
    /* A limited site's decision takes no lock: it is made in the handler
     * too, and its record dropped if the thread was inside vlog. */
    VLOG_WARN_EVERY_N(2, "every other one from the handler");
    /* A configuration call from the handler is refused, not waited for. */
    if (vlog_get_stats(&stats) == 0)
        (void)stats;
    /* vlog_init from the handler, while the thread may be inside it:
     * refused (-1) or answered, never waited for; and the level check. */
    CHECK(vlog_init() >= -1);
    (void)VLOG_ON(VLOG_PRIO_DEBUG);
    /* A thread field changed from the handler: refused while the thread is
     * inside vlog, both calls alike (nothing changes between them). */
    if (vlog_thread_field_set("HANDLER", "x") == 0)
        CHECK(vlog_thread_field_set("HANDLER", NULL) == 0);
    in_handler = 0;
}

static void prepare_raises(void)
{
    raise(SIGUSR1);
}

static void *bomber(void *arg)
{
    pthread_t target = *(pthread_t *)arg;
    unsigned seed = 1;

    while (!done) {
        int before = handled;

        pthread_kill(target, SIGUSR1);
        /* The handler's turn, then a moment of the main thread's, its
         * length (where the next signal lands) random: a storm that left
         * it no time would take its rounds past the alarm on a busy
         * machine. */
        for (long spin = 0; handled == before && !done && spin < 10000000; spin++)
            ;
        for (volatile unsigned spin = rand_r(&seed) % 20000; spin > 0; spin--)
            ;
    }
    return NULL;
}

/* A levels' watcher: told after the configuration calls below, outside
 * vlog's lock, with the storm reaching it there too. */
static volatile int told;

static void watcher(int lowest, void *arg)
{
    (void)arg;
    told++;
    VLOG_ERROR("told %d", lowest);
}

static void every_entry_point(int round)
{
    vlog_stats stats;
    char spec[64];

    CHECK(vlog_get_stats(&stats) == 0);
    CHECK(vlog_set_level(round % 2 ? 3 : 2) == 0);
    CHECK(vlog_set_filters(round % 2 ? "1:test.reentrant" : "2:test") == 0);
    CHECK(vlog_set_context(round % 3 ? "5/0 all-threads" : "20 off:func=x") == 0);
    CHECK(vlog_set_ratelimit(round % 2 ? "3:10/5" : "off") == 0);
    /* (A backtrace now and then: its lines take long to write, and the
     * storm must leave this thread time for its rounds.) */
    CHECK(vlog_set_filters(round % 10 == 1   ? "1:func=every_entry_point bt:func=every_entry_point"
                           : round % 2 ? "1:func=every_entry_point 3:test"
                                       : "") == 0);
    snprintf(spec, sizeof spec, "4:file:/dev/null %d:stderr", 4);
    CHECK(vlog_set_outputs(spec) == 0);
    CHECK(vlog_reopen() == 0);
    CHECK(vlog_flush() == 0);
    CHECK(vlog_init() == 0);
    CHECK(vlog__source_enabled(&other, VLOG_PRIO_ERROR) >= 0);
    vlog__source_unregister(&other);
    /* The control socket: opened on a thread or for a loop, served, closed. */
    if (round % 20 == 0)
        CHECK(vlog_control_start(control_path) == 0);
    if (round % 20 == 5)
        CHECK(vlog_control_open(control_path) > 2);
    CHECK(vlog_control_handle() >= -1);
    if (round % 20 == 10)
        CHECK(vlog_control_stop() == 0);
    if (round % 50 == 0)
        CHECK(vlog_set_buffer_size(round % 100 ? 32768 : 65536) == 0);
    if (round % 200 == 0) {
        vlog_shutdown();
        CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    }
    /* This thread's fields, carried by the records above and below. */
    CHECK(vlog_thread_field_set("REQUEST_ID", round % 2 ? "r-odd" : "r-even") == 0);
    CHECK(vlog_thread_field_set_int("ROUND", round) == 0);
    CHECK(vlog_thread_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") == 0);
    if (round % 3 == 0)
        CHECK(vlog_thread_fields_clear() == 0);
    VLOG_ERROR("main %d", round);
    VLOG_DEBUG("main %d, in the ring alone", round);
    if (round % 8 == 0)
        VLOG_BACKTRACE(VLOG_PRIO_ERROR, "main %d, with its backtrace", round);
}

int main(void)
{
    struct sigaction sa;
    pthread_t self = pthread_self(), thread;
    vlog_stats before, after;
    pid_t child;
    int status;

    char control_dir[64] = "/tmp/vlog-reentrant-XXXXXX";

    alarm(120);
    CHECK(mkdtemp(control_dir) != NULL);
    snprintf(control_path, sizeof control_path, "%s/ctl.sock", control_dir);
    /* Registered before vlog's own (at its first call below), so it runs
     * after vlog's prepare handler has taken the lock. */
    CHECK(pthread_atfork(prepare_raises, NULL, NULL) == 0);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    VLOG_ERROR("registers the source");

    /* From inside the allocator, under vlog's lock. */
    CHECK(vlog_get_stats(&before) == 0);
    {
        void *volatile probe = malloc(16);
        free(probe);
    }
    if (interposed) {
        armed = 1;
        CHECK(vlog_set_filters("1:test.reentrant 3:x") == 0);
        CHECK(!armed);
        armed = 1;
        CHECK(vlog_set_outputs("4:file:/dev/null 4:stderr") == 0);
        CHECK(!armed);
        armed = 1;
        CHECK(vlog_set_context("10 off:probe") == 0);
        CHECK(!armed);
        armed = 1;
        CHECK(vlog_control_start(control_path) == 0);
        CHECK(!armed);
        /* Serving an idle socket and closing it allocate nothing: the
         * storm below interrupts them. */
        CHECK(vlog_control_handle() > 2);
        CHECK(vlog_control_stop() == 0);
        CHECK(vlog_get_stats(&after) == 0);
        CHECK(after.dropped_nested >= before.dropped_nested + 3);
    } else {
        printf("skipped under a tool that owns malloc: the signal raised from it\n");
        after = before;
    }

    /* From inside fork, while vlog's prepare handler holds the lock (and
     * the control socket's); the child can log at once. (The socket is
     * served by this thread's loop: a server thread's records in the
     * child's copy of the heap are what valgrind would count as the
     * child's leaks.) */
    CHECK(vlog_control_open(control_path) > 2);
    before = after;
    child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        VLOG_ERROR("the child logs");
        _exit(0);
    }
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(vlog_get_stats(&after) == 0);
    /* The handler's error, its every-other-one site when it is that one's
     * turn, and its backtrace's when it is its. */
    CHECK(after.dropped_nested >= before.dropped_nested + 1 &&
          after.dropped_nested <= before.dropped_nested + 3);
    CHECK(vlog_control_stop() == 0);

    /* At random moments, in every entry point. */
    CHECK(vlog_watch_levels(watcher, NULL) == 0);
    CHECK(pthread_create(&thread, NULL, bomber, &self) == 0);
    /* 800 rounds, and on until the storm has reached the handler a few
     * times (a busy machine may run the bomber late): the alarm bounds it. */
    for (int round = 0; round < 800 || handled <= 3; round++)
        every_entry_point(round);
    done = 1;
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(vlog_control_stop() == 0);
    CHECK(rmdir(control_dir) == 0);
    printf("%d handler calls\n", (int)handled);
    CHECK(handled > 3); /* the storm reached the handler too */
    CHECK(told > 800);  /* a change of level each round */
    puts("ok");
    return 0;
}
