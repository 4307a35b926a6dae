/* The network side of the demo daemon: its own source, "daemon.net". */
#include <vlog.h>

#include "daemon.h"

VLOG_INIT("daemon.net");

int net_receive(int id, struct request *req)
{
    int fd = 7 + id % 3;

    VLOG_DEBUG("fd %d readable, reading header", fd);
    req->id = id;
    req->write = id % 4 == 0;
    req->len = 4096u * (size_t)(1 + id % 8);
    req->block = 1000ull * (unsigned long long)id;
    if (id % 5 == 0) {
        VLOG_WARN("fd %d: short read, client retried", fd);
    }
    VLOG_DEBUG("fd %d: request %d parsed (%zu bytes)", fd, id, req->len);
    return 0;
}
