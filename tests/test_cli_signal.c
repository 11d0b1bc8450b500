/* gcntrain under real signals: before the first epoch (reading, generating,
 * partitioning) a signal stops the run at once; during training SIGINT and
 * SIGTERM finish the epoch, log it, checkpoint and summarise, exiting 130 /
 * 143, while the log streams line by line; a second signal stops at once,
 * leaving no temporary file; and a
 * run killed with SIGKILL at random moments, resumed each time from its
 * periodic checkpoint, ends bit for bit where an uninterrupted run does. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "tool_run.h"

static tool_result r;

static const char *signal_name_of(int sig)
{
    return sig == SIGINT ? "SIGINT" : "SIGTERM";
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static void sleep_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1e3), (long)((ms - 1e3 * (double)(time_t)(ms / 1e3)) * 1e6)};
    nanosleep(&ts, NULL);
}

/* Waits until the file holds n occurrences of needle while the process
 * still runs: what it wrote is there before it ends. */
static void wait_for(const tool_proc *p, const char *path, const char *needle, int n)
{
    double t0 = now_ms();
    while (tool_count(path, needle) < n) {
        int status;
        cr_assert_eq(waitpid(p->pid, &status, WNOHANG), 0, "gcntrain ended before %d x %s", n,
                     needle);
        cr_assert_lt(now_ms() - t0, 60e3, "no %d x %s in %s after 60 s", n, needle, path);
        sleep_ms(2);
    }
}

/* gcntrain on gcn-cora's recipe for a million epochs in a new folder,
 * logging to run.jsonl and checkpointing to model.ckpt there. */
typedef struct long_run {
    char dir[32], log[96], ck[96];
    tool_proc p;
} long_run;

/* Starts one that checkpoints every `every` epochs; returns once `epochs`
 * epochs are in its log. */
static void start_long_run(long_run *run, const char *every, int epochs)
{
    snprintf(run->dir, sizeof run->dir, "/tmp/gcn-sig-XXXXXX");
    cr_assert_not_null(mkdtemp(run->dir));
    snprintf(run->log, sizeof run->log, "%s/run.jsonl", run->dir);
    snprintf(run->ck, sizeof run->ck, "%s/model.ckpt", run->dir);
    tool_start(&run->p, "gcntrain", (const char *[]){"models/gcn-cora.json", "--epochs",
                                                     "1000000", "--runs", "1", "--device", "cpu",
                                                     "--quiet", "--log", run->log, "--save",
                                                     run->ck, "--save-every", every, NULL});
    wait_for(&run->p, run->log, "\"epoch\":", epochs);
}

/* Fails when dir holds a file other than the named ones (a temporary one). */
static void expect_only(const char *dir, const char *const *names, int n)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        bool known = e->d_name[0] == '.';
        for (int k = 0; k < n; k++)
            known |= !strcmp(e->d_name, names[k]);
        cr_assert(known, "%s/%s was left behind", dir, e->d_name);
    }
    closedir(d);
}

/* The file's last line (without its newline). */
static void last_line(const char *path, char *line, size_t size)
{
    char *text = malloc(1 << 20);
    cr_assert_not_null(text);
    tool_slurp(path, text, 1 << 20);
    size_t n = strlen(text);
    cr_assert(n > 0 && text[n - 1] == '\n', "%s does not end with a whole line", path);
    text[n - 1] = '\0';
    char *start = strrchr(text, '\n');
    snprintf(line, size, "%s", start ? start + 1 : text);
    free(text);
}

