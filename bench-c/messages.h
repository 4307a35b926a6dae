/* The six messages of the NanoLog benchmark, as argument lists, and a loop
 * that logs one of them n times through a logging macro. The switch is outside
 * the loop so that instruction counts per call hold only the call itself. */
#ifndef BENCH_MESSAGES_H
#define BENCH_MESSAGES_H

#define BENCH_MSG_COUNT 6

static const char *const bench_msg_names[BENCH_MSG_COUNT] = {
    "staticString", "stringConcat", "singleInteger",
    "twoIntegers",  "singleDouble", "complexFormat",
};

#define BENCH_M0 "Starting backup replica garbage collector thread"
#define BENCH_M1 "Opened session with coordinator at %s", "basic+udp:host=192.168.1.140,port=12246"
#define BENCH_M2 "Backup storage speeds (min): %d MB/s read", 181
#define BENCH_M3                                                                 \
    "buffer has consumed %lu bytes of extra storage, current allocation: %lu bytes", \
        1032024UL, 1016544UL
#define BENCH_M4 "Using tombstone ratio balancer with ratio = %0.6lf", 0.4
#define BENCH_M5                                                                   \
    "Initialized InfUdDriver buffers: %lu receive buffers (%u MB), %u transmit "   \
    "buffers (%u MB), took %0.1lf ms",                                             \
        50000UL, 97U, 50U, 0U, 26.2

#ifdef BENCH_LATENCY
#define BENCH_CALL(LOG, ...) \
    do {                     \
        LOG(__VA_ARGS__);    \
        bench_lap();         \
    } while (0)
#else
#define BENCH_CALL(LOG, ...) LOG(__VA_ARGS__)
#endif

/* Logs message `msg` `n` times with LOG(fmt, ...). */
#define BENCH_LOOP(msg, n, LOG)                                                   \
    do {                                                                          \
        long bench_i;                                                             \
        switch (msg) {                                                            \
        case 0: for (bench_i = 0; bench_i < (n); bench_i++) BENCH_CALL(LOG, BENCH_M0); break; \
        case 1: for (bench_i = 0; bench_i < (n); bench_i++) BENCH_CALL(LOG, BENCH_M1); break; \
        case 2: for (bench_i = 0; bench_i < (n); bench_i++) BENCH_CALL(LOG, BENCH_M2); break; \
        case 3: for (bench_i = 0; bench_i < (n); bench_i++) BENCH_CALL(LOG, BENCH_M3); break; \
        case 4: for (bench_i = 0; bench_i < (n); bench_i++) BENCH_CALL(LOG, BENCH_M4); break; \
        default: for (bench_i = 0; bench_i < (n); bench_i++) BENCH_CALL(LOG, BENCH_M5); break; \
        }                                                                         \
    } while (0)

#endif
