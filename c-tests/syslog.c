/* PRIO:syslog:IDENT[@udp|tcp://HOST:PORT]: RFC 5424 messages to a real
 * rsyslogd the driver runs on loopback (and on /dev/log when it can).
 *
 *   syslog send PORT [local]   log to udp and tcp (and /dev/log)
 *   syslog facility PORT       a warning and an error over udp with
 *                              ?facility=local3
 *   syslog down PORT           tcp to a collector that is not there yet: no
 *                              wait, lines counted as lost; after "go" on
 *                              stdin (the driver has started it), the
 *                              output reconnects and messages arrive. */
#include "check.h"

#include <sys/wait.h>
#include <time.h>

VLOG_INIT("test.syslog");

static long lost(void)
{
    vlog_stats st;
    CHECK(vlog_get_stats(&st) == 0);
    return (long)st.output_lines_lost;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    char outputs[600];

    CHECK(argc >= 3);
    CHECK(vlog_set_level(VLOG_PRIO_DEBUG) == 0);
    if (strcmp(argv[1], "send") == 0) {
        snprintf(outputs, sizeof outputs,
                 "1:syslog:vlogudp@udp://127.0.0.1:%s 1:syslog:vlogtcp@tcp://127.0.0.1:%s%s",
                 argv[2], argv[2], argc > 3 ? " 1:syslog:vloglocal" : "");
        CHECK(vlog_set_outputs(outputs) == 0);
        usleep(200000); /* the tcp connection */
        VLOG_DEBUG("debug message %d", 1);
        VLOG_WARN("warning message");
        VLOG_FIELDS(VLOG_PRIO_ERROR, (VLOG_FIELD_STR("VM", "guest \"1\""), VLOG_FIELD_INT("VCPUS", 4)),
                    "error with fields");
        /* Trace context: its own SD-ELEMENT, OpenTelemetry's. */
        CHECK(vlog_thread_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") == 0);
        VLOG_WARN("traced message");
        CHECK(vlog_thread_fields_clear() == 0);
        CHECK(lost() == 0);
        /* A forked child makes its own collector connection (the parent's
         * stream is not shared), while the parent goes on with its own. */
        {
            int status;
            pid_t pid = fork();
            CHECK(pid >= 0);
            if (pid == 0) {
                VLOG_WARN("from the child %d", 1);
                usleep(200000);
                VLOG_WARN("from the child %d", 2);
                /* _exit skips the exit handler that writes what vlog's
                 * writer thread has not written yet. */
                CHECK(vlog_flush() == 0);
                _exit(lost() == 0 ? 0 : 3);
            }
            VLOG_WARN("parent after fork");
            CHECK(waitpid(pid, &status, 0) == pid);
            CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        CHECK(lost() == 0);
        return 0;
    }
    if (strcmp(argv[1], "facility") == 0) {
        snprintf(outputs, sizeof outputs, "1:syslog:vlogfac@udp://127.0.0.1:%s?facility=local3",
                 argv[2]);
        CHECK(vlog_set_outputs(outputs) == 0);
        VLOG_WARN("warning in local3");
        VLOG_ERROR("error in local3");
        CHECK(vlog_flush() == 0);
        CHECK(lost() == 0);
        return 0;
    }
    CHECK(strcmp(argv[1], "down") == 0);
    snprintf(outputs, sizeof outputs, "1:syslog:vlogtcp@tcp://127.0.0.1:%s", argv[2]);
    CHECK(vlog_set_outputs(outputs) == 0);
    {
        double start = now();
        for (int i = 0; i < 1000; i++)
            VLOG_INFO("while the collector is down %d", i);
        CHECK(now() - start < 5.0); /* never waited for the collector */
    }
    vlog_flush();
    CHECK(lost() == 1000);
    puts("ready");
    fflush(stdout);
    {
        char go[8];
        CHECK(fgets(go, sizeof go, stdin) != NULL);
    }
    /* A new connection is tried at most once a second. */
    for (int i = 0; i < 15; i++) {
        VLOG_INFO("after the collector started %d", i);
        usleep(200000);
    }
    return 0;
}
