/* replay.c - runs a libFuzzer target over corpus files without libFuzzer, so the sanitized gcc
 * build replays the corpus in every `make test`. Usage: test_fuzz_replay DIR|FILE... */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return fprintf(stderr, "cannot open %s\n", path), -1;
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    return 0;
}

int main(int argc, char **argv)
{
    int files = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) < 0)
            return fprintf(stderr, "cannot open %s\n", argv[i]), 1;
        if (!S_ISDIR(st.st_mode)) {
            failed += replay_file(argv[i]) < 0;
            files++;
            continue;
        }
        DIR *dir = opendir(argv[i]);
        for (struct dirent *e; dir && (e = readdir(dir));) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
            failed += replay_file(path) < 0;
            files++;
        }
        if (dir)
            closedir(dir);
    }
    printf("fuzz corpus replay: %d passed, %d failed\n", files - failed, failed);
    return failed ? 1 : 0;
}
