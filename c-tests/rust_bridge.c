/* A C program with a Rust static library (c-tests/rust/) in it, both
 * logging into one vlog: the library's records (its own, and mio's, a
 * crate that logs through `log`) go through vlog-bridge into this
 * program's libvlog.so.
 *
 *   rust_bridge records   C, Rust, C records, then exit
 *   rust_bridge serve DIR a round per line read on stdin ("N": round N),
 *                         "round N" on stdout after each; DIR/ready once
 *                         the control socket (VLOG_CONTROL) is up
 *   rust_bridge crash     C, Rust, C records, then a SIGSEGV */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vlog.h>

VLOG_INIT("test.c_side");

int probe_init(void);
int probe_round(int round);

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "records";
    if (probe_init() != 0)
        return 1;
    VLOG_WARN("C before Rust");
    if (probe_round(1) != 4)
        return 2;
    VLOG_WARN("C after Rust");
    if (strcmp(mode, "serve") == 0 && argc > 2) {
        char ready[4096], line[64];
        snprintf(ready, sizeof ready, "%s/ready", argv[2]);
        FILE *f = fopen(ready, "w");
        if (!f)
            return 3;
        fclose(f);
        while (fgets(line, sizeof line, stdin)) {
            int round = atoi(line);
            if (probe_round(round) != 4)
                return 4;
            printf("round %d\n", round);
            fflush(stdout);
        }
        return 0;
    }
    if (strcmp(mode, "crash") == 0) {
        VLOG_WARN("C about to crash");
        raise(SIGSEGV);
    }
    return 0;
}
