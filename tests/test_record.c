/* test_record.c - run records: written and read back, bad lines named, concurrent writers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "formats/record.h"
#include "tests/testutil.h"

static char path[64];

static int record_setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/dtrain-test-record-%d.jsonl", (int)getpid());
    unlink(path);
    return 0;
}

static int record_teardown(void **state)
{
    (void)state;
    char lock[sizeof path + 8];
    snprintf(lock, sizeof lock, "%s.lock", path);   /* the appends' lock file beside it */
    unlink(path);
    unlink(lock);
    return 0;
}

/* A record of `world` ranks on hosts gn01.. (two ranks a host). */
static void sample_record(struct run_record *r, int world, char (*hosts)[256], char **names, double *seconds, double *accuracy)
{
    memset(r, 0, sizeof *r);
    snprintf(r->job_id, sizeof r->job_id, "4711");
    r->job_name = "sweep \"quoted\" name", r->tag = "1gbit", r->emulation = "", r->error = "";
    snprintf(r->step_id, sizeof r->step_id, "0");
    static char nodelist[] = "gn[01-02]";
    r->nodelist = nodelist;
    r->nodes = (world + 1) / 2, r->gpus_per_node = 2, r->world_size = world;
    for (int i = 0; i < world; i++)
        snprintf(hosts[i], 256, "gn%02d", i / 2 + 1), names[i] = hosts[i];
    r->hostnames = names;
    snprintf(r->model, sizeof r->model, "resnet18");
    snprintf(r->dataset, sizeof r->dataset, "bigmnist");
    snprintf(r->optimizer, sizeof r->optimizer, "adam");
    snprintf(r->backend, sizeof r->backend, "cpu");
    snprintf(r->comm, sizeof r->comm, "bytescheduler-ps");   /* the longest of the reference experiments' names */
    r->comm_options = "servers=2 partition=4096000";
    r->batch_per_replica = 512, r->epochs = 10, r->threads = 4, r->lr = 0.04, r->steps_per_rank = 35158;
    r->max_steps = 40000, r->tokens_per_sec = 12345.5, r->resumed_at_step = 17579;
    r->runtime_seconds = 14812.5, r->peak_data_per_sec = 5000.25, r->final_data_per_sec = 4900.5;
    r->epochs_done = 2;
    seconds[0] = 1480.25, seconds[1] = 1479.5, accuracy[0] = -1, accuracy[1] = 0.98125;
    r->epoch_seconds = seconds, r->epoch_accuracy = accuracy;
    snprintf(r->start_time, sizeof r->start_time, "2026-11-21T09:00:00Z");
    snprintf(r->end_time, sizeof r->end_time, "2026-11-21T13:07:00Z");
    snprintf(r->exit_state, sizeof r->exit_state, "completed");
    snprintf(r->version, sizeof r->version, "0.1.0");
}

static char *read_file(void)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    char *text = calloc(1, (size_t)size + 1);
    assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    return text;
}

static void test_record_round_trip(void **state)
{
    (void)state;
    char hosts[4][256], *names[4];
    double seconds[2], accuracy[2];
    struct run_record r, back;
    sample_record(&r, 4, hosts, names, seconds, accuracy);
    struct dt_err err;
    assert_int_equal(record_append(path, &r, &err), 0);
    assert_int_equal(record_append(path, &r, &err), 0);
    char *text = read_file();
    char *nl = strchr(text, '\n');
    assert_non_null(nl);
    assert_non_null(strchr(nl + 1, '\n'));   /* two lines, one record each */
    *nl = '\0';
    int parsed = record_parse(text, &back, &err);
    if (parsed < 0)
        print_error("%s\n", err.msg);
    assert_int_equal(parsed, 0);
    assert_string_equal(back.job_name, "sweep \"quoted\" name");
    assert_string_equal(back.nodelist, "gn[01-02]");
    assert_string_equal(back.tag, "1gbit");
    assert_int_equal(back.world_size, 4);
    assert_string_equal(back.hostnames[3], "gn02");
    assert_int_equal(back.steps_per_rank, 35158);
    assert_int_equal(back.max_steps, 40000);
    assert_int_equal(back.resumed_at_step, 17579);
    assert_float_equal(back.tokens_per_sec, 12345.5, 1e-9);
    assert_int_equal(back.epochs_done, 2);
    assert_true(back.epoch_accuracy[0] < 0);   /* not evaluated: null */
    assert_float_equal(back.epoch_accuracy[1], 0.98125, 1e-12);
    assert_float_equal(back.peak_data_per_sec, 5000.25, 1e-9);
    assert_string_equal(back.exit_state, "completed");
    assert_string_equal(back.comm, "bytescheduler-ps");
    assert_string_equal(back.comm_options, "servers=2 partition=4096000");
    assert_string_equal(back.replaced, "");   /* no spare took over: no field, read as none */
    assert_null(strstr(text, "\"replaced\""));
    record_free(&back);
    free(text);
    /* where spares took over, both readers keep what the template said */
    r.replaced = "gn02 by gn04 (the node failed); training stood still 41 s after the last failure";
    unlink(path);
    assert_int_equal(record_append(path, &r, &err), 0);
    text = read_file();
    struct run_record reference;
    assert_int_equal(record_parse(text, &back, &err), 0);
    assert_int_equal(record_parse_reference(text, &reference, &err), 0);
    assert_string_equal(back.replaced, r.replaced);
    assert_string_equal(reference.replaced, r.replaced);
    record_free(&back);
    record_free(&reference);
    free(text);
}

