/* gcntrain's SIGINT and SIGTERM: the first asks the run to stop once the
 * current epoch is done (the main loop polls signals_pending); a second
 * exits at once with 128 + its number, after an "interrupted" line in the
 * log.  While a file is being written through a temporary one the second
 * signal waits for it to be in place, so no temporary file is left. */
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "gcntrain.h"

/* first_signal is claimed atomically: the two signals may be handled at
 * once on two threads (the CPU backend's OpenMP threads receive them too).
 * For the same reason holding and stopping at once exclude each other
 * through one atomic state, so a second signal handled on another thread
 * cannot exit between the main thread's check and its creating a
 * temporary file. */
enum { FREE, HELD, EXITING, DEFERRED_INT, DEFERRED_TERM };
static atomic_int first_signal, state;
static volatile sig_atomic_t log_fd = -1;

static void say(int fd, const char *text)
{
    ssize_t unused = write(fd, text, strlen(text));
    (void)unused;
}

static void stop_now(int sig)
{
    if (log_fd >= 0)
        say(log_fd, sig == SIGINT
                        ? "{\"interrupted\":true,\"signal\":\"SIGINT\",\"at_once\":true}\n"
                        : "{\"interrupted\":true,\"signal\":\"SIGTERM\",\"at_once\":true}\n");
    say(STDERR_FILENO, sig == SIGINT ? "gcntrain: SIGINT again: stopping now\n"
                                     : "gcntrain: SIGTERM again: stopping now\n");
    _exit(128 + sig);
}

/* A second signal: exits now when nothing is held, else leaves itself for
 * signals_hold(false); a third while one is deferred or exiting adds
 * nothing. */
static void second_signal(int sig)
{
    for (;;) {
        int s = atomic_load(&state);
        if (s == FREE) {
            if (atomic_compare_exchange_strong(&state, &s, EXITING))
                stop_now(sig);
        } else if (s == HELD) {
            if (atomic_compare_exchange_strong(&state, &s,
                                               sig == SIGINT ? DEFERRED_INT : DEFERRED_TERM))
                return;
        } else {
            return;
        }
    }
}

static void on_signal(int sig)
{
    int none = 0;
    if (atomic_compare_exchange_strong(&first_signal, &none, sig))
        say(STDERR_FILENO, sig == SIGINT ? "gcntrain: SIGINT: stopping after this epoch "
                                           "(send it again to stop at once)\n"
                                         : "gcntrain: SIGTERM: stopping after this epoch "
                                           "(send it again to stop at once)\n");
    else
        second_signal(sig);
}

void signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

void signals_log_fd(int fd)
{
    log_fd = fd;
}

int signals_pending(void)
{
    return atomic_load(&first_signal);
}

void signals_hold(bool on)
{
    if (on) {
        int s = FREE;
        if (!atomic_compare_exchange_strong(&state, &s, HELD))
            for (;;) /* another thread is exiting the process */
                pause();
        return;
    }
    int s = atomic_exchange(&state, FREE);
    if (s == DEFERRED_INT || s == DEFERRED_TERM)
        second_signal(s == DEFERRED_INT ? SIGINT : SIGTERM);
}

const char *signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}
