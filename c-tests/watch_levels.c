/* vlog_watch_levels: a watcher is told the lowest priority kept, now and
 * after each change; it runs outside vlog (its own calls of vlog are
 * recorded, not dropped as nested); one that changes the levels itself is
 * told again; two threads changing the levels leave it with the last
 * value; a child forked while the watchers are being told is told of its
 * own changes; a signal handler whose configuration call is refused as
 * nested tells no one from there; a NULL watcher and a seventeenth are
 * refused. */
#include "check.h"
#include "raise_in_malloc.h"

#include <pthread.h>
#include <sys/wait.h>

VLOG_INIT("test.watch");

static vlog_source other = VLOG_SOURCE_INITIALIZER("test.other");

static int calls, last = -1, changed_itself, forked;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;

static int refused_in_handler;

static void on_signal(int sig)
{
    (void)sig;
    in_handler = 1;
    /* Raised inside vlog (its lock held): refused, and no watcher called
     * from here. */
    if (vlog_set_filters("1:from.handler") == -1)
        refused_in_handler = 1;
    in_handler = 0;
}

static void watcher(int lowest, void *arg)
{
    CHECK(arg == &calls);
    CHECK(!in_handler);
    pthread_mutex_lock(&mutex);
    calls++;
    last = lowest;
    pthread_mutex_unlock(&mutex);
    /* Outside vlog's lock and its nesting mark: recorded (not after
     * vlog_shutdown, which a record would undo). */
    if (lowest != 0)
        VLOG_WARN("told %d", lowest);
    /* Changing the levels from a watcher: told again when this returns. */
    if (lowest == VLOG_PRIO_INFO && !changed_itself) {
        changed_itself = 1;
        CHECK(vlog_set_filters("4:util") == 0);
        CHECK(last == VLOG_PRIO_INFO);
    }
    /* Forked while this thread tells the watchers: the child's own changes
     * are told in the child. */
    if (lowest == VLOG_PRIO_DEBUG && !forked) {
        forked = 1;
        pid_t child = fork();
        CHECK(child >= 0);
        if (child == 0) {
            int before = calls;
            CHECK(vlog_set_filters("") == 0);
            _exit(calls == before + 1 && last == VLOG_PRIO_ERROR ? 0 : 1);
        }
        int status;
        CHECK(waitpid(child, &status, 0) == child);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
}

static void other_watcher(int lowest, void *arg)
{
    (void)lowest;
    (void)arg;
}

static void *flip(void *arg)
{
    for (int i = 0; i < 300; i++)
        CHECK(vlog_set_level((i + (arg != NULL)) % 2 ? VLOG_PRIO_WARN : VLOG_PRIO_ERROR) == 0);
    return NULL;
}

int main(void)
{
    vlog_stats before, after;

    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    CHECK(vlog_watch_levels(NULL, NULL) == -1);
    CHECK_HAS(vlog_last_error(), "NULL");

    /* Told at once: vlog's default level, warn. */
    CHECK(vlog_watch_levels(watcher, &calls) == 0);
    CHECK(calls == 1 && last == VLOG_PRIO_WARN);
    /* Every change is told, the lowest the same or not (a cache of each
     * source's decision asks again). */
    CHECK(vlog_set_level(VLOG_PRIO_WARN) == 0);
    CHECK(calls == 2 && last == VLOG_PRIO_WARN);

    /* The lowest of the default level's and the source filters'. */
    CHECK(vlog_get_stats(&before) == 0);
    CHECK(vlog_set_filters("4:qemu 2:util") == 0);
    /* ... info, which made the watcher change the filters, and be told
     * again, after it returned: warn, the default level's. */
    CHECK(changed_itself && calls == 4 && last == VLOG_PRIO_WARN);
    CHECK(vlog_set_level(VLOG_PRIO_ERROR) == 0);
    CHECK(calls == 5 && last == VLOG_PRIO_ERROR);
    CHECK(vlog_get_stats(&after) == 0);
    CHECK(after.dropped_nested == before.dropped_nested);
    /* "told 2" and "told 3" (warnings; not "told 4": errors only then). */
    CHECK(after.records >= before.records + 2);

    /* Off keeps nothing, and a call-site filter names no source: the
     * lowest stays error. */
    CHECK(vlog_set_filters("off:*") == 0);
    CHECK(vlog_set_filters("1:file=watch_levels.c") == 0);
    CHECK(vlog_set_filters("") == 0);
    CHECK(calls == 8 && last == VLOG_PRIO_ERROR);

    /* Debug: the watcher forks (above). */
    CHECK(vlog_set_filters("1:test") == 0);
    CHECK(forked && last == VLOG_PRIO_DEBUG);
    CHECK(vlog_set_filters("") == 0);
    CHECK(last == VLOG_PRIO_ERROR);

    /* A signal handler's configuration call, raised inside vlog: refused,
     * no one told from the handler; the outer call tells its own change. */
    {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
        free(malloc(1)); /* learns whether it is interposed */
        if (interposed) {
            int before = calls;
            armed = 1;
            CHECK(vlog_set_filters("2:util") == 0);
            CHECK(!armed && refused_in_handler);
            CHECK(calls == before + 1 && last == VLOG_PRIO_INFO);
            CHECK(vlog_set_filters("") == 0);
        } else {
            printf("skipped under a tool that owns malloc: the signal raised from it\n");
        }
    }

    /* Two threads changing the level: the watcher ends with the last. */
    pthread_t a, b;
    CHECK(pthread_create(&a, NULL, flip, NULL) == 0);
    CHECK(pthread_create(&b, NULL, flip, &a) == 0);
    CHECK(pthread_join(a, NULL) == 0);
    CHECK(pthread_join(b, NULL) == 0);
    CHECK(vlog__source_enabled(&other, VLOG_PRIO_DEBUG) == 0);
    CHECK(last == other.level);

    /* vlog_shutdown: unknown (0) until vlog starts again. */
    vlog_shutdown();
    CHECK(last == 0);
    CHECK(vlog_init() == 0);
    CHECK(last == VLOG_PRIO_WARN);

    /* Sixteen in all. */
    int added = 1;
    while (vlog_watch_levels(other_watcher, NULL) == 0)
        added++;
    CHECK(added == 16);
    CHECK_HAS(vlog_last_error(), "16 watchers");
    puts("ok");
    return 0;
}
