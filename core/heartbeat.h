/* A rank's heartbeat file and the judgement of a peer's: what the file
 * holds, and when a watcher gives a peer up, on a clock it is handed (so
 * that the tests drive it). */
#ifndef GCN_HEARTBEAT_H
#define GCN_HEARTBEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum hb_state { HB_ALIVE, HB_DONE, HB_FAILED } hb_state;

/* One heartbeat file: the rendezvous session it belongs to, its count, the
 * rank's state and, when it failed, why, and the peer it stopped for
 * (blame; -1 when it failed on its own). */
typedef struct hb_file {
    char session[40];
    int64_t beat;
    hb_state state;
    int blame;
    char why[384];
} hb_file;

/* The file's text, and back (false when text is not a heartbeat). */
void hb_format(const hb_file *h, char *buf, size_t size);
bool hb_parse(const char *text, hb_file *h);

/* What a watcher knows of one peer. */
typedef struct hb_peer {
    bool seen;    /* a beat of this session was read */
    bool done;    /* the peer finished */
    int64_t beat; /* the last count read */
    double since; /* when it last changed (or the watch began) */
} hb_peer;

/* A peer watched from `now`. */
void hb_peer_start(hb_peer *p, double now);

/* Judges peer `rank` (p) from its file as read at `now` (h NULL:
 * missing, unreadable or of another session): the rank that failed, with
 * why, or -1.  That is the peer when its file says it failed on its own or
 * its count has not moved for longer than timeout seconds, and the rank
 * it blames when it stopped for another's failure. */
int hb_judge(hb_peer *p, int rank, const hb_file *h, double now, double timeout, char *why,
             size_t size);

#endif
