/* Several threads call exit() at once (a worker pool ending on a fatal
 * condition, err(3) from threads): four threads log 2,000 info lines each
 * to a file output, wait for one another, and all call exit(). Every line
 * was logged before any exit: the driver finds each in the file, whichever
 * thread's exit runs first or last.
 *
 * With "quick", the threads call quick_exit(3) instead (vlog's handler is
 * in at_quick_exit's list as it is in atexit's).
 *
 *   exit_race [quick]      (VLOG_OUTPUTS set by the driver) */
#include "check.h"

#include <pthread.h>

VLOG_INIT("test.exit");

#define THREADS 4
#define LINES 2000

static pthread_barrier_t all_logged;
static int quick;

static void *worker(void *arg)
{
    int t = (int)(long)arg;

    for (int i = 0; i < LINES; i++)
        VLOG_INFO("t%d line %d", t, i);
    pthread_barrier_wait(&all_logged);
    if (quick)
        quick_exit(0);
    exit(0);
}

int main(int argc, char **argv)
{
    pthread_t threads[THREADS];

    quick = argc == 2 && strcmp(argv[1], "quick") == 0;
    CHECK(pthread_barrier_init(&all_logged, NULL, THREADS) == 0);
    for (long t = 0; t < THREADS; t++)
        CHECK(pthread_create(&threads[t], NULL, worker, (void *)t) == 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    return 1;
}
