/*
 * test_hostlist.c — the host list parsers, rank placement, and the job
 * description dsmrun sends its agents (tools/hostlist.c, tools/remote.c).
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hostlist.h"
#include "remote.h"

static struct hostlist hl;
static char err[512];

static void test_list(void)
{
    CHECK_EQ(hostlist_parse(&hl, "h1,h2:2,10.0.0.3:4", err, sizeof err), 0);
    CHECK_EQ(hl.count, 3);
    CHECK_EQ(hl.slots, 7);
    CHECK(!strcmp(hl.hosts[2].name, "10.0.0.3"));
    CHECK_EQ(hl.hosts[1].slots, 2);
    CHECK_EQ(hostlist_assign(&hl, 0, err, sizeof err), 7);
    CHECK_EQ(hl.hosts[2].first_rank, 3);
    CHECK_EQ(hl.hosts[2].ranks, 4);
    CHECK_EQ(hostlist_assign(&hl, 2, err, sizeof err), 2);
    CHECK_EQ(hl.hosts[1].ranks, 1);
    CHECK_EQ(hl.hosts[2].ranks, 0);
    CHECK_EQ(hostlist_assign(&hl, 8, err, sizeof err), -1);
    CHECK(strstr(err, "needs 8 slots") != NULL);

    static const char *const bad[] = {
        "", ",", "a,", ",a", "a,,b", "a:", "a:0", "a:257", "a:2x", "a:-1", "-a", ".a",
        "a b", "a;b", "a:1:2", "$(x)", "a/b", "\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CHECK_EQ(hostlist_parse(&hl, bad[i], err, sizeof err), -1);
        CHECK(err[0] != 0 && !strchr(err, '\n'));
    }
    char many[4096] = "h";
    for (int i = 0; i < HOSTLIST_MAX_HOSTS; i++)
        strcat(many, ",h");
    CHECK_EQ(hostlist_parse(&hl, many, err, sizeof err), -1);
    char longname[HOSTLIST_NAME_MAX + 2];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    CHECK_EQ(hostlist_parse(&hl, longname, err, sizeof err), -1);
    longname[HOSTLIST_NAME_MAX] = 0;
    CHECK_EQ(hostlist_parse(&hl, longname, err, sizeof err), 0);
}

static void test_file(void)
{
    CHECK_EQ(hostlist_parse_file(&hl, "# cluster\nn1 slots=4\n\n  n2:2  # fast\r\nn3\n", "hf",
                                 err, sizeof err), 0);
    CHECK_EQ(hl.count, 3);
    CHECK_EQ(hl.slots, 7);
    CHECK(!strcmp(hl.hosts[1].name, "n2"));
    CHECK_EQ(hostlist_parse_file(&hl, "n1\nn2 slots=x\n", "hf", err, sizeof err), -1);
    CHECK(strstr(err, "hf line 2") != NULL);
    CHECK_EQ(hostlist_parse_file(&hl, "n1 extra words\n", "hf", err, sizeof err), -1);
    CHECK_EQ(hostlist_parse_file(&hl, "n1:2 slots=2\n", "hf", err, sizeof err), -1);
    CHECK_EQ(hostlist_parse_file(&hl, "# nothing\n\n", "hf", err, sizeof err), -1);
    CHECK(strstr(err, "names no host") != NULL);
    CHECK_EQ(hostlist_parse_file(&hl, "", "hf", err, sizeof err), -1);
}

static int feed(struct remote_job *j, const char *text)
{
    char *copy = strdup(text), *save = NULL;
    int r = 0;
    for (char *line = strtok_r(copy, "\n", &save); line && r == 0;
         line = strtok_r(NULL, "\n", &save))
        r = remote_job_line(j, line, err, sizeof err);
    free(copy);
    return r;
}

static void test_job(void)
{
    char *argv[] = {"prog", "a b\nc", "'q'", NULL};
    char *env[] = {"DSM_PROTOCOL=lrc", "X=1=2"};
    struct remote_job out = {
        .host = "h2", .job_id = 0x0123456789abcdefull, .nodes = 8, .first_rank = 4,
        .ranks = 2, .launch_ns = 1234567890123ull, .tag_output = true, .cwd = "/tmp/x y",
        .env = env, .nenv = 2, .argv = argv, .argc = 3,
    };
    for (int i = 0; i < REMOTE_KEY_BYTES; i++)
        out.key[i] = (unsigned char)(i * 7);
    char *text = remote_job_format(&out);
    CHECK(text != NULL);

    struct remote_job in = {0};
    CHECK_EQ(feed(&in, text), 0);
    CHECK(in.complete);
    CHECK(!strcmp(in.host, "h2"));
    CHECK(in.job_id == out.job_id);
    CHECK(!memcmp(in.key, out.key, sizeof in.key));
    CHECK_EQ(in.nodes, 8);
    CHECK_EQ(in.first_rank, 4);
    CHECK_EQ(in.ranks, 2);
    CHECK(in.launch_ns == out.launch_ns);
    CHECK(in.tag_output);
    CHECK(!strcmp(in.cwd, "/tmp/x y"));
    CHECK_EQ(in.nenv, 2);
    CHECK(!strcmp(in.env[1], "X=1=2"));
    CHECK_EQ(in.argc, 3);
    CHECK(!strcmp(in.argv[1], "a b\nc"));
    CHECK(in.argv[3] == NULL);
    remote_job_free(&in);

    /* Each line cut or changed: the job is refused, never half-taken. */
    size_t len = strlen(text);
    for (size_t cut = 0; cut + 1 < len; cut++) {
        if (text[cut] != '\n')
            continue;
        char *part = strndup(text, cut + 1);
        struct remote_job p = {0};
        int r = feed(&p, part);
        CHECK(r < 0 || !p.complete);
        remote_job_free(&p);
        free(part);
    }
    /* Versions not this one (remote.h), and after this one's line, each
     * wrong line. */
#define V "dsmrun-job " REMOTE_VERSION "\n"
    static const char *const bad[] = {
        "dsmrun-job 1\n", "dsmrun-job 99\n", "hello\n", V "job 123\n",
        V "key 00\n",
        V "nodes -1\n", V "nodes 1x\n", V "ranks 1\n",
        V "ranks 0 0\n", V "tag 2\n", V "env 3d31\n",
        V "arg 0\n", V "arg 6100\n", V "host zz\n",
        V "launch -5\n", V "frob 1\n", V "go\n",
    };
#undef V
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct remote_job p = {0};
        CHECK_EQ(feed(&p, bad[i]), -1);
        remote_job_free(&p);
    }
    /* ranks beyond the job */
    struct remote_job p = {0};
    out.first_rank = 7;
    char *t2 = remote_job_format(&out);
    CHECK_EQ(feed(&p, t2), -1);
    CHECK(strstr(err, "outside") != NULL);
    remote_job_free(&p);
    free(t2);
    free(text);

    char *q = remote_shell_quote("/a b/it's");
    CHECK(!strcmp(q, "'/a b/it'\\''s'"));
    free(q);
}

int main(void)
{
    test_list();
    test_file();
    test_job();
    printf("test_hostlist: %d passed, %d failed\n", check_passed, check_failed);
    return check_failed != 0;
}