/* A version-1 record (no comm_options; methods named allreduce and wfbp) reads as version 2's
 * names, by both readers; other names stay. */
static void test_version_1_records_read_with_the_seeds_names(void **state)
{
    (void)state;
    char hosts[2][256], *names[2];
    double seconds[2], accuracy[2];
    struct run_record r, fast, reference;
    sample_record(&r, 2, hosts, names, seconds, accuracy);
    struct dt_err err;
    static const char *const cases[][2] = {{"allreduce", "bsp-a2a"}, {"wfbp", "wfbp-a2a"}, {"mg-wfbp", "mg-wfbp"}};
    for (size_t k = 0; k < 3; k++) {
        snprintf(r.comm, sizeof r.comm, "%s", cases[k][0]);
        r.comm_options = "";
        unlink(path);
        assert_int_equal(record_append(path, &r, &err), 0);
        char *text = read_file(), *line = malloc(strlen(text) + 1), *at;
        /* as version 1 wrote it: its number, no comm_options */
        at = strstr(text, "\"record_version\":2");
        assert_non_null(at);
        at[strlen("\"record_version\":")] = '1';
        at = strstr(text, ",\"comm_options\":\"\"");
        assert_non_null(at);
        memmove(at, at + strlen(",\"comm_options\":\"\""), strlen(at + strlen(",\"comm_options\":\"\"")) + 1);
        strcpy(line, text);
        assert_int_equal(record_parse(line, &fast, &err), 0);
        assert_int_equal(record_parse_reference(line, &reference, &err), 0);
        assert_string_equal(fast.comm, cases[k][1]);
        assert_string_equal(reference.comm, cases[k][1]);
        assert_string_equal(fast.comm_options, "");
        record_free(&fast);
        record_free(&reference);
        free(text);
        free(line);
    }
}

static void test_bad_record_lines_name_the_field(void **state)
{
    (void)state;
    struct run_record r;
    struct dt_err err;
    assert_int_equal(record_parse("not json", &r, &err), -1);
    assert_true(tu_contains(err.msg, "not a JSON object"));
    assert_int_equal(record_parse("{\"record_version\": 3}", &r, &err), -1);
    assert_true(tu_contains(err.msg, "record_version 3 is not 1 to 2"));
    char hosts[2][256], *names[2];
    double seconds[2], accuracy[2];
    sample_record(&r, 2, hosts, names, seconds, accuracy);
    struct dt_err werr;
    assert_int_equal(record_append(path, &r, &werr), 0);
    char *text = read_file();
    /* break one field after the other */
    static const struct { const char *from, *to, *says; } breaks[] = {
        {"\"world_size\":2", "\"world_size\":\"2\"", "\"world_size\" is missing or not an integer"},
        {"\"model\":\"resnet18\"", "\"model\":18", "\"model\" is missing or not a string"},
        {"\"hostnames\":[\"gn01\",\"gn01\"]", "\"hostnames\":[\"gn01\"]", "not a list of world_size (2) names"},
        {"\"runtime_seconds\":", "\"runtime\":", "\"runtime_seconds\" is missing"},
        /* numbers no run makes: tabled, they gave a speedup of -11.91 */
        {"\"runtime_seconds\":14812.5", "\"runtime_seconds\":-5", "\"runtime_seconds\" is -5: not a run's duration"},
        {"\"runtime_seconds\":14812.5", "\"runtime_seconds\":1e308", "is 1e+308: not a run's duration"},
        {"\"gpus_per_node\":2", "\"gpus_per_node\":5", "gpus_per_node 5 on 1 nodes is more GPUs than the 2 ranks"},
        {"\"final_data_per_sec\":4900.5", "\"final_data_per_sec\":-1", "are not rates"},
        {"\"steps_per_rank\":35158", "\"steps_per_rank\":-3", "a negative count"},
    };
    for (size_t i = 0; i < sizeof breaks / sizeof breaks[0]; i++) {
        char *at = strstr(text, breaks[i].from);
        assert_non_null(at);
        char *line = calloc(1, strlen(text) + 64);
        memcpy(line, text, (size_t)(at - text));
        strcat(line, breaks[i].to);
        strcat(line, at + strlen(breaks[i].from));
        assert_int_equal(record_parse(line, &r, &err), -1);
        assert_true(tu_contains(err.msg, breaks[i].says));
        free(line);
    }
    free(text);
}

