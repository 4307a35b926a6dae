/* With the crash handler installed, a thread that logs gets an alternate
 * signal stack of at least 64 KiB, but a thread that installed its own keeps
 * it. */
#include "check.h"

#include <pthread.h>
#include <signal.h>

VLOG_INIT("test.altstack");

static void *logging_thread(void *arg)
{
    stack_t ss;

    (void)arg;
    CHECK(sigaltstack(NULL, &ss) == 0);
    CHECK(ss.ss_flags & SS_DISABLE); /* none before logging */
    VLOG_WARN("first message from this thread");
    CHECK(sigaltstack(NULL, &ss) == 0);
    CHECK(!(ss.ss_flags & SS_DISABLE));
    CHECK(ss.ss_size >= 64 * 1024);
    return NULL;
}

int main(void)
{
    static char own[128 * 1024];
    stack_t mine = {.ss_sp = own, .ss_flags = 0, .ss_size = sizeof own}, ss;
    pthread_t thread;

    CHECK(sigaltstack(&mine, NULL) == 0);
    CHECK(vlog_set_outputs("4:file:/dev/null") == 0);
    CHECK(vlog_init() == 0);
    VLOG_WARN("main logs");
    CHECK(sigaltstack(NULL, &ss) == 0);
    CHECK(ss.ss_sp == own && ss.ss_size == sizeof own);

    CHECK(pthread_create(&thread, NULL, logging_thread, NULL) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    puts("ok");
    return 0;
}
