/* gcntrain's SIGINT and SIGTERM.  Before the first epoch (reading,
 * caching, generating, partitioning, building plans) there is no epoch to
 * finish: the first signal exits at once with 128 + its number.  Once
 * training has begun the first asks the run to stop after the current
 * epoch (the main loop polls signals_pending) and a second exits at once,
 * after an "interrupted" line in the log.  While a file is being written
 * through a temporary one (by the tool or by the library, through
 * gcn_ctx_opts.temp_fn) an exit waits for it to be in place, so no
 * temporary file is left.
 *
 * The signals are blocked in every thread and taken by one thread of their
 * own with sigwait(), so no handler runs inside library code: METIS traps
 * SIGTERM while it partitions (its error handling longjmps out of its
 * handler), which would turn a signal into a METIS error. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "gcntrain.h"

/* hold_depth counts the temporary files being written; holds can nest and
 * come from any thread.  Once exit_signal is set, an exit is waiting for
 * the last hold to end: the thread that ends that hold exits the process
 * at once, and no new hold may start. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static int hold_depth, exit_signal;
static atomic_int first_signal, training, log_fd = -1;

static void say(int fd, const char *text)
{
    ssize_t unused = write(fd, text, strlen(text));
    (void)unused;
}

/* Exits with 128 + sig; called with the lock held and no hold. */
static void stop_now(int sig)
{
    bool again = atomic_load(&training);
    int fd = atomic_load(&log_fd);
    if (fd >= 0)
        say(fd, sig == SIGINT ? "{\"interrupted\":true,\"signal\":\"SIGINT\",\"at_once\":true}\n"
                              : "{\"interrupted\":true,\"signal\":\"SIGTERM\",\"at_once\":true}\n");
    say(STDERR_FILENO, sig == SIGINT
                           ? (again ? "gcntrain: SIGINT again: stopping now\n"
                                    : "gcntrain: SIGINT before the first epoch: stopping now\n")
                           : (again ? "gcntrain: SIGTERM again: stopping now\n"
                                    : "gcntrain: SIGTERM before the first epoch: stopping now\n"));
    _exit(128 + sig);
}

static void *take_signals(void *set)
{
    for (;;) {
        int sig;
        if (sigwait(set, &sig) != 0)
            continue;
        pthread_mutex_lock(&lock);
        int none = 0;
        if (atomic_compare_exchange_strong(&first_signal, &none, sig) && atomic_load(&training))
            say(STDERR_FILENO, sig == SIGINT ? "gcntrain: SIGINT: stopping after this epoch "
                                               "(send it again to stop at once)\n"
                                             : "gcntrain: SIGTERM: stopping after this epoch "
                                               "(send it again to stop at once)\n");
        else if (hold_depth == 0)
            stop_now(sig);
        else if (!exit_signal)
            exit_signal = sig;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

void signals_install(void)
{
    static sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    pthread_t thread;
    if (pthread_create(&thread, NULL, take_signals, &set) == 0)
        pthread_detach(thread);
    else
        pthread_sigmask(SIG_UNBLOCK, &set, NULL); /* the default: signals end the process */
}

void signals_training(void)
{
    atomic_store(&training, 1);
}

void signals_log_fd(int fd)
{
    atomic_store(&log_fd, fd);
}

int signals_pending(void)
{
    return atomic_load(&first_signal);
}

void signals_hold(bool on)
{
    pthread_mutex_lock(&lock);
    if (on) {
        while (exit_signal) /* the last hold's end exits the process: write nothing more */
            pthread_cond_wait(&never, &lock);
        hold_depth++;
    } else if (--hold_depth == 0 && exit_signal) {
        stop_now(exit_signal);
    }
    pthread_mutex_unlock(&lock);
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
