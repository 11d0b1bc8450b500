/* gcntrain's SIGINT and SIGTERM.  Before the first epoch (reading,
 * caching, generating, partitioning, building plans) there is no epoch to
 * finish: the first signal exits at once with 128 + its number.  Once
 * training has begun the first asks the run to stop after the current
 * epoch (the main loop polls signals_pending) and a second exits at once,
 * after an "interrupted" line in the log.  While a file is being written
 * through a temporary one (by the tool or by the library, through
 * gcn_ctx_opts.temp_fn) an exit waits for it to be in place, so no
 * temporary file is left. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "gcntrain.h"

/* first_signal is claimed atomically: the two signals may be handled at
 * once on two threads (the CPU backend's OpenMP threads receive them too).
 * For the same reason holding and stopping at once exclude each other
 * through one atomic state, so a signal handled on another thread cannot
 * exit between a writer's check and its creating a temporary file.  Holds
 * nest and may come from several threads (ranks write through the
 * library): their count is kept under a mutex the handler never takes. */
enum { FREE, HELD, EXITING, DEFERRED_INT, DEFERRED_TERM };
static atomic_int first_signal, state, training;
static volatile sig_atomic_t log_fd = -1;
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static int hold_depth;

static void say(int fd, const char *text)
{
    ssize_t unused = write(fd, text, strlen(text));
    (void)unused;
}

static void stop_now(int sig)
{
    bool again = atomic_load(&training);
    if (log_fd >= 0)
        say(log_fd, sig == SIGINT
                        ? "{\"interrupted\":true,\"signal\":\"SIGINT\",\"at_once\":true}\n"
                        : "{\"interrupted\":true,\"signal\":\"SIGTERM\",\"at_once\":true}\n");
    say(STDERR_FILENO, sig == SIGINT
                           ? (again ? "gcntrain: SIGINT again: stopping now\n"
                                    : "gcntrain: SIGINT before the first epoch: stopping now\n")
                           : (again ? "gcntrain: SIGTERM again: stopping now\n"
                                    : "gcntrain: SIGTERM before the first epoch: stopping now\n"));
    _exit(128 + sig);
}

/* A signal that stops at once: exits now when nothing is held, else leaves
 * itself for the last signals_hold(false); another one while one is
 * deferred or exiting adds nothing. */
static void exit_signal(int sig)
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
    bool first = atomic_compare_exchange_strong(&first_signal, &none, sig);
    if (!first || !atomic_load(&training)) {
        exit_signal(sig);
        return;
    }
    say(STDERR_FILENO, sig == SIGINT ? "gcntrain: SIGINT: stopping after this epoch "
                                       "(send it again to stop at once)\n"
                                     : "gcntrain: SIGTERM: stopping after this epoch "
                                       "(send it again to stop at once)\n");
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

void signals_training(void)
{
    atomic_store(&training, 1);
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
    pthread_mutex_lock(&hold_lock);
    if (on && hold_depth++ == 0) {
        int s = FREE;
        if (!atomic_compare_exchange_strong(&state, &s, HELD))
            for (;;) /* another thread is exiting the process */
                pause();
    } else if (!on && --hold_depth == 0) {
        int s = atomic_exchange(&state, FREE);
        if (s == DEFERRED_INT || s == DEFERRED_TERM)
            exit_signal(s == DEFERRED_INT ? SIGINT : SIGTERM);
    }
    pthread_mutex_unlock(&hold_lock);
}

void signals_temp(bool writing, void *user)
{
    (void)user;
    signals_hold(writing);
}

const char *signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}
