/* Heartbeat files as text, and when a watcher gives a peer up. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "heartbeat.h"

static const char *const STATES[] = {"alive", "done", "failed"};

void hb_format(const hb_file *h, char *buf, size_t size)
{
    snprintf(buf, size,
             "gcn-heartbeat 1\nsession %s\nbeat %" PRId64 "\nstate %s\nblame %d\nwhy %s\n",
             h->session, h->beat, STATES[h->state], h->blame, h->why);
}

bool hb_parse(const char *text, hb_file *h)
{
    char state[16] = "";
    int used = 0;
    memset(h, 0, sizeof *h);
    if (sscanf(text, "gcn-heartbeat 1\nsession %39s\nbeat %" SCNd64 "\nstate %15s\nblame %d\n%n",
               h->session, &h->beat, state, &h->blame, &used) != 4 || used == 0)
        return false;
    int s = 0;
    while (s < 3 && strcmp(state, STATES[s]))
        s++;
    if (s == 3)
        return false;
    h->state = (hb_state)s;
    const char *why = text + used;
    if (!strncmp(why, "why ", 4)) {
        snprintf(h->why, sizeof h->why, "%s", why + 4);
        h->why[strcspn(h->why, "\n")] = '\0';
    }
    return true;
}

void hb_peer_start(hb_peer *p, double now)
{
    *p = (hb_peer){.since = now};
}

int hb_judge(hb_peer *p, int rank, const hb_file *h, double now, double timeout, char *why,
             size_t size)
{
    if (p->done)
        return -1;
    if (h && h->state == HB_FAILED) {
        if (h->blame >= 0 && h->blame != rank) {
            snprintf(why, size, "%s", h->why[0] ? h->why : "(no message)");
            return h->blame;
        }
        snprintf(why, size, "it stopped with an error: %s", h->why[0] ? h->why : "(no message)");
        return rank;
    }
    if (h && h->state == HB_DONE) {
        p->done = true;
        return -1;
    }
    if (h && (!p->seen || h->beat != p->beat)) {
        p->seen = true;
        p->beat = h->beat;
        p->since = now;
        return -1;
    }
    if (now - p->since <= timeout)
        return -1;
    snprintf(why, size, "%s for %.1f s: the process was killed or hangs, or its host or the "
             "shared folder is unreachable", p->seen ? "no heartbeat" : "no heartbeat file",
             now - p->since);
    return rank;
}
