/* Stopping a thread wherever it is: SIGUSR1, whose handler waits until the
 * thread is let go. Which instruction the signal interrupts is up to the
 * scheduler, so a test stops the thread again and again until it finds it
 * where it wants it. */
#ifndef VLOG_STOP_H
#define VLOG_STOP_H

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "check.h"

static volatile sig_atomic_t stopped, released;
/* Called again and again by the stopped thread's handler while it waits. */
static void (*while_stopped)(void);

static void nap(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

static void stop_handler(int sig)
{
    (void)sig;
    stopped = 1;
    while (!released) {
        if (while_stopped)
            while_stopped();
        nap(200);
    }
    stopped = 0;
}

static void stop_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = stop_handler;
    CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
}

/* Stops `thread` where it is, and returns once it is stopped. */
static void stop_thread(pthread_t thread)
{
    released = 0;
    CHECK(pthread_kill(thread, SIGUSR1) == 0);
    while (!stopped)
        nap(20);
}

/* Lets the stopped thread go on, and returns once it has. */
static void stop_let_go(void)
{
    released = 1;
    while (stopped)
        nap(50);
}

#endif