static void interrupt_finishes_the_epoch(int sig, const char *name, int code)
{
    char line[2048], want[96], epochs[16];
    long_run run;
    start_long_run(&run, "7", 3);
    cr_assert_eq(kill(run.p.pid, sig), 0);
    cr_assert_eq(tool_wait(&run.p, &r), 0, "gcntrain died of the signal");
    cr_assert_eq(r.code, code, "%s", r.err);
    snprintf(want, sizeof want, "gcntrain: %s: stopping after this epoch", name);
    cr_assert(strstr(r.err, want), "%s", r.err);
    /* every finished epoch is logged, then the summary marked interrupted */
    int done = tool_count(run.log, "\"epoch\":");
    snprintf(want, sizeof want, "interrupted by %s after epoch %d of run 1", name, done);
    cr_assert(strstr(r.out, want), "%s", r.out);
    cr_assert(strstr(r.out, "time load "), "%s", r.out);
    last_line(run.log, line, sizeof line);
    cr_assert(strstr(line, "{\"summary\":true,\"runs\":0,"), "%s", line);
    snprintf(want, sizeof want, "\"interrupted\":true,\"signal\":\"%s\"", name);
    cr_assert(strstr(line, want), "%s", line);
    snprintf(want, sizeof want, "\"interrupted_after_epoch\":%d,", done);
    cr_assert(strstr(line, want), "%s", line);
    cr_assert_eq(tool_count(run.log, "\"summary\":true"), 1);
    /* the checkpoint holds that epoch: a resumed run goes on from the next */
    snprintf(epochs, sizeof epochs, "%d", done + 1);
    tool_run(&r, "gcntrain", (const char *[]){"models/gcn-cora.json", "--epochs", epochs,
                                              "--runs", "1", "--device", "cpu", "--resume",
                                              run.ck, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    snprintf(want, sizeof want, "run 1 epoch %4d ", done + 1);
    cr_assert(strstr(r.out, want), "%s", r.out);
    snprintf(want, sizeof want, "run 1 epoch %4d ", done);
    cr_assert_not(strstr(r.out, want), "%s", r.out);
    expect_only(run.dir, (const char *[]){"run.jsonl", "model.ckpt"}, 2);
    tool_remove_dir(run.dir);
}

Test(cli_signal, sigint_finishes_the_epoch_and_exits_130, .timeout = 120)
{
    interrupt_finishes_the_epoch(SIGINT, "SIGINT", 130);
}

Test(cli_signal, sigterm_finishes_the_epoch_and_exits_143, .timeout = 120)
{
    interrupt_finishes_the_epoch(SIGTERM, "SIGTERM", 143);
}

/* SIGINT, then SIGTERM before the epoch ends (both sent while the process
 * is stopped, so they arrive together): the second stops it at once, with
 * its own exit code and an "interrupted" line, no summary and no temporary
 * file, even though a checkpoint is written every epoch. */
Test(cli_signal, second_signal_stops_at_once, .timeout = 120)
{
    char line[512];
    long_run run;
    start_long_run(&run, "1", 2);
    cr_assert_eq(kill(run.p.pid, SIGSTOP), 0);
    cr_assert_eq(kill(run.p.pid, SIGINT), 0);
    cr_assert_eq(kill(run.p.pid, SIGTERM), 0);
    cr_assert_eq(kill(run.p.pid, SIGCONT), 0);
    cr_assert_eq(tool_wait(&run.p, &r), 0, "gcntrain died of a signal");
    /* both are pending when it continues: the kernel may hand them to two of
     * its threads (OpenMP's) in either order; the second stops it at once */
    bool term_second = r.code == 143;
    cr_assert(term_second || r.code == 130, "exit %d: %s", r.code, r.err);
    const char *first = term_second ? "SIGINT" : "SIGTERM", *second = term_second ? "SIGTERM"
                                                                                  : "SIGINT";
    char want[128];
    snprintf(want, sizeof want, "gcntrain: %s: stopping after this epoch", first);
    cr_assert(strstr(r.err, want), "%s", r.err);
    snprintf(want, sizeof want, "gcntrain: %s again: stopping now", second);
    cr_assert(strstr(r.err, want), "%s", r.err);
    last_line(run.log, line, sizeof line);
    snprintf(want, sizeof want, "{\"interrupted\":true,\"signal\":\"%s\",\"at_once\":true}",
             second);
    cr_assert_str_eq(line, want);
    cr_assert_eq(tool_count(run.log, "\"summary\":"), 0);
    expect_only(run.dir, (const char *[]){"run.jsonl", "model.ckpt"}, 2);
    /* the checkpoint in place is a whole one */
    tool_run(&r, "gcntrain", (const char *[]){"models/gcn-cora.json", "--device", "cpu",
                                              "--resume", run.ck, "--eval-only", NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
    tool_remove_dir(run.dir);
}

static size_t read_bytes(const char *path, char **buf)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = malloc((size_t)n + 1);
    cr_assert_not_null(*buf);
    cr_assert_eq(fread(*buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    (*buf)[n] = '\0';
    return (size_t)n;
}

enum { KILL_EPOCHS = 40 };

/* Each whole epoch line of the log, without its timings, must be the
 * uninterrupted run's line of that epoch (the loss is printed exactly);
 * returns how many epochs appear.  A line cut by SIGKILL and continued by
 * the next process holds two objects and is skipped. */
static int compare_epochs(const char *path, char ref[KILL_EPOCHS + 1][256])
{
    char *text;
    read_bytes(path, &text);
    bool seen[KILL_EPOCHS + 1] = {false};
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        int epoch;
        char *timing = strstr(line, ",\"train_ms\"");
        if (sscanf(line, "{\"run\":1,\"epoch\":%d,", &epoch) != 1 || !timing ||
            strchr(line + 1, '{'))
            continue;
        cr_assert(epoch >= 1 && epoch <= KILL_EPOCHS, "%s", line);
        *timing = '\0';
        if (ref[epoch][0])
            cr_assert_str_eq(line, ref[epoch], "epoch %d differs", epoch);
        else
            snprintf(ref[epoch], sizeof ref[epoch], "%s", line);
        seen[epoch] = true;
    }
    free(text);
    int n = 0;
    for (int e = 1; e <= KILL_EPOCHS; e++)
        n += seen[e];
    return n;
}

/* The same run three ways: straight through; then killed with SIGKILL at
 * six moments drawn at random over its length (loading, epochs, checkpoint
 * writes), each time restarted with --resume from the checkpoint written
 * every 3 epochs (from scratch while there is none), and finally run to
 * its end.  The final checkpoints (parameters, optimiser state, best model,
 * random streams) are the same bytes, and every epoch's loss and
 * accuracies in the appended log are the straight run's. */
Test(cli_signal, killed_runs_resume_to_the_same_end, .timeout = 300)
{
    char dir[] = "/tmp/gcn-sig-XXXXXX", ref_ck[96], ref_log[96], ck[96], log[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(ref_ck, sizeof ref_ck, "%s/straight.ckpt", dir);
    snprintf(ref_log, sizeof ref_log, "%s/straight.jsonl", dir);
    snprintf(ck, sizeof ck, "%s/killed.ckpt", dir);
    snprintf(log, sizeof log, "%s/killed.jsonl", dir);
    const char *args[] = {"models/gcn-cora.json", "--epochs", "40", "--runs", "1", "--seed", "7",
                          "--device", "cpu", "--quiet", "--save", ref_ck, "--log", ref_log,
                          "--save-every", "3", "--append", NULL, NULL, NULL};
    double t0 = now_ms();
    tool_run(&r, "gcntrain", args);
    double span = now_ms() - t0;
    cr_assert_eq(r.code, 0, "%s", r.err);
    args[11] = ck;
    args[13] = log;
    uint64_t state = 0x9e3779b97f4a7c15ull;
    for (int k = 0; k <= 6; k++) {
        args[17] = tool_exists(ck) ? "--resume" : NULL;
        args[18] = ck;
        if (k == 6) {
            tool_run(&r, "gcntrain", args);
            cr_assert_eq(r.code, 0, "%s", r.err);
            break;
        }
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        tool_proc p;
        tool_start(&p, "gcntrain", args);
        sleep_ms(span * (double)(state >> 11) / 9007199254740992.0);
        cr_assert_eq(kill(p.pid, SIGKILL), 0);
        int sig = tool_wait(&p, &r);
        cr_assert(sig == SIGKILL || r.code == 0, "attempt %d: signal %d, exit %d: %s", k, sig,
                  r.code, r.err);
    }
    char *want, *got;
    size_t n_want = read_bytes(ref_ck, &want), n_got = read_bytes(ck, &got);
    cr_assert_eq(n_got, n_want);
    cr_assert(memcmp(got, want, n_want) == 0, "the resumed run's final checkpoint differs");
    free(want);
    free(got);
    static char ref[KILL_EPOCHS + 1][256];
    memset(ref, 0, sizeof ref);
    cr_assert_eq(compare_epochs(ref_log, ref), KILL_EPOCHS);
    cr_assert_eq(compare_epochs(log, ref), KILL_EPOCHS);
    cr_assert_geq(tool_count(log, "\"resumed_from\""), 2, "fewer than two kills left a checkpoint");
    tool_remove_dir(dir);
}

/* Fails when dir (if it exists) holds a temporary file. */
static void expect_no_temporary(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));)
        cr_assert_not(strstr(e->d_name, ".tmp"), "%s/%s was left behind", dir, e->d_name);
    closedir(d);
}

/* Waits until the process blocks SIGINT and SIGTERM (its main thread's
 * SigBlk in /proc), so that gcntrain has set up its signal thread: a signal
 * while the program and its libraries are still being loaded ends the
 * process the default way. */
static void wait_for_signal_thread(int pid)
{
    char path[64], text[4096];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    unsigned long long want = (1ull << (SIGINT - 1)) | (1ull << (SIGTERM - 1)), mask = 0;
    double t0 = now_ms();
    for (;;) {
        tool_slurp(path, text, sizeof text);
        const char *blk = strstr(text, "SigBlk:");
        if (blk && sscanf(blk + 7, "%llx", &mask) == 1 && (mask & want) == want)
            return;
        cr_assert_lt(now_ms() - t0, 30e3, "gcntrain does not block its signals: %s", text);
        sleep_ms(1);
    }
}

/* Starts gcntrain with args, sends sig delay_ms after its signal thread is
 * up (while it still runs: before its first epoch) and checks that it
 * stops within a second with 128 + sig, saying so in one line. */
static void stop_before_training(const char *const *args, int sig, double delay_ms)
{
    tool_proc p;
    tool_start(&p, "gcntrain", args);
    wait_for_signal_thread(p.pid);
    sleep_ms(delay_ms);
    int status;
    cr_assert_eq(waitpid(p.pid, &status, WNOHANG), 0, "gcntrain ended before the signal");
    double t0 = now_ms();
    cr_assert_eq(kill(p.pid, sig), 0);
    cr_assert_eq(tool_wait(&p, &r), 0, "gcntrain died of the signal");
    double took = now_ms() - t0;
    cr_assert_eq(r.code, 128 + sig, "%s", r.err);
    cr_assert_lt(took, 1000.0, "took %.0f ms to stop", took);
    char want[96];
    snprintf(want, sizeof want, "gcntrain: %s before the first epoch: stopping now\n",
             signal_name_of(sig));
    cr_assert_str_eq(r.err, want);
    cr_assert_not(strstr(r.out, "epoch "), "%s", r.out);
}

/* A generated graph of 300,000 nodes reordered by METIS: generating takes
 * a second or more and METIS several; a signal in either stops the run at
 * once, and the cache folder holds no temporary file. */
Test(cli_signal, signal_while_generating_or_partitioning_stops_at_once, .timeout = 120)
{
    char dir[] = "/tmp/gcn-sig-XXXXXX", cache[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(cache, sizeof cache, "%s/cache", dir);
    const char *args[] = {"models/gcn.json", "--dataset", "sbm:nodes=300000", "--reorder", "metis",
                          "--cache-dir", cache, "--device", "cpu", "--epochs", "1000000",
                          "--quiet", NULL};
    stop_before_training(args, SIGINT, 200);
    expect_no_temporary(cache);
    stop_before_training(args, SIGTERM, 2500);
    expect_no_temporary(cache);
    tool_remove_dir(dir);
}

/* A gzip edge list of 3 million lines, parsed for seconds: SIGTERM and
 * SIGINT during the parse stop the run at once, leaving no cache. */
Test(cli_signal, signal_while_reading_stops_at_once, .timeout = 120)
{
    char dir[] = "/tmp/gcn-sig-XXXXXX", path[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/big.txt.gz", dir);
    gzFile gz = gzopen(path, "wb1");
    cr_assert_not_null(gz);
    uint32_t state = 12345;
    for (int e = 0; e < 3000000; e++) {
        state = state * 1664525u + 1013904223u;
        cr_assert_gt(gzprintf(gz, "%u %u\n", (unsigned)e % 1000000, state % 1000000), 0);
    }
    cr_assert_eq(gzclose(gz), Z_OK);
    const char *args[] = {"models/gcn.json", "--dataset", path, "--features", "degree",
                          "--device", "cpu", "--quiet", NULL};
    stop_before_training(args, SIGTERM, 150);
    stop_before_training(args, SIGINT, 300);
    char processed[96];
    snprintf(processed, sizeof processed, "%s/processed", dir);
    cr_assert_not(tool_exists(processed), "a cache folder was left behind");
    tool_remove_dir(dir);
}