/* text with the first `from` replaced by `to` (the caller frees). */
static char *replaced_text(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    assert_non_null(at);
    char *out = calloc(1, strlen(text) + strlen(to) + 1);
    memcpy(out, text, (size_t)(at - text));
    strcat(out, to);
    strcat(out, at + strlen(from));
    return out;
}

/* Both readers take or refuse `line` alike, and take the same values. */
static void assert_readers_agree(const char *line, int expect_ok)
{
    struct run_record fast, reference;
    struct dt_err fast_err, reference_err;
    int fast_rc = record_parse(line, &fast, &fast_err), reference_rc = record_parse_reference(line, &reference, &reference_err);
    if (fast_rc != reference_rc || fast_rc != (expect_ok ? 0 : -1))
        print_error("line %s\nfast: %d %s\nreference: %d %s\n", line, fast_rc, fast_rc ? fast_err.msg : "",
                    reference_rc, reference_rc ? reference_err.msg : "");
    assert_int_equal(fast_rc, reference_rc);
    assert_int_equal(fast_rc, expect_ok ? 0 : -1);
    if (fast_rc < 0)
        return;
    assert_string_equal(fast.job_name, reference.job_name);
    assert_string_equal(fast.nodelist, reference.nodelist);
    assert_string_equal(fast.tag, reference.tag);
    assert_memory_equal(&fast.lr, &reference.lr, sizeof fast.lr);   /* the same double, bit for bit */
    assert_int_equal(fast.world_size, reference.world_size);
    for (int i = 0; i < fast.world_size; i++)
        assert_string_equal(fast.hostnames[i], reference.hostnames[i]);
    assert_int_equal(fast.epochs_done, reference.epochs_done);
    assert_memory_equal(fast.epoch_accuracy, reference.epoch_accuracy, (size_t)fast.epochs_done * sizeof(double));
    record_free(&fast);
    record_free(&reference);
}

/* The fast reader (record.c, json_read.c) against jansson's (record_ref.c) on what JSON allows and
 * refuses in strings, numbers and structure. */
