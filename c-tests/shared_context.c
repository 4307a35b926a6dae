/* Whose context: two processes share a ring file, each the pid 1 of a pid
 * namespace of its own (the driver starts each under `unshare --pid
 * --fork`), so their main threads have the same thread id. An error of
 * one prints the debug records of its own thread before it, never the
 * other's.
 *
 * The driver orders them so that a's records come between b's and b's
 * error, where only whose they are tells them apart:
 *   shared_context a       on a first line of input logs its debug records
 *                          and says "logged", then holds the ring until its
 *                          input ends
 *   shared_context b OUT   logs its own and says "ready", then on a line of
 *                          input an error whose context goes to the file
 *                          OUT, and checks it
 * (VLOG_BUFFER_FILE, VLOG_FILTERS set by the driver) */
#include "check.h"

VLOG_INIT("test.shared");

int main(int argc, char **argv)
{
    char buf[64], outputs[600], *text;
    int i;

    CHECK(argc >= 2);
    /* Each is its namespace's first process, its main thread id 1. */
    if (getpid() != 1) {
        fprintf(stderr, "not pid 1 of a namespace of its own: %d\n", (int)getpid());
        return 1;
    }
    if (strcmp(argv[1], "a") == 0) {
        VLOG_DEBUG("a started");
        CHECK(read(0, buf, sizeof buf) > 0);
        for (i = 0; i < 20; i++)
            VLOG_DEBUG("session key for alice %d", i);
        printf("logged\n");
        fflush(stdout);
        while (read(0, buf, sizeof buf) > 0)
            ;
        return 0;
    }
    CHECK(argc == 3 && strcmp(argv[1], "b") == 0);
    unlink(argv[2]);
    snprintf(outputs, sizeof outputs, "3:file:%s", argv[2]);
    CHECK(vlog_set_outputs(outputs) == 0);
    for (i = 0; i < 3; i++)
        VLOG_DEBUG("b's own step %d", i);
    printf("ready\n");
    fflush(stdout);
    CHECK(read(0, buf, sizeof buf) > 0);
    VLOG_ERROR("b failed");
    vlog_flush();
    text = check_slurp_path(argv[2]);
    CHECK_HAS(text, "debug (context) : test.shared : main:");
    CHECK_HAS(text, "b's own step 2\n");
    if (strstr(text, "alice") != NULL) {
        fprintf(stderr, "another process's record in this one's context:\n%s", text);
        return 1;
    }
    CHECK(check_count(text, "(context)") == 3);
    free(text);
    return 0;
}
