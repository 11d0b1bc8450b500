/* gcntrain --rendezvous: a process that is to be one rank of a job refuses,
 * in one line and with exit status 2, a launcher environment it cannot
 * read and options that do not go with it. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tool_run.h"

static tool_result r;

static void clear_launchers(void)
{
    const char *vars[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK",
                          "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_PROCID",
                          "SLURM_NTASKS", "SLURM_LOCALID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        unsetenv(vars[i]);
}

Test(cli_job, a_launcher_environment_it_cannot_read_is_one_line_and_exit_2)
{
    const struct {
        const char *vars[6];
        const char *says;
    } cases[] = {
        {{NULL}, "no launcher's variables are set"},
        {{"RANK", "0", "WORLD_SIZE", "2", NULL}, "RANK is set but LOCAL_RANK is not"},
        {{"SLURM_PROCID", "4", "SLURM_NTASKS", "4", "SLURM_LOCALID", "0"},
         "SLURM_PROCID=4: expected 0 to 3"},
        {{"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "two",
          "OMPI_COMM_WORLD_LOCAL_RANK", "0"}, "OMPI_COMM_WORLD_SIZE=two: not a decimal integer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        clear_launchers();
        for (int k = 0; k < 6 && cases[i].vars[k]; k += 2)
            setenv(cases[i].vars[k], cases[i].vars[k + 1], 1);
        tool_run(&r, "gcntrain",
                 (const char *[]){"models/gcn.json", "--rendezvous", "job.rdv", NULL});
        cr_expect_eq(r.code, 2, "case %zu: %s", i, r.err);
        cr_expect(strstr(r.err, "gcntrain: --rendezvous job.rdv: "), "%s", r.err);
        cr_expect(strstr(r.err, cases[i].says), "case %zu: %s", i, r.err);
        tool_expect_one_line(r.err);
        cr_expect(!tool_exists("job.rdv"), "nothing is left behind");
    }
}

Test(cli_job, options_that_do_not_go_with_a_rendezvous_are_refused)
{
    clear_launchers();
    const char *const cases[][6] = {
        {"models/gcn.json", "--rendezvous", "job.rdv", "--gpus", "2", NULL},
        {"models/gcn.json", "--rendezvous", "job.rdv", "--ranks", "2", NULL},
        {"models/gcn.json", "--rank-timeout", "5", NULL},
        {"models/gcn.json", "--rendezvous", "job.rdv", "--rank-timeout", "0", NULL},
    };
    const char *says[] = {"the launcher gives the job's size", "the launcher gives the job's size",
                          "--rank-timeout needs --rendezvous", "bad option or value"};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tool_run(&r, "gcntrain", cases[i]);
        cr_expect_eq(r.code, 2, "case %zu: %s", i, r.err);
        cr_expect(strstr(r.err, says[i]), "case %zu: %s", i, r.err);
        tool_expect_one_line(r.err);
    }
}