static void test_fast_reader_agrees_with_jansson(void **state)
{
    (void)state;
    char hosts[2][256], *names[2];
    double seconds[2], accuracy[2];
    struct run_record r;
    sample_record(&r, 2, hosts, names, seconds, accuracy);
    struct dt_err err;
    assert_int_equal(record_append(path, &r, &err), 0);
    char *text = read_file();
    static const struct { const char *job_name; int ok; } names_json[] = {
        {"\"a \\\" b \\\\ c\"", 1}, {"\"\\u00e9\\u4E2D\\ud83d\\ude00\"", 1}, {"\"\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80\"", 1},
        {"\"\\/\\b\\f\\n\\r\\t\"", 1}, {"\"\\ud83d\"", 0}, {"\"\\ud83d\\u0041\"", 0}, {"\"\\udc00\"", 0},
        {"\"\\u0000\"", 0}, {"\"\\u12G4\"", 0}, {"\"\\x\"", 0}, {"\"\xc0\xaf\"", 0}, {"\"\xed\xa0\x80\"", 0},
        {"\"\xf4\x90\x80\x80\"", 0}, {"\"\xe0\x80\xaf\"", 0}, {"\"\x80\"", 0}, {"\"tab\there\"", 0},
        {"\"unclosed", 0}, {"null", 0},
        {"\"a name longer than the record keeps: 0123456789012345678901234567890123456789012345678901234567890123"
         "4567890123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456"
         "78901234567890123456789012345678901234567890123456789012345678901234567890123456789\"", 1},
    };
    for (size_t i = 0; i < sizeof names_json / sizeof names_json[0]; i++) {
        char *to = calloc(1, strlen(names_json[i].job_name) + 16);
        sprintf(to, "\"job_name\":%s", names_json[i].job_name);
        char *line = replaced_text(text, "\"job_name\":\"sweep \\\"quoted\\\" name\"", to);
        assert_readers_agree(line, names_json[i].ok);
        free(line), free(to);
    }
    static const struct { const char *lr; int ok; } numbers[] = {
        {"0.01", 1}, {"1e-2", 1}, {"1E+2", 1}, {"-0.0", 1}, {"0", 1}, {"-0", 1}, {"9007199254740993", 1},
        {"0.1234567890123456789", 1}, {"3.14159265358979323846", 1}, {"123456789012345.6", 1},
        {"1.7976931348623157e308", 1}, {"2.2250738585072011e-308", 1}, {"4.9e-324", 1}, {"1e-400", 1},
        {"1e22", 1}, {"1e23", 1}, {"8.5e-23", 1}, {"0.000000000000000000000001", 1}, {"12345678901234567890", 0},
        {"1e309", 0}, {"-1e309", 0}, {"01", 0}, {"1.", 0}, {".5", 0}, {"-", 0}, {"+1", 0}, {"1e", 0},
        {"0x10", 0}, {"NaN", 0}, {"Infinity", 0}, {"\"0.01\"", 0},
    };
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
        char to[64];
        snprintf(to, sizeof to, "\"lr\":%s", numbers[i].lr);
        char *line = replaced_text(text, "\"lr\":0.040000000000000001", to);
        assert_readers_agree(line, numbers[i].ok);
        free(line);
    }
    static const struct { const char *extra; int ok; } members[] = {
        {",\"later\":{\"a\":[1,{\"b\":null},[]],\"c\":true,\"d\":false,\"e\":{}}", 1}, {" , \"x\" :\t[ ]\r\n", 1},
        {",\"x\":[1,2,]", 0}, {",\"x\":{\"a\":1,}", 0}, {",\"x\":tru", 0}, {",\"x\":nul", 0}, {",\"x\"", 0},
        {",\"x\":[1 2]", 0}, {",\"x\":{1:2}", 0}, {",\"record_version\":1", 0}, {",\"lr\":0.5", 0}, {",", 0},
    };
    for (size_t i = 0; i < sizeof members / sizeof members[0]; i++) {
        char to[128];
        snprintf(to, sizeof to, "\"resumed\":0%s", members[i].extra);
        char *line = replaced_text(text, "\"resumed\":0", to);
        assert_readers_agree(line, members[i].ok);
        free(line);
    }
    char *spaced = replaced_text(text, "{", " \t{ ");
    assert_readers_agree(spaced, 1);
    char *trailing = replaced_text(text, "\n", " x\n");
    assert_readers_agree(trailing, 0);
    char *first_field_last = replaced_text(text, "\"record_version\":2,", "");
    first_field_last[strlen(first_field_last) - 2] = '\0';   /* the closing brace and newline */
    strcat(first_field_last, ",\"record_version\":2}");
    assert_readers_agree(first_field_last, 1);
    free(spaced), free(trailing), free(first_field_last), free(text);
}

static void test_concurrent_writers_never_tear_a_line(void **state)
{
    (void)state;
    enum { WRITERS = 8, EACH = 40, WORLD = 1500 };   /* lines of ~20 KB */
    static char hosts[WORLD][256], *names[WORLD];
    double seconds[2], accuracy[2];
    struct run_record r;
    sample_record(&r, WORLD, hosts, names, seconds, accuracy);
    for (int w = 0; w < WRITERS; w++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            struct dt_err err;
            snprintf(r.job_id, sizeof r.job_id, "%d", w);
            for (int i = 0; i < EACH; i++)
                if (record_append(path, &r, &err) < 0)
                    _exit(1);
            _exit(0);
        }
    }
    for (int w = 0; w < WRITERS; w++) {
        int status;
        wait(&status);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    char *text = read_file(), *save = NULL;
    int lines = 0, per_writer[WRITERS] = {0};
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        struct run_record back;
        struct dt_err err;
        int parsed = record_parse(line, &back, &err);
        if (parsed < 0)
            print_error("line %d: %s\n", lines + 1, err.msg);
        assert_int_equal(parsed, 0);
        per_writer[atoi(back.job_id)]++;
        record_free(&back);
        lines++;
    }
    assert_int_equal(lines, WRITERS * EACH);
    for (int w = 0; w < WRITERS; w++)
        assert_int_equal(per_writer[w], EACH);
    free(text);
}

