/* The disk side of the demo daemon: its own source, "daemon.disk". Request 7
 * fails, as a real device error would. */
#include <errno.h>
#include <string.h>

#include <vlog.h>

#include "daemon.h"

VLOG_INIT("daemon.disk");

int disk_submit(const struct request *req)
{
    unsigned long long sector = req->block * 8;

    VLOG_DEBUG("queue depth %d, submitting sector %llu (+%zu)", req->id % 5,
               sector, req->len / 512);
    if (req->id == 7) {
        VLOG_DEBUG("sector %llu: controller status 0x51, retrying once", sector);
        VLOG_ERROR("I/O error on sector %llu: %s", sector, strerror(EIO));
        return -1;
    }
    VLOG_DEBUG("sector %llu done", sector);
    return 0;
}
