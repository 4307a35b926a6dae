/* A signal handler that logs while its thread is inside vlog must not
 * deadlock: the nested message is dropped and counted, and the accounting is
 * exact (every handler message is either recorded or counted as dropped). */
#include "check.h"

#include <pthread.h>
#include <signal.h>

VLOG_INIT("test.nested");

static volatile sig_atomic_t handled;
static volatile int done;

static void on_signal(int sig)
{
    (void)sig;
    handled++;
    VLOG_ERROR("from the handler");
}

static void *bomber(void *arg)
{
    pthread_t target = *(pthread_t *)arg;

    /* Paced, so the handler cannot starve the main loop. */
    while (!done) {
        pthread_kill(target, SIGUSR1);
        for (volatile int spin = 0; spin < 20000; spin++)
            ;
    }
    return NULL;
}

int main(void)
{
    const long calls = 50000;
    struct sigaction sa;
    pthread_t self = pthread_self(), thread;
    vlog_stats stats;

    alarm(60); /* a deadlock ends the test */
    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
    VLOG_ERROR("registers the source");

    CHECK(pthread_create(&thread, NULL, bomber, &self) == 0);
    for (long i = 0; i < calls; i++)
        VLOG_ERROR("main %ld", i);
    done = 1;
    CHECK(pthread_join(thread, NULL) == 0);

    /* Block the signal before reading the counters so none arrives between. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    CHECK(pthread_sigmask(SIG_BLOCK, &set, NULL) == 0);
    CHECK(vlog_get_stats(&stats) == 0);
    printf("%d handler calls, %llu dropped as nested\n", (int)handled,
           (unsigned long long)stats.dropped_nested);
    CHECK(handled > 0);
    CHECK(stats.records == (uint64_t)(1 + calls + handled) - stats.dropped_nested);
    puts("ok");
    return 0;
}