/* Counts the file's lines and checks that each one is a whole record. */
static int whole_lines(void)
{
    char *text = read_file(), *save = NULL;
    int lines = 0;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), lines++) {
        struct run_record back;
        struct dt_err err;
        int parsed = record_parse(line, &back, &err);
        if (parsed < 0)
            print_error("line %d: %s\n", lines + 1, err.msg);
        assert_int_equal(parsed, 0);
        record_free(&back);
    }
    free(text);
    return lines;
}

static long file_size(void)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (long)st.st_size;
}

/* A write cut short by a full disk (here the file size limit, which makes the
 * same short write without needing a small filesystem) leaves the file as it was, and the next
 * record lands whole; a torn tail left by a killed writer is ended before the next line. */
static void test_a_short_write_leaves_no_fragment(void **state)
{
    (void)state;
    char hosts[64][256], *names[64];
    double seconds[2], accuracy[2];
    struct run_record r;
    sample_record(&r, 64, hosts, names, seconds, accuracy);   /* a line of a few KB */
    struct dt_err err;
    assert_int_equal(record_append(path, &r, &err), 0);
    long before = file_size();
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);   /* a short write and EFBIG instead of a signal */
        struct rlimit limit = {.rlim_cur = (rlim_t)before + 100, .rlim_max = RLIM_INFINITY};
        setrlimit(RLIMIT_FSIZE, &limit);
        int rc = record_append(path, &r, &err);
        /* refused, naming the file and the reason the system gave (EFBIG), not a guess */
        _exit(rc < 0 && strstr(err.msg, path) && strstr(err.msg, strerror(EFBIG)) ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(file_size(), before);   /* nothing of the failed line stayed */
    assert_int_equal(record_append(path, &r, &err), 0);
    assert_int_equal(whole_lines(), 2);
    /* A fragment without its newline, as a writer killed mid-write leaves it. */
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fputs("{\"record_version\":2,\"dtrain_version\":\"0.1", f);
    fclose(f);
    assert_int_equal(record_append(path, &r, &err), 0);
    char *text = read_file();
    char *fragment = strstr(text, "\"0.1{");
    assert_null(fragment);   /* the new record starts on a line of its own */
    assert_non_null(strstr(text, "\"0.1\n{\"record_version\""));
    free(text);
}

/* Text cut mid-character by a fixed-size copy, or not UTF-8 at all, never costs the record or a
 * field: a job name of 254 bytes + "é" (its last byte cut off), a tag with a stray byte, an
 * emulation path of non-ASCII bytes. Valid characters stay; each bad byte becomes U+FFFD. */
static void test_text_cut_mid_character_keeps_the_record(void **state)
{
    (void)state;
    char hosts[2][256], *names[2];
    double seconds[2], accuracy[2];
    struct run_record r, back;
    sample_record(&r, 2, hosts, names, seconds, accuracy);
    char job_name[256], tag[] = "1gbit\xFF", emulation[] = "profile=/données/\xE9t\xE9.json rate=1 dilate=1",
         error[] = "caf\xC3\xA9 \xED\xA0\x80 surrogate";
    memset(job_name, 'j', 254);
    job_name[254] = '\xC3', job_name[255] = '\0';   /* "é" is C3 A9: the A9 did not fit */
    r.job_name = job_name, r.tag = tag, r.emulation = emulation, r.error = error;
    struct dt_err err;
    assert_int_equal(record_append(path, &r, &err), 0);
    char *text = read_file();
    assert_int_equal(record_parse(text, &back, &err), 0);
    assert_true(strlen(back.job_name) >= 254 && strspn(back.job_name, "j") == 254);   /* kept, its cut byte U+FFFD */
    assert_non_null(strstr(text, "jj\xEF\xBF\xBD\","));
    assert_string_equal(back.tag, "1gbit\xEF\xBF\xBD");
    assert_non_null(strstr(back.emulation, "profile=/données/\xEF\xBF\xBDt\xEF\xBF\xBD.json"));
    assert_non_null(strstr(back.error, "café \xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD surrogate"));
    assert_string_equal(back.exit_state, "completed");
    record_free(&back);
    free(text);
}

/* A records file that is a link another user planted (to a file of theirs, or root's) is not
 * followed: the write is refused, naming it, and the target is untouched. */
static void test_a_planted_link_is_not_followed(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-link-XXXXXX", target[128], link_path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(target, sizeof target, "%s/victim", dir);
    snprintf(link_path, sizeof link_path, "%s/runs.jsonl", dir);
    FILE *f = fopen(target, "w");
    assert_non_null(f);
    fputs("precious\n", f);
    fclose(f);
    assert_int_equal(symlink(target, link_path), 0);
    char hosts[2][256], *names[2];
    double seconds[2], accuracy[2];
    struct run_record r;
    sample_record(&r, 2, hosts, names, seconds, accuracy);
    struct dt_err err;
    assert_int_equal(record_append(link_path, &r, &err), -1);
    assert_non_null(strstr(err.msg, "a symbolic link"));
    f = fopen(target, "r");
    char line[64] = "";
    assert_non_null(fgets(line, sizeof line, f));
    assert_null(fgets(line + strlen(line), (int)(sizeof line - strlen(line)), f));   /* nothing appended */
    fclose(f);
    unlink(link_path), unlink(target), rmdir(dir);
}

/* A job of 100,000 ranks, four a node, each rank's compute time kept: its record is written and
 * read back whole (at 1 MiB a line a job of about 45,000 ranks got no record at all). */
static void test_the_largest_jobs_are_recorded(void **state)
{
    (void)state;
    enum { WORLD = 100000 };
    char hosts[1][256], *one[1];
    double seconds[2], accuracy[2];
    struct run_record r, back;
    sample_record(&r, 1, hosts, one, seconds, accuracy);
    char (*names)[24] = malloc(WORLD * sizeof *names);
    char **pointers = malloc(WORLD * sizeof *pointers);
    double *compute = malloc(WORLD * sizeof *compute);
    assert_true(names && pointers && compute);
    for (int i = 0; i < WORLD; i++) {
        snprintf(names[i], sizeof names[i], "gpu-node-%05d", i / 4 + 1);
        pointers[i] = names[i];
        compute[i] = 123.456 + i % 7;
    }
    static char nodelist[] = "gpu-node-[00001-25000]";
    r.nodelist = nodelist, r.nodes = WORLD / 4, r.gpus_per_node = 4, r.world_size = WORLD;
    r.hostnames = pointers, r.rank_compute_ms = compute;
    struct dt_err err;
    int rc = record_append(path, &r, &err);
    if (rc < 0)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    char *text = read_file();
    assert_true(strlen(text) > (1 << 20));   /* beyond the old limit */
    text[strcspn(text, "\n")] = '\0';
    assert_int_equal(record_parse(text, &back, &err), 0);
    assert_int_equal(back.world_size, WORLD);
    assert_string_equal(back.hostnames[WORLD - 1], "gpu-node-25000");
    record_free(&back);
    free(text);
    free(names);
    free(pointers);
    free(compute);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_record_round_trip, record_setup, record_teardown),
        cmocka_unit_test_setup_teardown(test_version_1_records_read_with_the_seeds_names, record_setup, record_teardown),
        cmocka_unit_test_setup_teardown(test_bad_record_lines_name_the_field, record_setup, record_teardown),
        cmocka_unit_test_setup_teardown(test_fast_reader_agrees_with_jansson, record_setup, record_teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_writers_never_tear_a_line, record_setup, record_teardown),
        cmocka_unit_test_setup_teardown(test_a_short_write_leaves_no_fragment, record_setup, record_teardown),
        cmocka_unit_test_setup_teardown(test_text_cut_mid_character_keeps_the_record, record_setup, record_teardown),
        cmocka_unit_test_setup_teardown(test_a_planted_link_is_not_followed, record_setup, record_teardown),
        cmocka_unit_test_setup_teardown(test_the_largest_jobs_are_recorded, record_setup, record_teardown),
    };
    return cmocka_run_group_tests_name("record", tests, NULL, NULL);
}
